package graph

import (
	"slices"
	"strings"
	"testing"
)

// Bad attributes of the ops of real PyTorch code (clamp, hardtanh, to, expand) are refused with
// the JSON path, the node and what was expected.
func TestRealCodeOpsRefuseBadAttrs(t *testing.T) {
	for _, tc := range []struct{ node, path, want string }{
		{`{"name": "y", "op": "clamp", "inputs": ["x"]}`, "nodes[0].attrs", "clamp needs min or max (both are null)"},
		{`{"name": "y", "op": "clamp", "inputs": ["x"], "attrs": {"min": "a"}}`, "nodes[0].attrs.min", "expected a number or null"},
		{`{"name": "y", "op": "hardtanh", "inputs": ["x"], "attrs": {"min_val": 2, "max_val": 1}}`, "nodes[0].attrs.max_val", "max_val 1 is below min_val 2"},
		{`{"name": "y", "op": "to", "inputs": ["x"], "attrs": {"dtype": "int64"}}`, "nodes[0].attrs.dtype", `dtype must be one of "float32", "float16", "bfloat16", "float64"`},
		{`{"name": "y", "op": "expand", "inputs": ["x"], "attrs": {"sizes": [3, 5]}}`, "nodes[0].attrs.sizes", "sizes[1] is 5, but dim 1 of \"x\" [3 4] is 4 (only size-1 dims expand)"},
		{`{"name": "y", "op": "expand", "inputs": ["x"], "attrs": {"sizes": [4]}}`, "nodes[0].attrs.sizes", "fewer than the 2 dims"},
		{`{"name": "y", "op": "expand", "inputs": ["x"], "attrs": {"sizes": [-1, 3, 4]}}`, "nodes[0].attrs.sizes", "a new leading dim needs a size"},
		{`{"name": "y", "op": "expand", "inputs": ["x"], "attrs": {"sizes": [2, 3, 4], "batch_dims": [3]}}`, "nodes[0].attrs.batch_dims", "3 is not a dim of the output (0 to 2)"},
		{`{"name": "y", "op": "pad", "inputs": ["x"], "attrs": {"pad": [1, 2, 3]}}`, "nodes[0].attrs.pad", "an even number of entries"},
		{`{"name": "y", "op": "pad", "inputs": ["x"], "attrs": {"pad": [1, 1, 1, 1, 1, 1]}}`, "nodes[0].attrs.pad", "pads 3 dims"},
		{`{"name": "y", "op": "pad", "inputs": ["x"], "attrs": {"pad": [4, 0], "mode": "reflect"}}`, "nodes[0].attrs.pad", "reflect padding of dim 1 (size 4) needs pads below its size"},
		{`{"name": "y", "op": "pad", "inputs": ["x"], "attrs": {"pad": [-1, 0], "mode": "replicate"}}`, "nodes[0].attrs.pad", "replicate padding needs pads >= 0"},
		{`{"name": "y", "op": "pad", "inputs": ["x"], "attrs": {"pad": [-2, -2]}}`, "nodes[0].attrs.pad", "leaves dim 1 of \"x\" [3 4] with 0 elements"},
		{`{"name": "y", "op": "pad", "inputs": ["x"], "attrs": {"pad": [1, 1], "mode": "zeros"}}`, "nodes[0].attrs.mode", "mode must be one of"},
	} {
		src := graphJSON(`[{"name": "x", "shape": [3, 4], "dtype": "float32"}]`, `[]`, "["+tc.node+"]", `["y"]`, initSource)
		_, err := parseString(t, src)
		ps := problems(t, err)
		if len(ps) != 1 || ps[0].Path != tc.path || ps[0].Node != "y" || !strings.Contains(ps[0].Msg, tc.want) {
			t.Errorf("%s: got %v, want one problem at %s containing %q", tc.node, ps, tc.path, tc.want)
		}
	}
}

// expand at another batch size: the entries of batch_dims scale, an entry over the input's
// batch dim keeps the input's size, and a batch-sized expand without batch_dims is refused
// where it meets the batch.
func TestExpandFollowsTheBatch(t *testing.T) {
	g := batchGraph(t, "", `{"name": "x", "shape": [4, 1, 3], "dtype": "float32"}`,
		`{"name": "tok", "shape": [1, 1, 3], "dtype": "float32"}`,
		`{"name": "e", "op": "expand", "inputs": ["x"], "attrs": {"sizes": [4, 5, 3], "batch_dims": [0]}},
		 {"name": "t", "op": "expand", "inputs": ["tok"], "attrs": {"sizes": [4, 5, 3], "batch_dims": [0]}},
		 {"name": "s", "op": "add", "inputs": ["e", "t"]}`, `"s"`)
	gb, err := g.WithBatch(7)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]int{"e": {7, 5, 3}, "t": {7, 5, 3}, "s": {7, 5, 3}} {
		if got := gb.Node(name).Output().Shape; !slices.Equal(got, want) {
			t.Errorf("%s at batch 7: %v, want %v", name, got, want)
		}
	}
	fixed := batchGraph(t, "", `{"name": "x", "shape": [4, 1, 3], "dtype": "float32"}`,
		`{"name": "tok", "shape": [1, 1, 3], "dtype": "float32"}`,
		`{"name": "t", "op": "expand", "inputs": ["tok"], "attrs": {"sizes": [4, 1, 3]}},
		 {"name": "s", "op": "add", "inputs": ["x", "t"]}`, `"s"`)
	_, err = fixed.WithBatch(7)
	wantErr(t, err, `node "s"`, "cannot broadcast")
}
