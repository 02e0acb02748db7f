package lowering

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/testkit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
)

// These tests run lowered plans through the real pipeline (front end, CPU backend) and compare
// with the outputs of N PyTorch modules run one by one: |got - want| <= 1e-5 + 1e-4*max|want|
// per output (testkit.CompareTensors; fp32: the CPU backend computes exactly, the difference
// is summation order).

var testCompiler = jit.NewCompiler(jit.CompilerOptions{Version: "test"})

// NewTestRunner is runner.New. Package runner imports lowering, so lowering's own test files
// cannot import it: exec_test.go, an external test file compiled into the same test binary,
// sets this in TestMain.
var NewTestRunner func(plan *Plan, dev jit.Device, comp *jit.Compiler, g *graph.Graph) (TestRunner, error)

// TestRunner is what these tests use of a *runner.Runner.
type TestRunner interface {
	Run(inputs map[string]*safetensors.Tensor) (map[string]*safetensors.Tensor, error)
	Close()
}

func runPlanCPU(t *testing.T, g *graph.Graph, opts Options, inputs map[string]*safetensors.Tensor) map[string]*safetensors.Tensor {
	t.Helper()
	plan, err := Lower(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewTestRunner(plan, cpu.NewDevice(2), testCompiler, g)
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

func checkFixtureCPU(t *testing.T, dir string, opts Options) {
	t.Helper()
	g, err := graph.Load(filepath.Join(dir, "graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	outs := runPlanCPU(t, g, opts, testkit.ReadTensors(t, filepath.Join(dir, "inputs.safetensors")))
	testkit.CheckOutputs(t, outs, testkit.ReadTensors(t, filepath.Join(dir, "expected.safetensors")))
}

func TestCPUFixtures(t *testing.T) { checkFixtureDirs(t, "testdata/fixtures/*", "make_fixtures.py") }

// checkFixtureDirs runs every fixture directory matching pattern (made by the script named)
// through the CPU pipeline: every variant at N=3, the default at every N (keeps the test fast).
func checkFixtureDirs(t *testing.T, pattern, script string) {
	dirs, _ := filepath.Glob(pattern)
	if len(dirs) == 0 {
		t.Fatalf("no fixtures: run /usr/bin/python3 lowering/testdata/%s", script)
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
