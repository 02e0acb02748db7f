package graph

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type torchCase struct {
	Name    string            `json:"name"`
	Op      string            `json:"op"`
	Attrs   map[string]any    `json:"attrs"`
	Inputs  []json.RawMessage `json:"inputs"`
	Params  map[string][]int  `json:"params"`
	Outputs []struct {
		Shape []int  `json:"shape"`
		DType string `json:"dtype"`
	} `json:"outputs"`
	Tuple bool `json:"tuple"`
}

type tensorDesc struct {
	Shape []int  `json:"shape"`
	DType string `json:"dtype"`
}

// caseGraph builds a one-op graph (plus getitems for tuple outputs) from a PyTorch case.
func caseGraph(c torchCase) (string, error) {
	var inputs, params, nodeInputs []string
	addInput := func(name string, d tensorDesc) string {
		sh, _ := json.Marshal(d.Shape)
		inputs = append(inputs, fmt.Sprintf(`{"name": %q, "shape": %s, "dtype": %q}`, name, sh, d.DType))
		return fmt.Sprintf("%q", name)
	}
	for i, raw := range c.Inputs {
		s := strings.TrimSpace(string(raw))
		switch {
		case s == "null":
			nodeInputs = append(nodeInputs, "null")
		case strings.HasPrefix(s, "["):
			var list []tensorDesc
			if err := json.Unmarshal(raw, &list); err != nil {
				return "", err
			}
			var names []string
			for j, d := range list {
				names = append(names, addInput(fmt.Sprintf("in%d_%d", i, j), d))
			}
			nodeInputs = append(nodeInputs, "["+strings.Join(names, ", ")+"]")
		case strings.HasPrefix(s, "{"):
			var d tensorDesc
			if err := json.Unmarshal(raw, &d); err != nil {
				return "", err
			}
			nodeInputs = append(nodeInputs, addInput(fmt.Sprintf("in%d", i), d))
		default:
			nodeInputs = append(nodeInputs, s) // a number
		}
	}
	var roles []string
	for role, shape := range c.Params {
		sh, _ := json.Marshal(shape)
		params = append(params, fmt.Sprintf(`{"name": "p.%s", "shape": %s, "dtype": "float32"}`, role, sh))
		roles = append(roles, fmt.Sprintf(`%q: "p.%s"`, role, role))
	}
	attrs, _ := json.Marshal(c.Attrs)
	nodes := []string{fmt.Sprintf(`{"name": "node", "op": %q, "inputs": [%s], "params": {%s}, "attrs": %s}`,
		c.Op, strings.Join(nodeInputs, ", "), strings.Join(roles, ", "), attrs)}
	outputs := []string{`"node"`}
	if c.Tuple {
		outputs = nil
		for i := range c.Outputs {
			nodes = append(nodes, fmt.Sprintf(`{"name": "item%d", "op": "getitem", "inputs": ["node"], "attrs": {"index": %d}}`, i, i))
			outputs = append(outputs, fmt.Sprintf(`"item%d"`, i))
		}
	}
	return graphJSON("["+strings.Join(inputs, ", ")+"]", "["+strings.Join(params, ", ")+"]",
		"["+strings.Join(nodes, ",\n")+"]", "["+strings.Join(outputs, ", ")+"]", initSource), nil
}

// TestShapesMatchPyTorch checks inferred output types and the params each op expects against
// what PyTorch computed (testdata/torch_shapes.json, made by testdata/torch_shapes.py).
func TestShapesMatchPyTorch(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "torch_shapes.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fixture struct {
		Torch string      `json:"torch"`
		Cases []torchCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &fixture); err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	for _, c := range fixture.Cases {
		ops[c.Op] = true
		t.Run(c.Name, func(t *testing.T) {
			src, err := caseGraph(c)
			if err != nil {
				t.Fatal(err)
			}
			g, err := parseString(t, src)
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			n := g.Node("node")
			if n.Tuple != c.Tuple || len(n.Outputs) != len(c.Outputs) {
				t.Fatalf("outputs %v (tuple %v), PyTorch gives %v (tuple %v)", n.Outputs, n.Tuple, c.Outputs, c.Tuple)
			}
			for i, o := range c.Outputs {
				want := Type{o.Shape, DType(o.DType)}
				if n.Outputs[i].String() != want.String() {
					t.Errorf("output %d: got %s, PyTorch gives %s", i, n.Outputs[i], want)
				}
			}
			if len(n.Params) != len(c.Params) {
				t.Errorf("bound %d params, PyTorch's module has %d", len(n.Params), len(c.Params))
			}
		})
	}
	// Every op is covered by PyTorch or by a hand-computed case below.
	handCovered := map[string]bool{"mlp_embedder": true, "ada_layer_norm_zero": true, "getitem": true, "identity": true, "contiguous": true,
		"relu": true, "silu": true, "sigmoid": true, "tanh": true, "hardswish": true, "leaky_relu": true, "elu": true, "rms_norm": true}
	for _, op := range Ops() {
		if !ops[op] && !handCovered[op] {
			t.Errorf("op %s has no shape test", op)
		}
	}
}

// TestHandComputedShapes covers ops PyTorch's core lacks (diffusers/flux layers) and the
// element-wise activations, with types worked out by hand from the layer definitions.
func TestHandComputedShapes(t *testing.T) {
	src := graphJSON(
		`[{"name": "x", "shape": [2, 7, 16], "dtype": "float32"}, {"name": "emb", "shape": [2, 16], "dtype": "float32"}]`,
		`[{"name": "l.w", "shape": [96, 16], "dtype": "float32"}, {"name": "l.b", "shape": [96], "dtype": "float32"},
		  {"name": "i.w", "shape": [32, 16], "dtype": "float32"}, {"name": "i.b", "shape": [32], "dtype": "float32"},
		  {"name": "o.w", "shape": [32, 32], "dtype": "float32"}, {"name": "o.b", "shape": [32], "dtype": "float32"},
		  {"name": "rms.w", "shape": [16], "dtype": "float64"}]`,
		`[{"name": "ada", "op": "ada_layer_norm_zero", "inputs": ["x", "emb"], "params": {"linear.weight": "l.w", "linear.bias": "l.b"}, "attrs": {"embedding_dim": 16}},
		  {"name": "xm", "op": "getitem", "inputs": ["ada"], "attrs": {"index": 0}},
		  {"name": "gate", "op": "getitem", "inputs": ["ada"], "attrs": {"index": -1}},
		  {"name": "mlp", "op": "mlp_embedder", "inputs": ["emb"], "params": {"in_layer.weight": "i.w", "in_layer.bias": "i.b", "out_layer.weight": "o.w", "out_layer.bias": "o.b"}, "attrs": {"in_dim": 16, "hidden_dim": 32}},
		  {"name": "a1", "op": "silu", "inputs": ["xm"]},
		  {"name": "a2", "op": "leaky_relu", "inputs": ["a1"], "attrs": {"negative_slope": 0.2}},
		  {"name": "a3", "op": "hardswish", "inputs": ["a2"]},
		  {"name": "a4", "op": "elu", "inputs": ["a3"]},
		  {"name": "a5", "op": "contiguous", "inputs": ["a4"]},
		  {"name": "a6", "op": "identity", "inputs": ["a5"]},
		  {"name": "a7", "op": "tanh", "inputs": ["a6"]},
		  {"name": "a8", "op": "sigmoid", "inputs": ["a7"]},
		  {"name": "a9", "op": "relu", "inputs": ["a8"]},
		  {"name": "x64", "op": "mul", "inputs": ["x", "rms.w"]},
		  {"name": "rms", "op": "rms_norm", "inputs": ["x64"], "params": {"weight": "rms.w"}, "attrs": {"normalized_shape": 16}}]`,
		`["a9", "gate", "mlp", "rms"]`, initSource)
	g, err := parseString(t, src)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"xm": "float32[2,7,16]", "gate": "float32[2,16]", "mlp": "float32[2,32]", "a9": "float32[2,7,16]",
		"x64": "float64[2,7,16]", "rms": "float64[2,7,16]"}
	for name, w := range want {
		if got := g.Node(name).Output().String(); got != w {
			t.Errorf("%s: got %s want %s", name, got, w)
		}
	}
	if n := len(g.Node("ada").Outputs); n != 5 {
		t.Errorf("ada_layer_norm_zero gives %d outputs, want 5", n)
	}
	if eps := g.Node("rms").Attrs.Float("eps"); eps != 2.220446049250313e-16 {
		t.Errorf("rms_norm eps=null on float64 resolved to %v, want finfo(float64).eps", eps)
	}
}

func TestNormalisedAttrs(t *testing.T) {
	src := graphJSON(`[{"name": "x", "shape": [1, 4, 9, 9], "dtype": "float32"}]`,
		`[{"name": "w", "shape": [6, 2, 4, 4], "dtype": "float32"}]`,
		`[{"name": "c", "op": "conv2d", "inputs": ["x"], "params": {"weight": "w"}, "attrs": {"in_channels": 4, "out_channels": 6, "kernel_size": 4, "padding": "same", "groups": 2, "bias": false}},
		  {"name": "p", "op": "max_pool2d", "inputs": ["c"], "attrs": {"kernel_size": [3, 2]}},
		  {"name": "s", "op": "split", "inputs": ["p"], "attrs": {"split_size_or_sections": 4, "dim": -3}},
		  {"name": "s0", "op": "getitem", "inputs": ["s"], "attrs": {"index": -2}},
		  {"name": "m", "op": "sum", "inputs": ["s0"], "attrs": {"dim": [-1, 1]}},
		  {"name": "q", "op": "squeeze", "inputs": ["m"]}]`,
		`["q"]`, initSource)
	g, err := parseString(t, src)
	if err != nil {
		t.Fatal(err)
	}
	c := g.Node("c").Attrs
	check := func(what string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check("conv kernel_size", c.Ints("kernel_size"), []int{4, 4})
	check("conv padding (before)", c.Ints("padding"), []int{1, 1}) // total 3: 1 before, 2 after
	check("conv padding_end", c.Ints("padding_end"), []int{2, 2})
	check("conv stride", c.Ints("stride"), []int{1, 1})
	check("conv padding_mode", c.String("padding_mode"), "zeros")
	p := g.Node("p").Attrs
	check("pool stride defaults to kernel", p.Ints("stride"), []int{3, 2})
	check("pool dilation", p.Ints("dilation"), []int{1, 1})
	check("split dim", g.Node("s").Attrs.Int("dim"), 1)
	check("split sections", g.Node("s").Attrs.Ints("split_size_or_sections"), []int{4, 2})
	check("getitem index", g.Node("s0").Attrs.Int("index"), 0)
	check("sum dims sorted", g.Node("m").Attrs.Ints("dim"), []int{1, 3})
	check("sum keepdim default", g.Node("m").Attrs.Bool("keepdim"), false)
	check("squeeze dims removed", g.Node("q").Attrs.Ints("dim"), []int{0})
	check("squeeze output", g.Node("q").Output(), Type{[]int{3}, Float32})
	defer func() {
		if recover() == nil {
			t.Error("reading a missing attribute did not panic")
		}
	}()
	c.Int("kernel")
}

func TestExamplesLoad(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("..", "examples", "*", "graph.json"))
	if len(paths) == 0 {
		t.Skip("no examples/ yet (the exporter writes them)")
	}
	for _, p := range paths {
		g, err := Load(p)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if _, err := g.ReadInputs(filepath.Join(filepath.Dir(p), "inputs.safetensors")); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestDocExamples loads a graph made of every example node in docs/graph-format.md.
func TestDocExamples(t *testing.T) {
	g, err := Load(filepath.Join("testdata", "doc_examples.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"tok_emb": "float32[4,11,32]", "dw": "float32[4,32,16,16]", "h_n": "float32[1,3,8]",
		"pool": "float32[4,32,8,8]", "gap": "float32[4,32,1,8]", "both": "float32[2,32,64]", "flat": "float32[4,1024]",
		"gru_out": "float32[5,3,16]", "gru_h": "float32[2,3,8]"}
	for name, w := range want {
		if got := g.Node(name).Output().String(); got != w {
			t.Errorf("%s: %s, want %s", name, got, w)
		}
	}
}
