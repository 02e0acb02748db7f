//go:build unix

package safetensors

import (
	"os"
	"syscall"
)

// clearNonblock puts f back in blocking mode: it was opened O_NONBLOCK so that a FIFO named as
// a weights file cannot hang the open, and the reads that follow expect blocking semantics.
func clearNonblock(f *os.File) error { return syscall.SetNonblock(int(f.Fd()), false) }
