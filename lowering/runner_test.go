package lowering

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
)

// These tests run lowered plans through the real pipeline (front end, CPU backend) and compare
// with the outputs of N PyTorch modules run one by one: |got - want| <= 1e-5 + 1e-4*max|want|
// per output (fp32; the CPU backend computes exactly, the difference is summation order).

var testCompiler = jit.NewCompiler(jit.CompilerOptions{Version: "test"})

func runPlanCPU(t *testing.T, g *graph.Graph, opts Options, inputs map[string]*safetensors.Tensor) map[string]*safetensors.Tensor {
	t.Helper()
	plan, err := Lower(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(plan, cpu.NewDevice(2), testCompiler, g)
	if err != nil {
		t.Fatalf("prepare: %v\nplan:\n%s", err, plan)
	}
	defer r.Close()
	outs, err := r.Run(inputs)
	if err != nil {
		t.Fatalf("run: %v\nplan:\n%s", err, plan)
	}
	return outs
}

// compareTensors reports outputs beyond the tolerance.
func compareTensors(got, want *safetensors.Tensor) error {
	if fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) {
		return fmt.Errorf("shape %v, want %v", got.Shape, want.Shape)
	}
	g, err := got.Float64s()
	if err != nil {
		return err
	}
	w, err := want.Float64s()
	if err != nil {
		return err
	}
	scale, maxd, at := 0.0, 0.0, -1
	for _, v := range w {
		scale = math.Max(scale, math.Abs(v))
	}
	for i := range g {
		d := math.Abs(g[i] - w[i])
		if math.IsNaN(g[i]) != math.IsNaN(w[i]) {
			d = math.Inf(1)
		}
		if d > maxd {
			maxd, at = d, i
		}
	}
	if bound := 1e-5 + 1e-4*scale; maxd > bound {
		return fmt.Errorf("max |diff| %.3g at flat index %d (got %g, want %g) > bound %.3g", maxd, at, g[at], w[at], bound)
	}
	return nil
}

func readTensors(t *testing.T, path string) map[string]*safetensors.Tensor {
	t.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ts, err := f.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*safetensors.Tensor{}
	for _, x := range ts {
		m[x.Name] = x
	}
	return m
}

func checkFixtureCPU(t *testing.T, dir string, opts Options) {
	t.Helper()
	g, err := graph.Load(filepath.Join(dir, "graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	outs := runPlanCPU(t, g, opts, readTensors(t, filepath.Join(dir, "inputs.safetensors")))
	want := readTensors(t, filepath.Join(dir, "expected.safetensors"))
	for name, w := range want {
		got := outs[name]
		if got == nil {
			t.Errorf("output %s missing", name)
			continue
		}
		if err := compareTensors(got, w); err != nil {
			t.Errorf("output %s: %v", name, err)
		}
	}
}

func TestCPUFixtures(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/fixtures/*")
	if len(dirs) == 0 {
		t.Fatal("no fixtures: run /usr/bin/python3 lowering/testdata/make_fixtures.py")
	}
	for _, dir := range dirs {
		for _, v := range exampleVariants {
			// every variant at N=3; the default at every N (keeps the test fast)
			if v.name != "fused-batched" && !strings.HasSuffix(dir, "_n3") {
				continue
			}
			dir, v := dir, v
			t.Run(filepath.Base(dir)+"/"+v.name, func(t *testing.T) { checkFixtureCPU(t, dir, v.opts) })
		}
	}
}

func TestCPUExamples(t *testing.T) {
	paths, _ := filepath.Glob("../examples/*/graph.json")
	for _, p := range paths {
		g, err := graph.Load(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if _, err := Lower(g, Options{}); err != nil && strings.Contains(err.Error(), "is not lowered yet") {
			t.Logf("%s: skipped: %v", p, err)
			continue
		}
		dir := filepath.Dir(p)
		for _, v := range exampleVariants {
			v := v
			t.Run(filepath.Base(dir)+"/"+v.name, func(t *testing.T) { checkFixtureCPU(t, dir, v.opts) })
		}
	}
}
