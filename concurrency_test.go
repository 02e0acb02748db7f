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

// TestRunStopsWhenCanceled: a run canceled 1 ms in returns ctx.Err() (it used to return
// its outputs and nil, having ignored the context), in either mode; the Model still runs
// afterwards.
func TestRunStopsWhenCanceled(t *testing.T) {
	for _, mode := range []string{"wide", "sequential"} {
		t.Run(mode, func(t *testing.T) {
			var opts []widejit.Option
			if mode == "sequential" {
				opts = append(opts, widejit.WithSequential())
			}
			m := loadMLP(t, opts...)
			in := mlpInputs(t, m, 4096, 2)
			start := time.Now()
			want, err := m.Run(context.Background(), in) // compiles batch 4096, then runs
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Run(context.Background(), in); err != nil {
				t.Fatal(err)
			}
			if time.Since(start) < 20*time.Millisecond {
				t.Skip("the runs are too short here to cancel one 1 ms in")
			}
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(time.Millisecond, cancel)
			out, err := m.Run(ctx, in)
			if !errors.Is(err, context.Canceled) || err != ctx.Err() || out != nil {
				t.Fatalf("canceled run: got %d outputs and error %v, want ctx.Err()", len(out), err)
			}
			ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			if _, err := m.Run(ctx, in); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("run past its deadline: got %v, want context.DeadlineExceeded", err)
			}
			out, err = m.Run(context.Background(), in)
			if err != nil || !bytes.Equal(out["fc2"].Data, want["fc2"].Data) {
				t.Fatalf("a run after the canceled ones: %v", err)
			}
		})
	}
}
