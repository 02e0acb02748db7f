package cpu

import (
	"math/rand"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/widejit/widejit/jit"
)

// Every call of a job has returned when do returns, no job gets more calls than its
// helpers plus the launcher, worker numbers are distinct within a job, and concurrent
// launchers on one pool do not mix their work.
func TestPoolRunsEachJobToTheEnd(t *testing.T) {
	var p pool
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				helpers := (g + i) % 3
				var calls, running atomic.Int32
				var mu sync.Mutex
				seen := map[int]bool{}
				p.do(helpers, workFunc(func(worker int) {
					running.Add(1)
					calls.Add(1)
					mu.Lock()
					require.False(t, seen[worker], "worker %d called twice in one job", worker)
					seen[worker] = true
					mu.Unlock()
					if i%7 == 0 {
						time.Sleep(50 * time.Microsecond) // outlast the launcher's spin sometimes
					}
					running.Add(-1)
				}))
				require.Zero(t, running.Load(), "do returned with calls still running")
				require.LessOrEqual(t, int(calls.Load()), helpers+1)
				require.True(t, seen[0], "the launcher runs its own job")
			}
		}()
	}
	wg.Wait()
}

// Helpers exit once no job comes within linger, so an idle device holds no goroutines.
func TestPoolHelpersExitWhenIdle(t *testing.T) {
	before := runtime.NumGoroutine()
	var p pool
	var ran atomic.Int32
	p.do(3, workFunc(func(int) { ran.Add(1); time.Sleep(time.Millisecond) }))
	require.GreaterOrEqual(t, ran.Load(), int32(1))
	// Eventually runs the condition on a goroutine of its own.
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(linger)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before, "helpers still running long after their last job")
	require.Nil(t, p.job.Load(), "a finished job stays referenced (and with it the launch's buffers)")
}

// Back-to-back launches from one goroutine keep their helper and its worker number, which
// is what keeps a kernel's per-worker frame on one core.
func TestPoolKeepsWorkerNumbersSmall(t *testing.T) {
	var p pool
	numbers := map[int]bool{}
	var mu sync.Mutex
	for range 2000 {
		p.do(1, workFunc(func(worker int) {
			mu.Lock()
			numbers[worker] = true
			mu.Unlock()
		}))
	}
	for w := range numbers {
		require.LessOrEqual(t, w, 1, "worker numbers seen: %v", numbers)
	}
	require.LessOrEqual(t, int(p.alive.Load()), 1)
}

// workFunc is a function as pool work.
type workFunc func(worker int)

func (f workFunc) run(worker int) { f(worker) }

// One kernel launched from several goroutines at once: each launch gets its own launch state
// and frames (the kernel's idle launch and home frames go to one of them), helpers are shared
// between the launches, and every output is right.
func TestConcurrentLaunchesOfOneKernel(t *testing.T) {
	k := loadKernel(t, filepath.Join(tutorialKernels, "vector_add.py"), "add_kernel",
		map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}, map[string]any{"BLOCK_SIZE": int64(64)})
	const n = 64 * 40 // 40 programs: shared with helpers
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			x, y := randF32(rng, n, 1), randF32(rng, n, 1)
			for run := range 100 {
				o := make([]float32, n)
				ob := f32Buf(t, o)
				if err := k.Launch(grid1(n/64), []jit.Arg{buf(f32Buf(t, x)), buf(f32Buf(t, y)), buf(ob), scalar(int64(n))}); err != nil {
					t.Error(err)
					return
				}
				for i, v := range ob.f32() {
					if v != x[i]+y[i] {
						t.Errorf("goroutine %d run %d: out[%d] = %v, want %v", g, run, i, v, x[i]+y[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// A launch's shares cover its grid once: each worker starts on its own contiguous part, in
// order, and programs left in any part go to whichever worker asks, each exactly once, also
// with more workers than programs and with worker numbers past the launch's workers.
func TestSharesHandOutEveryProgramOnce(t *testing.T) {
	for total := int64(0); total <= 37; total++ {
		for workers := int64(1); workers <= 5; workers++ {
			l := &launch{total: total}
			l.split(workers)
			got := make([]int, total)
			for w := range workers {
				s := &l.shares[w]
				if idx, ok := s.take(); ok {
					require.Equal(t, w*total/workers, idx, "worker %d starts its own part", w)
					got[idx]++
				}
			}
			// the rest, taken by workers in turn as run does: own share first, then the others'
			for w := int64(0); l.started() < total; w = (w + 1) % (workers + 2) {
				n := int64(len(l.shares))
				for i := range n {
					if idx, ok := l.shares[(w+i)%n].take(); ok {
						got[idx]++
						break
					}
				}
			}
			for idx, c := range got {
				require.Equal(t, 1, c, "total %d, %d workers: program %d handed out %d times", total, workers, idx, c)
			}
			require.Equal(t, total, l.started())
		}
	}
}
