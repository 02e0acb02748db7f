package ptx

import (
	"github.com/widejit/widejit/triton/ir"
)

// elementwise emits an element-wise op slot by slot.
func (g *gen) elementwise(in *ir.Instr) {
	args := make([][]string, len(in.Args))
	for i, a := range in.Args {
		args[i] = g.get(a)
	}
	res := in.Result()
	n := g.slots(res.Type.NumElems())
	out := make([]string, n)
	share := g.constantRuns(res)
	for r := range out {
		if r%share != 0 { // one value over the run: copy its first slot (ptxas folds the copy)
			out[r] = g.newReg(classOf(res.Type))
			g.mov(classOf(res.Type), out[r], out[r-r%share])
			continue
		}
		ops := make([]string, len(args))
		for i := range args {
			ops[i] = args[i][r]
		}
		switch in.Op {
		case ir.Cmp:
			out[r] = g.cmp(in, in.Args[0].Type, ops[0], ops[1])
		case ir.Select:
			out[r] = g.selectOp(res.Type, ops[0], ops[1], ops[2])
		case ir.Cast:
			out[r] = g.cast(in, in.Args[0].Type, res.Type, ops[0], in.Int == 1)
		default:
			out[r] = g.arith(in, res.Type, ops)
		}
	}
	g.set(res, out)
}

// constantRuns is how many consecutive slots of v hold one value: the thread's run length V
// when the contiguity analysis proves v constant over aligned groups of at least V elements
// of its last dim (a mask cols < N with N divisible by 16, a splat), else 1.
func (g *gen) constantRuns(v *ir.Value) int {
	n := v.Type.NumElems()
	if g.contig == nil || n < g.threads {
		return 1
	}
	run := g.runLen(n)
	if lastDim(v.Type)%int64(run) != 0 || g.contig.of(v).constancy < int64(run) {
		return 1
	}
	return run
}

// toF32 widens an fp16/bf16 register to fp32 (exact).
func (g *gen) toF32(d ir.DType, h string) string {
	f := g.newReg(rcF32)
	if d == ir.BF16 {
		// cvt.f32.bf16 needs sm_90; bf16 is the high half of an fp32.
		w := g.newReg(rcB32)
		g.emit("cvt.u32.u16 %s, %s", w, h)
		g.emit("shl.b32 %s, %s, 16", w, w)
		g.emit("mov.b32 %s, %s", f, w)
		return f
	}
	g.emit("cvt.f32.f16 %s, %s", f, h)
	return f
}

// fromF32 rounds an fp32 register to fp16/bf16 (nearest even).
func (g *gen) fromF32(d ir.DType, f string) string {
	h := g.newReg(rcB16)
	g.emit("cvt.rn.%s.f32 %s, %s", halfName(d), h, f)
	return h
}

func isHalf(d ir.DType) bool { return d == ir.F16 || d == ir.BF16 }

// arith emits one element of an arithmetic or math op of type t.
func (g *gen) arith(in *ir.Instr, t ir.Type, ops []string) string {
	d := t.Elem
	if isHalf(d) {
		// fp16/bf16 compute in fp32 and round once: exact for +,-,*,/ (fp32 holds the
		// product of two 11-bit significands) and what Triton does for the rest.
		wide := make([]string, len(ops))
		for i, o := range ops {
			wide[i] = g.toF32(d, o)
		}
		return g.fromF32(d, g.arith(in, ir.Scalar(ir.F32), wide))
	}
	c := classOf(t)
	if c == rcPred {
		return g.predArith(in, ops)
	}
	if d == ir.F64 && (in.Op == ir.Exp || in.Op == ir.Log || in.Op == ir.Exp2 || in.Op == ir.Log2 || in.Op == ir.Sin || in.Op == ir.Cos || in.Op == ir.Erf) {
		// PTX has no fp64 transcendental instructions; these go through fp32 (documented).
		f := g.newReg(rcF32)
		g.emit("cvt.rn.f32.f64 %s, %s", f, ops[0])
		r := g.arith(in, ir.Scalar(ir.F32), []string{f})
		o := g.newReg(rcF64)
		g.emit("cvt.f64.f32 %s, %s", o, r)
		return o
	}
	dst := g.newReg(c)
	a := ops[0]
	var b string
	if len(ops) > 1 {
		b = ops[1]
	}
	if d.IsFloat() {
		ft := "f32"
		if d == ir.F64 {
			ft = "f64"
		}
		switch in.Op {
		case ir.Add:
			g.emit("add.rn.%s %s, %s, %s", ft, dst, a, b)
		case ir.Sub:
			g.emit("sub.rn.%s %s, %s, %s", ft, dst, a, b)
		case ir.Mul:
			g.emit("mul.rn.%s %s, %s, %s", ft, dst, a, b)
		case ir.Div:
			g.emit("div.rn.%s %s, %s, %s", ft, dst, a, b)
		case ir.Rem:
			// fmod as LLVM's NVPTX lowers frem: a - trunc(a/b)*b.
			q := g.newReg(c)
			g.emit("div.rn.%s %s, %s, %s", ft, q, a, b)
			g.emit("cvt.rzi.%s.%s %s, %s", ft, ft, q, q)
			g.emit("neg.%s %s, %s", ft, q, q)
			g.emit("fma.rn.%s %s, %s, %s, %s", ft, dst, q, b, a)
		case ir.Min, ir.Max:
			op := map[ir.Op]string{ir.Min: "min", ir.Max: "max"}[in.Op]
			switch {
			case in.Int != ir.PropagateNaN:
				g.emit("%s.%s %s, %s, %s", op, ft, dst, a, b)
			case ft == "f32":
				g.emit("%s.NaN.f32 %s, %s, %s", op, dst, a, b) // sm_80+
			default:
				// no .NaN form for f64: a + b is NaN exactly when either operand is
				m, sum := g.newReg(c), g.newReg(c)
				nan := g.newReg(rcPred)
				g.emit("%s.f64 %s, %s, %s", op, m, a, b)
				g.emit("add.rn.f64 %s, %s, %s", sum, a, b)
				g.emit("setp.nan.f64 %s, %s, %s", nan, a, b)
				g.emit("selp.f64 %s, %s, %s, %s", dst, sum, m, nan)
			}
		case ir.Neg:
			g.emit("neg.%s %s, %s", ft, dst, a)
		case ir.Abs:
			g.emit("abs.%s %s, %s", ft, dst, a)
		case ir.FMA:
			g.emit("fma.rn.%s %s, %s, %s, %s", ft, dst, a, b, ops[2])
		case ir.Floor:
			g.emit("cvt.rmi.%s.%s %s, %s", ft, ft, dst, a)
		case ir.Ceil:
			g.emit("cvt.rpi.%s.%s %s, %s", ft, ft, dst, a)
		case ir.Sqrt:
			g.emit("sqrt.rn.%s %s, %s", ft, dst, a)
		case ir.Rsqrt:
			if d == ir.F64 {
				s := g.newReg(c)
				g.emit("sqrt.rn.f64 %s, %s", s, a)
				g.emit("rcp.rn.f64 %s, %s", dst, s)
			} else {
				g.emit("rsqrt.approx.f32 %s, %s", dst, a)
			}
		case ir.Exp:
			s := g.newReg(c)
			g.emit("mul.f32 %s, %s, 0f3FB8AA3B", s, a) // log2(e)
			g.emit("ex2.approx.f32 %s, %s", dst, s)
		case ir.Exp2:
			g.emit("ex2.approx.f32 %s, %s", dst, a)
		case ir.Log:
			s := g.newReg(c)
			g.emit("lg2.approx.f32 %s, %s", s, a)
			g.emit("mul.f32 %s, %s, 0f3F317218", dst, s) // ln(2)
		case ir.Log2:
			g.emit("lg2.approx.f32 %s, %s", dst, a)
		case ir.Sin:
			g.emit("sin.approx.f32 %s, %s", dst, a)
		case ir.Cos:
			g.emit("cos.approx.f32 %s, %s", dst, a)
		case ir.Erf:
			return g.erf(a)
		default:
			g.failf(in.Pos, "ptx: %s on %s is not supported", in.Op, d)
		}
		return dst
	}
	it := intType(d)
	wide := c == rcB64
	bt := "b32"
	if wide {
		bt = "b64"
	}
	switch in.Op {
	case ir.Add:
		g.emit("add.%s %s, %s, %s", it, dst, a, b)
	case ir.Sub:
		g.emit("sub.%s %s, %s, %s", it, dst, a, b)
	case ir.Mul:
		g.emit("mul.lo.%s %s, %s, %s", it, dst, a, b)
	case ir.Div:
		g.emit("div.%s %s, %s, %s", it, dst, a, b)
	case ir.Rem:
		g.emit("rem.%s %s, %s, %s", it, dst, a, b)
	case ir.Min:
		g.emit("min.%s %s, %s, %s", it, dst, a, b)
	case ir.Max:
		g.emit("max.%s %s, %s, %s", it, dst, a, b)
	case ir.And:
		g.emit("and.%s %s, %s, %s", bt, dst, a, b)
	case ir.Or:
		g.emit("or.%s %s, %s, %s", bt, dst, a, b)
	case ir.Xor:
		g.emit("xor.%s %s, %s, %s", bt, dst, a, b)
	case ir.Shl, ir.Shr:
		cnt := b
		if wide {
			cnt = g.newReg(rcB32)
			g.emit("cvt.u32.u64 %s, %s", cnt, b)
		}
		if in.Op == ir.Shl {
			g.emit("shl.%s %s, %s, %s", bt, dst, a, cnt)
		} else {
			g.emit("shr.%s %s, %s, %s", it, dst, a, cnt)
		}
	case ir.MulHi:
		if d.Bits() < 32 {
			g.emit("mul.lo.s32 %s, %s, %s", dst, a, b)
			g.emit("shr.%s %s, %s, %d", it, dst, dst, d.Bits())
		} else {
			g.emit("mul.hi.%s %s, %s, %s", it, dst, a, b)
		}
	case ir.Neg:
		g.emit("neg.s%d %s, %s", map[bool]int{true: 64, false: 32}[wide], dst, a)
	case ir.Not:
		g.emit("not.%s %s, %s", bt, dst, a)
	case ir.Abs:
		if d.IsUnsigned() {
			g.mov(c, dst, a)
		} else {
			g.emit("abs.%s %s, %s", it, dst, a)
		}
	case ir.FMA:
		g.emit("mad.lo.%s %s, %s, %s, %s", it, dst, a, b, ops[2])
	default:
		g.failf(in.Pos, "ptx: %s on %s is not supported", in.Op, d)
	}
	g.normalize(d, dst)
	return dst
}

// predArith handles i1 logic.
func (g *gen) predArith(in *ir.Instr, ops []string) string {
	dst := g.newReg(rcPred)
	switch in.Op {
	case ir.And, ir.Mul, ir.Min:
		g.emit("and.pred %s, %s, %s", dst, ops[0], ops[1])
	case ir.Or, ir.Max, ir.Add:
		g.emit("or.pred %s, %s, %s", dst, ops[0], ops[1])
	case ir.Xor, ir.Sub:
		g.emit("xor.pred %s, %s, %s", dst, ops[0], ops[1])
	case ir.Not:
		g.emit("not.pred %s, %s", dst, ops[0])
	case ir.Abs, ir.Neg:
		g.emit("mov.pred %s, %s", dst, ops[0])
	default:
		g.failf(in.Pos, "ptx: %s on i1 is not supported", in.Op)
	}
	return dst
}

// erf: an odd Taylor series below |x| = 1 (error < 1e-9) and Abramowitz-Stegun 7.1.26
// above (absolute error < 1.5e-7 where erf > 0.84).
func (g *gen) erf(x string) string {
	ax, x2 := g.newReg(rcF32), g.newReg(rcF32)
	g.emit("abs.f32 %s, %s", ax, x)
	g.emit("mul.rn.f32 %s, %s, %s", x2, x, x)
	// Taylor: erf(x) = 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)).
	coef := make([]float64, 12)
	fact := 1.0
	for n := range coef {
		if n > 0 {
			fact *= float64(n)
		}
		s := 1.0
		if n%2 == 1 {
			s = -1
		}
		coef[n] = 1.1283791670955126 * s / (fact * float64(2*n+1))
	}
	p := g.newReg(rcF32)
	g.emit("mov.f32 %s, %s", p, f32imm(coef[len(coef)-1]))
	for n := len(coef) - 2; n >= 0; n-- {
		g.emit("fma.rn.f32 %s, %s, %s, %s", p, p, x2, f32imm(coef[n]))
	}
	small := g.newReg(rcF32)
	g.emit("mul.rn.f32 %s, %s, %s", small, p, x)
	// A&S: 1 - t*(a1 + t*(a2 + ...)) * exp(-x^2), t = 1/(1 + 0.3275911|x|).
	t := g.newReg(rcF32)
	g.emit("fma.rn.f32 %s, %s, 0f3EA7BA05, 0f3F800000", t, ax)
	g.emit("rcp.rn.f32 %s, %s", t, t)
	q := g.newReg(rcF32)
	a := []float64{0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429}
	g.emit("mov.f32 %s, %s", q, f32imm(a[4]))
	for i := 3; i >= 0; i-- {
		g.emit("fma.rn.f32 %s, %s, %s, %s", q, q, t, f32imm(a[i]))
	}
	g.emit("mul.rn.f32 %s, %s, %s", q, q, t)
	e := g.newReg(rcF32)
	g.emit("mul.f32 %s, %s, 0fBFB8AA3B", e, x2) // -x^2 * log2(e)
	g.emit("ex2.approx.f32 %s, %s", e, e)
	big := g.newReg(rcF32)
	g.emit("neg.f32 %s, %s", q, q)
	g.emit("fma.rn.f32 %s, %s, %s, 0f3F800000", big, q, e)
	g.emit("copysign.f32 %s, %s, %s", big, x, big)
	isSmall := g.newReg(rcPred)
	g.emit("setp.lt.f32 %s, %s, 0f3F800000", isSmall, ax)
	dst := g.newReg(rcF32)
	g.emit("selp.f32 %s, %s, %s, %s", dst, small, big, isSmall)
	return dst
}

var cmpNamesPTX = map[int64][2]string{ // int, float (ordered; ne unordered)
	ir.CmpEQ: {"eq", "eq"}, ir.CmpNE: {"ne", "neu"}, ir.CmpLT: {"lt", "lt"},
	ir.CmpLE: {"le", "le"}, ir.CmpGT: {"gt", "gt"}, ir.CmpGE: {"ge", "ge"},
}

func (g *gen) cmp(in *ir.Instr, t ir.Type, a, b string) string {
	names, ok := cmpNamesPTX[in.Int]
	if !ok {
		g.failf(in.Pos, "ptx: unknown comparison predicate %d", in.Int)
	}
	dst := g.newReg(rcPred)
	d := t.Elem
	switch {
	case t.Ptr:
		g.emit("setp.%s.u64 %s, %s, %s", names[0], dst, a, b)
	case d == ir.I1:
		wa, wb := g.predToInt(a), g.predToInt(b)
		g.emit("setp.%s.u32 %s, %s, %s", names[0], dst, wa, wb)
	case isHalf(d):
		g.emit("setp.%s.f32 %s, %s, %s", names[1], dst, g.toF32(d, a), g.toF32(d, b))
	case d == ir.F32:
		g.emit("setp.%s.f32 %s, %s, %s", names[1], dst, a, b)
	case d == ir.F64:
		g.emit("setp.%s.f64 %s, %s, %s", names[1], dst, a, b)
	default:
		g.emit("setp.%s.%s %s, %s, %s", names[0], intType(d), dst, a, b)
	}
	return dst
}

func (g *gen) predToInt(p string) string {
	r := g.newReg(rcB32)
	g.emit("selp.u32 %s, 1, 0, %s", r, p)
	return r
}

func (g *gen) selectOp(t ir.Type, c, a, b string) string {
	cl := classOf(t)
	dst := g.newReg(cl)
	if cl == rcPred {
		nc, x, y := g.newReg(rcPred), g.newReg(rcPred), g.newReg(rcPred)
		g.emit("not.pred %s, %s", nc, c)
		g.emit("and.pred %s, %s, %s", x, c, a)
		g.emit("and.pred %s, %s, %s", y, nc, b)
		g.emit("or.pred %s, %s, %s", dst, x, y)
		return dst
	}
	g.emit("selp%s %s, %s, %s, %s", movSuffix(cl), dst, a, b, c)
	return dst
}

// cast converts one element from type s to type t (ops.go gives the rules).
func (g *gen) cast(in *ir.Instr, s, t ir.Type, x string, bitcast bool) string {
	sc, tc := classOf(s), classOf(t)
	if s.Ptr || t.Ptr { // to or from i64 (ir.CheckCast): the bits are the address
		return x
	}
	sd, td := s.Elem, t.Elem
	if sd == td {
		return x
	}
	if bitcast {
		return g.bitcast(in, sd, td, x)
	}
	// To and from i1.
	if td == ir.I1 {
		dst := g.newReg(rcPred)
		switch {
		case isHalf(sd):
			g.emit("setp.neu.f32 %s, %s, 0f00000000", dst, g.toF32(sd, x))
		case sd == ir.F32:
			g.emit("setp.neu.f32 %s, %s, 0f00000000", dst, x)
		case sd == ir.F64:
			g.emit("setp.neu.f64 %s, %s, 0d0000000000000000", dst, x)
		case sc == rcB64:
			g.emit("setp.ne.u64 %s, %s, 0", dst, x)
		default:
			g.emit("setp.ne.u32 %s, %s, 0", dst, x)
		}
		return dst
	}
	if sd == ir.I1 {
		dst := g.newReg(tc)
		switch {
		case isHalf(td):
			f := g.newReg(rcF32)
			g.emit("selp.f32 %s, 0f3F800000, 0f00000000, %s", f, x)
			return g.fromF32(td, f)
		case td == ir.F32:
			g.emit("selp.f32 %s, 0f3F800000, 0f00000000, %s", dst, x)
		case td == ir.F64:
			g.emit("selp.f64 %s, 0d3FF0000000000000, 0d0000000000000000, %s", dst, x)
		case tc == rcB64:
			g.emit("selp.u64 %s, 1, 0, %s", dst, x)
		default:
			g.emit("selp.u32 %s, 1, 0, %s", dst, x)
		}
		return dst
	}
	switch {
	case sd.IsFloat() && td.IsFloat():
		// Widen to fp32/fp64 exactly, then round once.
		if isHalf(sd) {
			x = g.toF32(sd, x)
			sd = ir.F32
		}
		switch {
		case sd == td:
			return x
		case sd == ir.F32 && td == ir.F64:
			dst := g.newReg(rcF64)
			g.emit("cvt.f64.f32 %s, %s", dst, x)
			return dst
		case sd == ir.F64:
			f := g.newReg(rcF32)
			g.emit("cvt.rn.f32.f64 %s, %s", f, x)
			if td == ir.F32 {
				return f
			}
			return g.fromF32(td, f)
		default: // fp32 -> fp16/bf16
			return g.fromF32(td, x)
		}
	case sd.IsFloat(): // float -> int, truncating
		if isHalf(sd) {
			x = g.toF32(sd, x)
			sd = ir.F32
		}
		ft := "f32"
		if sd == ir.F64 {
			ft = "f64"
		}
		dst := g.newReg(tc)
		g.emit("cvt.rzi.%s.%s %s, %s", intType(td), ft, dst, x)
		g.normalize(td, dst)
		return dst
	case td.IsFloat(): // int -> float, nearest
		it := intType(sd)
		if isHalf(td) {
			f := g.newReg(rcF32)
			g.emit("cvt.rn.f32.%s %s, %s", it, f, x)
			return g.fromF32(td, f)
		}
		ft := "f32"
		if td == ir.F64 {
			ft = "f64"
		}
		dst := g.newReg(tc)
		g.emit("cvt.rn.%s.%s %s, %s", ft, it, dst, x)
		return dst
	}
	// int -> int: registers hold values extended by the source's signedness.
	dst := g.newReg(tc)
	switch {
	case sc == rcB32 && tc == rcB64:
		if sd.IsSigned() {
			g.emit("cvt.s64.s32 %s, %s", dst, x)
		} else {
			g.emit("cvt.u64.u32 %s, %s", dst, x)
		}
	case sc == rcB64 && tc == rcB32:
		g.emit("cvt.u32.u64 %s, %s", dst, x)
		g.normalize(td, dst)
	default:
		g.mov(tc, dst, x)
		g.normalize(td, dst)
	}
	return dst
}

// bitcast reinterprets x of dtype sd as td, of the same width (ir.CheckCast).
func (g *gen) bitcast(in *ir.Instr, sd, td ir.DType, x string) string {
	sc, tc := classOf(ir.Scalar(sd)), classOf(ir.Scalar(td))
	dst := g.newReg(tc)
	switch {
	case sc == tc:
		g.mov(tc, dst, x)
	case sc == rcB16: // half -> 16-bit int
		g.emit("cvt.%s.%s %s, %s", map[bool]string{true: "s32", false: "u32"}[td.IsSigned()], map[bool]string{true: "s16", false: "u16"}[td.IsSigned()], dst, x)
	case tc == rcB16: // 16-bit int -> half
		g.emit("cvt.u16.u32 %s, %s", dst, x)
	case sc == rcI8Pred(sd) || tc == rcPred:
		g.failf(in.Pos, "ptx: bitcast %s -> %s is not supported", sd, td)
	default: // b32<->f32, b64<->f64
		g.emit("mov.b%d %s, %s", sd.Bits(), dst, x)
	}
	if tc == rcB32 {
		g.normalize(td, dst)
	}
	return dst
}

// rcI8Pred is rcPred for i1 sources (bitcasts of i1 are rejected).
func rcI8Pred(d ir.DType) regClass {
	if d == ir.I1 {
		return rcPred
	}
	return numClasses
}
