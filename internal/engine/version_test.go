package engine

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// A build without a clean version must still be told apart from other builds, or the kernel
// cache would serve one build's artifacts to another.
func TestBuildVersionIdentifiesTheBuild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the build ID is read from the ELF executable")
	}
	id := executableBuildID()
	if id == "" {
		t.Fatal("no Go build ID read from the test executable")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "tool", "buildid", exe).Output()
	if err != nil {
		t.Skipf("go tool buildid unavailable: %v", err)
	}
	if !bytes.Contains(out, []byte(id)) {
		t.Fatalf("build ID %q is not part of go tool buildid's %q", id, out)
	}
	if v := BuildVersion(); !strings.Contains(v, "+build."+id) && !isCleanVersion(v) {
		t.Fatalf("BuildVersion() = %q names neither a clean version nor this build", v)
	}
}

func isCleanVersion(v string) bool {
	return !strings.Contains(v, "devel") && !strings.Contains(v, "dirty")
}
