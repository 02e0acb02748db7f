//go:build unix

package cache

import (
	"errors"
	"strings"
	"syscall"
)

// freeBytes is the space an unprivileged process may still use on dir's filesystem.
func freeBytes(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}

// noSpaceErrors are the write errors of a full or read-only filesystem.
var noSpaceErrors = []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS}

// isNoSpace reports whether err is a write error of a full or read-only filesystem; Badger
// flattens the errors it wraps into text, so the text counts too.
func isNoSpace(err error) bool {
	for _, e := range noSpaceErrors {
		if errors.Is(err, e) || strings.Contains(err.Error(), e.Error()) {
			return true
		}
	}
	return false
}
