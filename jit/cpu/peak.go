package cpu

import (
	"runtime"
	"sync"
	"time"
)

// PeakGFLOPS measures the fp32 multiply-add ceiling of the dot micro-kernels in use: threads
// goroutines (0: every core) run independent FMAs on registers alone for about d, and their
// flops are summed over the slowest one's time. Kernel benchmarks report against it measured
// in the same run, since a shared machine's speed varies. 0 where tl.dot has no SIMD kernel.
func PeakGFLOPS(threads int, d time.Duration) float64 {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	const chunk = 1 << 14
	flops := make([]float64, threads)
	took := make([]time.Duration, threads)
	var wg sync.WaitGroup
	for t := range threads {
		wg.Go(func() {
			start := time.Now()
			for time.Since(start) < d {
				flops[t] += fmaLoop(chunk)
			}
			took[t] = time.Since(start)
		})
	}
	wg.Wait()
	var sum float64
	var slowest time.Duration
	for t := range threads {
		sum += flops[t]
		slowest = max(slowest, took[t])
	}
	return sum / slowest.Seconds() / 1e9
}
