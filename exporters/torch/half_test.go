package torch_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/testkit"
)

// halfExports builds N = 2 small conv + Linear models, converts them with .half() or
// .bfloat16(), exports them with export_modules into OUT/<dtype> and writes model 1's
// state dict as it is to OUT/<dtype>/state1.safetensors. Then the refusals: a float16 model
// whose forward casts, and one mixing float16 and float32.
const halfExports = `
import sys, torch, torch.nn as nn, torch.nn.functional as F
sys.path.insert(0, "exporters/torch")
import export, safetensors_io

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 5 * 5, 6)
    def forward(self, x):
        return self.fc(F.relu(self.conv(x)).flatten(1))

class Casts(Net):
    def forward(self, x):
        return super().forward(x).float()

out = sys.argv[1]
for name, convert in (("float16", nn.Module.half), ("bfloat16", nn.Module.bfloat16)):
    torch.manual_seed(0)
    models = [convert(Net()) for _ in range(2)]
    x = torch.randn(2, 2, 3, 5, 5).to(models[0].fc.weight.dtype)
    export.export_modules(models, {"x": x}, out + "/" + name)
    safetensors_io.write(out + "/" + name + "/state1.safetensors", dict(models[1].state_dict()))
for label, models in (("casts", [Casts().half() for _ in range(2)]), ("mixed", [Net().half() for _ in range(2)])):
    if label == "mixed":
        for m in models:
            m.fc.float()
    try:
        export.export_modules(models, {"x": torch.randn(2, 2, 3, 5, 5).half()}, out + "/" + label)
        print(label + ": exported")
    except export.ExportError as e:
        print(label + ": " + str(e))
`

// A model converted with .half() or .bfloat16() exports its weights and inputs in that dtype,
// bit for bit, and its expected outputs in it too. PyTorch 1.13's CPU runs bf16 models but has
// no fp16 matmul or convolution: a float16 model is traced and run as its float32 copy (the
// same values), which a forward that casts or a model mixing float dtypes would make wrong, so
// those are refused.
func TestHalfModelsExportInTheirDtype(t *testing.T) {
	needTorch(t)
	out := t.TempDir()
	code, stdout, stderr := runPy(t, nil, "-c", halfExports, out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, c := range []struct {
		dir   string
		dtype graph.DType
		st    safetensors.DType
	}{{"float16", graph.Float16, safetensors.F16}, {"bfloat16", graph.BFloat16, safetensors.BF16}} {
		dir := filepath.Join(out, c.dir)
		g, err := graph.Load(filepath.Join(dir, "graph.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range g.Params {
			if p.Type.DType != c.dtype {
				t.Errorf("%s: param %s is %s in graph.json", c.dir, p.Name, p.Type.DType)
			}
		}
		for _, in := range g.Inputs {
			if in.Type.DType != c.dtype {
				t.Errorf("%s: input %s is %s in graph.json", c.dir, in.Name, in.Type.DType)
			}
		}
		weights := testkit.ReadTensors(t, filepath.Join(dir, "weights.safetensors"))
		state := testkit.ReadTensors(t, filepath.Join(dir, "state1.safetensors"))
		for name, s := range state {
			w := weights[name]
			if w == nil || w.DType != c.st || s.DType != c.st {
				t.Errorf("%s: weight %s is %v, the model's %s", c.dir, name, w, s.DType)
				continue
			}
			if model1 := w.Data[len(w.Data)/2:]; !bytes.Equal(model1, s.Data) {
				t.Errorf("%s: weight %s of model 1 differs from the model's state dict", c.dir, name)
			}
		}
		for name, x := range testkit.ReadTensors(t, filepath.Join(dir, "inputs.safetensors")) {
			if x.DType != c.st {
				t.Errorf("%s: input %s stored as %s", c.dir, name, x.DType)
			}
		}
		checkLoaderAgrees(t, filepath.Join(dir, "graph.json")) // expected outputs in the dtype too
		// reference.py runs the graph as written (float16: in fp32 on its values, as the export)
		if code, stdout, stderr := runPy(t, nil, "exporters/torch/reference.py", filepath.Join(dir, "graph.json"),
			"--rtol", "1e-2", "--atol", "1e-2"); code != 0 || !strings.Contains(stdout, ": ok (") {
			t.Errorf("%s: reference.py: exit %d: %s%s", c.dir, code, stdout, stderr)
		}
	}
	for _, want := range []string{
		"casts: Casts is float16 and its forward casts (Tensor.float at ",
		"mixed: Net mixes float16 with float32",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("want %q in:\n%s", want, stdout)
		}
	}
}

// TestHalfFixturesReproducible re-exports lowering's fp16 and bf16 fixtures and requires the
// committed graph, weights and inputs to be what the exporter makes today, byte for byte, and
// the Go loader to infer the expected outputs' dtypes.
func TestHalfFixturesReproducible(t *testing.T) {
	out, _ := regenerate(t, "lowering/testdata/make_half_fixtures.py")
	committed, _ := filepath.Glob(filepath.Join(repoRoot, "lowering", "testdata", "half", "*", "graph.json"))
	if len(committed) != 9 {
		t.Fatalf("lowering/testdata/half holds %d fixtures, want the 9 of make_half_fixtures.py", len(committed))
	}
	for _, g := range committed {
		dir := filepath.Dir(g)
		name := filepath.Base(dir)
		for _, file := range []string{"graph.json", "weights.safetensors", "inputs.safetensors"} {
			want, err1 := os.ReadFile(filepath.Join(dir, file))
			got, err2 := os.ReadFile(filepath.Join(out, name, file))
			if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
				t.Errorf("lowering/testdata/half/%s/%s differs from a fresh export (%v %v); regenerate with "+
					"/usr/bin/python3 lowering/testdata/make_half_fixtures.py", name, file, err1, err2)
			}
		}
		checkLoaderAgrees(t, filepath.Join(out, name, "graph.json"))
	}
}
