package cpu

import (
	"math"
	"math/bits"

	"github.com/widejit/widejit/triton/ir"
)

// normInt wraps x into dtype d's range, the way C stores an int of that type (i1 keeps bit 0).
func normInt(d ir.DType, x int64) int64 {
	switch d {
	case ir.I1:
		return x & 1
	case ir.I8:
		return int64(int8(x))
	case ir.I16:
		return int64(int16(x))
	case ir.I32:
		return int64(int32(x))
	case ir.U8:
		return x & 0xff
	case ir.U16:
		return x & 0xffff
	case ir.U32:
		return x & 0xffffffff
	}
	return x
}

func normInts(d ir.DType, z []int64) {
	switch d {
	case ir.I1:
		for i, v := range z {
			z[i] = v & 1
		}
	case ir.I8:
		for i, v := range z {
			z[i] = int64(int8(v))
		}
	case ir.I16:
		for i, v := range z {
			z[i] = int64(int16(v))
		}
	case ir.I32:
		for i, v := range z {
			z[i] = int64(int32(v))
		}
	case ir.U8:
		for i, v := range z {
			z[i] = v & 0xff
		}
	case ir.U16:
		for i, v := range z {
			z[i] = v & 0xffff
		}
	case ir.U32:
		for i, v := range z {
			z[i] = v & 0xffffffff
		}
	}
}

// lessInt compares normalized values of dtype d (only u64 needs unsigned comparison: the
// narrower unsigned types are zero-extended, hence non-negative).
func lessInt(d ir.DType, a, b int64) bool {
	if d == ir.U64 {
		return uint64(a) < uint64(b)
	}
	return a < b
}

func (c *compiler) compileLeaf(in *ir.Instr, z int) (step, error) {
	t := c.p.slotType[z]
	switch in.Op {
	case ir.Const:
		switch c.p.slotClass[z] {
		case clsInt:
			v := normInt(t.Elem, in.Int)
			return func(fr *frame) error { fill(fr.ints[z], v); return nil }, nil
		case clsF32:
			v := []float32{float32(in.Float)}
			roundTo(t.Elem, v)
			x := v[0]
			if c.absorbed[in.Results[0]] { // its consumers read the first lane only
				return func(fr *frame) error { fr.f32[z][0] = x; return nil }, nil
			}
			return func(fr *frame) error { fillF32(fr.f32[z], x); return nil }, nil
		default:
			v := in.Float
			return func(fr *frame) error { fill(fr.f64[z], v); return nil }, nil
		}
	case ir.ProgramID, ir.NumPrograms:
		axis := in.Int
		if in.Op == ir.ProgramID {
			return func(fr *frame) error { fr.ints[z][0] = fr.pid[axis]; return nil }, nil
		}
		return func(fr *frame) error { fr.ints[z][0] = fr.grid[axis]; return nil }, nil
	case ir.Arange:
		start := int64(in.Ints[0])
		return func(fr *frame) error {
			zz := fr.ints[z]
			for i := range zz {
				zz[i] = start + int64(i)
			}
			return nil
		}, nil
	}
	return nil, c.errf(in.Pos, in.Op, "not a leaf")
}

func fill[T any](z []T, v T) {
	for i := range z {
		z[i] = v
	}
}

// fillF32 is fill for fp32 tiles: +0 (not -0, which compares equal) clears memory, the
// runtime's vectorized memclr.
func fillF32(z []float32, v float32) {
	if math.Float32bits(v) == 0 {
		clear(z)
		return
	}
	fill(z, v)
}

// compileElementwise compiles an op whose operands and result share one type, of a dtype the
// op takes (ir.ElementwiseResult).
func (c *compiler) compileElementwise(in *ir.Instr, args []int, z int) (step, error) {
	d := c.p.slotType[z].Elem
	if c.mulSkip[in] || c.geluSkip[in] {
		return nil, nil // computed by the Add or GELU Mul that consumes it
	}
	if g, ok := c.gelus[in]; ok {
		return c.geluStep(in, g, z)
	}
	if s, ok := c.silus[in]; ok {
		return c.siluStep(in, s, z)
	}
	if da, ok := c.dotAdds[in]; ok {
		return c.dotAddStep(in, da, z)
	}
	if pair, ok := c.mulAdds[in]; ok {
		s, ok := c.mulAddStep(in, pair, z)
		if !ok {
			return nil, c.errf(in.Pos, in.Op, "cannot fuse with the multiply of its operand")
		}
		return s, nil
	}
	if s, ok := c.vectorScalarStep(in, args, z); ok {
		return s, nil
	}
	switch c.p.slotClass[z] {
	case clsF32:
		return c.f32Op(in, args, z, d)
	case clsF64:
		return c.f64Op(in, args, z)
	}
	return c.intOp(in, args, z, d)
}

// addF32 and subF32 compute z = a + b and z = a - b (mulF32: a * b), AVX2 where it can.
func addF32(a, b, z []float32) {
	a, b = a[:len(z)], b[:len(z)]
	for i := vecF32('+', a, b, z); i < len(z); i++ {
		z[i] = a[i] + b[i]
	}
}

func subF32(a, b, z []float32) {
	a, b = a[:len(z)], b[:len(z)]
	for i := vecF32('-', a, b, z); i < len(z); i++ {
		z[i] = a[i] - b[i]
	}
}

func (c *compiler) f32Op(in *ir.Instr, args []int, z int, d ir.DType) (step, error) {
	var unary func(a, z []float32)
	var binary func(a, b, z []float32)
	switch in.Op {
	case ir.Add:
		binary = addF32
	case ir.Sub:
		binary = subF32
	case ir.Mul:
		binary = mulF32
	case ir.Div:
		binary = divF32
	case ir.Rem:
		binary = func(a, b, z []float32) {
			for i := range z {
				z[i] = float32(math.Mod(float64(a[i]), float64(b[i])))
			}
		}
	case ir.Min, ir.Max:
		if in.Int == ir.PropagateNaN {
			binary = minMaxPropagating(in.Op)
			break
		}
		if in.Op == ir.Max {
			binary = func(a, b, z []float32) {
				a, b = a[:len(z)], b[:len(z)]
				for i := vecF32('M', a, b, z); i < len(z); i++ {
					z[i] = maxNum32(a[i], b[i])
				}
			}
			break
		}
		binary = func(a, b, z []float32) {
			a, b = a[:len(z)], b[:len(z)]
			for i := vecF32('m', a, b, z); i < len(z); i++ {
				z[i] = minNum32(a[i], b[i])
			}
		}
	case ir.Neg:
		unary = negF32
	case ir.Abs:
		unary = func(a, z []float32) {
			for i := range z {
				z[i] = math.Float32frombits(math.Float32bits(a[i]) &^ (1 << 31))
			}
		}
	case ir.FMA: // fp32 here (fp64 is f64Op's)
		a, b, cc := args[0], args[1], args[2]
		return func(fr *frame) error {
			x, y, w, zz := fr.f32[a], fr.f32[b], fr.f32[cc], fr.f32[z]
			for i := range zz {
				zz[i] = float32(math.FMA(float64(x[i]), float64(y[i]), float64(w[i])))
			}
			return nil
		}, nil
	default:
		if !in.Op.IsUnaryMath() {
			return nil, c.errf(in.Pos, in.Op, "does not apply to %s", d)
		}
		m := mathFunc(in.Op)
		if in.Op == ir.Exp {
			// exp dominates softmax-like kernels (and tl.sigmoid, 1/(1 + exp(-x))): exp.go,
			// equal to float32(math.Exp) bit for bit.
			unary = expF32
		} else if in.Op == ir.Erf {
			unary = erfF32
		} else {
			unary = func(a, z []float32) {
				for i := range z {
					z[i] = float32(m(float64(a[i])))
				}
			}
		}
	}
	// Every step runs over spans of the tile: all of it, or the rectangle its stores see
	// (observed.go).
	a := args[0]
	obs := c.observedBy[in.Results[0]]
	rows, n := tileRows(c.p.slotType[z])
	if unary != nil {
		span := func(fr *frame, lo, hi int) {
			unary(fr.f32[a][lo:hi], fr.f32[z][lo:hi])
			roundTo(d, fr.f32[z][lo:hi])
		}
		return func(fr *frame) error { fr.spans(obs, rows, n, span); return nil }, nil
	}
	if s, ok := c.rowBroadcastStep(in, args, z, d, binary); ok {
		return s, nil
	}
	b := args[1]
	span := func(fr *frame, lo, hi int) {
		binary(fr.f32[a][lo:hi], fr.f32[b][lo:hi], fr.f32[z][lo:hi])
		roundTo(d, fr.f32[z][lo:hi])
	}
	return func(fr *frame) error { fr.spans(obs, rows, n, span); return nil }, nil
}

func mathFunc(op ir.Op) func(float64) float64 {
	switch op {
	case ir.Exp:
		return math.Exp
	case ir.Exp2:
		return math.Exp2
	case ir.Log:
		return math.Log
	case ir.Log2:
		return math.Log2
	case ir.Sqrt:
		return math.Sqrt
	case ir.Rsqrt:
		return func(x float64) float64 { return 1 / math.Sqrt(x) }
	case ir.Sin:
		return math.Sin
	case ir.Cos:
		return math.Cos
	case ir.Erf:
		return math.Erf
	case ir.Floor:
		return math.Floor
	case ir.Ceil:
		return math.Ceil
	}
	return nil
}

// maxProp and minProp are Max and Min with ir.PropagateNaN: a NaN operand wins (b's when
// both are); otherwise b only when it is strictly larger (smaller), as x86's MAXPS/MINPS
// with a as their source operand give it (the vector loops give the same bits).
func maxProp[T float32 | float64](a, b T) T {
	if b != b || a == a && b > a {
		return b
	}
	return a
}

func minProp[T float32 | float64](a, b T) T {
	if b != b || a == a && b < a {
		return b
	}
	return a
}

// minMaxPropagating is the fp32 loop of Min or Max with ir.PropagateNaN.
func minMaxPropagating(op ir.Op) func(a, b, z []float32) {
	if op == ir.Max {
		return func(a, b, z []float32) {
			a, b = a[:len(z)], b[:len(z)]
			for i := vecF32('N', a, b, z); i < len(z); i++ {
				z[i] = maxProp(a[i], b[i])
			}
		}
	}
	return func(a, b, z []float32) {
		a, b = a[:len(z)], b[:len(z)]
		for i := vecF32('n', a, b, z); i < len(z); i++ {
			z[i] = minProp(a[i], b[i])
		}
	}
}

// minNum32 and maxNum32 are IEEE minNum/maxNum: a NaN operand is ignored.
func minNum32(a, b float32) float32 {
	if a != a {
		return b
	}
	if b != b || a < b {
		return a
	}
	if a == b && math.Signbit(float64(a)) {
		return a
	}
	return b
}

func maxNum32(a, b float32) float32 {
	if a != a {
		return b
	}
	if b != b || a > b {
		return a
	}
	if a == b && !math.Signbit(float64(a)) {
		return a
	}
	return b
}

func minNum64(a, b float64) float64 {
	if a != a {
		return b
	}
	if b != b || a < b {
		return a
	}
	if a == b && math.Signbit(a) {
		return a
	}
	return b
}

func maxNum64(a, b float64) float64 {
	if a != a {
		return b
	}
	if b != b || a > b {
		return a
	}
	if a == b && !math.Signbit(a) {
		return a
	}
	return b
}

func (c *compiler) f64Op(in *ir.Instr, args []int, z int) (step, error) {
	var f func(x ...float64) float64
	switch in.Op {
	case ir.Add:
		f = func(x ...float64) float64 { return x[0] + x[1] }
	case ir.Sub:
		f = func(x ...float64) float64 { return x[0] - x[1] }
	case ir.Mul:
		f = func(x ...float64) float64 { return x[0] * x[1] }
	case ir.Div:
		f = func(x ...float64) float64 { return x[0] / x[1] }
	case ir.Rem:
		f = func(x ...float64) float64 { return math.Mod(x[0], x[1]) }
	case ir.Min:
		f = func(x ...float64) float64 { return minNum64(x[0], x[1]) }
		if in.Int == ir.PropagateNaN {
			f = func(x ...float64) float64 { return minProp(x[0], x[1]) }
		}
	case ir.Max:
		f = func(x ...float64) float64 { return maxNum64(x[0], x[1]) }
		if in.Int == ir.PropagateNaN {
			f = func(x ...float64) float64 { return maxProp(x[0], x[1]) }
		}
	case ir.Neg:
		f = func(x ...float64) float64 { return -x[0] }
	case ir.Abs:
		f = func(x ...float64) float64 { return math.Abs(x[0]) }
	case ir.FMA:
		f = func(x ...float64) float64 { return math.FMA(x[0], x[1], x[2]) }
	default:
		m := mathFunc(in.Op)
		if m == nil {
			return nil, c.errf(in.Pos, in.Op, "does not apply to fp64")
		}
		f = func(x ...float64) float64 { return m(x[0]) }
	}
	return func(fr *frame) error {
		zz := fr.f64[z]
		var x [3]float64
		for i := range zz {
			for j, a := range args {
				x[j] = fr.f64[a][i]
			}
			zz[i] = f(x[:len(args)]...)
		}
		return nil
	}, nil
}

func (c *compiler) intOp(in *ir.Instr, args []int, z int, d ir.DType) (step, error) {
	unsigned := d.IsUnsigned()
	if len(args) == 1 {
		a := args[0]
		var f func(x int64) int64
		switch in.Op {
		case ir.Neg:
			f = func(x int64) int64 { return -x }
		case ir.Not:
			if d == ir.I1 {
				f = func(x int64) int64 { return x ^ 1 }
			} else {
				f = func(x int64) int64 { return ^x }
			}
		case ir.Abs:
			if unsigned {
				f = func(x int64) int64 { return x }
			} else {
				f = func(x int64) int64 {
					if x < 0 {
						return -x
					}
					return x
				}
			}
		}
		return func(fr *frame) error {
			x, zz := fr.ints[a], fr.ints[z]
			for i := range zz {
				zz[i] = f(x[i])
			}
			normInts(d, zz)
			return nil
		}, nil
	}
	a, b := args[0], args[1]
	if in.Op == ir.Div || in.Op == ir.Rem {
		isDiv := in.Op == ir.Div
		return func(fr *frame) error {
			x, y, zz := fr.ints[a], fr.ints[b], fr.ints[z]
			for i := range zz {
				if y[i] == 0 {
					return fr.errf(in.Pos, "integer division by zero (element %d)", i)
				}
				switch {
				case unsigned && isDiv:
					zz[i] = int64(uint64(x[i]) / uint64(y[i]))
				case unsigned:
					zz[i] = int64(uint64(x[i]) % uint64(y[i]))
				case y[i] == -1:
					// Avoid the overflowing case MinInt64 / -1; the result wraps as in C.
					if isDiv {
						zz[i] = -x[i]
					} else {
						zz[i] = 0
					}
				case isDiv:
					zz[i] = x[i] / y[i]
				default:
					zz[i] = x[i] % y[i]
				}
			}
			normInts(d, zz)
			return nil
		}, nil
	}
	if d == ir.I32 && (in.Op == ir.Add || in.Op == ir.Sub || in.Op == ir.Mul) {
		// The common index arithmetic: wrap to i32 in the same pass.
		op := in.Op
		return func(fr *frame) error {
			x, y, zz := fr.ints[a], fr.ints[b], fr.ints[z]
			x, y = x[:len(zz)], y[:len(zz)]
			switch op {
			case ir.Add:
				for i := range zz {
					zz[i] = int64(int32(x[i] + y[i]))
				}
			case ir.Sub:
				for i := range zz {
					zz[i] = int64(int32(x[i] - y[i]))
				}
			default:
				for i := range zz {
					zz[i] = int64(int32(x[i] * y[i]))
				}
			}
			return nil
		}, nil
	}
	var f func(x, y []int64, z []int64)
	switch in.Op {
	case ir.Add:
		f = func(x, y, z []int64) {
			x, y = x[:len(z)], y[:len(z)]
			for i := range z {
				z[i] = x[i] + y[i]
			}
		}
	case ir.Sub:
		f = func(x, y, z []int64) {
			x, y = x[:len(z)], y[:len(z)]
			for i := range z {
				z[i] = x[i] - y[i]
			}
		}
	case ir.Mul:
		f = func(x, y, z []int64) {
			x, y = x[:len(z)], y[:len(z)]
			for i := range z {
				z[i] = x[i] * y[i]
			}
		}
	case ir.And:
		f = func(x, y, z []int64) {
			for i := range z {
				z[i] = x[i] & y[i]
			}
		}
	case ir.Or:
		f = func(x, y, z []int64) {
			for i := range z {
				z[i] = x[i] | y[i]
			}
		}
	case ir.Xor:
		f = func(x, y, z []int64) {
			for i := range z {
				z[i] = x[i] ^ y[i]
			}
		}
	case ir.Shl:
		f = func(x, y, z []int64) {
			for i := range z {
				z[i] = x[i] << uint64(y[i])
			}
		}
	case ir.Shr:
		if unsigned {
			f = func(x, y, z []int64) {
				for i := range z {
					z[i] = int64(uint64(x[i]) >> uint64(y[i]))
				}
			}
		} else {
			f = func(x, y, z []int64) {
				for i := range z {
					z[i] = x[i] >> uint64(y[i])
				}
			}
		}
	case ir.Min, ir.Max:
		isMin := in.Op == ir.Min
		f = func(x, y, z []int64) {
			for i := range z {
				if lessInt(d, x[i], y[i]) == isMin {
					z[i] = x[i]
				} else {
					z[i] = y[i]
				}
			}
		}
	case ir.MulHi:
		bitsN := d.Bits()
		f = func(x, y, z []int64) {
			for i := range z {
				z[i] = mulHi(d, bitsN, x[i], y[i])
			}
		}
	default:
		return nil, c.errf(in.Pos, in.Op, "does not apply to %s", d)
	}
	return func(fr *frame) error {
		zz := fr.ints[z]
		f(fr.ints[a], fr.ints[b], zz)
		normInts(d, zz)
		return nil
	}, nil
}

// mulHi is the high half of the full product of two normalized values of dtype d.
func mulHi(d ir.DType, width int, x, y int64) int64 {
	if width < 64 {
		// The full product fits in int64 (for i32 and u32 too: |x*y| < 2^64 only for
		// unsigned, which is computed unsigned).
		if d.IsUnsigned() {
			return int64((uint64(x) * uint64(y)) >> uint(width))
		}
		return (x * y) >> uint(width)
	}
	hi, _ := bits.Mul64(uint64(x), uint64(y))
	if d.IsSigned() {
		// Signed high half from the unsigned one.
		if x < 0 {
			hi -= uint64(y)
		}
		if y < 0 {
			hi -= uint64(x)
		}
	}
	return int64(hi)
}

func (c *compiler) compileCmp(in *ir.Instr, args []int, z int) (step, error) {
	a, b := args[0], args[1]
	ta := c.p.slotType[a]
	pred := in.Int
	if s, ok := c.vectorScalarStep(in, args, z); ok {
		return s, nil
	}
	switch c.p.slotClass[a] {
	case clsF32:
		return func(fr *frame) error { cmpInto(pred, fr.f32[a], fr.f32[b], fr.ints[z]); return nil }, nil
	case clsF64:
		return func(fr *frame) error { cmpInto(pred, fr.f64[a], fr.f64[b], fr.ints[z]); return nil }, nil
	}
	if ta.Elem == ir.U64 && !ta.Ptr {
		return func(fr *frame) error {
			x, y, zz := fr.ints[a], fr.ints[b], fr.ints[z]
			for i := range zz {
				zz[i] = b2i(cmpUnsigned(pred, uint64(x[i]), uint64(y[i])))
			}
			return nil
		}, nil
	}
	return func(fr *frame) error { cmpInto(pred, fr.ints[a], fr.ints[b], fr.ints[z]); return nil }, nil
}

// cmpInto compares lane by lane with one loop per predicate (the predicate is not re-decided
// per element). Float NaNs compare false except under CmpNE, as IEEE says.
func cmpInto[T int64 | float32 | float64](pred int64, x, y []T, z []int64) {
	x, y = x[:len(z)], y[:len(z)]
	switch pred {
	case ir.CmpEQ:
		for i := range z {
			z[i] = b2i(x[i] == y[i])
		}
	case ir.CmpNE:
		for i := range z {
			z[i] = b2i(x[i] != y[i])
		}
	case ir.CmpLT:
		for i := range z {
			z[i] = b2i(x[i] < y[i])
		}
	case ir.CmpLE:
		for i := range z {
			z[i] = b2i(x[i] <= y[i])
		}
	case ir.CmpGT:
		for i := range z {
			z[i] = b2i(x[i] > y[i])
		}
	default:
		for i := range z {
			z[i] = b2i(x[i] >= y[i])
		}
	}
}

func cmpUnsigned(pred int64, x, y uint64) bool {
	switch pred {
	case ir.CmpEQ:
		return x == y
	case ir.CmpNE:
		return x != y
	case ir.CmpLT:
		return x < y
	case ir.CmpLE:
		return x <= y
	case ir.CmpGT:
		return x > y
	}
	return x >= y
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (c *compiler) compileSelect(in *ir.Instr, args []int, z int) (step, error) {
	if s, ok := c.rowMaskSelectStep(in, args, z); ok {
		return s, nil
	}
	cond, a, b := args[0], args[1], args[2]
	switch c.p.slotClass[z] {
	case clsF32:
		return func(fr *frame) error { selectInto(fr.ints[cond], fr.f32[a], fr.f32[b], fr.f32[z]); return nil }, nil
	case clsF64:
		return func(fr *frame) error { selectInto(fr.ints[cond], fr.f64[a], fr.f64[b], fr.f64[z]); return nil }, nil
	}
	return func(fr *frame) error { selectInto(fr.ints[cond], fr.ints[a], fr.ints[b], fr.ints[z]); return nil }, nil
}

func selectInto[T any](m []int64, a, b, z []T) {
	for i := range z {
		if m[i] != 0 {
			z[i] = a[i]
		} else {
			z[i] = b[i]
		}
	}
}

func (c *compiler) compilePtrAdd(in *ir.Instr, args []int, z int) (step, error) {
	p, off := args[0], args[1]
	if s, ok := c.vectorScalarStep(in, args, z); ok {
		return s, nil
	}
	return func(fr *frame) error {
		zz := fr.ints[z]
		fr.addOffsets(zz, fr.ints[p][:len(zz)], fr.ints[off][:len(zz)])
		return nil
	}, nil
}

// negF32 sets z = -a lane by lane (the sign bit flipped, NaNs included): the sigmoid's
// exp(-x), SiLU's every element where its chain is not fused (silu.go).
func negF32(a, z []float32) {
	a = a[:len(z)]
	for i := vecF32Scalar('^', a, negZero32, z); i < len(z); i++ {
		z[i] = -a[i]
	}
}

var negZero32 = float32(math.Copysign(0, -1))

// divF32 sets z = a / b lane by lane.
func divF32(a, b, z []float32) {
	a, b = a[:len(z)], b[:len(z)]
	for i := vecF32('/', a, b, z); i < len(z); i++ {
		z[i] = a[i] / b[i]
	}
}
