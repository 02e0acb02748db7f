package safetensors

import (
	"bytes"
	"path/filepath"
	"testing"
)

// ReadRows reads a tensor's rows alone; Rows and ConcatRows are inverses.
func TestRows(t *testing.T) {
	vals := make([]float32, 5*3)
	for i := range vals {
		vals[i] = float32(i)
	}
	x := FromFloat32s("x", []int{5, 3}, vals)
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := Write(path, []*Tensor{x, FromFloat32s("s", []int{}, []float32{1})}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := f.ReadRows("x", 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := x.Rows(1, 4)
	if !bytes.Equal(r.Data, want.Data) || len(r.Shape) != 2 || r.Shape[0] != 3 || r.Shape[1] != 3 {
		t.Fatalf("rows [1, 4): %v %v", r.Shape, r.Data)
	}
	for _, bad := range [][2]int{{-1, 2}, {3, 2}, {0, 6}} {
		if _, err := f.ReadRows("x", bad[0], bad[1]); err == nil {
			t.Errorf("rows %v: no error", bad)
		}
	}
	if _, err := f.ReadRows("s", 0, 1); err == nil {
		t.Error("rows of a scalar: no error")
	}
	a, _ := x.Rows(0, 2)
	b, _ := x.Rows(2, 5)
	c, err := ConcatRows("x", []*Tensor{a, b})
	if err != nil || !bytes.Equal(c.Data, x.Data) || c.Shape[0] != 5 {
		t.Fatalf("concat: %v", err)
	}
	if _, err := ConcatRows("x", []*Tensor{a, FromFloat32s("y", []int{2, 4}, make([]float32, 8))}); err == nil {
		t.Error("concat of other shapes: no error")
	}
}
