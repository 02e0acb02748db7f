package ptx

import (
	"fmt"

	"github.com/widejit/widejit/triton/ir"
)

// Rematerialized broadcasts. A broadcast of a tile computed from indices alone (aranges,
// scalars and splats, combined element-wise: the row and column indices, masks and offsets
// of a K loop) is recomputed in the consumer's layout from each element's coordinates instead
// of being staged through shared memory with a barrier on each side, as Triton's layout pass
// rematerializes cheap values rather than converting them. The result's element index splits
// into a per-thread register plus a per-slot constant over disjoint bits (splitIndex), and so
// does every coordinate, so each distinct source coordinate of a thread is evaluated once.

// rematLimit bounds the instructions a rematerialized value may be recomputed from.
const rematLimit = 12

// rematOps are the element-wise ops a rematerialized value may be built with (and ptr_add).
var rematOps = map[ir.Op]bool{ir.Add: true, ir.Sub: true, ir.Mul: true, ir.And: true, ir.Or: true,
	ir.Cmp: true, ir.Min: true, ir.Max: true}

// rematerializable reports whether v can be recomputed from coordinates, within budget.
func rematerializable(v *ir.Value, budget *int) bool {
	if v.Type.NumElems() == 1 {
		return true // a scalar: one register every thread holds
	}
	d := v.Def
	if d == nil || *budget == 0 {
		return false
	}
	*budget--
	switch {
	case d.Op == ir.Arange, d.Op == ir.Splat, d.Op == ir.Const:
		return true
	case d.Op == ir.ExpandDims, d.Op == ir.Broadcast:
		return rematerializable(d.Args[0], budget)
	case d.Op == ir.PtrAdd: // pointer tiles: base + offsets
		return rematerializable(d.Args[0], budget) && rematerializable(d.Args[1], budget)
	case rematOps[d.Op]:
		if !d.Result().Type.Elem.IsInt() && d.Result().Type.Elem != ir.I1 {
			return false
		}
		for _, a := range d.Args {
			if !rematerializable(a, budget) {
				return false
			}
		}
		return true
	}
	return false
}

// rematBroadcast computes broadcast in from coordinates when its source allows (see above).
func (g *gen) rematBroadcast(in *ir.Instr) ([]string, bool) {
	x, res := in.Args[0], in.Result()
	n := res.Type.NumElems()
	budget := rematLimit
	if n < g.threads || !rematerializable(x, &budget) {
		return nil, false
	}
	rs := res.Type.Shape
	// coordinate d of slot r's element: base[d] (a register, or "" for 0) + consts[r][d]
	base := make([]string, len(rs))
	consts := make([][]int, g.slots(n))
	for d := range rs {
		strides := make([]int, len(rs))
		strides[d] = 1
		if rs[d] > 1 {
			var cs []int
			base[d], cs, _ = g.splitIndex(n, rs, strides)
			for r := range consts {
				consts[r] = append(consts[r], cs[r])
			}
		} else {
			for r := range consts {
				consts[r] = append(consts[r], 0)
			}
		}
	}
	memo := map[string]string{}
	out := make([]string, len(consts))
	for r := range out {
		out[r] = g.remat(x, base, consts[r], memo)
	}
	return out, true
}

// remat evaluates v at the coordinates base + c (one per dim of v, broadcast dims at 0).
func (g *gen) remat(v *ir.Value, base []string, c []int, memo map[string]string) string {
	if v.Type.NumElems() == 1 {
		return g.get(v)[0]
	}
	// a size-1 dim holds coordinate 0 whatever the consumer's
	key := fmt.Sprintf("%d", v.ID)
	for d, s := range v.Type.Shape {
		if s > 1 {
			key += fmt.Sprintf(",%s+%d", base[d], c[d])
		}
	}
	if r, ok := memo[key]; ok {
		return r
	}
	d := v.Def
	var r string
	switch d.Op {
	case ir.Splat, ir.Const:
		r = g.get(v)[0]
	case ir.Arange:
		r = g.newReg(rcB32)
		if base[0] == "" {
			g.emit("mov.u32 %s, %d", r, c[0]+d.Ints[0])
		} else {
			g.emit("add.s32 %s, %s, %d", r, base[0], c[0]+d.Ints[0])
		}
	case ir.ExpandDims:
		ax := int(d.Int)
		r = g.remat(d.Args[0], dropDim(base, ax), dropDimInt(c, ax), memo)
	case ir.Broadcast:
		xb, xc := append([]string(nil), base...), append([]int(nil), c...)
		for i, s := range d.Args[0].Type.Shape {
			if s == 1 {
				xb[i], xc[i] = "", 0
			}
		}
		r = g.remat(d.Args[0], xb, xc, memo)
	default:
		ops := make([]string, len(d.Args))
		for i, a := range d.Args {
			ab, ac := append([]string(nil), base...), append([]int(nil), c...)
			for j, s := range a.Type.Shape {
				if s == 1 {
					ab[j], ac[j] = "", 0
				}
			}
			ops[i] = g.remat(a, ab, ac, memo)
		}
		switch {
		case d.Op == ir.PtrAdd:
			r = g.newReg(rcB64)
			if classOf(d.Args[1].Type) == rcB64 {
				g.emit("mad.lo.s64 %s, %s, %d, %s", r, ops[1], d.Args[0].Type.Elem.Size(), ops[0])
			} else {
				g.emit("mad.wide.s32 %s, %s, %d, %s", r, ops[1], d.Args[0].Type.Elem.Size(), ops[0])
			}
		case d.Op == ir.Cmp:
			r = g.cmp(d, d.Args[0].Type, ops[0], ops[1])
		default:
			r = g.arith(d, d.Result().Type, ops)
		}
	}
	memo[key] = r
	return r
}

func dropDim(s []string, ax int) []string {
	return append(append([]string(nil), s[:ax]...), s[ax+1:]...)
}

func dropDimInt(s []int, ax int) []int {
	return append(append([]int(nil), s[:ax]...), s[ax+1:]...)
}

// Permuted dot operands. A permute whose only use is an operand of a dot (tl.trans of a tile
// loaded row by row) is not staged on its own: the dot, which stages its operands in shared
// memory anyway, writes the permute's source there at the permuted positions, sparing a
// round trip through shared memory and its two barriers.

// lazyPermute defers in to the dot that reads it, when it can.
func (g *gen) lazyPermute(in *ir.Instr) bool {
	res, x := in.Result(), in.Args[0]
	u := g.user[res]
	if g.uses[res] != 1 || u == nil || u.Op != ir.Dot || u.Args[2] == res || x.Type.NumElems() < g.threads {
		return false
	}
	g.lazy[res] = in
	return true
}

// stageDotOperands writes a tensor-core dot's A and B, each with its swizzle (sh.swA, swB).
func (g *gen) stageDotOperands(dot *ir.Instr, sh mmaShape) {
	g.swizzle = sh.swA
	g.stageOperand(dot.Args[0], 0)
	g.swizzle = sh.swB
	g.stageB(dot.Args[1], sh)
	g.swizzle = 0
}

// stageB writes a tensor-core dot's B operand: as B^T, its permute's source, when sh.bT.
func (g *gen) stageB(b *ir.Value, sh mmaShape) {
	if sh.bT {
		g.toShared(g.lazy[b].Args[0], sh.offB)
		return
	}
	g.stageOperand(b, sh.offB)
}

// stageOperand writes dot operand v at byte offset off of the staging area, row-major.
func (g *gen) stageOperand(v *ir.Value, off int) {
	p := g.lazy[v]
	if p == nil {
		g.toShared(v, off)
		return
	}
	x := p.Args[0]
	rstr := rowMajorStrides(v.Type.Shape)
	strides := make([]int, len(rstr))
	for i, o := range p.Ints {
		strides[o] = rstr[i] // x's dim o is the result's dim i
	}
	t := x.Type.ScalarType()
	size := smemSize(t)
	base, consts, _ := g.splitIndex(x.Type.NumElems(), x.Type.Shape, strides) // n >= T: lazyPermute
	a := g.newReg(rcB32)
	g.emit("mad.lo.u32 %s, %s, %d, %s", a, base, size, g.smem())
	for r, val := range g.get(x) {
		g.st("shared", t, offsetAddr(a, consts[r]*size+off), val, "")
	}
}
