package ptx

import (
	"math/bits"

	"github.com/widejit/widejit/triton/ir"
)

// Contiguity analysis: which global loads and stores may use ld/st.global.v2/.v4. For every
// value it tracks, along the fastest (last) dimension, in aligned groups of elements:
//   - contig: each group of contig elements holds consecutive integers (pointers:
//     consecutive elements);
//   - divis: the power of two dividing the first value of every group (pointers: in bytes;
//     when contig is 1, every element);
//   - constancy: each group of constancy elements holds one value.
// All three are powers of two; unknown is 1. Sources of facts: arange, constants,
// splats, expand_dims/broadcast of a last dim of 1, and jit.Spec.Align16 (16-byte aligned
// pointers, ints divisible by 16). Loop-carried values take the meet of their initial and
// yielded facts (iterated to a fixed point), so pointers advanced in a loop keep theirs.

// axisInfo is what the analysis knows about one value (see above).
type axisInfo struct {
	contig, divis, constancy int64
	one                      bool // every element is the integer 1
}

// infoFull stands for "unbounded" (a constant or a whole dimension).
const infoFull = int64(1) << 30

var unknownInfo = axisInfo{1, 1, 1, false}

func meetInfo(a, b axisInfo) axisInfo {
	return axisInfo{min(a.contig, b.contig), min(a.divis, b.divis), min(a.constancy, b.constancy), a.one && b.one}
}

// pow2Divisor is the largest power of two dividing v (capped; 0 is divisible by anything).
func pow2Divisor(v int64) int64 {
	if v == 0 {
		return infoFull
	}
	return min(int64(1)<<bits.TrailingZeros64(uint64(v)), infoFull)
}

// elemDivis is the power of two dividing every element (not only each group's first).
func (a axisInfo) elemDivis() int64 {
	if a.contig > 1 {
		return 1
	}
	return a.divis
}

func lastDim(t ir.Type) int64 {
	if len(t.Shape) == 0 {
		return 1
	}
	return int64(t.Shape[len(t.Shape)-1])
}

type contiguity struct {
	info    map[*ir.Value]axisInfo
	align16 map[string]bool
}

func analyzeContiguity(f *ir.Func, align16, ones map[string]bool) *contiguity {
	c := &contiguity{info: map[*ir.Value]axisInfo{}, align16: align16}
	for _, p := range f.Params {
		in := axisInfo{1, 1, infoFull, false}
		switch {
		case !p.Type.Ptr && p.Type.Elem.IsInt() && ones[p.Name]:
			in.one = true
		case p.Type.Ptr && align16[p.Name]:
			in.divis = 16
		case p.Type.Ptr:
			in.divis = int64(max(p.Type.Elem.Size(), 1))
		case p.Type.Elem.IsInt() && align16[p.Name]:
			in.divis = 16
		}
		c.info[p] = in
	}
	c.block(f.Body)
	return c
}

func (c *contiguity) of(v *ir.Value) axisInfo {
	if in, ok := c.info[v]; ok {
		return in
	}
	return unknownInfo
}

// block analyzes b and returns the facts of its terminator's operands.
func (c *contiguity) block(b *ir.Block) []axisInfo {
	for _, in := range b.Instrs {
		switch in.Op {
		case ir.Yield, ir.Condition:
			out := make([]axisInfo, len(in.Args))
			for i, v := range in.Args {
				out[i] = c.of(v)
			}
			return out
		}
		c.instr(in)
	}
	return nil
}

// loop finds the facts of loop-carried values: start from the initial values', analyze
// the body, meet with the yielded facts, and repeat until nothing changes.
func (c *contiguity) loop(iterArgs [][]*ir.Value, inits []axisInfo, run func() []axisInfo) []axisInfo {
	cur := append([]axisInfo(nil), inits...)
	for round := 0; ; round++ {
		for _, args := range iterArgs {
			for i, a := range args {
				c.info[a] = cur[i]
			}
		}
		ys := run()
		changed := false
		for i := range cur {
			next := cur[i]
			if i < len(ys) {
				next = meetInfo(cur[i], ys[i])
			}
			if round >= 8 {
				next = unknownInfo
			}
			if next != cur[i] {
				changed = true
				cur[i] = next
			}
		}
		if !changed {
			return cur
		}
	}
}

func (c *contiguity) instr(in *ir.Instr) {
	set := func(a axisInfo) { c.info[in.Results[0]] = a }
	arg := func(i int) axisInfo { return c.of(in.Args[i]) }
	switch in.Op {
	case ir.Const:
		if in.Result().Type.Elem.IsInt() {
			set(axisInfo{1, pow2Divisor(in.Int), infoFull, in.Int == 1})
		} else {
			set(axisInfo{1, 1, infoFull, false})
		}
	case ir.ProgramID, ir.NumPrograms:
		set(axisInfo{1, 1, infoFull, false})
	case ir.Arange:
		set(axisInfo{int64(in.Ints[1] - in.Ints[0]), pow2Divisor(int64(in.Ints[0])), 1, false})
	case ir.Splat:
		set(axisInfo{1, arg(0).divis, infoFull, arg(0).one})
	case ir.ExpandDims, ir.Broadcast, ir.Reshape, ir.Permute:
		x, res := in.Args[0], in.Result()
		a := arg(0)
		switch {
		case x.Type.NumElems() == 1:
			set(axisInfo{1, a.elemDivis(), infoFull, a.one})
		case in.Op == ir.Permute && in.Ints[len(in.Ints)-1] != len(in.Ints)-1:
			set(unknownInfo)
		case in.Op == ir.ExpandDims && int(in.Int) == x.Type.Rank():
			set(axisInfo{1, a.elemDivis(), 1, a.one}) // a new last dim of 1
		case in.Op == ir.Broadcast && lastDim(x.Type) == 1 && lastDim(res.Type) > 1:
			set(axisInfo{1, a.elemDivis(), lastDim(res.Type), a.one})
		case lastDim(x.Type) == lastDim(res.Type):
			set(a) // rows along the last dim are unchanged
		default:
			set(unknownInfo)
		}
	case ir.Add, ir.Sub:
		if !in.Result().Type.Elem.IsInt() {
			set(unknownInfo)
			return
		}
		set(addInfo(arg(0), arg(1), 1, in.Op == ir.Sub))
	case ir.PtrAdd:
		set(addInfo(arg(0), arg(1), int64(in.Args[0].Type.Elem.Size()), false))
	case ir.Mul:
		if !in.Result().Type.Elem.IsInt() {
			set(unknownInfo)
			return
		}
		a, b := arg(0), arg(1)
		switch {
		case a.one: // 1 * x, x * 1 (a unit stride, constant or specialized) keep x's facts
			set(b)
		case b.one:
			set(a)
		default:
			set(axisInfo{1, min(a.elemDivis()*b.elemDivis(), infoFull), min(a.constancy, b.constancy), false})
		}
	case ir.Cast:
		from, to := in.Args[0].Type, in.Result().Type
		if !from.Ptr && !to.Ptr && from.Elem.IsInt() && to.Elem.IsInt() && to.Elem.Size() >= from.Elem.Size() && from.Elem != ir.I1 {
			set(arg(0))
		} else {
			set(axisInfo{1, 1, arg(0).constancy, false})
		}
	case ir.Cmp:
		set(axisInfo{1, 1, cmpConstancy(in.Int, arg(0), arg(1)), false})
	case ir.And, ir.Or, ir.Xor, ir.Select, ir.Min, ir.Max, ir.Div, ir.Rem, ir.Not, ir.Neg, ir.Abs, ir.Shl, ir.Shr:
		k := infoFull
		for i := range in.Args {
			k = min(k, arg(i).constancy)
		}
		set(axisInfo{1, 1, k, false})
	case ir.For:
		inits := make([]axisInfo, len(in.Args)-3)
		for i := range inits {
			inits[i] = arg(3 + i)
		}
		body := in.Regions[0]
		// iv = lb + i*step: every value is a multiple of what divides both.
		c.info[body.Args[0]] = axisInfo{1, min(arg(0).elemDivis(), arg(2).elemDivis()), infoFull, false}
		res := c.loop([][]*ir.Value{body.Args[1:]}, inits, func() []axisInfo { return c.block(body) })
		for i, v := range in.Results {
			c.info[v] = res[i]
		}
	case ir.While:
		inits := make([]axisInfo, len(in.Args))
		for i := range inits {
			inits[i] = arg(i)
		}
		condB, body := in.Regions[0], in.Regions[1]
		res := c.loop([][]*ir.Value{condB.Args, body.Args}, inits, func() []axisInfo {
			c.block(condB)
			return c.block(body)
		})
		for i, v := range in.Results {
			c.info[v] = res[i]
		}
	case ir.If:
		var ys [][]axisInfo
		for _, r := range in.Regions {
			ys = append(ys, c.block(r))
		}
		for i, v := range in.Results {
			out := unknownInfo
			if len(ys) == 2 && i < len(ys[0]) && i < len(ys[1]) {
				out = meetInfo(ys[0][i], ys[1][i])
			}
			c.info[v] = out
		}
	default:
		for _, r := range in.Regions {
			c.block(r)
		}
		for _, v := range in.Results {
			c.info[v] = unknownInfo
		}
	}
}

// addInfo combines a + b*scale (scale: the pointee size when a is a pointer and b an
// element offset, else 1; a group of a pointer advances by scale bytes per element). A
// contiguous side stays contiguous over the groups where the other side is constant.
func addInfo(a, b axisInfo, scale int64, sub bool) axisInfo {
	bd := min(b.divis*scale, infoFull)
	switch {
	case a.contig == 1 && b.contig == 1:
		return axisInfo{1, min(a.divis, bd), min(a.constancy, b.constancy), false}
	case a.contig > 1 && b.contig > 1, b.contig > 1 && sub:
		return unknownInfo
	}
	run, other := a, b
	if b.contig > 1 {
		run, other = b, a
	}
	g := min(run.contig, other.constancy)
	out := axisInfo{g, min(a.divis, bd), 1, false}
	if g < run.contig {
		// Groups of g start inside the run's groups, g elements apart.
		out.divis = min(out.divis, g*scale)
	}
	return out
}

// cmpConstancy: for a group of g elements s..s+g-1 with s and n multiples of g, s < n
// exactly when s+g-1 < n, so "contiguous < uniform" (and >=) is constant over the group.
func cmpConstancy(pred int64, a, b axisInfo) int64 {
	k := min(a.constancy, b.constancy)
	switch {
	case a.contig > 1 && (pred == ir.CmpLT || pred == ir.CmpGE):
		k = max(k, min(a.contig, a.divis, b.elemDivis(), b.constancy))
	case b.contig > 1 && (pred == ir.CmpGT || pred == ir.CmpLE):
		k = max(k, min(b.contig, b.divis, a.elemDivis(), a.constancy))
	}
	return k
}

// vecWidth is how many consecutive slots of an access through ptr (with mask, or nil) one
// ld/st.global.v2/.v4 may cover: contiguous, aligned to the whole vector, one predicate for
// all of it, at most 16 bytes, within one thread's run of contiguous elements (runLen).
// Eight 16-bit elements travel as a .v4.b32 of pairs (memory.go).
func (g *gen) vecWidth(ptr, mask *ir.Value, runLen int) int {
	t := ptr.Type
	n := t.NumElems()
	if g.contig == nil || n < g.threads {
		return 1
	}
	size := int64(t.Elem.Size())
	switch t.Elem {
	case ir.F32, ir.I32, ir.U32, ir.F16, ir.BF16, ir.F64, ir.I64, ir.U64:
	default:
		return 1
	}
	in := g.contig.of(ptr)
	w := min(int64(8), 16/size, int64(runLen), in.contig, in.divis/size, lastDim(t))
	if mask != nil {
		w = min(w, g.contig.of(mask).constancy)
	}
	switch {
	case w >= 8:
		return 8
	case w >= 4:
		return 4
	case w >= 2:
		return 2
	}
	return 1
}

// chooseRunLen picks the kernel's run length V (see runLen): the widest vector any global
// load or store of the kernel can use, 1 when none can.
func (g *gen) chooseRunLen(b *ir.Block) int {
	v := 1
	for _, in := range b.Instrs {
		switch in.Op {
		case ir.Load:
			var mask *ir.Value
			if len(in.Args) == 3 {
				mask = in.Args[1]
			}
			v = max(v, g.vecWidth(in.Args[0], mask, 8))
		case ir.Store:
			var mask *ir.Value
			if len(in.Args) == 3 {
				mask = in.Args[2]
			}
			v = max(v, g.vecWidth(in.Args[0], mask, 8))
		}
		for _, r := range in.Regions {
			v = max(v, g.chooseRunLen(r))
		}
	}
	return v
}
