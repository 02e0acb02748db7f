//go:build !linux

package cpu

import "time"

// threadCPUTime is 0: this OS gives no per-thread CPU time (PeakGFLOPS times by the clock).
func threadCPUTime() time.Duration { return 0 }
