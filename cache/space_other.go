//go:build !unix

package cache

import (
	"errors"
	"math"
	"strings"
	"syscall"
)

// freeBytes is not measured here: the free-space guard is off.
func freeBytes(string) (uint64, error) { return math.MaxUint64, nil }

// isNoSpace reports whether err is a write error of a full filesystem.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), syscall.ENOSPC.Error())
}
