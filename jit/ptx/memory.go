package ptx

import (
	"fmt"
	"strings"

	"github.com/widejit/widejit/triton/ir"
)

// memType is the ld/st type suffix for elements of d held in registers of classOf(d).
func memType(d ir.DType, ptr bool) string {
	if ptr {
		return "b64"
	}
	switch d {
	case ir.I1, ir.U8:
		return "u8"
	case ir.I8:
		return "s8"
	case ir.I16:
		return "s16"
	case ir.U16:
		return "u16"
	case ir.I32, ir.U32:
		return "b32"
	case ir.I64, ir.U64:
		return "b64"
	case ir.F16, ir.BF16:
		return "b16"
	case ir.F32:
		return "f32"
	case ir.F64:
		return "f64"
	}
	return "b32"
}

func elemSize(t ir.Type) int {
	if t.Ptr {
		return 8
	}
	return t.Elem.Size()
}

func (g *gen) ptrAdd(in *ir.Instr) {
	p, off := g.get(in.Args[0]), g.get(in.Args[1])
	size := in.Args[0].Type.Elem.Size()
	wide := classOf(in.Args[1].Type) == rcB64
	out := make([]string, g.slots(in.Result().Type.NumElems()))
	for r := range out {
		d := g.newReg(rcB64)
		if wide {
			g.emit("mad.lo.s64 %s, %s, %d, %s", d, off[r], size, p[r])
		} else {
			g.emit("mad.wide.s32 %s, %s, %d, %s", d, off[r], size, p[r])
		}
		out[r] = d
	}
	g.set(in.Result(), out)
}

// ldst emits one load (st == false) or store of element type t at addr in space
// ("global" or "shared"), guarded by pred when non-empty. A load returns its register; an
// i1 travels through memory as a byte.
func (g *gen) ld(space string, t ir.Type, addr, pred, other string, volatile bool) string {
	guard := ""
	if pred != "" {
		guard = "@" + pred + " "
	}
	vol := ""
	if volatile {
		vol = ".volatile"
	}
	mt := memType(t.Elem, t.Ptr)
	if !t.Ptr && t.Elem == ir.I1 {
		w := g.newReg(rcB32)
		if other != "" {
			g.emit("selp.u32 %s, 1, 0, %s", w, other)
		} else {
			g.emit("mov.u32 %s, 0", w)
		}
		g.emit("%sld%s.%s.u8 %s, [%s]", guard, vol, space, w, addr)
		p := g.newReg(rcPred)
		g.emit("setp.ne.u32 %s, %s, 0", p, w)
		return p
	}
	c := classOf(t)
	dst := g.newReg(c)
	if pred != "" {
		if other != "" {
			g.mov(c, dst, other)
		} else {
			g.zero(c, dst)
		}
	}
	g.emit("%sld%s.%s.%s %s, [%s]", guard, vol, space, mt, dst, addr)
	return dst
}

func (g *gen) zero(c regClass, dst string) {
	switch c {
	case rcF32:
		g.emit("mov.f32 %s, 0f00000000", dst)
	case rcF64:
		g.emit("mov.f64 %s, 0d0000000000000000", dst)
	case rcPred:
		g.emit("setp.ne.u32 %s, %s, %s", dst, g.tid, g.tid)
	default:
		g.emit("mov%s %s, 0", movSuffix(c), dst)
	}
}

func (g *gen) st(space string, t ir.Type, addr, val, pred string) {
	guard := ""
	if pred != "" {
		guard = "@" + pred + " "
	}
	if !t.Ptr && t.Elem == ir.I1 {
		val = g.predToInt(val)
	}
	g.emit("%sst.%s.%s [%s], %s", guard, space, memType(t.Elem, t.Ptr), addr, val)
}

func (g *gen) load(in *ir.Instr) {
	t := in.Result().Type.ScalarType()
	ptrs := g.get(in.Args[0])
	var mask, other []string
	var maskV *ir.Value
	if len(in.Args) == 3 {
		mask, other = g.get(in.Args[1]), g.get(in.Args[2])
		maskV = in.Args[1]
	}
	volatile := in.Int&1 != 0
	n := in.Result().Type.NumElems()
	w := g.vecWidth(in.Args[0], maskV, g.runLen(n))
	out := make([]string, len(ptrs))
	for r := 0; r < len(out); r += w {
		pred := ""
		if mask != nil {
			pred = mask[r]
		}
		if w == 1 {
			o := ""
			if other != nil {
				o = other[r]
			}
			out[r] = g.ld("global", t, ptrs[r], pred, o, volatile)
			continue
		}
		c := classOf(t)
		for j := range w {
			out[r+j] = g.newReg(c)
			if pred != "" {
				g.mov(c, out[r+j], other[r+j])
			}
		}
		guard, vol := "", ""
		if pred != "" {
			guard = "@" + pred + " "
		}
		if volatile {
			vol = ".volatile"
		}
		if w == 8 {
			// eight 16-bit elements: one 16-byte ld.global.v4.b32 of pairs, unpacked
			words := g.pairWords(out[r : r+w])
			g.emit("%sld%s.global.v4.b32 {%s}, [%s]", guard, vol, strings.Join(words, ", "), ptrs[r])
			for j, wd := range words {
				g.emit("mov.b32 {%s, %s}, %s", out[r+2*j], out[r+2*j+1], wd)
			}
			continue
		}
		g.emit("%sld%s.global.v%d.%s {%s}, [%s]", guard, vol, w, memType(t.Elem, false), strings.Join(out[r:r+w], ", "), ptrs[r])
	}
	if volatile && n < g.threads {
		// A volatile location may change between the replicas' loads (a flag another program
		// sets); the owner's value is shared so a branch on it stays uniform across the CTA.
		out = g.shareFromOwners(in.Result().Type, out)
	}
	g.set(in.Result(), out)
}

func (g *gen) store(in *ir.Instr) {
	t := in.Args[1].Type.ScalarType()
	ptrs, vals := g.get(in.Args[0]), g.get(in.Args[1])
	var mask []string
	var maskV *ir.Value
	if len(in.Args) == 3 {
		mask = g.get(in.Args[2])
		maskV = in.Args[2]
	}
	w := g.vecWidth(in.Args[0], maskV, g.runLen(in.Args[1].Type.NumElems()))
	for r := 0; r < len(ptrs); r += w {
		p := ""
		if mask != nil {
			p = mask[r]
		}
		if w == 1 {
			g.st("global", t, ptrs[r], vals[r], p)
			continue
		}
		guard := ""
		if p != "" {
			guard = "@" + p + " "
		}
		if w == 8 {
			g.emit("%sst.global.v4.b32 [%s], {%s}", guard, ptrs[r], strings.Join(g.pairWords(vals[r:r+w]), ", "))
			continue
		}
		g.emit("%sst.global.v%d.%s [%s], {%s}", guard, w, memType(t.Elem, false), ptrs[r], strings.Join(vals[r:r+w], ", "))
	}
}

// pairWords packs 16-bit registers pairwise (the first the low half) into new 32-bit ones:
// eight fp16/bf16 elements move as one 16-byte vector of four words.
func (g *gen) pairWords(halves []string) []string {
	words := make([]string, len(halves)/2)
	for j := range words {
		words[j] = g.newReg(rcB32)
		g.emit("mov.b32 %s, {%s, %s}", words[j], halves[2*j], halves[2*j+1])
	}
	return words
}

var atomicOps = map[int64]string{ir.AtomicAdd: "add", ir.AtomicMax: "max", ir.AtomicMin: "min",
	ir.AtomicAnd: "and", ir.AtomicOr: "or", ir.AtomicXor: "xor", ir.AtomicXchg: "exch"}

// atomic emits AtomicRMW and AtomicCAS. Elements replicated over threads (tiles smaller
// than the CTA, scalars) run the atomic once, in their owner thread, and share its result
// through shared memory.
func (g *gen) atomic(in *ir.Instr) {
	res := in.Result()
	t := res.Type.ScalarType()
	n := res.Type.NumElems()
	d := t.Elem
	c := classOf(t)
	if c == rcPred || (c == rcB32 && d.Bits() < 32) || (c == rcB16 && !(in.Op == ir.AtomicRMW && in.Int == ir.AtomicAdd && d == ir.F16) && in.Op != ir.AtomicCAS) {
		g.failf(in.Pos, "ptx: atomics on %s are not supported by the PTX backend", d)
	}
	ptrs := g.get(in.Args[0])
	var mask []string
	if in.Op == ir.AtomicRMW && len(in.Args) > 2 {
		mask = g.get(in.Args[2])
	}
	own := ""
	if n < g.threads {
		own = g.owner(n)
	}
	out := make([]string, len(ptrs))
	for r := range out {
		pred := own
		if mask != nil {
			if pred == "" {
				pred = mask[r]
			} else {
				p := g.newReg(rcPred)
				g.emit("and.pred %s, %s, %s", p, pred, mask[r])
				pred = p
			}
		}
		guard := ""
		if pred != "" {
			guard = "@" + pred + " "
		}
		dst := g.newReg(c)
		g.zero(c, dst)
		if in.Op == ir.AtomicCAS {
			cmp, val := g.get(in.Args[1])[r], g.get(in.Args[2])[r]
			g.emit("%satom.acq_rel.gpu.global.cas.b%d %s, [%s], %s, %s", guard, d.Bits(), dst, ptrs[r], cmp, val)
			out[r] = dst
			continue
		}
		val := g.get(in.Args[1])[r]
		op, ok := atomicOps[in.Int]
		if !ok {
			g.failf(in.Pos, "ptx: unknown atomic kind %d", in.Int)
		}
		var ty string
		switch {
		case op == "add" && d == ir.F16:
			ty = "noftz.f16"
		case op == "add" && d.IsFloat():
			ty = "f" + fmt.Sprint(d.Bits())
		case op == "add":
			ty = fmt.Sprintf("u%d", d.Bits())
		case op == "max" || op == "min":
			if d.IsFloat() {
				out[r] = g.floatMinMaxCAS(op, t, ptrs[r], val, pred, dst)
				continue
			}
			ty = intType(d)
		default:
			ty = fmt.Sprintf("b%d", d.Bits())
		}
		g.emit("%satom.acq_rel.gpu.global.%s.%s %s, [%s], %s", guard, op, ty, dst, ptrs[r], val)
		out[r] = dst
	}
	if n < g.threads {
		out = g.shareFromOwners(res.Type, out)
	}
	g.set(res, out)
}

// floatMinMaxCAS is an atomic float max/min as a compare-and-swap loop on the bit pattern
// (PTX 7.8 has no float atom.max).
func (g *gen) floatMinMaxCAS(op string, t ir.Type, addr, val, pred, dst string) string {
	c := classOf(t)
	bitsN := t.Elem.Bits()
	ic := rcB32
	ft := "f32"
	if bitsN == 64 {
		ic = rcB64
		ft = "f64"
	}
	skip, loop := g.label(), g.label()
	if pred != "" {
		g.emit("@!%s bra %s", pred, skip)
	}
	old, nw, prev, f, nf := g.newReg(ic), g.newReg(ic), g.newReg(ic), g.newReg(c), g.newReg(c)
	g.emit("ld.volatile.global.b%d %s, [%s]", bitsN, old, addr)
	g.placeLabel(loop)
	g.emit("mov.b%d %s, %s", bitsN, f, old)
	g.emit("%s.%s %s, %s, %s", op, ft, nf, f, val)
	g.emit("mov.b%d %s, %s", bitsN, nw, nf)
	g.emit("atom.acq_rel.gpu.global.cas.b%d %s, [%s], %s, %s", bitsN, prev, addr, old, nw)
	again := g.newReg(rcPred)
	g.emit("setp.ne.b%d %s, %s, %s", bitsN, again, prev, old)
	g.emit("mov.b%d %s, %s", bitsN, old, prev)
	g.emit("@%s bra %s", again, loop)
	g.emit("mov.b%d %s, %s", bitsN, dst, old)
	g.placeLabel(skip)
	return dst
}

// shareFromOwners gives every replica of an element the owner thread's value.
func (g *gen) shareFromOwners(t ir.Type, regs []string) []string {
	n := t.NumElems()
	size := smemSize(t)
	g.need(n * size)
	g.emit("bar.sync 0")
	base, _ := g.elemIndex(n, 0)
	addr := g.newReg(rcB32)
	g.emit("mad.lo.u32 %s, %s, %d, %s", addr, base, size, g.smem())
	st := t.ScalarType()
	g.st("shared", st, addr, regs[0], g.owner(n))
	g.emit("bar.sync 0")
	return []string{g.ld("shared", st, addr, "", "", false)}
}

// smemSize is the bytes one element of t takes in shared memory.
func smemSize(t ir.Type) int { return elemSize(t) }

func (g *gen) need(bytes int) {
	if bytes > g.smemBytes {
		g.smemBytes = bytes
	}
	g.smem()
}
