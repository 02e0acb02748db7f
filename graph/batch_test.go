package graph

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph/safetensors"
)

// batchGraph parses a graph with init weights from its inputs, params and nodes JSON.
func batchGraph(t *testing.T, extra, inputs, params, nodes, outputs string) *Graph {
	t.Helper()
	src := `{"format": "widejit.graph/v1", "n": 2, ` + extra + `"inputs": [` + inputs + `], "params": [` + params +
		`], "nodes": [` + nodes + `], "outputs": [` + outputs + `], "init": {"seed": 1}}`
	g, err := Parse("g.json", []byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

// A view that bakes the batch in, alone or merged with another dim ([B*T, C] and back), is
// rewritten; shapes follow the batch; -1 entries stay.
func TestWithBatchRewritesViews(t *testing.T) {
	g := batchGraph(t, "", `{"name": "x", "shape": [4, 5, 6], "dtype": "float32"}`, "",
		`{"name": "flat", "op": "reshape", "inputs": ["x"], "attrs": {"shape": [20, 6]}},
		 {"name": "back", "op": "view", "inputs": ["flat"], "attrs": {"shape": [4, 5, 6]}},
		 {"name": "f", "op": "flatten", "inputs": ["back"], "attrs": {"start_dim": 1}},
		 {"name": "t", "op": "transpose", "inputs": ["x"], "attrs": {"dim0": 0, "dim1": 1}},
		 {"name": "tf", "op": "view", "inputs": ["t"], "attrs": {"shape": [-1, 6]}},
		 {"name": "tb", "op": "view", "inputs": ["tf"], "attrs": {"shape": [5, 4, 6]}},
		 {"name": "head", "op": "view", "inputs": ["f"], "attrs": {"shape": [4, -1]}}`,
		`"head", "tb"`)
	if g.Batch() != 4 {
		t.Fatalf("batch %d, want 4", g.Batch())
	}
	for _, b := range []int{1, 7} {
		gb, err := g.WithBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][]int{"flat": {5 * b, 6}, "back": {b, 5, 6}, "f": {b, 30}, "tf": {5 * b, 6}, "tb": {5, b, 6}, "head": {b, 30}}
		for name, s := range want {
			if got := gb.Node(name).Output().Shape; !slices.Equal(got, s) {
				t.Errorf("batch %d: %s is %v, want %v", b, name, got, s)
			}
		}
		if gb.Batch() != b {
			t.Errorf("re-specialised graph has batch %d, want %d", gb.Batch(), b)
		}
		if g2, err := gb.WithBatch(4); err != nil || g2 != g {
			t.Errorf("WithBatch(4) of the batch-%d graph: %v, %v; want the original", b, g2, err)
		}
	}
	if g.Node("flat").Output().Shape[0] != 20 {
		t.Error("WithBatch changed the original graph")
	}
}

// The batch dim of time-major recurrent and attention inputs is dim 1; batch_dim overrides;
// an input without one keeps its shape.
func TestBatchDims(t *testing.T) {
	g := batchGraph(t, "", `{"name": "x", "shape": [5, 3, 4], "dtype": "float32"},
		{"name": "pos", "shape": [5, 1, 4], "dtype": "float32", "batch_dim": null},
		{"name": "m", "shape": [3, 5], "dtype": "bool"}`,
		`{"name": "w", "shape": [12, 4], "dtype": "float32"}, {"name": "wo", "shape": [4, 4], "dtype": "float32"}`,
		`{"name": "h", "op": "add", "inputs": ["x", "pos"]},
		 {"name": "a", "op": "multihead_attention", "inputs": ["h", "h", "h", "m"], "params": {"in_proj_weight": "w", "out_proj.weight": "wo"},
		  "attrs": {"embed_dim": 4, "num_heads": 2, "bias": false, "need_weights": false}},
		 {"name": "o", "op": "getitem", "inputs": ["a"], "attrs": {"index": 0}}`, `"o"`)
	for name, want := range map[string]int{"x": 1, "m": 0} {
		if d, ok := g.BatchDim(name); !ok || d != want {
			t.Errorf("%s: batch dim %d (%v), want %d", name, d, ok, want)
		}
	}
	if _, ok := g.BatchDim("pos"); ok {
		t.Error("pos has a batch dim despite batch_dim: null")
	}
	gb, err := g.WithBatch(6)
	if err != nil {
		t.Fatal(err)
	}
	if got := gb.Node("o").Output().Shape; !slices.Equal(got, []int{5, 6, 4}) {
		t.Errorf("o is %v at batch 6, want [5 6 4]", got)
	}
	if got := gb.Input("pos").Type.Shape; !slices.Equal(got, []int{5, 1, 4}) {
		t.Errorf("pos is %v, want [5 1 4]", got)
	}
}

func TestWithBatchRefusals(t *testing.T) {
	x := `{"name": "x", "shape": [4, 6], "dtype": "float32"}`
	relu := `{"name": "r", "op": "relu", "inputs": ["x"]}`
	t.Run("zero", func(t *testing.T) {
		_, err := batchGraph(t, "", x, "", relu, `"r"`).WithBatch(0)
		wantErr(t, err, "batch size 0")
	})
	t.Run("fixed", func(t *testing.T) {
		g := batchGraph(t, `"dynamic_batch": false, `, x, "", relu, `"r"`)
		_, err := g.WithBatch(3)
		wantErr(t, err, "fixed", "dynamic_batch")
		if g.Batch() != 0 {
			t.Errorf("fixed graph has batch %d", g.Batch())
		}
	})
	t.Run("inputs disagree", func(t *testing.T) {
		g := batchGraph(t, "", x+`, {"name": "y", "shape": [5, 6], "dtype": "float32"}`, "", relu, `"r", "y"`)
		_, err := g.WithBatch(3)
		wantErr(t, err, `"x"`, `"y"`, "dim 0", "disagree", "batch_dim")
	})
	t.Run("param follows the batch", func(t *testing.T) {
		g := batchGraph(t, "", x, `{"name": "p", "shape": [4, 6], "dtype": "float32"}`,
			`{"name": "s", "op": "add", "inputs": ["x", "p"]}`, `"s"`)
		_, err := g.WithBatch(3)
		wantErr(t, err, `node "s"`, `param "p"`, "batch")
	})
	t.Run("view splits the batch", func(t *testing.T) {
		g := batchGraph(t, "", x, "", `{"name": "v", "op": "view", "inputs": ["x"], "attrs": {"shape": [2, 12]}}`, `"v"`)
		_, err := g.WithBatch(3)
		wantErr(t, err, `node "v"`, "splits the batch", "[2 12]")
	})
	t.Run("rank changes", func(t *testing.T) {
		g := batchGraph(t, "", `{"name": "x", "shape": [1, 6], "dtype": "float32"}`, "",
			`{"name": "s", "op": "squeeze", "inputs": ["x"]}`, `"s"`)
		_, err := g.WithBatch(3)
		wantErr(t, err, `node "s"`, "rank changes")
	})
	t.Run("bad batch_dim", func(t *testing.T) {
		src := `{"format": "widejit.graph/v1", "n": 1, "inputs": [{"name": "x", "shape": [4], "dtype": "float32", "batch_dim": 2}],
			"params": [], "nodes": [], "outputs": ["x"], "init": {"seed": 1}}`
		_, err := Parse("g.json", []byte(src), Options{})
		wantErr(t, err, "inputs[0].batch_dim", "batch_dim must be null or a dim")
	})
}

// InputBatch reads the batch size off the tensors of a run; inputs that disagree, or a batch
// of 0, are refused naming the inputs and dims; CheckInputs names the dim that does not fit.
func TestInputBatch(t *testing.T) {
	g := batchGraph(t, "", `{"name": "x", "shape": [4, 6], "dtype": "float32"},
		{"name": "y", "shape": [4, 6], "dtype": "float32", "per_model": false}`, "",
		`{"name": "s", "op": "add", "inputs": ["x", "y"]}`, `"s"`)
	ten := func(shape ...int) *safetensors.Tensor {
		return safetensors.FromFloat32s("", shape, make([]float32, numel(shape)))
	}
	b, err := g.InputBatch(map[string]*safetensors.Tensor{"x": ten(2, 7, 6), "y": ten(7, 6)})
	if err != nil || b != 7 {
		t.Fatalf("batch %d, %v; want 7", b, err)
	}
	_, err = g.InputBatch(map[string]*safetensors.Tensor{"x": ten(2, 7, 6), "y": ten(5, 6)})
	wantErr(t, err, `"x"`, `"y"`, "disagree", "7 in dim 1", "5 in dim 0")
	_, err = g.InputBatch(map[string]*safetensors.Tensor{"x": ten(2, 0, 6), "y": ten(0, 6)})
	wantErr(t, err, `"x"`, "is 0")
	gb, err := g.ForInputs(map[string]*safetensors.Tensor{"x": ten(2, 7, 5), "y": ten(7, 5)})
	wantErr(t, err, `"x"`, "dim 2 is 5", "only the batch (dim 1) may change")
	if gb != nil {
		t.Error("ForInputs returned a graph with an error")
	}
}

// ReadInputsAnyBatch re-specialises the graph for the batch size of the file.
func TestReadInputsAnyBatch(t *testing.T) {
	g := batchGraph(t, "", `{"name": "x", "shape": [4, 6], "dtype": "float32"}`, "", `{"name": "r", "op": "relu", "inputs": ["x"]}`, `"r"`)
	path := filepath.Join(t.TempDir(), "in.safetensors")
	if err := safetensors.Write(path, []*safetensors.Tensor{safetensors.FromFloat32s("x", []int{2, 3, 6}, make([]float32, 36))}, nil); err != nil {
		t.Fatal(err)
	}
	gb, in, err := g.ReadInputsAnyBatch(path)
	if err != nil {
		t.Fatal(err)
	}
	if gb.Batch() != 3 || in["x"] == nil || !slices.Equal(gb.Outputs[0].Type.Shape, []int{3, 6}) {
		t.Errorf("batch %d, output %v", gb.Batch(), gb.Outputs[0].Type.Shape)
	}
	os.Remove(path)
}
