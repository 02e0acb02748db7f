package graph

import (
	"strings"
	"testing"
)

// A bidirectional GRU needs the reverse direction's parameters and states for
// num_layers * 2 directions; its output holds both directions.
func TestBidirectionalRNN(t *testing.T) {
	const params = `[{"name": "w0", "shape": [24, 6], "dtype": "float32"}, {"name": "u0", "shape": [24, 8], "dtype": "float32"},
  {"name": "w0r", "shape": [24, 6], "dtype": "float32"}, {"name": "u0r", "shape": [24, 8], "dtype": "float32"}]`
	src := func(h0 string, reverse string) string {
		return graphJSON(`[{"name": "x", "shape": [5, 3, 6], "dtype": "float32"}, {"name": "h0", "shape": `+h0+`, "dtype": "float32"}]`, params,
			`[{"name": "gru", "op": "gru", "inputs": ["x", "h0"], "params": {"weight_ih_l0": "w0", "weight_hh_l0": "u0"`+reverse+`},
  "attrs": {"input_size": 6, "hidden_size": 8, "bias": false, "bidirectional": true}},
 {"name": "out", "op": "getitem", "inputs": ["gru"], "attrs": {"index": 0}}]`, `["out"]`, initSource)
	}
	g, err := parseString(t, src("[2, 3, 8]", `, "weight_ih_l0_reverse": "w0r", "weight_hh_l0_reverse": "u0r"`))
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Node("out").Output().String(); got != "float32[5,3,16]" {
		t.Errorf("output %s, want float32[5,3,16]", got)
	}
	for _, c := range []struct{ h0, reverse, path, msg string }{
		{"[2, 3, 8]", `, "weight_ih_l0_reverse": "w0r"`, "nodes[0].params", `missing param role "weight_hh_l0_reverse"`},
		{"[1, 3, 8]", `, "weight_ih_l0_reverse": "w0r", "weight_hh_l0_reverse": "u0r"`, "nodes[0].inputs[1]",
			"initial state must be float32[2 3 8] (num_layers * num_directions, batch, hidden_size)"},
	} {
		_, err := parseString(t, src(c.h0, c.reverse))
		p := problems(t, err)[0]
		if p.Path != c.path || p.Node != "gru" || !strings.Contains(p.Msg, c.msg) {
			t.Errorf("got %+v, want path %q node gru and %q", p, c.path, c.msg)
		}
	}
}
