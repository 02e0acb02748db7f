package graph

import (
	"slices"
	"testing"

	"github.com/widejit/widejit/graph/safetensors"
)

// attentionNodes: a self-attention-like block over x [B, T, 8]: the tokens folded into the
// batch for a Linear ([B*T, 8]) and back, heads split off, scores [B, 2, T, T].
const attentionNodes = `
	{"name": "ln", "op": "layer_norm", "inputs": ["x"], "params": {"weight": "ln.weight", "bias": "ln.bias"}, "attrs": {"normalized_shape": [8]}},
	{"name": "flat", "op": "reshape", "inputs": ["ln"], "attrs": {"shape": [32, 8]}},
	{"name": "lin", "op": "linear", "inputs": ["flat"], "params": {"weight": "lin.weight", "bias": "lin.bias"}, "attrs": {"in_features": 8, "out_features": 8}},
	{"name": "back", "op": "view", "inputs": ["lin"], "attrs": {"shape": [2, 16, 8]}},
	{"name": "heads", "op": "view", "inputs": ["back"], "attrs": {"shape": [2, 16, 2, 4]}},
	{"name": "q", "op": "transpose", "inputs": ["heads"], "attrs": {"dim0": 1, "dim1": 2}},
	{"name": "kt", "op": "transpose", "inputs": ["q"], "attrs": {"dim0": 2, "dim1": 3}},
	{"name": "scores", "op": "matmul", "inputs": ["q", "kt"]},
	{"name": "merged", "op": "view", "inputs": ["q"], "attrs": {"shape": [2, 2, 64]}}`

const attentionParams = `{"name": "ln.weight", "shape": [8], "dtype": "float32"}, {"name": "ln.bias", "shape": [8], "dtype": "float32"},
	{"name": "lin.weight", "shape": [8, 8], "dtype": "float32"}, {"name": "lin.bias", "shape": [8], "dtype": "float32"}`

const seqInput = `{"name": "x", "shape": [2, 16, 8], "dtype": "float32", "dynamic_dims": [1]}`

// A graph exported at sequence length 16 runs at 20 and 9, at its batch size and another:
// every shape that holds T follows it, views with T folded in included.
func TestWithSizesFollowsTheSequence(t *testing.T) {
	g := batchGraph(t, "", seqInput, attentionParams, attentionNodes, `"scores", "merged"`)
	if got := g.DynamicDims("x"); !slices.Equal(got, []int{1}) {
		t.Fatalf("DynamicDims(x) = %v, want [1]", got)
	}
	for _, c := range []struct{ b, t int }{{0, 20}, {0, 9}, {3, 20}, {1, 9}, {5, 16}} {
		b := c.b
		if b == 0 {
			b = 2
		}
		gs, err := g.WithSizes(c.b, Sizes{"x": {1: c.t}})
		if err != nil {
			t.Fatalf("B=%d T=%d: %v", b, c.t, err)
		}
		T := c.t
		want := map[string][]int{"flat": {b * T, 8}, "back": {b, T, 8}, "heads": {b, T, 2, 4}, "scores": {b, 2, T, T}, "merged": {b, 2, 4 * T}}
		for name, s := range want {
			if got := gs.Node(name).Output().Shape; !slices.Equal(got, s) {
				t.Errorf("B=%d T=%d: %s is %v, want %v", b, T, name, got, s)
			}
		}
		if got := gs.Input("x").Type.Shape; !slices.Equal(got, []int{b, T, 8}) {
			t.Errorf("B=%d T=%d: input x is %v", b, T, got)
		}
		// the inputs' shapes alone choose the same specialisation
		probe := map[string]*safetensors.Tensor{"x": {Name: "x", DType: safetensors.F32, Shape: []int{2, b, T, 8}}}
		gi, err := g.ForInputs(probe)
		if err != nil {
			t.Fatalf("B=%d T=%d: ForInputs: %v", b, T, err)
		}
		if got := gi.Node("scores").Output().Shape; !slices.Equal(got, want["scores"]) {
			t.Errorf("B=%d T=%d: ForInputs gives scores %v", b, T, got)
		}
	}
	if g.Node("scores").Output().Shape[2] != 16 {
		t.Error("WithSizes changed the original graph")
	}
	// a model range keeps its range; no change of size gives the graph itself
	r, err := g.Models(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := r.WithSizes(3, Sizes{"x": {1: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi, total := rs.ModelRange(); lo != 1 || hi != 2 || total != 2 || !slices.Equal(rs.Node("scores").Output().Shape, []int{3, 2, 20, 20}) {
		t.Errorf("model range [1, 2) at B=3, T=20: range [%d, %d) of %d, scores %v", lo, hi, total, rs.Node("scores").Output().Shape)
	}
	if same, err := r.WithSizes(0, Sizes{"x": {1: 16}}); err != nil || same != r {
		t.Errorf("the exported sizes: %v, %v; want the graph itself", same, err)
	}
}

// A dim not listed in dynamic_dims keeps its size: inputs that differ there are refused.
func TestStaticDimRefused(t *testing.T) {
	g := batchGraph(t, "", `{"name": "x", "shape": [2, 16, 8], "dtype": "float32"}`, attentionParams, attentionNodes, `"scores"`)
	probe := map[string]*safetensors.Tensor{"x": {Name: "x", DType: safetensors.F32, Shape: []int{2, 2, 20, 8}}}
	_, err := g.ForInputs(probe)
	wantErr(t, err, `input "x"`, "dim 2 is 20", "only the batch (dim 1) may change")
	if _, err := g.WithSizes(0, Sizes{"x": {1: 20}}); err == nil {
		t.Error("WithSizes changed a dim that is not dynamic")
	}
}

// Where the graph bakes the sequence length in, the run is refused naming the node and dim.
func TestWithSizesRefusesBakedInSizes(t *testing.T) {
	// a learned positional table [16, 8] added whole
	g := batchGraph(t, "", seqInput, `{"name": "pos", "shape": [16, 8], "dtype": "float32"}`,
		`{"name": "h", "op": "add", "inputs": ["x", "pos"]}`, `"h"`)
	if _, err := g.WithSizes(0, Sizes{"x": {1: 16}}); err != nil {
		t.Fatalf("at the exported length: %v", err)
	}
	_, err := g.WithSizes(0, Sizes{"x": {1: 20}})
	wantErr(t, err, "g.json", `"h"`, `param "pos"`, `dynamic dim 1 of input "x"`, "at 20 (exported at 16)")
	// a Linear over the sequence
	g = batchGraph(t, "", seqInput, `{"name": "w", "shape": [4, 16], "dtype": "float32"}`,
		`{"name": "t", "op": "transpose", "inputs": ["x"], "attrs": {"dim0": 1, "dim1": 2}},
		 {"name": "mix", "op": "linear", "inputs": ["t"], "params": {"weight": "w"}, "attrs": {"in_features": 16, "out_features": 4, "bias": false}}`, `"mix"`)
	_, err = g.WithSizes(3, Sizes{"x": {1: 9}})
	wantErr(t, err, `"mix"`, `input "t"`, `dynamic dim 1 of input "x"`, "a Linear cannot follow")
	// a dim that is not dynamic
	_, err = g.WithSizes(0, Sizes{"x": {2: 9}})
	wantErr(t, err, `dim 2 of input "x" is not dynamic`)
}

// dynamic_dims is checked where it is written.
func TestDynamicDimsErrors(t *testing.T) {
	for _, c := range []struct{ dims, want string }{
		{`[3]`, "inputs[0].dynamic_dims[0]"},
		{`[1, 1]`, "listed twice"},
		{`[0]`, "is the input's batch_dim"},
		{`1`, "must be a list"},
	} {
		src := `{"format": "widejit.graph/v1", "n": 1, "inputs": [{"name": "x", "shape": [2, 16, 8], "dtype": "float32", "batch_dim": 0, "dynamic_dims": ` +
			c.dims + `}], "params": [], "nodes": [{"name": "y", "op": "relu", "inputs": ["x"]}], "outputs": ["y"], "init": {"seed": 1}}`
		_, err := Parse("g.json", []byte(src), Options{})
		wantErr(t, err, c.want)
	}
	// the batch dim as inferred (dim 0) listed as dynamic: the batch is fixed, saying why
	g := batchGraph(t, "", `{"name": "x", "shape": [2, 16, 8], "dtype": "float32", "dynamic_dims": [0]}`, "",
		`{"name": "y", "op": "relu", "inputs": ["x"]}`, `"y"`)
	wantErr(t, g.BatchError(), `input "x": dim 0 is both its batch dim and in its "dynamic_dims"`)
	src := `{"format": "widejit.graph/v1", "n": 1, "inputs": [{"name": "x", "shape": [2, 16, 8], "dtype": "float32", "dynamic_dims": [-2]}], "params": [], "nodes": [{"name": "y", "op": "relu", "inputs": ["x"]}], "outputs": ["y"], "init": {"seed": 1}}`
	g, err := Parse("g.json", []byte(src), Options{})
	if err != nil || !slices.Equal(g.DynamicDims("x"), []int{1}) {
		t.Errorf("dynamic_dims [-2]: %v, %v", g, err)
	}
}

// A table sliced to the sequence length (a causal mask buffer, mask[:T, :T]) follows it up to
// the table's size; beyond, the slice is refused, naming the node and the dim.
func TestSliceEndFollows(t *testing.T) {
	g := batchGraph(t, "", `{"name": "x", "shape": [2, 6, 4], "dtype": "float32", "dynamic_dims": [1]}`,
		`{"name": "mask", "shape": [8, 8], "dtype": "float32"}`,
		`{"name": "rows", "op": "slice", "inputs": ["mask"], "attrs": {"dim": 0, "end": 6, "end_follows": ["x", 1]}},
		 {"name": "cols", "op": "slice", "inputs": ["rows"], "attrs": {"dim": 1, "end": 6, "end_follows": ["x", 1]}},
		 {"name": "kt", "op": "transpose", "inputs": ["x"], "attrs": {"dim0": 1, "dim1": 2}},
		 {"name": "scores", "op": "matmul", "inputs": ["x", "kt"]},
		 {"name": "masked", "op": "add", "inputs": ["scores", "cols"]}`, `"masked"`)
	for _, T := range []int{1, 7, 8} {
		gs, err := g.WithSizes(3, Sizes{"x": {1: T}})
		if err != nil {
			t.Fatalf("T=%d: %v", T, err)
		}
		if got := gs.Node("masked").Output().Shape; !slices.Equal(got, []int{3, T, T}) {
			t.Errorf("T=%d: masked is %v", T, got)
		}
	}
	_, err := g.WithSizes(0, Sizes{"x": {1: 9}})
	wantErr(t, err, `node "rows"`, "attrs.end", `dim 1 of input "x", now 9`, `dim 0 (size 8) of "mask"`, "baked in at 8")
	// end_follows is checked where it is written
	for _, c := range []struct{ follows, want string }{
		{`["y", 1]`, `names "y", which is not an input`},
		{`["x", 2]`, "not one of its dynamic_dims [1]"},
		{`"x"`, "must be [input name, dim]"},
	} {
		src := `{"format": "widejit.graph/v1", "n": 1, "inputs": [{"name": "x", "shape": [2, 6, 4], "dtype": "float32", "dynamic_dims": [1]}], "params": [],
			"nodes": [{"name": "s", "op": "slice", "inputs": ["x"], "attrs": {"dim": 2, "end": 4, "end_follows": ` + c.follows + `}}], "outputs": ["s"], "init": {"seed": 1}}`
		_, err := Parse("g.json", []byte(src), Options{})
		wantErr(t, err, c.want)
	}
}
