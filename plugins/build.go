package plugins

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
)

// BuildGoPlugin builds the Go plugin package pkg (a path or import path, resolved in the
// current directory's module) into out with the documented command:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o OUT PKG
//
// extra arguments go before PKG. Tests and `widejit plugin` tooling use it.
func BuildGoPlugin(pkg, out string, extra ...string) error {
	args := append([]string{"build", "-buildmode=c-shared", "-o", out}, extra...)
	args = append(args, pkg)
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("GOOS=wasip1 GOARCH=wasm go %v: %w\n%s", args, err, stderr.String())
	}
	return nil
}
