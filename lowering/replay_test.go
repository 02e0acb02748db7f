package lowering

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
)

// The replay tests run plans through testdata/run_plan.py: an independent executor (numpy,
// with a stand-in for triton.language) of the dumped kernels, compared with PyTorch's
// outputs. They check the kernels' text and the plan (addressing, offsets, strategies, buffer
// reuse) before and besides the Go pipeline.

const python = "/usr/bin/python3"

func needPython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		t.Skip("needs /usr/bin/python3 with numpy (bash .ci/setup)")
	}
	if err := exec.Command(python, "-c", "import numpy").Run(); err != nil {
		t.Skip("needs numpy for /usr/bin/python3 (bash .ci/setup)")
	}
}

// replay dumps plan and runs it with run_plan.py against expected.
func replay(t *testing.T, plan *Plan, weights, inputs, expected string) {
	t.Helper()
	dir := t.TempDir()
	if _, err := plan.WriteDump(dir); err != nil {
		t.Fatal(err)
	}
	args := []string{"testdata/run_plan.py", dir, "--weights", weights, "--inputs", inputs}
	if expected != "" {
		args = append(args, "--expected", expected)
	}
	out, err := exec.Command(python, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("replay of %s failed: %v\n%s\nplan:\n%s", plan.Graph, err, out, plan)
	}
	if !strings.Contains(string(out), `"ok": true`) {
		t.Fatalf("replay: %s", out)
	}
}

var exampleVariants = []struct {
	name string
	opts Options
}{
	{"fused-batched", Options{}},
	{"unfused", Options{NoFusion: true}},
	{"sequential", Options{Strategy: Sequential}},
	{"model-major", Options{ModelMajor: true}},
}

func TestReplayExamples(t *testing.T) {
	needPython(t)
	paths, _ := filepath.Glob("../examples/*/graph.json")
	ran := 0
	for _, p := range paths {
		g, err := graph.Load(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		dir := filepath.Dir(p)
		for _, v := range exampleVariants {
			plan, err := Lower(g, v.opts)
			if err != nil {
				if strings.Contains(err.Error(), "is not lowered yet") {
					t.Logf("%s: skipped: %v", p, err)
					break
				}
				t.Errorf("%s %s: %v", p, v.name, err)
				continue
			}
			t.Run(filepath.Base(dir)+"/"+v.name, func(t *testing.T) {
				replay(t, plan, filepath.Join(dir, "weights.safetensors"), filepath.Join(dir, "inputs.safetensors"),
					filepath.Join(dir, "expected.safetensors"))
			})
			ran++
		}
	}
	if ran == 0 {
		t.Skip("no lowerable examples in ../examples")
	}
}
