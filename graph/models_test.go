package graph

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/widejit/widejit/graph/safetensors"
)

// rowsOf is rows [lo, hi) of t.
func rowsOf(t *testing.T, x *safetensors.Tensor, lo, hi int) *safetensors.Tensor {
	t.Helper()
	r, err := x.Rows(lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The shards tile [0, n) in order, with sizes that differ by at most one.
func TestShardRangeTiles(t *testing.T) {
	for n := 1; n <= 12; n++ {
		for k := 1; k <= n; k++ {
			next := 0
			for i := range k {
				lo, hi := ShardRange(i, k, n)
				if lo != next || hi-lo < n/k || hi-lo > n/k+1 {
					t.Fatalf("shard %d/%d of %d: [%d, %d)", i, k, n, lo, hi)
				}
				next = hi
			}
			if next != n {
				t.Fatalf("%d shards of %d end at %d", k, n, next)
			}
		}
	}
}

// A model range of an init graph initialises and generates exactly its rows of the whole
// graph's params and inputs (shared inputs whole), and reads its rows of an inputs file
// holding every model.
func TestModelsOfInitGraph(t *testing.T) {
	g := loadInit(t, initGraph)
	sub, err := g.Models(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi, total := sub.ModelRange(); lo != 1 || hi != 3 || total != 3 || sub.N != 2 {
		t.Fatalf("range [%d, %d) of %d, N %d", lo, hi, total, sub.N)
	}
	for _, p := range g.Params {
		whole, err1 := g.ParamTensor(p.Name)
		part, err2 := sub.ParamTensor(p.Name)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if want := rowsOf(t, whole, 1, 3); !bytes.Equal(part.Data, want.Data) || !slices.Equal(part.Shape, want.Shape) {
			t.Errorf("param %s: the range's values differ from rows [1, 3) of the whole graph's", p.Name)
		}
	}
	whole, _ := g.GenerateInputs(5)
	part, err := sub.GenerateInputs(5)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range g.Inputs {
		want := whole[in.Name]
		if in.PerModel {
			want = rowsOf(t, want, 1, 3)
		}
		if !bytes.Equal(part[in.Name].Data, want.Data) || !slices.Equal(part[in.Name].Shape, want.Shape) {
			t.Errorf("generated input %s: not the range's rows of the whole graph's", in.Name)
		}
	}
	var list []*safetensors.Tensor
	for _, v := range whole {
		list = append(list, v)
	}
	path := filepath.Join(t.TempDir(), "in.safetensors")
	if err := safetensors.Write(path, list, nil); err != nil {
		t.Fatal(err)
	}
	read, err := sub.ReadInputs(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range part {
		if !bytes.Equal(read[name].Data, v.Data) {
			t.Errorf("read input %s: not the range's rows", name)
		}
	}
	// a range of a range is a range of the original
	one, err := sub.Models(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi, total := one.ModelRange(); lo != 2 || hi != 3 || total != 3 {
		t.Errorf("range of a range: [%d, %d) of %d", lo, hi, total)
	}
	for _, r := range [][2]int{{-1, 1}, {2, 2}, {0, 4}, {2, 1}} {
		if _, err := g.Models(r[0], r[1]); err == nil {
			t.Errorf("Models(%d, %d) of 3: no error", r[0], r[1])
		}
	}
}

// A model range of a graph with a weights file reads its rows only; the identity is the
// same for every range, and changes with graph.json or with the weights' content.
func TestModelsWeightsAndIdentity(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"graph.json", "weights.safetensors"} {
		data, err := os.ReadFile(filepath.Join("../examples/mlp", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "graph.json")
	g, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := g.Models(3, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range g.Params {
		whole, _ := g.ParamTensor(p.Name)
		part, err := sub.ParamTensor(p.Name)
		if err != nil || !bytes.Equal(part.Data, rowsOf(t, whole, 3, 5).Data) {
			t.Errorf("param %s: %v, or not rows [3, 5)", p.Name, err)
		}
	}
	id, err := g.Identity()
	if err != nil {
		t.Fatal(err)
	}
	if sid, _ := sub.Identity(); sid != id || len(id) != 64 {
		t.Errorf("identity of the range %s, of the graph %s", sid, id)
	}
	w := filepath.Join(dir, "weights.safetensors")
	data, _ := os.ReadFile(w)
	data[len(data)-1] ^= 1
	os.WriteFile(w, data, 0o644)
	if other, _ := g.Identity(); other == id {
		t.Error("the identity does not change with the weights' content")
	}
	js, _ := os.ReadFile(path)
	g2, err := Parse(path, append(js, ' '), Options{})
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 1
	os.WriteFile(w, data, 0o644)
	if other, _ := g2.Identity(); other == id {
		t.Error("the identity does not change with graph.json")
	}
}
