//go:build unix

package cuda

import "github.com/ebitengine/purego"

// dlopenLocal loads a shared library with its symbols kept local to the handle.
func dlopenLocal(name string) (uintptr, error) {
	return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
}
