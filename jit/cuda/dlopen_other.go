//go:build !unix

package cuda

import (
	"fmt"
	"runtime"
)

// dlopenLocal: the CUDA backend loads libcuda.so.1 on linux only (loadFrom says so first).
func dlopenLocal(name string) (uintptr, error) {
	return 0, fmt.Errorf("cuda: cannot load %s on %s", name, runtime.GOOS)
}
