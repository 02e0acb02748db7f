package lowering

import (
	"slices"
	"testing"
)

// addresses lists a view's element offsets in row-major order of its shape.
func addresses(v View) []int {
	var out []int
	idx := make([]int, len(v.Shape))
	for n := v.Numel(); n > 0; n-- {
		a := v.Offset
		for d, i := range idx {
			a += i * v.Strides[d]
		}
		out = append(out, a)
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < v.Shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

// A reshape of a strided view stays a view exactly when PyTorch's view would (each split or
// merged group of dims dense), and the view it gives holds the same elements in the same
// row-major order as the original.
func TestRestride(t *testing.T) {
	for _, c := range []struct {
		name           string
		shape, strides []int
		offset         int
		to             []int
		ok             bool
	}{
		{"q of a QKV projection split into heads", []int{2, 5, 12}, []int{180, 36, 1}, 12, []int{2, 5, 3, 4}, true},
		{"heads merged back after a transpose", []int{2, 5, 3, 4}, []int{60, 4, 20, 1}, 0, []int{2, 5, 12}, false},
		{"leading dims merged over a sliced last dim", []int{2, 3, 4}, []int{24, 8, 1}, 4, []int{6, 4}, true},
		{"a sliced dim merged with its row", []int{2, 3, 4}, []int{24, 8, 1}, 0, []int{2, 12}, false},
		{"size-1 dims added", []int{3, 4}, []int{8, 1}, 0, []int{1, 3, 1, 4, 1}, true},
		{"size-1 dims dropped", []int{1, 3, 1, 4}, []int{99, 8, 7, 1}, 0, []int{3, 4}, true},
		{"a transposed matrix split along its rows", []int{6, 5}, []int{1, 6}, 0, []int{2, 3, 5}, true},
		{"a transposed matrix flattened", []int{6, 5}, []int{1, 6}, 0, []int{30}, false},
	} {
		v := View{Shape: c.shape, Strides: c.strides, Offset: c.offset}
		got, ok := v.restride(c.to)
		if ok != c.ok {
			t.Errorf("%s: %v strides %v to %v: ok %v, want %v", c.name, c.shape, c.strides, c.to, ok, c.ok)
			continue
		}
		if ok && (!slices.Equal(got.Shape, c.to) || !slices.Equal(addresses(got), addresses(v))) {
			t.Errorf("%s: %v strides %v to %v gave strides %v: elements %v, want %v", c.name, c.shape, c.strides, c.to,
				got.Strides, addresses(got), addresses(v))
		}
	}
}
