package runner

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
	"github.com/widejit/widejit/lowering"
	"github.com/widejit/widejit/triton/ir"
)

// TestPlanMemoryIsCheckedBeforeAllocating: n = 10^8 on an init graph plans fine but needs
// terabytes; the Runner refuses it with the figures and the limit before allocating
// anything (it used to die with "fatal error: runtime: out of memory").
func TestPlanMemoryIsCheckedBeforeAllocating(t *testing.T) {
	g, err := graph.LoadWithOptions("../lowering/testdata/hostile/init_mlp.json", graph.Options{N: 100000000})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := lowering.Lower(g, lowering.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := plan.Memory()
	if want := int64(100000000) * 32 * 64 * 4; m.Inputs != want {
		t.Fatalf("inputs need %d bytes, want %d", m.Inputs, want)
	}
	for _, limit := range []int64{1 << 30, 0} {
		_, err = NewWithOptions(plan, cpu.NewDevice(1), testCompiler, g, Options{MemoryLimit: limit})
		if err == nil || !strings.Contains(err.Error(), "the plan (inputs 762.9 GiB") || !strings.Contains(err.Error(), "more than the limit of") {
			t.Fatalf("limit %d: got %v, want a refusal with the figures", limit, err)
		}
	}
	// Within the limit, the same graph at its own n runs.
	g, err = graph.Load("../lowering/testdata/hostile/init_mlp.json")
	if err != nil {
		t.Fatal(err)
	}
	plan, err = lowering.Lower(g, lowering.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewWithOptions(plan, cpu.NewDevice(1), testCompiler, g, Options{MemoryLimit: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}

// blockingKernel never returns from Launch until released: a device that cannot be stopped.
type blockingKernel struct{ release chan struct{} }

func (k *blockingKernel) Name() string { return "stuck_kernel" }
func (k *blockingKernel) Launch([3]int, []jit.Arg) error {
	<-k.release
	return nil
}

// TestLaunchTimeLimit: the Runner's launch time limit stops a CPU kernel that never ends,
// naming it, and abandons a launch on a device that cannot stop it (refusing later runs).
func TestLaunchTimeLimit(t *testing.T) {
	text, err := os.ReadFile("../jit/cpu/testdata/hang.py") // the CPU executor's hostile kernels
	if err != nil {
		t.Fatal(err)
	}
	dev := cpu.NewDevice(2)
	k, err := testCompiler.Load(dev, jit.Source{File: "hang.py", Text: string(text), Fn: "spin_kernel"},
		jit.Spec{Sig: map[string]string{"out_ptr": "*fp32", "n": "i32"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := dev.Alloc(ir.F32, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{dev: dev, opts: Options{LaunchTimeout: 100 * time.Millisecond}}
	done := make(chan error, 1)
	go func() { done <- r.launchKernel(k, [3]int{2, 1, 1}, []jit.Arg{{Buf: out}, {Scalar: int64(1)}}) }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the launch did not stop within a minute")
	}
	var te *LaunchTimeoutError
	if !errors.As(err, &te) || te.Kernel != "spin_kernel" || !strings.Contains(err.Error(), "kernel spin_kernel: stopped after") ||
		!strings.Contains(err.Error(), "time limit of 100ms") {
		t.Fatalf("got %v, want the kernel named and the time limit", err)
	}
	if r.broken != nil {
		t.Fatal("a CPU launch that stopped marked the runner broken")
	}

	stuck := &blockingKernel{release: make(chan struct{})}
	defer close(stuck.release)
	err = r.launchKernel(stuck, [3]int{1, 1, 1}, nil)
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "kernel stuck_kernel") || !strings.Contains(err.Error(), "abandoned") {
		t.Fatalf("got %v, want an abandoned launch", err)
	}
	r.plan = &lowering.Plan{}
	if _, err := r.Run(nil); err == nil || !strings.Contains(err.Error(), "stopped by the launch time limit") {
		t.Fatalf("run after an abandoned launch: %v", err)
	}
}
