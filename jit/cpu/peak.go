package cpu

import (
	"runtime"
	"time"
)

// PeakGFLOPS measures the fp32 multiply-add ceiling of one core on the dot micro-kernels'
// instruction set: independent FMAs on registers alone, on one locked OS thread, for about d
// of that thread's CPU time. Flops are divided by the CPU time the thread got (wall time
// where the OS cannot say), so other load on a shared machine does not lower it; kernel
// benchmarks compare their flops per CPU-second with it, measured in the same run. 0 where
// tl.dot has no SIMD kernel.
func PeakGFLOPS(d time.Duration) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	clock := threadCPUTime
	if clock() == 0 {
		start := time.Now()
		clock = func() time.Duration { return time.Since(start) }
	}
	start, flops := clock(), 0.0
	for clock()-start < d {
		flops += fmaLoop(1 << 14)
	}
	return flops / (clock() - start).Seconds() / 1e9
}
