//go:build unix

package testkit

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time (user and system) of every thread of this process so far; 0 where
// the OS cannot say. Benchmarks on a shared machine divide their work by it, not by the
// clock, since the time other processes take a core is then left out.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
