package lowering

import (
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
)

// A graph value named like one the lowering makes for itself (here the dense copy of the
// transposed output "t", "t#copy") must not be shadowed: without the check, output "t#copy"
// silently read the transpose's copy instead of the relu.
func TestInternalValueNameClash(t *testing.T) {
	doc := func(second string) []byte {
		return []byte(`{"format": "widejit.graph/v1", "n": 2,
  "inputs": [{"name": "x", "shape": [2, 3], "dtype": "float32", "per_model": true}],
  "nodes": [{"name": "t", "op": "transpose", "inputs": ["x"], "attrs": {"dim0": 0, "dim1": 1}},
            {"name": "` + second + `", "op": "relu", "inputs": ["x"]}],
  "params": [], "outputs": ["t", "` + second + `"], "init": {"seed": 1}}`)
	}
	g, err := graph.Parse("clash.json", doc("t#copy"), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Lower(g, Options{})
	if err == nil || !strings.Contains(err.Error(), `"t#copy"`) || !strings.Contains(err.Error(), "clash.json") {
		t.Fatalf("lowering a graph whose value t#copy clashes with the copy of output t: %v", err)
	}
	g, err = graph.Parse("clash.json", doc("r"), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lower(g, Options{}); err != nil {
		t.Fatalf("the same graph with the relu named r: %v", err)
	}
}
