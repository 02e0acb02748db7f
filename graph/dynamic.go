package graph

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/widejit/widejit/graph/safetensors"
)

// dynamic.go: dims beyond the batch whose size changes from run to run (a sequence length).
// An input lists them in "dynamic_dims"; a run at other sizes re-specialises the graph as
// WithBatch does for the batch (batch.go), once per size that changes: every input dim that
// was exported at s0 and runs at s moves together, and every view/reshape target that holds
// it is rewritten. Where the graph bakes the size in, the re-inference refuses, naming the
// node: a parameter that lines up with the dim (a positional table added whole), a Linear
// over it, a slice or an add whose other operand keeps the exported size.

// dynamicDims reads an input's "dynamic_dims": a list of distinct dims within the rank
// (negative counts from the end), the batch dim excluded.
func (l *loader) dynamicDims(v *jvalue, path string, t Type, batchDim int) []int {
	if v == nil {
		return nil
	}
	path += ".dynamic_dims"
	if v.kind != jArray {
		l.errAt(v, path, "", "dynamic_dims must be a list of dims of the input's shape %v, got %s", t.Shape, describe(v))
		return nil
	}
	var dims []int
	r := t.Rank()
	for i, e := range v.arr {
		d, ok := intValue(e)
		if ok && d < 0 {
			d += r
		}
		at := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case !ok || d < 0 || d >= r:
			l.errAt(e, at, "", "a dynamic dim must be a dim of the input's shape %v (0 to %d, or negative from the end), got %s", t.Shape, r-1, describe(e))
		case slices.Contains(dims, d):
			l.errAt(e, at, "", "dim %d is listed twice", d)
		case batchDim == d+1:
			l.errAt(e, at, "", "dim %d is the input's batch_dim, dynamic already", d)
		default:
			dims = append(dims, d)
			continue
		}
		return nil
	}
	sort.Ints(dims)
	return dims
}

// DynamicDims lists the dims of input name, besides its batch dim, whose size may change
// from run to run (the file's "dynamic_dims"), in increasing order.
func (g *Graph) DynamicDims(name string) []int {
	if in := g.inputs[name]; in != nil {
		return slices.Clone(in.dynamicDims)
	}
	return nil
}

// Sizes is what a run's inputs carry in their dynamic dims where it differs from the graph as
// exported: input -> dim (of the per-model shape) -> size.
type Sizes map[string]map[int]int

// Key names the sizes canonically ("" for none), for keying plans.
func (s Sizes) Key() string {
	var parts []string
	for name, dims := range s {
		for d, size := range dims {
			parts = append(parts, fmt.Sprintf("%q:%d=%d", name, d, size))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// InputSizes is what tensors carry in the graph's dynamic dims, where it differs from the
// export; an error names the input and the dim of a size below 1 or above the limit.
func (g *Graph) InputSizes(tensors map[string]*safetensors.Tensor) (Sizes, error) {
	base := g.exported()
	out := Sizes{}
	for _, in := range base.Inputs {
		t := tensors[in.Name]
		if t == nil || len(in.dynamicDims) == 0 || len(t.Shape) != len(base.InputTensorShape(in)) {
			continue // missing or of another rank: CheckInputs says so
		}
		for _, d := range in.dynamicDims {
			td := d
			if in.PerModel {
				td++
			}
			size := t.Shape[td]
			if size < 1 || size > maxDim {
				return nil, fmt.Errorf("input %q has shape %v: its dynamic dim %d (dim %d of the tensor) is %d; it must be 1 to %d", in.Name, t.Shape, d, td, size, maxDim)
			}
			if size != in.Type.Shape[d] {
				if out[in.Name] == nil {
					out[in.Name] = map[int]int{}
				}
				out[in.Name][d] = size
			}
		}
	}
	return out, nil
}

// exported is the graph as the file gives it (the base of a re-specialised one).
func (g *Graph) exported() *Graph {
	if g.base != nil {
		return g.base
	}
	return g
}

// WithSizes is the graph re-specialised for batch size b (0: as exported) with its inputs'
// dynamic dims at sizes (absent: as exported). Refused, naming the input or node and the
// dim, where the graph bakes a size in.
func (g *Graph) WithSizes(b int, sizes Sizes) (*Graph, error) {
	base := g.exported()
	if len(sizes) == 0 {
		if b == 0 {
			return base, nil
		}
		return base.WithBatch(b)
	}
	cur := base
	if b == 0 {
		b = base.Batch()
	}
	if b != 0 && b != base.Batch() {
		if err := base.BatchError(); err != nil {
			return nil, fmt.Errorf("graph %s cannot run at batch size %d: its batch size is fixed: %v", base.File, b, err)
		}
		if b < 1 || b > maxDim {
			return nil, fmt.Errorf("graph %s: batch size %d is out of range (1 to %d)", base.File, b, maxDim)
		}
		var err error
		if cur, err = base.rebatch(b); err != nil {
			return nil, err
		}
	}
	// one pass per change of size: the dims exported at s0 and run at s move together
	type change struct{ s0, s int }
	groups := map[change]map[string][]int{}
	for _, in := range base.Inputs {
		for d, s := range sizes[in.Name] {
			if !slices.Contains(in.dynamicDims, d) {
				return nil, fmt.Errorf("graph %s: dim %d of input %q is not dynamic (its dynamic dims: %v)", base.File, d, in.Name, in.dynamicDims)
			}
			c := change{in.Type.Shape[d], s}
			if c.s0 == c.s {
				continue
			}
			if groups[c] == nil {
				groups[c] = map[string][]int{}
			}
			groups[c][in.Name] = append(groups[c][in.Name], d)
		}
	}
	for name := range sizes {
		if base.inputs[name] == nil {
			return nil, fmt.Errorf("graph %s has no input %q", base.File, name)
		}
	}
	changes := make([]change, 0, len(groups))
	for c := range groups {
		changes = append(changes, c)
	}
	sort.Slice(changes, func(i, j int) bool {
		return changes[i].s0 < changes[j].s0 || changes[i].s0 == changes[j].s0 && changes[i].s < changes[j].s
	})
	for _, c := range changes {
		dims := groups[c]
		var names []string
		for name, ds := range dims {
			slices.Sort(ds)
			for _, d := range ds {
				names = append(names, fmt.Sprintf("dim %d of input %q", d, name))
			}
		}
		sort.Strings(names)
		sym := "dynamic " + strings.Join(names, " and ")
		ng, err := newRebatcher(cur, c.s0, c.s, dims, sym).parse()
		if err != nil {
			return nil, fmt.Errorf("graph %s with its %s at %d (exported at %d): %w", base.File, sym, c.s, c.s0, err)
		}
		ng.base, ng.jsonSum, cur = base, base.jsonSum, ng // the same file: the same Identity
	}
	if cur == base {
		return base, nil
	}
	return base.sameRange(cur)
}

// dimsNote lists an input's dims that may change, for messages: "the batch (dim 1)", "dims 2,
// 3 (dynamic)".
func (g *Graph) dimsNote(in *Input, tensorOffset int) string {
	var parts []string
	if bd, ok := g.exported().BatchDim(in.Name); ok {
		parts = append(parts, fmt.Sprintf("the batch (dim %d)", bd+tensorOffset))
	}
	if len(in.dynamicDims) > 0 {
		ds := make([]string, len(in.dynamicDims))
		for i, d := range in.dynamicDims {
			ds[i] = strconv.Itoa(d + tensorOffset)
		}
		parts = append(parts, fmt.Sprintf("dims %s (dynamic)", strings.Join(ds, ", ")))
	}
	return strings.Join(parts, " and ")
}
