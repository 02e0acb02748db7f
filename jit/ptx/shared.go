package ptx

import (
	"math/bits"
	"strconv"
	"strings"

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
// A thread's runs of V consecutive elements (see runLen) go out as 16-byte (or narrower)
// vector stores when off keeps them aligned.
func (g *gen) toShared(v *ir.Value, off int) {
	if ld := g.async[v]; ld != nil {
		g.copyAsync(ld, off)
		return
	}
	t := v.Type.ScalarType()
	n := v.Type.NumElems()
	size := smemSize(t)
	regs := g.get(v)
	w := 1 // elements per store
	if n >= g.threads && !t.Ptr && (size == 2 || size == 4) {
		w = min(g.runLen(n), 16/size)
		for w > 1 && off%(w*size) != 0 {
			w /= 2
		}
	}
	addrOf := g.sharedAddr(n, size, off)
	for r := 0; r < len(regs); r += w {
		addr := addrOf(r)
		switch {
		case w == 1:
			g.st("shared", t, addr, regs[r], "")
		case size == 2 && w == 2:
			g.emit("st.shared.b32 [%s], %s", addr, g.pairWords(regs[r : r+2])[0])
		case size == 2:
			g.emit("st.shared.v%d.b32 [%s], {%s}", w/2, addr, strings.Join(g.pairWords(regs[r:r+w]), ", "))
		default:
			g.emit("st.shared.v%d.%s [%s], {%s}", w, memType(t.Elem, false), addr, strings.Join(regs[r:r+w], ", "))
		}
	}
}

// sharedAddr returns the shared-memory address of slot r of an n-element tile of size-byte
// elements staged row-major at byte offset off; each base index's address is computed once,
// at its first use.
func (g *gen) sharedAddr(n, size, off int) func(r int) string {
	if g.swizzle != 0 {
		return g.swizzledAddr(n, size, off)
	}
	bases := map[string]string{}
	return func(r int) string {
		base, k := g.elemIndex(n, r)
		a, ok := bases[base]
		if !ok {
			a = g.newReg(rcB32)
			g.emit("mad.lo.u32 %s, %s, %d, %s", a, base, size, g.smem())
			bases[base] = a
		}
		return offsetAddr(a, k*size+off)
	}
}

func offsetAddr(reg string, off int) string {
	switch {
	case off == 0:
		return reg
	case off < 0:
		return reg + strconv.Itoa(off)
	}
	return reg + "+" + strconv.Itoa(off)
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
	if base, consts, ok := g.splitIndex(n, t.Shape, strides); ok {
		a := g.newReg(rcB32)
		g.emit("mad.lo.u32 %s, %s, %d, %s", a, base, size, g.smem())
		loaded := map[int]string{} // slots reading the same element share one load
		for r := range out {
			o := consts[r]*size + off
			if v, ok := loaded[o]; ok {
				out[r] = v
				continue
			}
			out[r] = g.ld("shared", st, offsetAddr(a, o), "", "", false)
			loaded[o] = out[r]
		}
		return out
	}
	for r := range out {
		idx := g.mapIndex(g.slotIndex(n, r), t.Shape, strides)
		a := g.newReg(rcB32)
		g.emit("mad.lo.u32 %s, %s, %d, %s", a, idx, size, g.smem())
		out[r] = g.ld("shared", st, offsetAddr(a, off), "", "", false)
	}
	return out
}

// splitIndex writes mapIndex(e_r, shape, strides) for every slot r of an n-element tile as
// one register plus a constant per slot, when it can: with n >= T and runs of V, e_r is
// tid*V + (r/V)*T*V + r%V, a sum of terms with disjoint bits (tid < T, V and T powers of
// two), and mapIndex, a sum over dims of bit fields times strides, splits over disjoint bits:
// mapIndex(tid*V) + mapIndex((r/V)*T*V + r%V).
func (g *gen) splitIndex(n int, shape, strides []int) (string, []int, bool) {
	if n < g.threads {
		return "", nil, false
	}
	v := g.runLen(n)
	consts := make([]int, g.slots(n))
	for r := range consts {
		e := (r/v)*g.threads*v + r%v
		inner := 1
		for d := len(shape) - 1; d >= 0; d-- {
			consts[r] += (e / inner) % shape[d] * strides[d]
			inner *= shape[d]
		}
	}
	e := g.tid
	if v > 1 {
		e = g.base(-v)
	}
	return g.mapIndex(e, shape, strides), consts, true
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
	if out, ok := g.rematBroadcast(in); ok {
		g.set(res, out)
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
	k := shape[axis]
	xstr := rowMajorStrides(shape)
	offs := make([]int, len(xs))
	total := 0
	for i, x := range xs {
		offs[i] = total
		total = align16(total + x.Type.NumElems()*smemSize(x.Type))
	}
	outN := in.Results[0].Type.NumElems()
	arg := kind == ir.ReduceArgMax || kind == ir.ReduceArgMin
	// Fewer outputs than threads: split the reduced axis into chunks, one thread per
	// (output, chunk), then fold the chunks' partial results in a tree through shared memory.
	chunks := 1
	if outN < g.threads && k >= 16 {
		chunks = min(g.threads/outN, k/4)
	}
	// The whole tile reduces to one value and every thread's chunk is the run of elements it
	// already holds (chunk j = thread j): the chunks fold in registers, in the order a fold
	// from shared memory would take, and the inputs are not staged.
	inRegs := chunks == g.threads && outN == 1 && k/chunks == g.runLen(k)
	for _, x := range xs {
		inRegs = inRegs && g.async[x] == nil && len(g.get(x)) == k/chunks
	}
	partOffs := make([]int, len(xs)+1)
	need := total
	if inRegs { // the partials alone use shared memory
		need = 0
	}
	if chunks > 1 {
		for i, x := range xs {
			partOffs[i] = need
			need = align16(need + chunks*outN*smemSize(x.Type.ScalarType()))
		}
		partOffs[len(xs)] = need
		if arg {
			need = align16(need + chunks*outN*4)
		}
	}
	g.need(need)
	if !inRegs {
		g.emit("bar.sync 0")
		for i, x := range xs {
			g.toShared(x, offs[i])
		}
		g.emit("bar.sync 0")
	}

	keep := append([]int(nil), shape...)
	keep[axis] = 1
	mstr := append([]int(nil), xstr...)
	mstr[axis] = 0
	if chunks == 1 {
		res := g.foldRange(in, kind, xs, offs, keep, mstr, xstr[axis], g.slots(outN), func(r int) string { return g.slotIndex(outN, r) }, "", k)
		for i, v := range in.Results {
			out := make([]string, len(res))
			for r := range res {
				if arg {
					out[r] = res[r].idx
				} else {
					out[r] = res[r].accs[i]
				}
			}
			g.set(v, out)
		}
		return
	}
	// Stage 1: thread t folds chunk j = t / outN of output o = t % outN.
	per := k / chunks
	o, j := g.newReg(rcB32), g.newReg(rcB32)
	g.emit("and.b32 %s, %s, %d", o, g.tid, outN-1)
	g.emit("shr.u32 %s, %s, %d", j, g.tid, log2(outN))
	skip := g.label()
	if chunks*outN < g.threads { // threads past the last chunk idle
		idle := g.newReg(rcPred)
		g.emit("setp.ge.u32 %s, %s, %d", idle, j, chunks)
		g.emit("@%s bra %s", idle, skip)
	}
	k0 := g.newReg(rcB32)
	g.emit("mul.lo.u32 %s, %s, %d", k0, j, per)
	var part partial
	if inRegs {
		part = g.foldRegs(in, kind, xs, k0)
	} else {
		part = g.foldRange(in, kind, xs, offs, keep, mstr, xstr[axis], 1, func(int) string { return o }, k0, per)[0]
	}
	slot := g.newReg(rcB32) // j*outN + o
	g.emit("mad.lo.u32 %s, %s, %d, %s", slot, j, outN, o)
	shuffle := true // warp shuffles move 32-bit values; 64-bit partials use the shared tree
	for _, x := range xs {
		if c := classOf(x.Type.ScalarType()); c == rcB64 || c == rcF64 {
			shuffle = false
		}
	}
	var final []partial
	if shuffle {
		final = g.shuffleTree(in, kind, xs, partOffs, arg, part, o, j, outN, chunks, skip)
	} else {
		final = g.sharedTree(in, kind, xs, partOffs, arg, part, slot, j, outN, chunks, skip)
	}
	nslots := g.slots(outN)
	for i, v := range in.Results {
		out := make([]string, nslots)
		for r := range out {
			if arg {
				out[r] = final[r].idx
			} else {
				out[r] = final[r].accs[i]
			}
		}
		g.set(v, out)
	}
}

// sharedTree folds the chunks' partials (thread j*outN+o holds chunk j of output o) in
// shared memory: chunk j takes in chunk j+s for s = chunks/2 .. 1, a barrier after each round;
// then every thread reads its outputs from chunk 0.
func (g *gen) sharedTree(in *ir.Instr, kind int, xs []*ir.Value, partOffs []int, arg bool, part partial, slot, j string, outN, chunks int, skip string) []partial {
	g.storePartial(xs, partOffs, arg, slot, part, "")
	g.placeLabel(skip)
	g.emit("bar.sync 0")
	for s := chunks / 2; s >= 1; s /= 2 {
		out := g.label()
		p := g.newReg(rcPred)
		g.emit("setp.ge.u32 %s, %s, %d", p, j, s)
		g.emit("@%s bra %s", p, out)
		a := g.loadPartial(xs, partOffs, arg, slot)
		other := g.newReg(rcB32)
		g.emit("add.u32 %s, %s, %d", other, slot, s*outN)
		b := g.loadPartial(xs, partOffs, arg, other)
		g.combine(in, kind, a.accs, b.accs, a.idx, b.idx)
		g.storePartial(xs, partOffs, arg, slot, a, "")
		g.placeLabel(out)
		g.emit("bar.sync 0")
	}
	final := make([]partial, g.slots(outN))
	for r := range final {
		final[r] = g.loadPartial(xs, partOffs, arg, g.slotIndex(outN, r))
	}
	return final
}

// shuffleTree folds the chunks' partials first within each warp with butterfly shuffles
// (chunks j and j^s, the lower one as the accumulator so the order is the sequential one),
// then the per-warp results through shared memory: the first chunk of each group of sW
// writes its partial, and every thread folds the groups of its outputs in order.
func (g *gen) shuffleTree(in *ir.Instr, kind int, xs []*ir.Value, partOffs []int, arg bool, part partial, o, j string, outN, chunks int, skip string) []partial {
	g.placeLabel(skip)
	sW := max(1, min(chunks, 32/outN))
	for s := 1; s < sW; s *= 2 {
		next := partial{}
		var bs []string
		if kind == ir.ReduceSum {
			// Addition commutes exactly: both lanes of a pair compute lower + upper without
			// choosing which operand is the lower one.
			for i, x := range xs {
				other := g.shfl(classOf(x.Type.ScalarType()), part.accs[i], s*outN)
				next.accs = append(next.accs, part.accs[i])
				bs = append(bs, other)
			}
			g.combine(in, kind, next.accs, bs, "", "")
			part = next
			continue
		}
		upper := g.newReg(rcPred)
		bit := g.newReg(rcB32)
		g.emit("and.b32 %s, %s, %d", bit, j, s)
		g.emit("setp.ne.u32 %s, %s, 0", upper, bit)
		for i, x := range xs {
			st := x.Type.ScalarType()
			other := g.shfl(classOf(st), part.accs[i], s*outN)
			next.accs = append(next.accs, g.selectOp(st, upper, other, part.accs[i]))
			bs = append(bs, g.selectOp(st, upper, part.accs[i], other))
		}
		var bIdx string
		if arg {
			other := g.shfl(rcB32, part.idx, s*outN)
			next.idx = g.selectOp(ir.Scalar(ir.I32), upper, other, part.idx)
			bIdx = g.selectOp(ir.Scalar(ir.I32), upper, part.idx, other)
		}
		g.combine(in, kind, next.accs, bs, next.idx, bIdx)
		part = next
	}
	groups := chunks / sW
	lead, p1, p2, rem := g.newReg(rcPred), g.newReg(rcPred), g.newReg(rcPred), g.newReg(rcB32)
	g.emit("and.b32 %s, %s, %d", rem, j, sW-1)
	g.emit("setp.eq.u32 %s, %s, 0", p1, rem)
	g.emit("setp.lt.u32 %s, %s, %d", p2, j, chunks)
	g.emit("and.pred %s, %s, %s", lead, p1, p2)
	slot := g.newReg(rcB32) // (j / sW) * outN + o
	g.emit("shr.u32 %s, %s, %d", slot, j, log2(sW))
	g.emit("mad.lo.u32 %s, %s, %d, %s", slot, slot, outN, o)
	g.emit("bar.sync 0")
	g.storePartial(xs, partOffs, arg, slot, part, lead)
	g.emit("bar.sync 0")
	final := make([]partial, g.slots(outN))
	for r := range final {
		e := g.slotIndex(outN, r)
		final[r] = g.loadPartial(xs, partOffs, arg, e)
		for c := 1; c < groups; c++ {
			other := g.newReg(rcB32)
			g.emit("add.u32 %s, %s, %d", other, e, c*outN)
			b := g.loadPartial(xs, partOffs, arg, other)
			g.combine(in, kind, final[r].accs, b.accs, final[r].idx, b.idx)
		}
	}
	return final
}

// shfl is a butterfly shuffle of one 32-bit (or narrower) value across lanes lane^mask.
func (g *gen) shfl(c regClass, v string, mask int) string {
	switch c {
	case rcB16:
		w, r := g.newReg(rcB32), g.newReg(rcB32)
		g.emit("cvt.u32.u16 %s, %s", w, v)
		g.emit("shfl.sync.bfly.b32 %s, %s, %d, 31, -1", r, w, mask)
		d := g.newReg(rcB16)
		g.emit("cvt.u16.u32 %s, %s", d, r)
		return d
	case rcPred:
		w, r := g.predToInt(v), g.newReg(rcB32)
		g.emit("shfl.sync.bfly.b32 %s, %s, %d, 31, -1", r, w, mask)
		d := g.newReg(rcPred)
		g.emit("setp.ne.u32 %s, %s, 0", d, r)
		return d
	}
	d := g.newReg(c)
	g.emit("shfl.sync.bfly.b32 %s, %s, %d, 31, -1", d, v, mask)
	return d
}

// foldRegs folds the elements this thread holds, slot 0 first, as foldRange folds a chunk
// staged in shared memory; k0 is the axis index of slot 0 (for arg kinds).
func (g *gen) foldRegs(in *ir.Instr, kind int, xs []*ir.Value, k0 string) partial {
	arg := kind == ir.ReduceArgMax || kind == ir.ReduceArgMin
	var p partial
	regs := make([][]string, len(xs))
	for i, x := range xs {
		regs[i] = g.get(x)
		acc := g.newReg(classOf(x.Type.ScalarType()))
		g.mov(classOf(x.Type.ScalarType()), acc, regs[i][0])
		p.accs = append(p.accs, acc)
	}
	if arg {
		p.idx = g.newReg(rcB32)
		g.emit("mov.u32 %s, %s", p.idx, k0)
	}
	for r := 1; r < len(regs[0]); r++ {
		bs := make([]string, len(xs))
		for i := range xs {
			bs[i] = regs[i][r]
		}
		var kAbs string
		if arg {
			kAbs = g.newReg(rcB32)
			g.emit("add.u32 %s, %s, %d", kAbs, k0, r)
		}
		g.combine(in, kind, p.accs, bs, p.idx, kAbs)
	}
	return p
}

// partial is a running reduction: one accumulator per input, and the index for arg kinds.
type partial struct {
	accs []string
	idx  string
}

// foldRange folds, for nslots outputs (element index register by slot), n consecutive
// elements of the reduced axis starting at k0 (a register; "" for 0), reading the staged
// inputs. Accumulators are fresh registers.
func (g *gen) foldRange(in *ir.Instr, kind int, xs []*ir.Value, offs, keep, mstr []int, axisStride, nslots int, outIndex func(r int) string, k0 string, n int) []partial {
	arg := kind == ir.ReduceArgMax || kind == ir.ReduceArgMin
	addrs := make([][]string, nslots)
	res := make([]partial, nslots)
	for r := range nslots {
		bidx := g.mapIndex(outIndex(r), keep, mstr)
		if k0 != "" {
			t := g.newReg(rcB32)
			g.emit("mad.lo.u32 %s, %s, %d, %s", t, k0, axisStride, bidx)
			bidx = t
		}
		for i, x := range xs {
			st := x.Type.ScalarType()
			a := g.newReg(rcB32)
			g.emit("mad.lo.u32 %s, %s, %d, %s", a, bidx, smemSize(st), g.smem())
			if offs[i] != 0 {
				g.emit("add.u32 %s, %s, %d", a, a, offs[i])
			}
			addrs[r] = append(addrs[r], a)
			v := g.ld("shared", st, a, "", "", false)
			acc := g.newReg(classOf(st))
			g.mov(classOf(st), acc, v)
			res[r].accs = append(res[r].accs, acc)
		}
		if arg {
			res[r].idx = g.newReg(rcB32)
			if k0 != "" {
				g.emit("mov.u32 %s, %s", res[r].idx, k0)
			} else {
				g.emit("mov.u32 %s, 0", res[r].idx)
			}
		}
	}
	if n > 1 {
		kr := g.newReg(rcB32)
		g.emit("mov.u32 %s, 1", kr)
		loop := g.label()
		g.placeLabel(loop)
		kAbs := kr
		if arg && k0 != "" {
			kAbs = g.newReg(rcB32)
			g.emit("add.u32 %s, %s, %s", kAbs, k0, kr)
		}
		for r := range nslots {
			bs := make([]string, len(xs))
			for i, x := range xs {
				st := x.Type.ScalarType()
				a := g.newReg(rcB32)
				g.emit("mad.lo.u32 %s, %s, %d, %s", a, kr, axisStride*smemSize(st), addrs[r][i])
				bs[i] = g.ld("shared", st, a, "", "", false)
			}
			g.combine(in, kind, res[r].accs, bs, res[r].idx, kAbs)
		}
		g.emit("add.u32 %s, %s, 1", kr, kr)
		more := g.newReg(rcPred)
		g.emit("setp.lt.u32 %s, %s, %d", more, kr, n)
		g.emit("@%s bra %s", more, loop)
	}
	return res
}

func (g *gen) storePartial(xs []*ir.Value, partOffs []int, arg bool, slot string, p partial, guard string) {
	for i, x := range xs {
		st := x.Type.ScalarType()
		a := g.newReg(rcB32)
		g.emit("mad.lo.u32 %s, %s, %d, %s", a, slot, smemSize(st), g.smem())
		g.st("shared", st, offsetAddr(a, partOffs[i]), p.accs[i], guard)
	}
	if arg {
		a := g.newReg(rcB32)
		g.emit("mad.lo.u32 %s, %s, 4, %s", a, slot, g.smem())
		g.st("shared", ir.Scalar(ir.I32), offsetAddr(a, partOffs[len(xs)]), p.idx, guard)
	}
}

func (g *gen) loadPartial(xs []*ir.Value, partOffs []int, arg bool, slot string) partial {
	var p partial
	for i, x := range xs {
		st := x.Type.ScalarType()
		a := g.newReg(rcB32)
		g.emit("mad.lo.u32 %s, %s, %d, %s", a, slot, smemSize(st), g.smem())
		v := g.ld("shared", st, offsetAddr(a, partOffs[i]), "", "", false)
		acc := g.newReg(classOf(st))
		g.mov(classOf(st), acc, v)
		p.accs = append(p.accs, acc)
	}
	if arg {
		a := g.newReg(rcB32)
		g.emit("mad.lo.u32 %s, %s, 4, %s", a, slot, g.smem())
		p.idx = g.ld("shared", ir.Scalar(ir.I32), offsetAddr(a, partOffs[len(xs)]), "", "", false)
	}
	return p
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
		y := g.block(region) // n values (ir.CheckInstr)
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
	if fa := g.fragDot[in]; fa != nil {
		acc := g.frags[fa.iter]
		g.fragDotStep(fa, acc)
		g.frags[in.Result()] = acc
		return
	}
	if typ, kstep, ok := g.mmaKind(in); ok {
		g.mmaDot(in, typ, kstep)
		return
	}
	a, b, acc := in.Args[0], in.Args[1], in.Args[2]
	res := in.Result()
	as, bs, rs := a.Type.Shape, b.Type.Shape, res.Type.Shape
	rank := len(rs) // 2, or 3 when batched (ir.DotResult)
	m, n, kk := rs[rank-2], rs[rank-1], as[rank-1]
	batch := 1
	if rank == 3 {
		batch = rs[0]
	}
	ad, cd := a.Type.Elem, res.Type.Elem
	sa, sb := smemSize(a.Type), smemSize(b.Type)
	offB := align16(a.Type.NumElems() * sa)
	g.need(offB + b.Type.NumElems()*sb)
	g.emit("bar.sync 0")
	g.stageOperand(a, 0)
	g.stageOperand(b, offB)
	g.stagedBarrier()
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
	for r := range nslots {
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
	aStr, bStr := []int{m * kk, kk, 0}, []int{kk * n, 0, 1}
	ra, ca, okA := g.splitIndex(outN, outShape, aStr)
	rb, cb, okB := g.splitIndex(outN, outShape, bStr)
	if !okA || !okB {
		// One address pair per slot.
		ra, rb, ca, cb = "", "", make([]int, nslots), make([]int, nslots)
	}
	// operand loads a K-step element for every slot; slots reading the same element (the
	// same row of A or column of B) share one load when the addresses split.
	fma := func(av, bv, c string) {
		if intDot {
			g.emit("mad.lo.s32 %s, %s, %s, %s", c, av, bv, c)
		} else {
			g.emit("fma.rn.f32 %s, %s, %s, %s", c, av, bv, c)
		}
	}
	operand := func(cache map[int]string, base string, off int, t ir.Type) string {
		if v, ok := cache[off]; ok && base != "" {
			return v
		}
		v := g.ld("shared", t.ScalarType(), offsetAddr(base, off), "", "", false)
		if isHalf(t.Elem) {
			v = g.toF32(t.Elem, v)
		}
		cache[off] = v
		return v
	}
	kr := g.newReg(rcB32)
	g.emit("mov.u32 %s, 0", kr)
	loop := g.label()
	if ra != "" {
		aBase, bBase := g.newReg(rcB32), g.newReg(rcB32)
		g.emit("mad.lo.u32 %s, %s, %d, %s", aBase, ra, sa, g.smem())
		g.emit("mad.lo.u32 %s, %s, %d, %s", bBase, rb, sb, g.smem())
		g.emit("add.u32 %s, %s, %d", bBase, bBase, offB)
		g.placeLabel(loop)
		for j := range unroll {
			aCache, bCache := map[int]string{}, map[int]string{}
			for r := range nslots {
				av := operand(aCache, aBase, (ca[r]+j)*sa, a.Type)
				bv := operand(bCache, bBase, (cb[r]+j*n)*sb, b.Type)
				fma(av, bv, cs[r])
			}
		}
		g.emit("add.u32 %s, %s, %d", aBase, aBase, unroll*sa)
		g.emit("add.u32 %s, %s, %d", bBase, bBase, unroll*n*sb)
	} else {
		aAddr := make([]string, nslots)
		bAddr := make([]string, nslots)
		for r := range nslots {
			e := g.slotIndex(outN, r)
			ai := g.mapIndex(e, outShape, aStr)
			bi := g.mapIndex(e, outShape, bStr)
			aAddr[r], bAddr[r] = g.newReg(rcB32), g.newReg(rcB32)
			g.emit("mad.lo.u32 %s, %s, %d, %s", aAddr[r], ai, sa, g.smem())
			g.emit("mad.lo.u32 %s, %s, %d, %s", bAddr[r], bi, sb, g.smem())
			g.emit("add.u32 %s, %s, %d", bAddr[r], bAddr[r], offB)
		}
		g.placeLabel(loop)
		for j := range unroll {
			for r := range nslots {
				av := operand(map[int]string{}, aAddr[r], j*sa, a.Type)
				bv := operand(map[int]string{}, bAddr[r], j*n*sb, b.Type)
				fma(av, bv, cs[r])
			}
		}
		for r := range nslots {
			g.emit("add.u32 %s, %s, %d", aAddr[r], aAddr[r], unroll*sa)
			g.emit("add.u32 %s, %s, %d", bAddr[r], bAddr[r], unroll*n*sb)
		}
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
