package lowering

import (
	"fmt"
	"strings"
)

// epilogue is the element-wise part of a group: an expression over the group's own value and
// tensor leaves. Leaves are addressed through axes: runs of dims of the group's output shape
// [lo, hi) that the kernel walks with one index each (a matmul: batch, rows, columns; a norm:
// rows, columns; an element-wise kernel: every dim).
type epilogue struct {
	shape  []int    // the output's per-model shape the leaves broadcast to
	axes   [][2]int // dim runs of shape
	vars   []string // the kernel's index expression for each axis
	masks  []string // the bound check of each axis ("" for a scalar index, always in range)
	root   *expr    // nil: the group's own value unchanged
	leaves []epiLeaf
}

type epiLeaf struct {
	view    View
	strides []int // per axis
	// offset and mask, when set, address the leaf by the kernel's own index expressions
	// instead of its strides along the axes (a leaf read from another layout)
	offset, mask string
}

// addLeaf adds tensor v, broadcast to the epilogue's shape, and returns its leaf index; it
// fails when v cannot be addressed through the axes.
func (e *epilogue) addLeaf(v View) (int, error) {
	st, err := v.broadcastStrides(e.shape)
	if err != nil {
		return 0, err
	}
	axis := make([]int, len(e.axes))
	for i, a := range e.axes {
		s, ok := mergeStrides(e.shape, st, a[0], a[1])
		if !ok {
			return 0, fmt.Errorf("operand %s cannot be addressed by this kernel's index axes", shapeStr(v.Shape))
		}
		axis[i] = s
	}
	e.leaves = append(e.leaves, epiLeaf{view: v, strides: axis})
	return len(e.leaves) - 1, nil
}

// addLeafUnchecked is addLeaf for epilogues whose axes are single dims (always addressable).
func (e *epilogue) addLeafUnchecked(v View) int {
	k, err := e.addLeaf(v)
	if err != nil {
		panic("lowering: " + err.Error())
	}
	return k
}

// tryFuse adds node expression ex (whose exprIn is this epilogue's current value) and its
// tensor operands; on failure the epilogue is unchanged.
func (e *epilogue) tryFuse(ex *expr, operands []View) bool {
	saved := len(e.leaves)
	remap := make([]int, len(operands))
	for i, v := range operands {
		k, err := e.addLeaf(v)
		if err != nil {
			e.leaves = e.leaves[:saved]
			return false
		}
		remap[i] = k
	}
	ex.walk(func(x *expr) {
		if x.op == exprLeaf {
			x.leaf = remap[x.leaf]
		}
	})
	if e.root == nil {
		e.root = ex
	} else {
		e.root = ex.substitute(e.root)
	}
	return true
}

// usesRandom reports whether the epilogue draws random numbers (Monte Carlo dropout).
func (e *epilogue) usesRandom() bool { return e.root != nil && e.root.usesRandom() }

// renderedEpilogue is an epilogue as kernel text and launch arguments.
type renderedEpilogue struct {
	loads []loadLine
	args  []LaunchArg // per leaf: pointer, model stride, axis strides
	extra []LaunchArg // seeds and model_base
	body  []string    // statements ending in `y = ...`
}

type loadLine struct{ Name, Load string }

// argNames lists the names of a slice of launch arguments.
func argNames(args []LaunchArg) []string {
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = a.Name
	}
	return s
}

// render produces the epilogue's loads and statements. in is the name of the group's own
// value, mask the kernel's full mask, compute the dtype leaves are converted to ("" keeps the
// loaded type), linIdx the element's wide linear index (for dropout) and prefix names leaves
// and temporaries. A leaf with an offset of its own (epiLeaf.offset) is loaded through it and
// its mask; the others through their strides along the kernel's axes.
func (e *epilogue) render(in, mask, compute, linIdx, prefix string) (renderedEpilogue, error) {
	return e.renderCoords(in, mask, compute, linIdx, prefix, nil)
}

// renderCoords is render for a kernel that can name each output dim's coordinate (coord).
func (e *epilogue) renderCoords(in, mask, compute, linIdx, prefix string, coord func(d int) string) (renderedEpilogue, error) {
	var out renderedEpilogue
	for k, lf := range e.leaves {
		name := fmt.Sprintf("%s%d", prefix, k)
		out.args = append(out.args, LaunchArg{Name: name + "_ptr", Kind: PtrArg, Buf: lf.view.Buf, Offset: lf.view.Offset, ModelStride: lf.view.ModelStride},
			LaunchArg{Name: name + "_mstride", Kind: IntArg, Int: int64(lf.view.ModelStride)})
		offset := lf.offset
		// the mask covers exactly the axes the leaf varies along, so it never enlarges the
		// pointer tile (a bias row loads as [1, BLOCK_N] and broadcasts in the expression)
		var masks []string
		if offset == "" {
			var terms []string
			for a, s := range lf.strides {
				if s == 0 {
					continue
				}
				sn := fmt.Sprintf("%s_s%d", name, a)
				out.args = append(out.args, LaunchArg{Name: sn, Kind: IntArg, Int: int64(s)})
				terms = append(terms, e.vars[a]+" * "+sn)
				if m := e.masks[a]; m != "" && !contains(masks, m) {
					masks = append(masks, m)
				}
			}
			if len(terms) == 0 {
				terms = []string{"0"}
			}
			offset = strings.Join(terms, " + ")
		} else {
			masks = []string{lf.mask}
		}
		load := fmt.Sprintf("tl.load(%s_ptr + model * %s_mstride + %s)", name, name, offset)
		if len(masks) > 0 {
			load = fmt.Sprintf("tl.load(%s_ptr + model * %s_mstride + %s, mask=%s, other=0)", name, name, offset, strings.Join(masks, " & "))
		}
		if compute != "" {
			load += ".to(" + compute + ")"
		}
		out.loads = append(out.loads, loadLine{Name: name, Load: load})
	}
	r := &exprRenderer{inVar: in, leaf: func(k int) string { return fmt.Sprintf("%s%d", prefix, k) },
		linIdx: linIdx, prefix: prefix + "t", coord: coord}
	y := in
	if e.root != nil {
		var err error
		if y, err = r.render(e.root); err != nil {
			return out, err
		}
	}
	out.body = append(r.lines, "y = "+y)
	for i, s := range r.seeds {
		out.extra = append(out.extra, LaunchArg{Name: fmt.Sprintf("seed%d", i), Kind: IntArg, Int: s})
	}
	if len(r.seeds) > 0 {
		out.extra = append(out.extra, LaunchArg{Name: "model_base", Kind: IntArg, ModelBase: true})
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
