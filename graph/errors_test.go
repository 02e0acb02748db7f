package graph

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph/safetensors"
)

// mlpNodes is a valid two-layer MLP; tests break one thing at a time.
const mlpInputs = `[{"name": "x", "shape": [32, 64], "dtype": "float32"}]`
const mlpParams = `[{"name": "fc1.weight", "shape": [128, 64], "dtype": "float32"},
  {"name": "fc1.bias", "shape": [128], "dtype": "float32"},
  {"name": "fc2.weight", "shape": [64, 128], "dtype": "float32"},
  {"name": "fc2.bias", "shape": [64], "dtype": "float32"}]`
const mlpNodes = `[
  {"name": "fc1", "op": "linear", "inputs": ["x"], "params": {"weight": "fc1.weight", "bias": "fc1.bias"}, "attrs": {"in_features": 64, "out_features": 128}},
  {"name": "act", "op": "relu", "inputs": ["fc1"]},
  {"name": "fc2", "op": "linear", "inputs": ["act"], "params": {"weight": "fc2.weight", "bias": "fc2.bias"}, "attrs": {"in_features": 128, "out_features": 64}}
]`

func graphJSON(inputs, params, nodes, outputs, source string) string {
	return `{
"format": "widejit.graph/v1",
"n": 4,
"inputs": ` + inputs + `,
"params": ` + params + `,
"nodes": ` + nodes + `,
"outputs": ` + outputs + `,
` + source + `
}`
}

const initSource = `"init": {"seed": 1}`

func parseString(t *testing.T, src string) (*Graph, error) {
	t.Helper()
	return Parse(filepath.Join(t.TempDir(), "graph.json"), []byte(src), Options{})
}

// problems returns the load problems, failing the test when loading succeeded.
func problems(t *testing.T, err error) []Problem {
	t.Helper()
	if err == nil {
		t.Fatal("loaded without error")
	}
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("error is %T, not *graph.Error: %v", err, err)
	}
	return ge.Problems
}

func TestValidMLP(t *testing.T) {
	g, err := parseString(t, graphJSON(mlpInputs, mlpParams, mlpNodes, `["fc2"]`, initSource))
	if err != nil {
		t.Fatal(err)
	}
	if g.N != 4 || len(g.Nodes) != 3 || g.Node("fc2").Output().String() != "float32[32,64]" {
		t.Fatalf("unexpected graph: n=%d nodes=%d out=%v", g.N, len(g.Nodes), g.Node("fc2").Outputs)
	}
	if g.Node("fc1").Param("bias").Name != "fc1.bias" || g.Node("fc1").Attrs.Bool("bias") != true {
		t.Fatal("params or defaults not bound")
	}
}

func TestLoadErrors(t *testing.T) {
	replace := func(old, new string) string {
		s := graphJSON(mlpInputs, mlpParams, mlpNodes, `["fc2"]`, initSource)
		if !strings.Contains(s, old) {
			t.Fatalf("test setup: %q not in graph", old)
		}
		return strings.Replace(s, old, new, 1)
	}
	cases := []struct {
		name string
		src  string
		path string // expected JSON path prefix of the first problem
		node string
		msg  string
	}{
		{"unknown op", replace(`"op": "relu"`, `"op": "rleu"`), "nodes[1].op", "act", `unknown op "rleu"; did you mean "relu"?`},
		{"misspelled input", replace(`"inputs": ["fc1"]`, `"inputs": ["fc_1"]`), "nodes[1].inputs[0]", "act", `unknown input "fc_1"; did you mean "fc1"?`},
		{"unknown input", replace(`"inputs": ["fc1"]`, `"inputs": ["zzzzzz"]`), "nodes[1].inputs[0]", "act", `unknown input "zzzzzz"`},
		{"cycle", replace(`"inputs": ["x"]`, `"inputs": ["fc2"]`), "nodes[0]", "fc1", "cycle: fc1 -> act -> fc2 -> fc1"},
		{"self cycle", replace(`"inputs": ["fc1"]`, `"inputs": ["act"]`), "nodes[1]", "act", "cycle: act -> act"},
		{"arity", replace(`"inputs": ["fc1"]`, `"inputs": ["fc1", "x"]`), "nodes[1].inputs", "act", "wrong arity: relu takes 1 inputs (x), got 2"},
		{"missing input", replace(`"inputs": ["fc1"]`, `"inputs": []`), "nodes[1].inputs", "act", "wrong arity"},
		{"shape mismatch", replace(`"in_features": 128`, `"in_features": 100`), "nodes[2].inputs[0]", "fc2", "shape mismatch: linear with in_features=100 needs [..., 100]"},
		{"param shape", replace(`"shape": [64], "dtype"`, `"shape": [65], "dtype"`), "nodes[2].params.bias", "fc2", `shape mismatch: param "fc2.bias" has shape [65], linear bias needs [64]`},
		{"param dtype", replace(`"shape": [64], "dtype": "float32"`, `"shape": [64], "dtype": "float64"`), "nodes[2].params.bias", "fc2", `dtype mismatch: param "fc2.bias" is float64, expected float32`},
		{"unknown param", replace(`"bias": "fc2.bias"`, `"bias": "fc2.bais"`), "nodes[2].params.bias", "fc2", `unknown param "fc2.bais"; did you mean "fc2.bias"?`},
		{"unknown role", replace(`"bias": "fc2.bias"}`, `"bias": "fc2.bias", "wieght": "fc2.weight"}`), "nodes[2].params.wieght", "fc2", `unknown param role "wieght" for op linear; did you mean "weight"?`},
		{"missing role", replace(`"bias": "fc2.bias"}`, `"weight2": "fc2.bias"}`), "nodes[2].params", "fc2", `missing param role "bias"`},
		{"bias but bias=false", replace(`"out_features": 64}`, `"out_features": 64, "bias": false}`), "nodes[2].params.bias", "fc2", `not used when bias=false`},
		{"attr out of range", replace(`"out_features": 128`, `"out_features": 0`), "nodes[0].attrs.out_features", "fc1", "out_features must be >= 1, got 0"},
		{"attr wrong type", replace(`"out_features": 128`, `"out_features": "128"`), "nodes[0].attrs.out_features", "fc1", `expected an integer, got the string "128"`},
		{"attr float for int", replace(`"out_features": 128`, `"out_features": 128.5`), "nodes[0].attrs.out_features", "fc1", "expected an integer"},
		{"unknown attr", replace(`"out_features": 128`, `"out_features": 128, "out_feature": 3`), "nodes[0].attrs.out_feature", "fc1", `unknown attribute "out_feature" for op linear; did you mean "out_features"?`},
		{"missing attr", replace(`"in_features": 64, `, ``), "nodes[0].attrs", "fc1", `missing required attribute "in_features"`},
		{"unsupported dtype", replace(`"dtype": "float32"}]`, `"dtype": "float8"}]`), "inputs[0].dtype", "", `unsupported dtype "float8"`},
		{"bad dim", replace(`"shape": [32, 64]`, `"shape": [32, 0]`), "inputs[0].shape[1]", "", "dims must be integers >= 1"},
		{"duplicate name", replace(`"name": "act"`, `"name": "fc1"`), "nodes[1].name", "", `duplicate name "fc1" (already declared at nodes[0].name)`},
		{"duplicate param/input", replace(`"name": "fc1.bias"`, `"name": "x"`), "params[1].name", "", `duplicate name "x" (already declared at inputs[0].name)`},
		{"unknown output", replace(`["fc2"]`, `["fc3"]`), "outputs[0]", "", `unknown output "fc3"; did you mean "fc`},
		{"param output", replace(`["fc2"]`, `["fc2.bias"]`), "outputs[0]", "", "is a param"},
		{"format", replace(`widejit.graph/v1`, `widejit.graph/v2`), "format", "", `unsupported format "widejit.graph/v2"`},
		{"n zero", replace(`"n": 4`, `"n": 0`), "n", "", "n must be an integer >= 1"},
		{"unknown top key", replace(`"n": 4`, `"n": 4, "nodez": []`), "nodez", "", `unknown key "nodez"; did you mean "nodes"?`},
		{"unknown node key", replace(`"name": "act", "op"`, `"name": "act", "attr": {}, "op"`), "nodes[1].attr", "", `unknown key "attr"; did you mean "attrs"?`},
		{"no source", replace(`"init": {"seed": 1}`, `"outputs2": 1`), "", "", `missing "weights" (a safetensors file) or "init"`},
		{"both sources", replace(`"init": {"seed": 1}`, `"init": {"seed": 1}, "weights": "w.safetensors"`), "init", "", `either "weights" or "init", not both`},
		{"bad seed", replace(`"init": {"seed": 1}`, `"init": {"seed": 1.5}`), "init.seed", "", `seed must be an integer`},
		{"tuple used as tensor", replace(`{"name": "act", "op": "relu", "inputs": ["fc1"]}`,
			`{"name": "ch", "op": "chunk", "inputs": ["fc1"], "attrs": {"chunks": 2, "dim": -1}}, {"name": "act", "op": "relu", "inputs": ["ch"]}`),
			"nodes[2].inputs[0]", "act", `"ch" (chunk) produces a tuple; take an element with a getitem node`},
		{"getitem range", replace(`{"name": "act", "op": "relu", "inputs": ["fc1"]}`,
			`{"name": "ch", "op": "chunk", "inputs": ["fc1"], "attrs": {"chunks": 2, "dim": -1}}, {"name": "act", "op": "getitem", "inputs": ["ch"], "attrs": {"index": 2}}`),
			"nodes[2].attrs.index", "act", `index 2 is out of range for the 2-element tuple of "ch"`},
		{"dim out of range", replace(`{"name": "act", "op": "relu", "inputs": ["fc1"]}`, `{"name": "act", "op": "softmax", "inputs": ["fc1"], "attrs": {"dim": 2}}`),
			"nodes[1].attrs.dim", "act", "dim 2 is out of range for a rank-2 input (expected -2..1)"},
		{"broadcast", replace(`{"name": "act", "op": "relu", "inputs": ["fc1"]}`, `{"name": "act", "op": "add", "inputs": ["fc1", "x"]}`),
			"nodes[1].inputs[1]", "act", `shape mismatch: add cannot broadcast "fc1" [32 128] with "x" [32 64]`},
		{"number where tensor", replace(`"inputs": ["fc1"]`, `"inputs": [3]`), "nodes[1].inputs[0]", "act", "input x of relu must be a tensor, got the number 3"},
		{"dtype mismatch matmul", replace(`{"name": "act", "op": "relu", "inputs": ["fc1"]}`,
			`{"name": "e", "op": "embedding", "inputs": ["x"], "params": {"weight": "fc1.weight"}, "attrs": {"num_embeddings": 128, "embedding_dim": 64}}, {"name": "act", "op": "relu", "inputs": ["fc1"]}`),
			"nodes[1].inputs[0]", "e", `embedding indices must be an integer tensor, "x" is float32`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseString(t, c.src)
			ps := problems(t, err)
			p := ps[0]
			if p.Path != c.path || p.Node != c.node || !strings.Contains(p.Msg, c.msg) {
				t.Fatalf("got problem %+v\nwant path %q node %q message containing %q\n(all: %v)", p, c.path, c.node, c.msg, err)
			}
			if p.Line == 0 && c.name != "cycle" && c.name != "self cycle" {
				t.Errorf("problem has no line: %+v", p)
			}
			if !strings.Contains(err.Error(), "graph.json:") {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
}

func TestMalformedJSONHasLineAndColumn(t *testing.T) {
	src := "{\n  \"format\": \"widejit.graph/v1\",\n  \"n\": 4,,\n}"
	ps := problems(t, func() error { _, err := parseString(t, src); return err }())
	if len(ps) != 1 || ps[0].Line != 3 || ps[0].Col != 10 || !strings.Contains(ps[0].Msg, "malformed JSON") {
		t.Fatalf("got %+v, want line 3 col 10", ps)
	}
	src = `{"n": 1, "n": 2}`
	ps = problems(t, func() error { _, err := parseString(t, src); return err }())
	if ps[0].Line != 1 || ps[0].Col != 10 || !strings.Contains(ps[0].Msg, `duplicate key "n"`) {
		t.Fatalf("duplicate key: %+v", ps)
	}
	for _, src := range []string{`{"n": 1`, `[`, ``, `{"n": 1} x`} {
		if _, err := parseString(t, src); err == nil || !strings.Contains(err.Error(), "malformed JSON") {
			t.Fatalf("%q: %v", src, err)
		}
	}
}

func TestSeveralProblemsAtOnce(t *testing.T) {
	src := graphJSON(mlpInputs, mlpParams, strings.NewReplacer(`"op": "relu"`, `"op": "rleu"`, `"in_features": 64`, `"in_features": 65`).Replace(mlpNodes), `["fc2"]`, initSource)
	ps := problems(t, func() error { _, err := parseString(t, src); return err }())
	if len(ps) != 2 || ps[0].Node != "fc1" || ps[1].Node != "act" || ps[0].Line >= ps[1].Line {
		t.Fatalf("want 2 problems (fc1 shape, act op), got %v", ps)
	}
}

// writeWeights writes a weights file for the MLP with optional edits.
func writeWeights(t *testing.T, dir string, edit func(map[string]*safetensors.Tensor)) {
	t.Helper()
	ts := map[string]*safetensors.Tensor{
		"fc1.weight": safetensors.FromFloat32s("fc1.weight", []int{4, 128, 64}, make([]float32, 4*128*64)),
		"fc1.bias":   safetensors.FromFloat32s("fc1.bias", []int{4, 128}, make([]float32, 4*128)),
		"fc2.weight": safetensors.FromFloat32s("fc2.weight", []int{4, 64, 128}, make([]float32, 4*64*128)),
		"fc2.bias":   safetensors.FromFloat32s("fc2.bias", []int{4, 64}, make([]float32, 4*64)),
	}
	if edit != nil {
		edit(ts)
	}
	var list []*safetensors.Tensor
	for _, v := range ts {
		list = append(list, v)
	}
	if err := safetensors.Write(filepath.Join(dir, "weights.safetensors"), list, nil); err != nil {
		t.Fatal(err)
	}
}

func TestWeightsErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func(map[string]*safetensors.Tensor)
		path string
		msg  string
	}{
		{"ok", nil, "", ""},
		{"missing", func(m map[string]*safetensors.Tensor) { delete(m, "fc2.bias") }, "params[3]", `param "fc2.bias" is missing from the weights file`},
		{"leading dim", func(m map[string]*safetensors.Tensor) {
			m["fc2.bias"] = safetensors.FromFloat32s("fc2.bias", []int{3, 64}, make([]float32, 3*64))
		}, "params[3]", "its leading dim must be n=4"},
		{"mis-shaped", func(m map[string]*safetensors.Tensor) {
			m["fc2.bias"] = safetensors.FromFloat32s("fc2.bias", []int{4, 65}, make([]float32, 4*65))
		}, "params[3]", "has shape [4 65], expected [4 64]"},
		{"dtype", func(m map[string]*safetensors.Tensor) {
			m["fc2.bias"], _ = safetensors.FromFloat64s("fc2.bias", safetensors.F16, []int{4, 64}, make([]float64, 4*64))
		}, "params[3]", "is F16, declared float32"},
		{"extra", func(m map[string]*safetensors.Tensor) {
			m["fc3.bias"] = safetensors.FromFloat32s("fc3.bias", []int{4, 64}, make([]float32, 4*64))
		}, "weights", `holds tensor "fc3.bias" that no param declares; did you mean "fc`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeWeights(t, dir, c.edit)
			path := filepath.Join(dir, "graph.json")
			os.WriteFile(path, []byte(graphJSON(mlpInputs, mlpParams, mlpNodes, `["fc2"]`, `"weights": "weights.safetensors"`)), 0o644)
			g, err := Load(path)
			if c.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				w, err := g.ParamTensor("fc1.weight")
				if err != nil || len(w.Shape) != 3 || w.Shape[0] != 4 {
					t.Fatalf("ParamTensor: %v %v", w, err)
				}
				return
			}
			ps := problems(t, err)
			if ps[0].Path != c.path || !strings.Contains(ps[0].Msg, c.msg) || ps[0].Line == 0 {
				t.Fatalf("got %+v, want path %q message %q and a line", ps[0], c.path, c.msg)
			}
		})
	}
	// A missing or corrupt weights file.
	dir := t.TempDir()
	path := filepath.Join(dir, "graph.json")
	os.WriteFile(path, []byte(graphJSON(mlpInputs, mlpParams, mlpNodes, `["fc2"]`, `"weights": "nope.safetensors"`)), 0o644)
	_, err := Load(path)
	if ps := problems(t, err); ps[0].Path != "weights" || !strings.Contains(ps[0].Msg, "nope.safetensors") {
		t.Fatalf("missing weights file: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "nope.safetensors"), []byte("garbage!garbage!"), 0o644)
	_, err = Load(path)
	if ps := problems(t, err); !strings.Contains(ps[0].Msg, "not a safetensors file") || strings.Contains(ps[0].Msg, "garbage") {
		t.Fatalf("corrupt weights file: %v", err)
	}
}

func TestNOverride(t *testing.T) {
	src := graphJSON(mlpInputs, mlpParams, mlpNodes, `["fc2"]`, initSource)
	path := filepath.Join(t.TempDir(), "g.json")
	g4, err := Parse(path, []byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	g9, err := Parse(path, []byte(src), Options{N: 9})
	if err != nil || g9.N != 9 {
		t.Fatalf("override: %v n=%d", err, g9.N)
	}
	a, _ := g4.ParamFloat32s("fc1.weight")
	b, _ := g9.ParamFloat32s("fc1.weight")
	if len(b) != 9*128*64 {
		t.Fatalf("len %d", len(b))
	}
	for i := range a { // the first models do not depend on N
		if a[i] != b[i] {
			t.Fatalf("model data depends on N at %d", i)
		}
	}
	dir := t.TempDir()
	writeWeights(t, dir, nil)
	_, err = Parse(filepath.Join(dir, "graph.json"), []byte(graphJSON(mlpInputs, mlpParams, mlpNodes, `["fc2"]`, `"weights": "weights.safetensors"`)), Options{N: 9})
	if ps := problems(t, err); ps[0].Path != "n" || !strings.Contains(ps[0].Msg, "cannot be overridden") {
		t.Fatalf("override with weights: %v", err)
	}
}

func TestHugeTuplesRefused(t *testing.T) {
	for _, attrs := range []string{`{"chunks": 1000000000}`, `{"split_size_or_sections": 1}`} {
		op := "chunk"
		if strings.Contains(attrs, "split") {
			op = "split"
		}
		src := graphJSON(`[{"name": "x", "shape": [1000000000], "dtype": "float32"}]`, `[]`,
			`[{"name": "c", "op": "`+op+`", "inputs": ["x"], "attrs": `+attrs+`}, {"name": "g", "op": "getitem", "inputs": ["c"], "attrs": {"index": 0}}]`,
			`["g"]`, initSource)
		_, err := parseString(t, src)
		if ps := problems(t, err); !strings.Contains(ps[0].Msg, "more than 4096 pieces") {
			t.Fatalf("%s: %v", op, err)
		}
	}
}

// Indexing and mask ops reject what PyTorch would, naming the attribute or input.
func TestIndexAndMaskErrors(t *testing.T) {
	inputs := `[{"name": "x", "shape": [3, 5], "dtype": "float32"}, {"name": "m", "shape": [3, 1], "dtype": "bool"}]`
	for _, c := range []struct{ node, want string }{
		{`{"name": "s", "op": "slice", "inputs": ["x"], "attrs": {"dim": 1, "start": 4, "end": 2}}`, "nodes[0].attrs.start (node \"s\"): slice [4:2:1] of dim 1 (size 5) is empty"},
		{`{"name": "s", "op": "slice", "inputs": ["x"], "attrs": {"dim": 2}}`, "dim 2 is out of range for a rank-2 input"},
		{`{"name": "s", "op": "slice", "inputs": ["x"], "attrs": {"dim": 0, "step": 0}}`, "step must be >= 1"},
		{`{"name": "s", "op": "select", "inputs": ["x"], "attrs": {"dim": -1, "index": 5}}`, "index 5 is out of range for dim 1 of size 5"},
		{`{"name": "s", "op": "masked_fill", "inputs": ["x", "x"], "attrs": {"value": 0}}`, "masked_fill needs a bool mask"},
		{`{"name": "s", "op": "masked_fill", "inputs": ["x", "m"], "attrs": {"value": "-infinity"}}`, `value must be a number, "inf", "-inf" or "nan"`},
		{`{"name": "s", "op": "masked_fill", "inputs": ["m", "x"], "attrs": {"value": 1}}`, "masked_fill needs a bool mask"},
		{`{"name": "s", "op": "where", "inputs": ["x", "x", 0]}`, "where needs a bool condition"},
		{`{"name": "s", "op": "where", "inputs": ["m", 1, 0]}`, "where needs a tensor input or other"},
		{`{"name": "s", "op": "tril", "inputs": ["x"], "attrs": {"diagonal": 0.5}}`, "expected an integer"},
		{`{"name": "s", "op": "rsqrt", "inputs": ["m"]}`, "rsqrt needs a float tensor"},
		{`{"name": "s", "op": "lt", "inputs": [1, 2]}`, "lt needs at least one tensor operand"},
	} {
		_, err := parseString(t, graphJSON(inputs, `[]`, "["+c.node+"]", `["s"]`, initSource))
		ps := problems(t, err)
		if !strings.Contains(ps[0].String(), c.want) {
			t.Errorf("%s:\n got %v\nwant %q", c.node, ps[0], c.want)
		}
	}
	src := graphJSON(inputs, `[]`, `[{"name": "s", "op": "masked_fill", "inputs": ["x", "m"], "attrs": {"value": "-inf"}},
	  {"name": "t", "op": "slice", "inputs": ["s"], "attrs": {"dim": 1, "start": -4, "end": 100, "step": 2}},
	  {"name": "u", "op": "select", "inputs": ["t"], "attrs": {"dim": 0, "index": -1}}]`, `["u"]`, initSource)
	g, err := parseString(t, src)
	if err != nil {
		t.Fatal(err)
	}
	if v := g.Node("s").Attrs.Float("value"); v > -1e308 {
		t.Errorf("masked_fill value %v, want -inf", v)
	}
	if a := g.Node("t").Attrs; a.Int("start") != 1 || a.Int("end") != 5 || g.Node("t").Output().String() != "float32[3,2]" {
		t.Errorf("slice normalised to %s, output %s; want start=1 end=5, float32[3,2]", a.Format(), g.Node("t").Output())
	}
	if a := g.Node("u").Attrs; a.Int("index") != 2 || g.Node("u").Output().String() != "float32[2]" {
		t.Errorf("select normalised to %s, output %s; want index=2, float32[2]", a.Format(), g.Node("u").Output())
	}
}

// A file with a million problems prints the first MaxProblemsShown and a count of the rest.
func TestErrorListIsBounded(t *testing.T) {
	e := &Error{}
	for i := range 1000000 {
		e.Problems = append(e.Problems, Problem{File: "g.json", Line: i + 1, Col: 1, Msg: "bad"})
	}
	msg := e.Error()
	if n := strings.Count(msg, "\n") + 1; n != MaxProblemsShown+1 || !strings.Contains(msg, "and 999950 more problems") {
		t.Errorf("%d lines; last: %q", n, msg[strings.LastIndexByte(msg, '\n')+1:])
	}
}
