//go:build !unix

package safetensors

import "os"

// clearNonblock has nothing to do where files are never opened non-blocking.
func clearNonblock(*os.File) error { return nil }
