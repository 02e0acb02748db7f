package cpu

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/widejit/widejit/jit"
)

// launchWithin runs a launch under a time limit and fails the test if it does not come back
// within a generous bound (a hang).
func launchWithin(t *testing.T, k *Kernel, limit time.Duration, grid [3]int, args []jit.Arg) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- k.LaunchContext(ctx, grid, args) }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("the launch did not stop within a minute of its time limit")
		return nil
	}
}

// TestLaunchTimeLimitStopsLoopsAndGrids: an endless while loop, a long for loop nest and a
// grid of 2^62 programs stop soon after the launch's context is done, with an error naming
// the kernel and wrapping context.DeadlineExceeded.
func TestLaunchTimeLimitStopsLoopsAndGrids(t *testing.T) {
	const file = "testdata/hang.py"
	sig := map[string]string{"out_ptr": "*fp32", "n": "i32"}
	out := f32Buf(t, make([]float32, 1))
	cases := []struct {
		fn   string
		grid [3]int
		args []jit.Arg
	}{
		{"spin_kernel", grid1(4), []jit.Arg{buf(out), scalar(int64(1))}},
		{"long_for_kernel", grid1(2), []jit.Arg{buf(out), scalar(int64(math.MaxInt32))}},
		{"tiny_kernel", [3]int{math.MaxInt32, math.MaxInt32, 1}, []jit.Arg{buf(out)}},
	}
	for _, c := range cases {
		t.Run(c.fn, func(t *testing.T) {
			s := sig
			if c.fn == "tiny_kernel" {
				s = map[string]string{"out_ptr": "*fp32"}
			}
			k := loadKernel(t, file, c.fn, s, nil)
			err := launchWithin(t, k, 100*time.Millisecond, c.grid, c.args)
			if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "kernel "+c.fn+": stopped after") {
				t.Fatalf("got %v, want the kernel named and a deadline error", err)
			}
			// The kernel is still usable afterwards.
			if c.fn == "tiny_kernel" {
				if err := k.Launch(grid1(1), c.args); err != nil {
					t.Fatalf("launch after a stopped one: %v", err)
				}
			}
		})
	}
}

// A context already past its deadline stops even a one-program launch, before the program
// runs, and the kernel's next launch (which reuses the launch state) runs normally: the
// context's callback runs on a goroutine of its own, and a short launch could end before it.
func TestExpiredContextStopsAShortLaunch(t *testing.T) {
	k := loadKernel(t, "testdata/hang.py", "tiny_kernel", map[string]string{"out_ptr": "*fp32"}, nil)
	for range 50 {
		out := f32Buf(t, make([]float32, 1))
		ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
		time.Sleep(time.Microsecond)
		err := k.LaunchContext(ctx, grid1(1), []jit.Arg{buf(out)})
		cancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "(0 of 1 programs started)") {
			t.Fatalf("got %v, want a deadline error before any program", err)
		}
		if out.f32()[0] != 0 {
			t.Fatalf("the program ran: out = %v", out.f32()[0])
		}
		if err := k.Launch(grid1(1), []jit.Arg{buf(out)}); err != nil {
			t.Fatalf("the next launch: %v", err)
		}
	}
}

// TestGridOverflow: a grid whose program count overflows int64 is refused before anything
// runs (it used to wrap and run the wrong number of programs, or hang).
func TestGridOverflow(t *testing.T) {
	k := loadKernel(t, "testdata/hang.py", "tiny_kernel", map[string]string{"out_ptr": "*fp32"}, nil)
	out := f32Buf(t, make([]float32, 1))
	for _, g := range [][3]int{{math.MaxInt32, math.MaxInt32, math.MaxInt32}, {math.MaxInt32, math.MaxInt32, 3}} {
		err := launchWithin(t, k, time.Minute, g, []jit.Arg{buf(out)})
		if err == nil || !strings.Contains(err.Error(), "kernel tiny_kernel: grid") || !strings.Contains(err.Error(), "more than 2^63-1 programs") {
			t.Fatalf("grid %v: got %v, want an overflow error", g, err)
		}
	}
	if _, err := jit.GridPrograms("k", [3]int{0, 1, 1}, math.MaxInt32); err == nil {
		t.Fatal("a zero grid dimension was accepted")
	}
	if n, err := jit.GridPrograms("k", [3]int{math.MaxInt32, math.MaxInt32, 2}, math.MaxInt32); err != nil || n != 2*(math.MaxInt32*math.MaxInt32) {
		t.Fatalf("GridPrograms(2^31-1, 2^31-1, 2) = %d, %v", n, err)
	}
}
