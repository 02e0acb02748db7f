package torch_test

import (
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
)

func openSafetensors(t *testing.T, path string) *safetensors.File {
	t.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatalf("the Go reader rejects a file the exporter wrote: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// checkLoaderAgrees loads an exported graph with the Go loader and requires its inferred output
// types, widened to [N, ...], to be those of the outputs PyTorch computed (expected.safetensors),
// and the inputs file to hold every input as declared.
func checkLoaderAgrees(t *testing.T, graphPath string) {
	t.Helper()
	g, err := graph.Load(graphPath)
	if err != nil {
		t.Fatalf("graph.Load rejects an export: %v", err)
	}
	dir := filepath.Dir(graphPath)
	expected := openSafetensors(t, filepath.Join(dir, "expected.safetensors"))
	if len(g.Outputs) != len(expected.Names()) {
		t.Fatalf("%s: loader sees %d outputs, expected.safetensors holds %v", graphPath, len(g.Outputs), expected.Names())
	}
	for _, out := range g.Outputs {
		info, ok := expected.Info(out.Name)
		if !ok {
			t.Errorf("%s: output %q is not in expected.safetensors", graphPath, out.Name)
			continue
		}
		got := append([]int{g.N}, out.Type.Shape...)
		if !reflect.DeepEqual(got, info.Shape) || out.Type.DType.Safetensors() != info.DType {
			t.Errorf("%s: output %q: loader infers %s %v, PyTorch computed %s %v",
				graphPath, out.Name, out.Type.DType, got, info.DType, info.Shape)
		}
	}
	inputs := openSafetensors(t, filepath.Join(dir, "inputs.safetensors"))
	for _, in := range g.Inputs {
		info, ok := inputs.Info(in.Name)
		want := in.Type.Shape
		if in.PerModel {
			want = append([]int{g.N}, want...)
		}
		if !ok || !reflect.DeepEqual(info.Shape, want) || info.DType != in.Type.DType.Safetensors() {
			t.Errorf("%s: input %q: inputs.safetensors has %+v, graph declares %s %v", graphPath, in.Name, info, in.Type.DType, want)
		}
	}
}

// TestGoLoaderAgreesWithPyTorch runs the Go loader over every committed example: each must load,
// and its inferred output shapes must be the shapes PyTorch produced.
func TestGoLoaderAgreesWithPyTorch(t *testing.T) {
	names := committedExamples(t)
	if len(names) == 0 {
		t.Fatal("no examples under examples/")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			checkLoaderAgrees(t, filepath.Join(repoRoot, "examples", name, "graph.json"))
		})
	}
}

func readFloats(t *testing.T, f *safetensors.File, name string) ([]float32, []int) {
	t.Helper()
	tensor, err := f.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	v, err := tensor.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v, tensor.Shape
}

// TestMLPExampleByHand recomputes examples/mlp with plain loops in Go from the weights and inputs
// files and compares with expected.safetensors: the stacking order, layout and values of all
// three files agree with what PyTorch computed, independently of the exporter's own checks.
func TestMLPExampleByHand(t *testing.T) {
	dir := filepath.Join(repoRoot, "examples", "mlp")
	w := openSafetensors(t, filepath.Join(dir, "weights.safetensors"))
	w1, s1 := readFloats(t, w, "fc1.weight")
	b1, _ := readFloats(t, w, "fc1.bias")
	w2, s2 := readFloats(t, w, "fc2.weight")
	b2, _ := readFloats(t, w, "fc2.bias")
	x, sx := readFloats(t, openSafetensors(t, filepath.Join(dir, "inputs.safetensors")), "x")
	want, sy := readFloats(t, openSafetensors(t, filepath.Join(dir, "expected.safetensors")), "fc2")
	n, hidden, in, out, batch := s1[0], s1[1], s1[2], s2[1], sx[1]
	if !reflect.DeepEqual(s1, []int{8, 128, 64}) || !reflect.DeepEqual(s2, []int{8, 64, 128}) ||
		!reflect.DeepEqual(sx, []int{8, 32, 64}) || !reflect.DeepEqual(sy, []int{8, 32, 64}) {
		t.Fatalf("unexpected shapes: fc1.weight %v fc2.weight %v x %v fc2 %v", s1, s2, sx, sy)
	}
	worst := 0.0
	h := make([]float64, hidden)
	for m := 0; m < n; m++ {
		for b := 0; b < batch; b++ {
			xr := x[(m*batch+b)*in:]
			for j := 0; j < hidden; j++ {
				acc := float64(b1[m*hidden+j])
				wr := w1[(m*hidden+j)*in:]
				for k := 0; k < in; k++ {
					acc += float64(wr[k]) * float64(xr[k])
				}
				h[j] = math.Max(acc, 0)
			}
			for j := 0; j < out; j++ {
				acc := float64(b2[m*out+j])
				wr := w2[(m*out+j)*hidden:]
				for k := 0; k < hidden; k++ {
					acc += float64(wr[k]) * h[k]
				}
				worst = math.Max(worst, math.Abs(acc-float64(want[(m*batch+b)*out+j])))
			}
		}
	}
	if worst > 1e-4 {
		t.Fatalf("max abs error %.3g between the Go loops and PyTorch's outputs", worst)
	}
	// The models must differ, or N copies of one model would pass everything above.
	if reflect.DeepEqual(w1[:hidden*in], w1[hidden*in:2*hidden*in]) {
		t.Fatal("models 0 and 1 have the same fc1.weight; each model must be seeded differently")
	}
}
