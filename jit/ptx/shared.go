package ptx

import (
	"math/bits"

	"github.com/widejit/widejit/triton/ir"
)

// Ops that move elements between threads (broadcast, permute, reduce, dot) stage their
// operands in the CTA's shared memory, row-major: a barrier, every thread writes the
// elements it holds, a barrier, every thread reads the elements it needs. The first barrier
// keeps the previous conversion's readers from seeing this one's writes.

func rowMajorStrides(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for d := len(shape) - 1; d >= 0; d-- {
		s[d] = acc
		acc *= shape[d]
	}
	return s
}

func align16(n int) int { return (n + 15) &^ 15 }

func log2(n int) int { return bits.TrailingZeros(uint(n)) }

// toShared writes every element v's thread holds at byte offset off of the staging area.
func (g *gen) toShared(v *ir.Value, off int) {
	t := v.Type.ScalarType()
	n := v.Type.NumElems()
	size := smemSize(t)
	regs := g.get(v)
	addrs := map[string]string{}
	for r, val := range regs {
		base, k := g.elemIndex(n, r)
		a, ok := addrs[base]
		if !ok {
			a = g.newReg(rcB32)
			g.emit("mad.lo.u32 %s, %s, %d, %s", a, base, size, g.smem())
			addrs[base] = a
		}
		g.st("shared", t, offsetAddr(a, k*size+off), val, "")
	}
}

func offsetAddr(reg string, off int) string {
	if off == 0 {
		return reg
	}
	if off < 0 {
		return reg + "+" + itoa(off)
	}
	return reg + "+" + itoa(off)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}

// slotIndex is a register with the element index of slot r of an n-element tile.
func (g *gen) slotIndex(n, r int) string {
	base, k := g.elemIndex(n, r)
	if k == 0 {
		return base
	}
	e := g.newReg(rcB32)
	g.emit("add.s32 %s, %s, %d", e, base, k)
	return e
}

// mapIndex turns the row-major index e of an element of shape into sum(idx_d * strides[d]).
func (g *gen) mapIndex(e string, shape, strides []int) string {
	acc := ""
	inner := 1
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 1 && strides[d] != 0 {
			t := g.newReg(rcB32)
			g.emit("shr.u32 %s, %s, %d", t, e, log2(inner))
			g.emit("and.b32 %s, %s, %d", t, t, shape[d]-1)
			if acc == "" {
				acc = g.newReg(rcB32)
				g.emit("mul.lo.u32 %s, %s, %d", acc, t, strides[d])
			} else {
				g.emit("mad.lo.u32 %s, %s, %d, %s", acc, t, strides[d], acc)
			}
		}
		inner *= shape[d]
	}
	if acc == "" {
		acc = g.newReg(rcB32)
		g.emit("mov.u32 %s, 0", acc)
	}
	return acc
}

// gather reads, for every slot of a tile of type t, the staged element at index
// mapIndex(e, t.Shape, strides).
func (g *gen) gather(t ir.Type, strides []int, off int) []string {
	n := t.NumElems()
	st := t.ScalarType()
	size := smemSize(st)
	out := make([]string, g.slots(n))
	for r := range out {
		idx := g.mapIndex(g.slotIndex(n, r), t.Shape, strides)
		a := g.newReg(rcB32)
		g.emit("mad.lo.u32 %s, %s, %d, %s", a, idx, size, g.smem())
		out[r] = g.ld("shared", st, offsetAddr(a, off), "", "", false)
	}
	return out
}

func (g *gen) broadcast(in *ir.Instr) {
	x, res := in.Args[0], in.Result()
	xs, rs := x.Type.Shape, res.Type.Shape
	if x.Type.NumElems() == 1 {
		g.set(res, repeat(g.get(x)[0], g.slots(res.Type.NumElems())))
		return
	}
	if x.Type.NumElems() == res.Type.NumElems() {
		g.set(res, g.get(x))
		return
	}
	xstr := rowMajorStrides(xs)
	strides := make([]int, len(rs))
	for d := range rs {
		if xs[d] != 1 {
			strides[d] = xstr[d]
		}
	}
	g.need(x.Type.NumElems() * smemSize(x.Type))
	g.emit("bar.sync 0")
	g.toShared(x, 0)
	g.emit("bar.sync 0")
	g.set(res, g.gather(res.Type, strides, 0))
}

func (g *gen) permute(in *ir.Instr) {
	x, res := in.Args[0], in.Result()
	xstr := rowMajorStrides(x.Type.Shape)
	strides := make([]int, len(in.Ints))
	identity := true
	for i, o := range in.Ints {
		strides[i] = xstr[o]
		if o != i && x.Type.Shape[o] != 1 {
			identity = false
		}
	}
	if identity || x.Type.NumElems() == 1 {
		g.set(res, g.get(x))
		return
	}
	g.need(x.Type.NumElems() * smemSize(x.Type))
	g.emit("bar.sync 0")
	g.toShared(x, 0)
	g.emit("bar.sync 0")
	g.set(res, g.gather(res.Type, strides, 0))
}

func (g *gen) reduce(in *ir.Instr) {
	kind := in.Ints[0]
	axis := int(in.Int)
	xs := in.Args
	shape := xs[0].Type.Shape
	if axis < 0 || axis >= len(shape) {
		g.failf(in.Pos, "ptx: reduce axis %d out of range for %s", axis, xs[0].Type)
	}
	k := shape[axis]
	xstr := rowMajorStrides(shape)
	offs := make([]int, len(xs))
	total := 0
	for i, x := range xs {
		offs[i] = total
		total = align16(total + x.Type.NumElems()*smemSize(x.Type))
	}
	g.need(total)
	g.emit("bar.sync 0")
	for i, x := range xs {
		g.toShared(x, offs[i])
	}
	g.emit("bar.sync 0")

	keep := append([]int(nil), shape...)
	keep[axis] = 1
	mstr := append([]int(nil), xstr...)
	mstr[axis] = 0
	outN := in.Results[0].Type.NumElems()
	nslots := g.slots(outN)
	arg := kind == ir.ReduceArgMax || kind == ir.ReduceArgMin
	// Per slot: the staged address of element k=0 of every input, and the accumulators.
	addrs := make([][]string, nslots)
	accs := make([][]string, nslots)
	idxs := make([]string, nslots)
	for r := range nslots {
		bidx := g.mapIndex(g.slotIndex(outN, r), keep, mstr)
		for i, x := range xs {
			st := x.Type.ScalarType()
			a := g.newReg(rcB32)
			g.emit("mad.lo.u32 %s, %s, %d, %s", a, bidx, smemSize(st), g.smem())
			a0 := a
			if offs[i] != 0 {
				a0 = g.newReg(rcB32)
				g.emit("add.u32 %s, %s, %d", a0, a, offs[i])
			}
			addrs[r] = append(addrs[r], a0)
			v := g.ld("shared", st, a0, "", "", false)
			acc := g.newReg(classOf(st))
			g.mov(classOf(st), acc, v)
			accs[r] = append(accs[r], acc)
		}
		if arg {
			idxs[r] = g.newReg(rcB32)
			g.emit("mov.u32 %s, 0", idxs[r])
		}
	}
	if k > 1 {
		kr := g.newReg(rcB32)
		g.emit("mov.u32 %s, 1", kr)
		loop := g.label()
		g.placeLabel(loop)
		for r := range nslots {
			bs := make([]string, len(xs))
			for i, x := range xs {
				st := x.Type.ScalarType()
				a := g.newReg(rcB32)
				g.emit("mad.lo.u32 %s, %s, %d, %s", a, kr, xstr[axis]*smemSize(st), addrs[r][i])
				bs[i] = g.ld("shared", st, a, "", "", false)
			}
			g.combine(in, kind, accs[r], bs, idxs[r], kr)
		}
		g.emit("add.u32 %s, %s, 1", kr, kr)
		more := g.newReg(rcPred)
		g.emit("setp.lt.u32 %s, %s, %d", more, kr, k)
		g.emit("@%s bra %s", more, loop)
	}
	for i, res := range in.Results {
		out := make([]string, nslots)
		for r := range out {
			if arg {
				out[r] = idxs[r]
			} else {
				out[r] = accs[r][i]
			}
		}
		g.set(res, out)
	}
}

// combine folds the next elements bs into the accumulators accs (and idx for arg kinds).
func (g *gen) combine(in *ir.Instr, kind int, accs, bs []string, idx, k string) {
	x := in.Args[0]
	st := x.Type.ScalarType()
	c := classOf(st)
	switch kind {
	case ir.ReduceSum, ir.ReduceMax, ir.ReduceMin:
		op := map[int]ir.Op{ir.ReduceSum: ir.Add, ir.ReduceMax: ir.Max, ir.ReduceMin: ir.Min}[kind]
		v := g.arith(&ir.Instr{Op: op, Pos: in.Pos}, st, []string{accs[0], bs[0]})
		g.mov(c, accs[0], v)
	case ir.ReduceArgMax, ir.ReduceArgMin:
		a, b := accs[0], bs[0]
		d := st.Elem
		if isHalf(d) {
			a, b = g.toF32(d, a), g.toF32(d, b)
		}
		cmp := "gt"
		if kind == ir.ReduceArgMin {
			cmp = "lt"
		}
		take := g.newReg(rcPred)
		switch {
		case d.IsFloat():
			ft := "f32"
			if d == ir.F64 {
				ft = "f64"
			}
			nanAcc, numB := g.newReg(rcPred), g.newReg(rcPred)
			g.emit("setp.%s.%s %s, %s, %s", cmp, ft, take, b, a)
			g.emit("setp.nan.%s %s, %s, %s", ft, nanAcc, a, a)
			g.emit("setp.num.%s %s, %s, %s", ft, numB, b, b)
			g.emit("and.pred %s, %s, %s", nanAcc, nanAcc, numB)
			g.emit("or.pred %s, %s, %s", take, take, nanAcc)
		case c == rcPred:
			g.emit("setp.%s.u32 %s, %s, %s", cmp, take, g.predToInt(bs[0]), g.predToInt(accs[0]))
		default:
			g.emit("setp.%s.%s %s, %s, %s", cmp, intType(d), take, b, a)
		}
		nv := g.selectOp(st, take, bs[0], accs[0])
		g.mov(c, accs[0], nv)
		g.emit("selp.b32 %s, %s, %s, %s", idx, k, idx, take)
	case ir.ReduceCustom:
		region := in.Regions[0]
		n := len(accs)
		for i := range n {
			g.vals[region.Args[i]] = []string{accs[i]}
			g.vals[region.Args[n+i]] = []string{bs[i]}
		}
		y := g.block(region)
		if len(y) != n {
			g.failf(in.Pos, "ptx: reduce combiner yields %d values, want %d", len(y), n)
		}
		dsts := make([][]string, n)
		for i := range dsts {
			dsts[i] = []string{accs[i]}
		}
		g.copyValues(dsts, y)
	default:
		g.failf(in.Pos, "ptx: unknown reduce kind %d", kind)
	}
}

func (g *gen) dot(in *ir.Instr) {
	a, b, acc := in.Args[0], in.Args[1], in.Args[2]
	res := in.Result()
	as, bs, rs := a.Type.Shape, b.Type.Shape, res.Type.Shape
	rank := len(rs)
	if rank != 2 && rank != 3 {
		g.failf(in.Pos, "ptx: dot of rank %d: expected 2 or 3", rank)
	}
	m, n, kk := rs[rank-2], rs[rank-1], as[rank-1]
	batch := 1
	if rank == 3 {
		batch = rs[0]
	}
	ad, bd, cd := a.Type.Elem, b.Type.Elem, res.Type.Elem
	sa, sb := smemSize(a.Type), smemSize(b.Type)
	offB := align16(a.Type.NumElems() * sa)
	g.need(offB + b.Type.NumElems()*sb)
	g.emit("bar.sync 0")
	g.toShared(a, 0)
	g.toShared(b, offB)
	g.emit("bar.sync 0")
	_ = bs

	intDot := ad.IsInt()
	accClass := rcF32
	if intDot {
		accClass = rcB32
	}
	outShape := []int{batch, m, n}
	outN := res.Type.NumElems()
	nslots := g.slots(outN)
	accIn := g.get(acc)
	cs := make([]string, nslots)
	aAddr := make([]string, nslots)
	bAddr := make([]string, nslots)
	for r := range nslots {
		e := g.slotIndex(outN, r)
		ai := g.mapIndex(e, outShape, []int{m * kk, kk, 0})
		bi := g.mapIndex(e, outShape, []int{kk * n, 0, 1})
		aAddr[r], bAddr[r] = g.newReg(rcB32), g.newReg(rcB32)
		g.emit("mad.lo.u32 %s, %s, %d, %s", aAddr[r], ai, sa, g.smem())
		g.emit("mad.lo.u32 %s, %s, %d, %s", bAddr[r], bi, sb, g.smem())
		g.emit("add.u32 %s, %s, %d", bAddr[r], bAddr[r], offB)
		cs[r] = g.newReg(accClass)
		v := accIn[r]
		if isHalf(cd) {
			v = g.toF32(cd, v)
		}
		g.mov(accClass, cs[r], v)
	}
	unroll := 1
	for _, u := range []int{8, 4, 2} {
		if kk%u == 0 {
			unroll = u
			break
		}
	}
	kr := g.newReg(rcB32)
	g.emit("mov.u32 %s, 0", kr)
	loop := g.label()
	g.placeLabel(loop)
	for j := range unroll {
		for r := range nslots {
			av := g.ld("shared", a.Type.ScalarType(), offsetAddr(aAddr[r], j*sa), "", "", false)
			bv := g.ld("shared", b.Type.ScalarType(), offsetAddr(bAddr[r], j*n*sb), "", "", false)
			if intDot {
				g.emit("mad.lo.s32 %s, %s, %s, %s", cs[r], av, bv, cs[r])
				continue
			}
			if isHalf(ad) {
				av = g.toF32(ad, av)
			}
			if isHalf(bd) {
				bv = g.toF32(bd, bv)
			}
			g.emit("fma.rn.f32 %s, %s, %s, %s", cs[r], av, bv, cs[r])
		}
	}
	for r := range nslots {
		g.emit("add.u32 %s, %s, %d", aAddr[r], aAddr[r], unroll*sa)
		g.emit("add.u32 %s, %s, %d", bAddr[r], bAddr[r], unroll*n*sb)
	}
	g.emit("add.u32 %s, %s, %d", kr, kr, unroll)
	more := g.newReg(rcPred)
	g.emit("setp.lt.u32 %s, %s, %d", more, kr, kk)
	g.emit("@%s bra %s", more, loop)
	out := cs
	if isHalf(cd) {
		out = make([]string, nslots)
		for r := range out {
			out[r] = g.fromF32(cd, cs[r])
		}
	}
	g.set(res, out)
}
