package lowering

import (
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/jit/cpu"
)

// TestEmbeddingComputedIndexChecked: in range, each model reads its own table's rows (values
// computed by hand); an index computed out of range (V, which is the next model's first row
// in the wide table, or -1, the previous model's last) fails the run as PyTorch's IndexError
// does, naming the node, instead of returning another model's row.
func TestEmbeddingComputedIndexChecked(t *testing.T) {
	g, err := graph.Load("testdata/embedding_cat/graph.json") // weights: model m's row v is 100m + 10v + d
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Lower(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewTestRunner(plan, cpu.NewDevice(2), testCompiler, g)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// tok is the [3, 2, 5] indices the cat makes: a is its first 3 columns, b the last 2.
	run := func(tok []int64) (*safetensors.Tensor, error) {
		var a, b []int64
		for row := range 6 {
			a = append(a, tok[row*5:row*5+3]...)
			b = append(b, tok[row*5+3:row*5+5]...)
		}
		ta, err := safetensors.FromInt64s("a", safetensors.I64, []int{3, 2, 3}, a)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := safetensors.FromInt64s("b", safetensors.I64, []int{3, 2, 2}, b)
		if err != nil {
			t.Fatal(err)
		}
		outs, err := r.Run(map[string]*safetensors.Tensor{"a": ta, "b": tb})
		return outs["emb"], err
	}
	tok := make([]int64, 30)
	for i := range tok {
		tok[i] = int64(i*7) % 6
	}
	out, err := run(tok)
	if err != nil {
		t.Fatalf("in range: %v", err)
	}
	got := f32s(t, out)
	for i, x := range got {
		m, tokIdx, col := i/40, i/4, i%4
		if want := float32(100*m + 10*int(tok[tokIdx]) + col); x != want {
			t.Fatalf("emb[%d] = %v, want %v", i, x, want)
		}
	}
	for _, bad := range []int64{6, -1} {
		tok[10+8] = bad // model 1, token (1, 3): from b; V is the next model's row 0, -1 the previous model's last row
		_, err := run(tok)
		if err == nil {
			t.Fatalf("index %d computed out of range: no error", bad)
		}
		for _, want := range []string{"embedding index out of range", "nodes [emb]", "embedding.py", "program (0, 1, 0)"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("index %d: error %q does not say %q", bad, err, want)
			}
		}
	}
}

// BenchmarkEmbedding is one embedding launch for 4 models of Embedding(1000, 256) over
// [32, 128] token indices computed in the graph (so the kernel checks them: device_assert):
//
//	go test ./lowering -run '^$' -bench Embedding
func BenchmarkEmbedding(b *testing.B) {
	g, err := graph.Parse("bench.json", []byte(`{"format": "widejit.graph/v1", "n": 4,
  "inputs": [{"name": "a", "shape": [32, 64], "dtype": "int64", "per_model": true},
             {"name": "b", "shape": [32, 64], "dtype": "int64", "per_model": true}],
  "params": [{"name": "w", "shape": [1000, 256], "dtype": "float32"}],
  "nodes": [
    {"name": "ids", "op": "cat", "inputs": [["a", "b"]], "attrs": {"dim": 1}},
    {"name": "emb", "op": "embedding", "inputs": ["ids"], "params": {"weight": "w"}, "attrs": {"num_embeddings": 1000, "embedding_dim": 256}}
  ],
  "outputs": ["emb"], "init": {"seed": 1}}`), graph.Options{})
	if err != nil {
		b.Fatal(err)
	}
	dev := cpu.NewDevice(benchThreads)
	plan, err := Lower(g, Options{Device: dev.Info()})
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewTestRunner(plan, dev, testCompiler, g)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	ids := make([]int64, 4*32*64)
	for i := range ids {
		ids[i] = int64(i*37) % 1000
	}
	in := map[string]*safetensors.Tensor{}
	for _, name := range []string{"a", "b"} {
		if in[name], err = safetensors.FromInt64s(name, safetensors.I64, []int{4, 32, 64}, ids); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		if _, err := r.Run(in); err != nil {
			b.Fatal(err)
		}
	}
}
