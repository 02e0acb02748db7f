package outputs

import (
	"math"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
)

// reluGraph has one output, act: float32[3, 5] per model.
const reluGraph = `{"format": "widejit.graph/v1", "n": 1, "init": {"seed": 0},
  "inputs": [{"name": "x", "shape": [3, 5], "dtype": "float32"}],
  "params": [], "nodes": [{"name": "act", "op": "relu", "inputs": ["x"]}], "outputs": ["act"]}`

func TestCompare(t *testing.T) {
	g, err := graph.Parse("g.json", []byte(reluGraph), graph.Options{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(v ...float32) map[string]*safetensors.Tensor {
		full := make([]float32, 15)
		copy(full, v)
		return map[string]*safetensors.Tensor{"act": safetensors.FromFloat32s("act", []int{1, 3, 5}, full)}
	}
	exp := mk(1, -2, 4)
	// |diff| 3e-4 <= 1e-5 + 1e-4 * 4: ok; relative error 3e-4/4
	d := Compare(g, mk(1, -2, 4.0003), exp, 1e-4, 1e-5)[0]
	if !d.OK || math.Abs(d.MaxAbs-3e-4) > 1e-6 || d.Scale != 4 || math.Abs(d.MaxRel-7.5e-5) > 1e-6 {
		t.Errorf("small diff: %+v", d)
	}
	if d := Compare(g, mk(1, -2, 4.001), exp, 1e-4, 1e-5)[0]; d.OK {
		t.Errorf("diff 1e-3 passed: %+v", d)
	}
	nan := float32(math.NaN())
	if d := Compare(g, mk(1, nan, 4), exp, 1e-4, 1e-5)[0]; d.OK || d.NaNs != 1 {
		t.Errorf("NaN passed: %+v", d)
	}
	if d := Compare(g, mk(1, nan, 4), mk(1, nan, 4), 0, 0)[0]; !d.OK {
		t.Errorf("NaN vs NaN failed: %+v", d)
	}
}
