package widejit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/widejit/widejit"
)

func loadMLP(t *testing.T, opts ...widejit.Option) *widejit.Model {
	t.Helper()
	m, err := widejit.Load("examples/mlp/graph.json", append([]widejit.Option{widejit.WithDevice("cpu"), widejit.WithoutCache()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// The sequential baseline (N launches per kernel) computes what the wide model does, bit
// for bit on the CPU; a profiled model reports every launch.
func TestSequentialMatchesWideAndProfile(t *testing.T) {
	wide, seq := loadMLP(t, widejit.WithProfile()), loadMLP(t, widejit.WithSequential())
	in, err := wide.RandomInputs(3)
	if err != nil {
		t.Fatal(err)
	}
	a, err := wide.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := seq.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	va, _ := a["fc2"].Float32s()
	vb, _ := b["fc2"].Float32s()
	if d := maxAbsDiff(va, vb); d != 0 {
		t.Errorf("wide and sequential differ by %g", d)
	}
	if kt := wide.KernelTimes(); len(kt) != wide.Launches() || kt[0].PerRun <= 0 {
		t.Errorf("profile: %d kernel times for %d launches (%+v)", len(kt), wide.Launches(), kt)
	}
	if !strings.Contains(wide.Explain(), "fc1") {
		t.Errorf("explain does not name the graph's nodes:\n%s", wide.Explain())
	}
}

// Bad options and bad inputs are errors that say what is wrong, never a panic.
func TestLoadAndRunErrors(t *testing.T) {
	if _, err := widejit.Load("examples/mlp/graph.json", widejit.WithDevice("tpu")); err == nil || !strings.Contains(err.Error(), `"tpu"`) {
		t.Errorf("device tpu: %v", err)
	}
	if _, err := widejit.Load("examples/mlp/graph.json", widejit.WithDevice("cpu"), widejit.WithThreads(-2)); err == nil || !strings.Contains(err.Error(), "threads") {
		t.Errorf("threads -2: %v", err)
	}
	if _, err := widejit.Load("examples/nope/graph.json"); err == nil || !strings.Contains(err.Error(), "examples/nope/graph.json") {
		t.Errorf("missing graph: %v", err)
	}
	m := loadMLP(t)
	if _, err := m.Run(context.Background(), nil); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("missing input: %v", err)
	}
	// (the batch size, dim 1, may change: a wrong feature count may not)
	x, _ := widejit.NewFloat32([]int{8, 31, 63}, make([]float32, 8*31*63))
	if _, err := m.Run(context.Background(), map[string]*widejit.Tensor{"x": x}); err == nil || !strings.Contains(err.Error(), "63") {
		t.Errorf("wrong input shape: %v", err)
	}
	if _, err := widejit.NewFloat32([]int{2, 3}, make([]float32, 5)); err == nil {
		t.Error("NewFloat32 accepted 5 values for shape [2 3]")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in, _ := m.RandomInputs(1)
	if _, err := m.Run(ctx, in); err == nil {
		t.Error("a run under a cancelled context went ahead")
	}
	m.Close()
	if _, err := m.Run(context.Background(), in); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("run after Close: %v", err)
	}
}
