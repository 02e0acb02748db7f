package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// isolatedCache keeps the kernel cache of a test in its own directory.
func isolatedCache(t *testing.T) { t.Setenv("XDG_CACHE_HOME", t.TempDir()) }

// The README's command: the mlp example on the CPU equals its PyTorch outputs.
func TestRunMLPExampleCheck(t *testing.T) {
	isolatedCache(t)
	code, out, errOut := runCLI(t, "run", "../../examples/mlp/graph.json", "--device", "cpu",
		"--inputs", "../../examples/mlp/inputs.safetensors", "--check", "../../examples/mlp/expected.safetensors")
	if code != 0 || !strings.Contains(out, "fc2") || !strings.Contains(out, " ok") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// Every example passes --check in --mode sequential (wide is TestRunMLPExampleCheck and
// lowering's TestCPUExamples).
func TestRunExamplesCheck(t *testing.T) {
	isolatedCache(t)
	graphs, _ := filepath.Glob("../../examples/*/graph.json")
	if len(graphs) == 0 {
		t.Fatal("no examples")
	}
	for _, g := range graphs {
		dir := filepath.Dir(g)
		name := filepath.Base(dir)
		code, out, errOut := runCLI(t, "run", filepath.Join(dir, "graph.json"), "--mode", "sequential",
			"--inputs", filepath.Join(dir, "inputs.safetensors"), "--check", filepath.Join(dir, "expected.safetensors"))
		if code != 0 {
			t.Errorf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", name, code, out, errOut)
		}
	}
}

// A bfloat16 graph (lowering's halfmlp_bf16 fixture, PyTorch rounding every op to bf16)
// passes --check with bfloat16's default rtol, and fails with fp32's.
func TestRunBF16CheckTolerance(t *testing.T) {
	isolatedCache(t)
	dir := "../../lowering/testdata/idioms/halfmlp_bf16_n3"
	args := []string{"run", filepath.Join(dir, "graph.json"), "--device", "cpu", "--inputs", filepath.Join(dir, "inputs.safetensors"),
		"--check", filepath.Join(dir, "expected.safetensors")}
	code, out, errOut := runCLI(t, args...)
	if code != 0 || !strings.Contains(out, "0.016") || !strings.Contains(out, " ok") {
		t.Fatalf("default tolerance: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, append(args, "--rtol", "1e-4")...)
	if code != exitCheck || !strings.Contains(errOut, "check failed: mul differ") || !strings.Contains(errOut, "rtol=0.0001") {
		t.Fatalf("--rtol 1e-4: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestRunJSONCompareRepeat(t *testing.T) {
	isolatedCache(t)
	code, out, errOut := runCLI(t, "run", "../../examples/mlp/graph.json", "--json", "--repeat", "3", "--compare")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Outputs []struct {
			Name  string `json:"name"`
			Shape []int  `json:"shape"`
		} `json:"outputs"`
		Timing struct {
			CompileMS *float64 `json:"compile_ms"`
			MedianMS  *float64 `json:"median_ms"`
			Repeats   int      `json:"repeats"`
		} `json:"timing"`
		Compare struct {
			Speedup    float64 `json:"speedup"`
			MaxAbsDiff float64 `json:"max_abs_diff"`
		} `json:"compare"`
		Cache map[string]any `json:"cache"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(doc.Outputs) != 1 || doc.Outputs[0].Name != "fc2" || len(doc.Outputs[0].Shape) != 3 || doc.Outputs[0].Shape[0] != 8 {
		t.Errorf("outputs: %+v", doc.Outputs)
	}
	if doc.Timing.CompileMS == nil || doc.Timing.MedianMS == nil || doc.Timing.Repeats != 3 {
		t.Errorf("timing: %+v", doc.Timing)
	}
	if doc.Compare.Speedup <= 0 || doc.Compare.MaxAbsDiff > 1e-4 {
		t.Errorf("compare: %+v (wide and sequential must agree)", doc.Compare)
	}
	if doc.Cache == nil {
		t.Errorf("no cache section")
	}
}

// --dropout mc: reproducible for a seed, different across seeds, and different from eval.
func TestRunDropoutMC(t *testing.T) {
	isolatedCache(t)
	dir := t.TempDir()
	graphPath := filepath.Join(dir, "g.json")
	os.WriteFile(graphPath, []byte(`{"format": "widejit.graph/v1", "n": 3,
  "inputs": [{"name": "x", "shape": [4, 33], "dtype": "float32"}], "params": [],
  "nodes": [{"name": "drop", "op": "dropout", "inputs": ["x"], "attrs": {"p": 0.5}}],
  "outputs": ["drop"], "init": {"seed": 1}}`), 0o644)
	digest := func(args ...string) string {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"run", graphPath, "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		var doc struct {
			Outputs []struct {
				SHA string `json:"sha256_prefix"`
			} `json:"outputs"`
		}
		json.Unmarshal([]byte(out), &doc)
		return doc.Outputs[0].SHA
	}
	a := digest("--dropout", "mc", "--seed", "4")
	b := digest("--dropout", "mc", "--seed", "4")
	c := digest("--dropout", "mc", "--seed", "5")
	e := digest()
	if a != b {
		t.Errorf("same seed, different outputs: %s vs %s", a, b)
	}
	if a == c || a == e {
		t.Errorf("masks do not depend on the seed or equal eval mode: %s %s %s", a, c, e)
	}
	if code, _, errOut := runCLI(t, "run", graphPath, "--dropout", "sometimes"); code != 2 {
		t.Errorf("bad --dropout: exit %d (want 2): %s", code, errOut)
	}
}

func TestKernelDumpAndExplain(t *testing.T) {
	isolatedCache(t)
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "kernel", "dump", "../../examples/mlp/graph.json", "--dir", dir, "--no-fusion")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.py"))
	if len(files) != 3 || !strings.Contains(out, "3 kernels") {
		t.Errorf("unfused mlp: %d kernel files, want 3 (linear, relu, linear): %s", len(files), out)
	}
	for _, f := range files {
		text, _ := os.ReadFile(f)
		if !strings.Contains(string(text), "@triton.jit") || !strings.Contains(string(text), "import triton.language as tl") {
			t.Errorf("%s is not a standalone Triton kernel", f)
		}
	}
	for _, name := range []string{"plan.txt", "plan.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("missing %s", name)
		}
	}
	code, out, errOut = runCLI(t, "graph", "explain", "../../examples/mlp/graph.json")
	if code != 0 || !strings.Contains(out, "node fc1 (linear)") || !strings.Contains(out, "fused") || !strings.Contains(out, "why:") {
		t.Errorf("explain: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "kernel", "dump", "../../examples/mlp/graph.json"); code != 2 {
		t.Errorf("dump without --dir: exit %d (want 2): %s", code, errOut)
	}

	// --device cpu: the CPU's plan, whose Linear weights are transposed once by kernels of
	// their own (the generic GPU plan reads them as they lie)
	cpuDir := t.TempDir()
	if code, _, errOut := runCLI(t, "kernel", "dump", "../../examples/mlp/graph.json", "--dir", cpuDir, "--device", "cpu"); code != 0 {
		t.Fatalf("dump --device cpu: exit %d: %s", code, errOut)
	}
	for _, d := range []struct {
		dir  string
		want int
	}{{cpuDir, 2}, {dir, 0}} {
		files, _ := filepath.Glob(filepath.Join(d.dir, "*transpose*.py"))
		if len(files) != d.want {
			t.Errorf("%s: %d transpose kernels, want %d", d.dir, len(files), d.want)
		}
	}
	if code, _, errOut := runCLI(t, "kernel", "dump", "../../examples/mlp/graph.json", "--dir", t.TempDir(), "--device", "cpu", "--arch", "sm_80"); code != 2 || !strings.Contains(errOut, "--arch") {
		t.Errorf("dump --device cpu --arch: exit %d (want 2): %s", code, errOut)
	}
}
