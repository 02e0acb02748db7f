package widejit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/widejit/widejit"
)

// mlpInputs are the example MLP's inputs at batch size b, drawn from seed.
func mlpInputs(t *testing.T, m *widejit.Model, b int, seed int64) map[string]*widejit.Tensor {
	t.Helper()
	r := uint64(seed)*2654435761 + 1
	data := make([]float32, m.N()*b*64)
	for i := range data {
		r = r*6364136223846793005 + 1442695040888963407
		data[i] = float32(int64(r>>40)%2001-1000) / 1000
	}
	x, err := widejit.NewFloat32([]int{m.N(), b, 64}, data)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*widejit.Tensor{"x": x}
}

// TestModelIsSafeForConcurrentUse: goroutines sharing one Model, each with inputs of its
// own (two batch sizes, so plans are compiled while others run), get exactly the outputs of
// sequential runs on a Model of their own. Run with -race.
func TestModelIsSafeForConcurrentUse(t *testing.T) {
	for name, device := range map[string]string{"one device": "cpu", "two devices": "cpu:0,cpu:1"} {
		t.Run(name, func(t *testing.T) { concurrentRuns(t, loadMLP(t, widejit.WithDevice(device)), loadMLP(t)) })
	}
}

// concurrentRuns runs shared from several goroutines and compares every result with ref's
// sequential runs.
func concurrentRuns(t *testing.T, shared, ref *widejit.Model) {
	const goroutines, runs = 8, 6
	want := map[string][]byte{}
	inputs := map[string]map[string]*widejit.Tensor{}
	for g := range goroutines {
		for r := range runs {
			key := fmt.Sprint(g, "/", r)
			inputs[key] = mlpInputs(t, ref, 4+4*(r%2), int64(g*runs+r))
			out, err := ref.Run(context.Background(), inputs[key])
			if err != nil {
				t.Fatal(err)
			}
			want[key] = out["fc2"].Data
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*runs)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var reuse map[string]*widejit.Tensor
			for r := range runs {
				key := fmt.Sprint(g, "/", r)
				out, err := shared.RunInto(context.Background(), inputs[key], reuse)
				switch {
				case err != nil:
					errs <- fmt.Errorf("run %s: %v", key, err)
				case !bytes.Equal(out["fc2"].Data, want[key]):
					errs <- fmt.Errorf("run %s: outputs differ from a sequential run's", key)
				}
				reuse = out
				_ = shared.Launches() + shared.Kernels() // the plan facts, read meanwhile
				_ = shared.Explain()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCloseWaitsForRuns: Close while goroutines run waits for the run in progress; every
// run either completes with the right outputs or, after Close, fails saying the model is
// closed.
func TestCloseWaitsForRuns(t *testing.T) {
	m, ref := loadMLP(t), loadMLP(t)
	in := mlpInputs(t, ref, 32, 1)
	want, err := ref.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var ran sync.WaitGroup
	ran.Add(4)
	errs := make(chan error, 64)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				out, err := m.Run(context.Background(), in)
				if i == 0 {
					ran.Done()
				}
				if err != nil {
					if !strings.Contains(err.Error(), "closed model") {
						errs <- err
					}
					return
				}
				if !bytes.Equal(out["fc2"].Data, want["fc2"].Data) {
					errs <- errors.New("outputs differ from a sequential run's")
					return
				}
			}
		}()
	}
	ran.Wait()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRunStopsWhenCanceled: a run canceled once it has started returns ctx.Err() (it used
// to return its outputs and nil, having ignored the context), in either mode; the Model
// still runs afterwards. The cancel comes at the run's third look at its context (past the
// start), and, where a run is long enough here to be sure it is still going, 1 ms in.
func TestRunStopsWhenCanceled(t *testing.T) {
	for _, mode := range []string{"wide", "sequential"} {
		t.Run(mode, func(t *testing.T) {
			var opts []widejit.Option
			if mode == "sequential" {
				opts = append(opts, widejit.WithSequential())
			}
			m := loadMLP(t, opts...)
			in := mlpInputs(t, m, 8192, 2)
			want, err := m.Run(context.Background(), in) // compiles batch 8192, then runs
			if err != nil {
				t.Fatal(err)
			}
			ctx := &cancelAfter{Context: context.Background(), checks: 2, done: make(chan struct{})}
			if out, err := m.Run(ctx, in); err != context.Canceled || out != nil {
				t.Fatalf("canceled run: got %d outputs and error %v, want context.Canceled", len(out), err)
			}
			start := time.Now()
			if _, err := m.Run(context.Background(), in); err != nil {
				t.Fatal(err)
			}
			if time.Since(start) >= 50*time.Millisecond {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(time.Millisecond, cancel)
				if out, err := m.Run(ctx, in); !errors.Is(err, context.Canceled) || out != nil {
					t.Fatalf("run canceled 1 ms in: got %d outputs and error %v, want ctx.Err()", len(out), err)
				}
				ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
				defer cancel()
				if _, err := m.Run(ctx, in); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("run past its deadline: got %v, want context.DeadlineExceeded", err)
				}
			} else {
				t.Log("a run takes under 50 ms here: the 1 ms cancel is left out")
			}
			out, err := m.Run(context.Background(), in)
			if err != nil || !bytes.Equal(out["fc2"].Data, want["fc2"].Data) {
				t.Fatalf("a run after the canceled ones: %v", err)
			}
		})
	}
}

// cancelAfter is a context canceled at its checks+1-th Err: deterministically once a run
// that looked at it on entry has started.
type cancelAfter struct {
	context.Context
	mu     sync.Mutex
	checks int
	done   chan struct{}
}

func (c *cancelAfter) Done() <-chan struct{} { return c.done }

func (c *cancelAfter) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checks--; c.checks == -1 {
		close(c.done)
	}
	if c.checks < 0 {
		return context.Canceled
	}
	return nil
}
