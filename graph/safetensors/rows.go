package safetensors

import "fmt"

// ReadRows reads rows [lo, hi) of tensor name along its leading dimension (models [lo, hi)
// of a tensor stacked [N, ...]), with one ReadAt of just those bytes: a shard of a large
// file never reads the other rows.
func (f *File) ReadRows(name string, lo, hi int) (*Tensor, error) {
	in, ok := f.infos[name]
	if !ok {
		return nil, fmt.Errorf("safetensors %s: no tensor %q", f.path, name)
	}
	if len(in.Shape) == 0 {
		return nil, fmt.Errorf("safetensors %s: tensor %q is a scalar: it has no rows", f.path, name)
	}
	if lo < 0 || hi < lo || hi > in.Shape[0] {
		return nil, fmt.Errorf("safetensors %s: tensor %q: rows [%d, %d) are outside its %d rows", f.path, name, lo, hi, in.Shape[0])
	}
	row := int64(numel(in.Shape[1:]) * in.DType.Size())
	data := make([]byte, int64(hi-lo)*row)
	at := f.dataStart + in.Begin + int64(lo)*row
	if _, err := f.f.ReadAt(data, at); err != nil {
		return nil, fmt.Errorf("safetensors %s: tensor %q: reading rows [%d, %d) (%d bytes at offset %d): %v", f.path, name, lo, hi, len(data), at, err)
	}
	shape := append([]int{hi - lo}, in.Shape[1:]...)
	return &Tensor{Name: name, DType: in.DType, Shape: shape, Data: data}, nil
}

// Rows returns rows [lo, hi) of t along its leading dimension, sharing t's memory.
func (t *Tensor) Rows(lo, hi int) (*Tensor, error) {
	if len(t.Shape) == 0 || lo < 0 || hi < lo || hi > t.Shape[0] {
		return nil, fmt.Errorf("tensor %q%v: rows [%d, %d) are out of range", t.Name, t.Shape, lo, hi)
	}
	row := numel(t.Shape[1:]) * t.DType.Size()
	if len(t.Data) != t.Shape[0]*row {
		return nil, fmt.Errorf("tensor %q%v: %d bytes, expected %d", t.Name, t.Shape, len(t.Data), t.Shape[0]*row)
	}
	return &Tensor{Name: t.Name, DType: t.DType, Shape: append([]int{hi - lo}, t.Shape[1:]...),
		Data: t.Data[lo*row : hi*row : hi*row]}, nil
}

// ConcatRows stacks parts along their leading dimension, in order: the inverse of Rows. The
// parts must agree on dtype and on every dimension after the first.
func ConcatRows(name string, parts []*Tensor) (*Tensor, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("tensor %q: nothing to concatenate", name)
	}
	first := parts[0]
	if len(first.Shape) == 0 {
		return nil, fmt.Errorf("tensor %q is a scalar: it has no rows", name)
	}
	rows, size := 0, 0
	for _, p := range parts {
		if p.DType != first.DType || !sameDims(p.Shape, first.Shape) {
			return nil, fmt.Errorf("tensor %q: part %s%v does not stack with %s%v", name, p.DType, p.Shape, first.DType, first.Shape)
		}
		rows += p.Shape[0]
		size += len(p.Data)
	}
	data := make([]byte, 0, size)
	for _, p := range parts {
		data = append(data, p.Data...)
	}
	return &Tensor{Name: name, DType: first.DType, Shape: append([]int{rows}, first.Shape[1:]...), Data: data}, nil
}

// sameDims reports whether a and b agree after their leading dimension.
func sameDims(a, b []int) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for i := 1; i < len(a); i++ {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
