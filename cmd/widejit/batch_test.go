package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// widejit run takes inputs at any batch size (the batch fixtures are exported at 4): --check
// against the PyTorch outputs at that batch size passes, an expected file at another batch
// size is refused naming the output and shapes, and --batch generates inputs at a batch size.
func TestRunAnyBatchSize(t *testing.T) {
	isolatedCache(t)
	for _, name := range []string{"mlp", "seqfirst"} {
		dir := filepath.Join("..", "..", "lowering", "testdata", "batch", name)
		for _, b := range []string{"b1", "b7"} {
			code, out, errOut := runCLI(t, "run", filepath.Join(dir, "graph.json"), "--device", "cpu",
				"--inputs", filepath.Join(dir, "inputs_"+b+".safetensors"), "--check", filepath.Join(dir, "expected_"+b+".safetensors"))
			if code != 0 || !strings.Contains(out, " ok") || strings.Contains(out, "FAIL") {
				t.Errorf("%s at %s: exit %d\nstdout:\n%s\nstderr:\n%s", name, b, code, out, errOut)
			}
		}
	}
	dir := filepath.Join("..", "..", "lowering", "testdata", "batch", "mlp")
	code, out, errOut := runCLI(t, "run", filepath.Join(dir, "graph.json"), "--device", "cpu",
		"--inputs", filepath.Join(dir, "inputs_b7.safetensors"), "--check", filepath.Join(dir, "expected.safetensors"))
	if code == 0 || !strings.Contains(errOut, `output "fc2"`) || !strings.Contains(errOut, "[3 7 5]") {
		t.Errorf("expected outputs at batch 4 for inputs at 7: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "run", filepath.Join(dir, "graph.json"), "--device", "cpu", "--batch", "5", "--json")
	if code != 0 || !strings.Contains(out, `"shape": [`) || !strings.Contains(strings.Join(strings.Fields(out), ""), `"shape":[3,5,5]`) {
		t.Errorf("--batch 5: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "run", filepath.Join(dir, "graph.json"), "--device", "cpu", "--batch", "5",
		"--inputs", filepath.Join(dir, "inputs_b7.safetensors"))
	if code == 0 || !strings.Contains(errOut, "--batch") {
		t.Errorf("--batch with --inputs: exit %d, stderr:\n%s", code, errOut)
	}
}

// widejit run takes inputs at any sequence length where the graph marks it dynamic (the
// fixtures of lowering/testdata/dynamic are exported at length 16 with --dynamic): --check
// against the PyTorch outputs at that length passes.
func TestRunAnySequenceLength(t *testing.T) {
	isolatedCache(t)
	for _, c := range [][2]string{{"gpt", "b2_t9"}, {"seqvit", "b3_t20"}} {
		dir := filepath.Join("..", "..", "lowering", "testdata", "dynamic", c[0])
		code, out, errOut := runCLI(t, "run", filepath.Join(dir, "graph.json"), "--device", "cpu",
			"--inputs", filepath.Join(dir, "inputs_"+c[1]+".safetensors"), "--check", filepath.Join(dir, "expected_"+c[1]+".safetensors"))
		if code != 0 || !strings.Contains(out, " ok") || strings.Contains(out, "FAIL") {
			t.Errorf("%s at %s: exit %d\nstdout:\n%s\nstderr:\n%s", c[0], c[1], code, out, errOut)
		}
	}
}
