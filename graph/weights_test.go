package graph

import (
	"bytes"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph/safetensors"
)

const initGraph = `{
"format": "widejit.graph/v1", "n": 3,
"inputs": [{"name": "x", "shape": [5, 16], "dtype": "float32"},
           {"name": "tok", "shape": [4, 6], "dtype": "int64", "per_model": false},
           {"name": "img", "shape": [2, 3, 8, 8], "dtype": "float32"}],
"params": [{"name": "fc.weight", "shape": [32, 16], "dtype": "float32"},
           {"name": "fc.bias", "shape": [32], "dtype": "float32"},
           {"name": "emb.weight", "shape": [7, 16], "dtype": "float32"},
           {"name": "conv.weight", "shape": [4, 3, 3, 3], "dtype": "float32"},
           {"name": "bn.weight", "shape": [4], "dtype": "float32"},
           {"name": "bn.bias", "shape": [4], "dtype": "float32"},
           {"name": "bn.running_mean", "shape": [4], "dtype": "float32"},
           {"name": "bn.running_var", "shape": [4], "dtype": "float32"},
           {"name": "attn.in_proj_weight", "shape": [48, 16], "dtype": "float32"},
           {"name": "attn.in_proj_bias", "shape": [48], "dtype": "float32"},
           {"name": "attn.out_proj.weight", "shape": [16, 16], "dtype": "float32"},
           {"name": "attn.out_proj.bias", "shape": [16], "dtype": "float32"},
           {"name": "rnn.weight_ih_l0", "shape": [40, 16], "dtype": "float32"},
           {"name": "rnn.weight_hh_l0", "shape": [40, 10], "dtype": "float32"},
           {"name": "rnn.bias_ih_l0", "shape": [40], "dtype": "float32"},
           {"name": "rnn.bias_hh_l0", "shape": [40], "dtype": "float32"},
           {"name": "scale", "shape": [16], "dtype": "float16"}],
"nodes": [
  {"name": "fc", "op": "linear", "inputs": ["x"], "params": {"weight": "fc.weight", "bias": "fc.bias"}, "attrs": {"in_features": 16, "out_features": 32}},
  {"name": "emb", "op": "embedding", "inputs": ["tok"], "params": {"weight": "emb.weight"}, "attrs": {"num_embeddings": 7, "embedding_dim": 16, "padding_idx": 2}},
  {"name": "conv", "op": "conv2d", "inputs": ["img"], "params": {"weight": "conv.weight"}, "attrs": {"in_channels": 3, "out_channels": 4, "kernel_size": 3, "bias": false}},
  {"name": "bn", "op": "batch_norm2d", "inputs": ["conv"], "params": {"weight": "bn.weight", "bias": "bn.bias", "running_mean": "bn.running_mean", "running_var": "bn.running_var"}, "attrs": {"num_features": 4}},
  {"name": "attn", "op": "multihead_attention", "inputs": ["x", "x", "x"], "params": {"in_proj_weight": "attn.in_proj_weight", "in_proj_bias": "attn.in_proj_bias", "out_proj.weight": "attn.out_proj.weight", "out_proj.bias": "attn.out_proj.bias"}, "attrs": {"embed_dim": 16, "num_heads": 4}},
  {"name": "rnn", "op": "lstm", "inputs": ["x"], "params": {"weight_ih_l0": "rnn.weight_ih_l0", "weight_hh_l0": "rnn.weight_hh_l0", "bias_ih_l0": "rnn.bias_ih_l0", "bias_hh_l0": "rnn.bias_hh_l0"}, "attrs": {"input_size": 16, "hidden_size": 10}},
  {"name": "scaled", "op": "mul", "inputs": ["x", "scale"]}
],
"outputs": ["fc", "emb", "bn", "scaled"],
"init": {"seed": 7}
}`

func loadInit(t *testing.T, src string) *Graph {
	t.Helper()
	g, err := parseString(t, src)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func stats(v []float32) (lo, hi, mean, std float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range v {
		f := float64(x)
		lo, hi, mean = math.Min(lo, f), math.Max(hi, f), mean+f
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (float64(x) - mean) * (float64(x) - mean)
	}
	return lo, hi, mean, math.Sqrt(std / float64(len(v)))
}

func TestInitFollowsPyTorch(t *testing.T) {
	g := loadInit(t, initGraph)
	get := func(name string) []float32 {
		t.Helper()
		v, err := g.ParamFloat32s(name)
		if err != nil {
			t.Fatal(err)
		}
		if p := g.Param(name); len(v) != 3*p.Type.Numel() {
			t.Fatalf("%s: %d values, want n*%d", name, len(v), p.Type.Numel())
		}
		return v
	}
	uniform := func(name string, bound float64) {
		t.Helper()
		lo, hi, mean, _ := stats(get(name))
		if lo < -bound || hi > bound || hi < 0.8*bound || lo > -0.8*bound || math.Abs(mean) > bound/5 {
			t.Errorf("%s: range [%v, %v] mean %v, want U(-%v, %v)", name, lo, hi, mean, bound, bound)
		}
	}
	constant := func(name string, c float32) {
		t.Helper()
		for i, x := range get(name) {
			if x != c {
				t.Fatalf("%s[%d] = %v, want %v", name, i, x, c)
			}
		}
	}
	uniform("fc.weight", 1/math.Sqrt(16)) // kaiming_uniform(a=sqrt(5)): 1/sqrt(fan_in)
	uniform("fc.bias", 1/math.Sqrt(16))
	uniform("conv.weight", 1/math.Sqrt(27)) // fan_in = 3*3*3
	constant("bn.weight", 1)
	constant("bn.bias", 0)
	constant("bn.running_mean", 0)
	constant("bn.running_var", 1)
	uniform("attn.in_proj_weight", math.Sqrt(6.0/(48+16))) // xavier_uniform
	constant("attn.in_proj_bias", 0)
	constant("attn.out_proj.bias", 0)
	uniform("attn.out_proj.weight", 1/math.Sqrt(16))
	uniform("rnn.weight_hh_l0", 1/math.Sqrt(10)) // U(-1/sqrt(hidden), 1/sqrt(hidden))
	uniform("rnn.bias_ih_l0", 1/math.Sqrt(10))
	emb := get("emb.weight")
	_, _, mean, std := stats(emb)
	if math.Abs(mean) > 0.2 || math.Abs(std-1) > 0.2 {
		t.Errorf("embedding: mean %v std %v, want N(0, 1)", mean, std)
	}
	for m := 0; m < 3; m++ { // padding_idx row 2 of each model is zero
		for j := 0; j < 16; j++ {
			if emb[m*7*16+2*16+j] != 0 || emb[m*7*16+1*16+j] == 0 {
				t.Fatalf("model %d: padding row not zero (or row 1 zero)", m)
			}
		}
	}
	if tt, _ := g.ParamTensor("scale"); tt.DType != safetensors.F16 || len(tt.Data) != 3*16*2 {
		t.Errorf("float16 param: %s %d bytes", tt.DType, len(tt.Data))
	}
	// models differ, streams are deterministic, and seeds matter
	w := get("fc.weight")
	if w[0] == w[32*16] {
		t.Error("model 0 and model 1 start with the same weight")
	}
	g2 := loadInit(t, initGraph)
	a, _ := g.ParamTensor("fc.weight")
	b, _ := g2.ParamTensor("fc.weight")
	if !bytes.Equal(a.Data, b.Data) {
		t.Error("init is not deterministic")
	}
	g3 := loadInit(t, strings.Replace(initGraph, `"seed": 7`, `"seed": 8`, 1))
	c, _ := g3.ParamTensor("fc.weight")
	if bytes.Equal(a.Data, c.Data) {
		t.Error("the seed does not change the weights")
	}
}

func TestGenerateInputs(t *testing.T) {
	g := loadInit(t, initGraph)
	ins, err := g.GenerateInputs(1)
	if err != nil {
		t.Fatal(err)
	}
	x := ins["x"]
	if !slices.Equal(x.Shape, []int{3, 5, 16}) || x.DType != safetensors.F32 {
		t.Fatalf("x: %s %v", x.DType, x.Shape)
	}
	xv, _ := x.Float32s()
	if _, _, mean, std := stats(xv); math.Abs(mean) > 0.15 || math.Abs(std-1) > 0.15 {
		t.Errorf("x: mean %v std %v, want N(0,1)", mean, std)
	}
	tok := ins["tok"]
	if !slices.Equal(tok.Shape, []int{4, 6}) || tok.DType != safetensors.I64 { // shared: no leading N
		t.Fatalf("tok: %s %v", tok.DType, tok.Shape)
	}
	tv, _ := tok.Int64s()
	seen := map[int64]bool{}
	for _, v := range tv {
		if v < 0 || v >= 7 {
			t.Fatalf("token %d outside [0, num_embeddings=7)", v)
		}
		seen[v] = true
	}
	if len(seen) < 4 {
		t.Errorf("tokens cover only %d values", len(seen))
	}
	again, _ := g.GenerateInputs(1)
	if !bytes.Equal(again["x"].Data, x.Data) {
		t.Error("generated inputs are not deterministic")
	}
	other, _ := g.GenerateInputs(2)
	if bytes.Equal(other["x"].Data, x.Data) {
		t.Error("the seed does not change the inputs")
	}
}

func TestReadInputs(t *testing.T) {
	g := loadInit(t, initGraph)
	ins, _ := g.GenerateInputs(1)
	dir := t.TempDir()
	write := func(edit func(m map[string]*safetensors.Tensor)) string {
		m := map[string]*safetensors.Tensor{}
		for k, v := range ins {
			m[k] = v
		}
		edit(m)
		var list []*safetensors.Tensor
		for _, v := range m {
			list = append(list, v)
		}
		p := filepath.Join(dir, "in.safetensors")
		if err := safetensors.Write(p, list, nil); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := g.ReadInputs(write(func(map[string]*safetensors.Tensor) {}))
	if err != nil || !bytes.Equal(got["img"].Data, ins["img"].Data) {
		t.Fatalf("round trip: %v", err)
	}
	cases := []struct {
		edit func(m map[string]*safetensors.Tensor)
		msg  string
	}{
		{func(m map[string]*safetensors.Tensor) { delete(m, "img") }, `input "img" is missing`},
		{func(m map[string]*safetensors.Tensor) {
			m["x"] = safetensors.FromFloat32s("x", []int{5, 16}, make([]float32, 80))
		}, `input "x" has shape [5 16], expected [3 5 16] (per model: [n, ...])`},
		{func(m map[string]*safetensors.Tensor) {
			m["tok"], _ = safetensors.FromInt64s("tok", safetensors.I64, []int{3, 4, 6}, make([]int64, 72))
		}, `input "tok" has shape [3 4 6], expected [4 6] (shared by all models)`},
		{func(m map[string]*safetensors.Tensor) {
			m["tok"], _ = safetensors.FromInt64s("tok", safetensors.I32, []int{4, 6}, make([]int64, 24))
		}, `input "tok" is I32, expected I64 (int64)`},
		{func(m map[string]*safetensors.Tensor) {
			m["xx"] = safetensors.FromFloat32s("xx", []int{1}, []float32{1})
		}, `tensor "xx" is not a graph input; did you mean "x"?`},
	}
	for _, c := range cases {
		p := write(c.edit)
		_, err := g.ReadInputs(p)
		if err == nil || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), p) {
			t.Errorf("got %v, want the file and %q", err, c.msg)
		}
	}
}
