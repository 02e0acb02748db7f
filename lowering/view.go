package lowering

import (
	"fmt"
	"strings"

	"github.com/widejit/widejit/graph"
)

// BufferKind says where a buffer's contents come from.
type BufferKind int

const (
	InputBuffer BufferKind = iota // a graph input, uploaded by Run
	ParamBuffer                   // a parameter, uploaded once by runner.New
	TempBuffer                    // written by a launch of the plan
)

func (k BufferKind) String() string { return [...]string{"input", "param", "temp"}[k] }

// Buffer is one logical buffer of a plan. Temp buffers share physical storage (Slot) when
// their lifetimes do not overlap.
type Buffer struct {
	ID    int
	Kind  BufferKind
	Name  string // the input or param name, or the value a temp first holds
	DType graph.DType
	Elems int // elements, all models included
	Slot  int // physical slot for temp buffers (see Plan.Slots); -1 otherwise
	// Sparse: kernels write only part of the buffer and read the rest as the zeros it was
	// allocated with (a convolution's zero-padded input): it gets a slot of its own.
	Sparse bool
}

func (b *Buffer) String() string {
	switch b.Kind {
	case TempBuffer:
		return fmt.Sprintf("t%d", b.ID)
	case InputBuffer:
		return "in:" + b.Name
	}
	return "param:" + b.Name
}

// View is a wide tensor: element (m, i_0, ..., i_{r-1}) of model m lives at
// Offset + m*ModelStride + sum(i_d*Strides[d]) of Buf. Shape and Strides are per model.
type View struct {
	Buf         *Buffer
	Offset      int
	Shape       []int
	Strides     []int
	ModelStride int
	DType       graph.DType
}

func contiguousStrides(shape []int) []int {
	st := make([]int, len(shape))
	s := 1
	for d := len(shape) - 1; d >= 0; d-- {
		st[d] = s
		s *= shape[d]
	}
	return st
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func fullView(b *Buffer, shape []int, modelStride int) View {
	return View{Buf: b, Shape: append([]int(nil), shape...), Strides: contiguousStrides(shape), ModelStride: modelStride, DType: b.DType}
}

// Numel is the number of elements per model.
func (v View) Numel() int { return numel(v.Shape) }

// Contiguous reports whether one model's elements are dense and row-major (size-1 dims may
// have any stride).
func (v View) Contiguous() bool {
	want := 1
	for d := len(v.Shape) - 1; d >= 0; d-- {
		if v.Shape[d] != 1 && v.Strides[d] != want {
			return false
		}
		want *= v.Shape[d]
	}
	return true
}

// Dense reports whether the view is contiguous and the models follow each other, so the
// whole wide tensor is one dense [N, ...] block starting at Offset.
func (v View) Dense() bool { return v.Contiguous() && v.ModelStride == v.Numel() }

func (v View) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s%s", v.Buf, shapeStr(v.Shape))
	if v.Offset != 0 {
		fmt.Fprintf(&sb, "@%d", v.Offset)
	}
	if !v.Contiguous() {
		fmt.Fprintf(&sb, " strides %s", shapeStr(v.Strides))
	}
	if v.ModelStride == 0 {
		sb.WriteString(" shared")
	}
	return sb.String()
}

func shapeStr(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// reshape returns v with a new per-model shape, when v's layout allows it without a copy.
func (v View) reshape(shape []int) (View, bool) {
	if numel(shape) != v.Numel() {
		return View{}, false
	}
	if !v.Contiguous() {
		return View{}, false
	}
	out := v
	out.Shape = append([]int(nil), shape...)
	out.Strides = contiguousStrides(shape)
	return out, true
}

// restride returns v with a new per-model shape over the same elements when every group of
// v's dims that the new shape splits or merges is itself dense (PyTorch's rule for view on a
// strided tensor): a slice of a QKV projection split into heads stays a view, read in place.
func (v View) restride(shape []int) (View, bool) {
	if numel(shape) != v.Numel() {
		return View{}, false
	}
	if out, ok := v.reshape(shape); ok {
		return out, true
	}
	var oldShape, oldStrides []int // v without its size-1 dims, whose strides do not matter
	for d, s := range v.Shape {
		if s != 1 {
			oldShape, oldStrides = append(oldShape, s), append(oldStrides, v.Strides[d])
		}
	}
	strides := make([]int, len(shape))
	i, j := 0, 0 // next old dim, next new dim
	for i < len(oldShape) {
		// the old dims [i, e) merge into one stride run of size chunk
		chunk, e := oldShape[i], i+1
		for e < len(oldShape) && oldStrides[e-1] == oldStrides[e]*oldShape[e] {
			chunk *= oldShape[e]
			e++
		}
		// new dims take that run's elements, innermost stride being the run's last
		size, start := 1, j
		for j < len(shape) && size < chunk {
			size *= shape[j]
			j++
		}
		for j < len(shape) && shape[j] == 1 && size == chunk && e == len(oldShape) {
			j++ // trailing size-1 dims
		}
		if size != chunk {
			return View{}, false
		}
		st := oldStrides[e-1]
		for d := j - 1; d >= start; d-- {
			strides[d] = st
			st *= shape[d]
		}
		i = e
	}
	for ; j < len(shape); j++ {
		strides[j] = 1 // only size-1 dims are left
	}
	out := v
	out.Shape, out.Strides = append([]int(nil), shape...), strides
	return out, true
}

// permute returns v with its dims reordered (a view: only strides move).
func (v View) permute(dims []int) View {
	out := v
	out.Shape = make([]int, len(dims))
	out.Strides = make([]int, len(dims))
	for i, d := range dims {
		out.Shape[i] = v.Shape[d]
		out.Strides[i] = v.Strides[d]
	}
	return out
}

// slice returns the elements [start, start+size) of dim d.
func (v View) slice(d, start, size int) View {
	out := v
	out.Shape = append([]int(nil), v.Shape...)
	out.Strides = append([]int(nil), v.Strides...)
	out.Offset += start * v.Strides[d]
	out.Shape[d] = size
	return out
}

// broadcastStrides gives v's strides over the dims of shape out (NumPy broadcasting: v's dims
// align to the right; a missing or size-1 dim broadcasts with stride 0).
func (v View) broadcastStrides(out []int) ([]int, error) {
	if len(v.Shape) > len(out) {
		return nil, fmt.Errorf("cannot broadcast %s to %s", shapeStr(v.Shape), shapeStr(out))
	}
	st := make([]int, len(out))
	shift := len(out) - len(v.Shape)
	for d := range v.Shape {
		switch {
		case v.Shape[d] == out[d+shift]:
			if v.Shape[d] != 1 {
				st[d+shift] = v.Strides[d]
			}
		case v.Shape[d] == 1:
		default:
			return nil, fmt.Errorf("cannot broadcast %s to %s", shapeStr(v.Shape), shapeStr(out))
		}
	}
	return st, nil
}

// mergeStrides collapses the dims [lo, hi) of a tensor with shape and strides into one axis,
// when the strides allow it (a contiguous run, or all zero): the axis index i then has offset
// i*stride.
func mergeStrides(shape, strides []int, lo, hi int) (int, bool) {
	if lo >= hi {
		return 0, true
	}
	// Either every stride is zero, or each non-unit dim steps over the next non-unit dim.
	allZero := true
	for d := lo; d < hi; d++ {
		if shape[d] != 1 && strides[d] != 0 {
			allZero = false
		}
	}
	if allZero {
		return 0, true
	}
	last := -1
	for d := hi - 1; d >= lo; d-- {
		if shape[d] == 1 {
			continue
		}
		if last >= 0 && strides[d] != strides[last]*shape[last] {
			return 0, false
		}
		last = d
	}
	if last < 0 {
		return 0, true
	}
	// the innermost non-unit dim's stride is the axis stride
	for d := hi - 1; d >= lo; d-- {
		if shape[d] != 1 {
			return strides[d], true
		}
	}
	return 0, true
}

// unsqueeze inserts a size-1 dim at d.
func (v View) unsqueeze(d int) View {
	out := v
	out.Shape = append(append(append([]int(nil), v.Shape[:d]...), 1), v.Shape[d:]...)
	st := 1
	if d < len(v.Shape) {
		st = v.Strides[d] * v.Shape[d]
	}
	out.Strides = append(append(append([]int(nil), v.Strides[:d]...), st), v.Strides[d:]...)
	return out
}

// squeeze removes the size-1 dims listed (sorted).
func (v View) squeeze(dims []int) View {
	out := v
	out.Shape, out.Strides = nil, nil
	drop := map[int]bool{}
	for _, d := range dims {
		drop[d] = true
	}
	for d := range v.Shape {
		if drop[d] && v.Shape[d] == 1 {
			continue
		}
		out.Shape = append(out.Shape, v.Shape[d])
		out.Strides = append(out.Strides, v.Strides[d])
	}
	return out
}
