package cpu

import (
	"github.com/widejit/widejit/triton/ir"
)

// Splats that only feed binary ops need not be materialized: the specializer makes every
// broadcast of a scalar explicit (x * splat(s)), and filling a tile only to read it back
// costs a pass over memory per use. absorbSplats finds the Splat results (and float constant
// tiles) whose every use is an operand that can read the scalar directly; those Splats emit
// no step, those constants fill only their first lane, and their consumers run a
// vector-scalar loop instead.

// absorbsScalar reports whether in can take its operand at index i as a scalar.
func absorbsScalar(in *ir.Instr, i int) bool {
	switch in.Op {
	case ir.Add, ir.Sub, ir.Mul:
		t := in.Results[0].Type
		return !t.Ptr && t.Elem != ir.F64
	case ir.Div:
		return in.Results[0].Type.Elem.IsFloat() && in.Results[0].Type.Elem != ir.F64
	case ir.Max, ir.Min: // relu's tl.maximum(x, 0.0, propagate_nan=ALL)
		t := in.Results[0].Type
		return in.Int == ir.PropagateNaN && t.Elem.IsFloat() && t.Elem != ir.F64
	case ir.Cmp:
		return true
	case ir.PtrAdd:
		return true
	}
	return false
}

func absorbSplats(f *ir.Func) map[*ir.Value]bool {
	type use struct {
		in  *ir.Instr
		arg int
	}
	uses := map[*ir.Value][]use{}
	var splats []*ir.Instr
	var walk func(b *ir.Block)
	walk = func(b *ir.Block) {
		if b == nil {
			return
		}
		for _, in := range b.Instrs {
			if in == nil {
				continue
			}
			for i, a := range in.Args {
				uses[a] = append(uses[a], use{in, i})
			}
			if in.Op == ir.Splat && len(in.Results) == 1 && len(in.Args) == 1 || isFloatTileConst(in) {
				splats = append(splats, in)
			}
			for _, r := range in.Regions {
				walk(r)
			}
		}
	}
	walk(f.Body)
	absorbed := map[*ir.Instr]bool{} // consumers that already read one scalar operand
	out := map[*ir.Value]bool{}
	for _, s := range splats {
		v := s.Results[0]
		us := uses[v]
		ok := len(us) > 0 && !v.Type.IsScalar()
		seen := map[*ir.Instr]bool{}
		for _, u := range us {
			if !ok {
				break
			}
			ok = absorbsScalar(u.in, u.arg) && !absorbed[u.in] && !seen[u.in] && len(u.in.Results) == 1
			seen[u.in] = true
		}
		if !ok {
			continue
		}
		out[v] = true
		for _, u := range us {
			absorbed[u.in] = true
		}
	}
	return out
}

// isFloatTileConst reports a float constant tile (a literal of a tile expression, 0.5 * x):
// like a Splat, its consumers can read the one value instead of the tile.
func isFloatTileConst(in *ir.Instr) bool {
	if in.Op != ir.Const || len(in.Results) != 1 || len(in.Args) != 0 {
		return false
	}
	t := in.Results[0].Type
	return t.Rank() > 0 && !t.Ptr && t.Elem.IsFloat() && t.Elem != ir.F64
}

// scalarOperand is the slot of the scalar behind an absorbed operand: a Splat's argument, or
// an absorbed constant tile's own slot, whose first lane holds the value.
func (c *compiler) scalarOperand(v *ir.Value) (int, bool) {
	if !c.absorbed[v] {
		return 0, false
	}
	if v.Def.Op == ir.Const {
		s, ok := c.slots[v]
		return s, ok
	}
	s, ok := c.slots[v.Def.Args[0]]
	return s, ok
}

// vectorScalarStep builds the step of a binary op (Add, Sub, Mul, Div, Cmp, PtrAdd) one of
// whose operands is an absorbed splat; ok is false when neither is.
func (c *compiler) vectorScalarStep(in *ir.Instr, args []int, z int) (step, bool) {
	if len(in.Args) != 2 {
		return nil, false
	}
	vec, sc, scalarFirst := args[0], 0, false
	if s, ok := c.scalarOperand(in.Args[1]); ok {
		sc = s
	} else if s, ok := c.scalarOperand(in.Args[0]); ok {
		vec, sc, scalarFirst = args[1], s, true
	} else {
		return nil, false
	}
	t := c.p.slotType[z]
	d := t.Elem
	switch in.Op {
	case ir.PtrAdd:
		return func(fr *frame) error {
			x, s, zz := fr.ints[vec], fr.ints[sc][:1], fr.ints[z]
			if scalarFirst { // splat(p) + offsets
				fr.addOffsets(zz, s, x)
			} else {
				fr.addOffsets(zz, x, s)
			}
			return nil
		}, true
	case ir.Cmp:
		pred := in.Int
		if scalarFirst {
			pred = flipPredicate(pred)
		}
		switch c.p.slotClass[vec] {
		case clsF32:
			return func(fr *frame) error { cmpScalar(pred, fr.f32[vec], fr.f32[sc][0], fr.ints[z]); return nil }, true
		case clsF64:
			return func(fr *frame) error { cmpScalar(pred, fr.f64[vec], fr.f64[sc][0], fr.ints[z]); return nil }, true
		}
		ta := c.p.slotType[vec]
		if ta.Elem == ir.U64 && !ta.Ptr {
			return func(fr *frame) error {
				x, s, zz := fr.ints[vec], uint64(fr.ints[sc][0]), fr.ints[z]
				for i := range zz {
					zz[i] = b2i(cmpUnsigned(pred, uint64(x[i]), s))
				}
				return nil
			}, true
		}
		return func(fr *frame) error { cmpScalar(pred, fr.ints[vec], fr.ints[sc][0], fr.ints[z]); return nil }, true
	}
	switch c.p.slotClass[z] {
	case clsF32:
		op := in.Op
		obs := c.observedBy[in.Results[0]] // observed.go: all of the tile, or what its stores see
		rows, n := tileRows(t)
		fn := func(fr *frame, lo, hi int) {
			x, s, zz := fr.f32[vec][lo:hi], fr.f32[sc][0], fr.f32[z][lo:hi]
			arithScalarF32(op, scalarFirst, x, s, zz)
			roundTo(d, zz)
		}
		if op == ir.Max || op == ir.Min {
			fn = func(fr *frame, lo, hi int) {
				x, s, zz := fr.f32[vec][lo:hi], fr.f32[sc][0], fr.f32[z][lo:hi]
				minMaxPropScalarF32(op, scalarFirst, x, s, zz)
				roundTo(d, zz)
			}
		}
		return func(fr *frame) error { fr.spans(obs, rows, n, fn); return nil }, true
	case clsInt:
		op := in.Op
		if d == ir.I32 {
			return func(fr *frame) error {
				arithScalarI32(op, scalarFirst, fr.ints[vec], fr.ints[sc][0], fr.ints[z])
				return nil
			}, true
		}
		return func(fr *frame) error {
			zz := fr.ints[z]
			arithScalar(op, scalarFirst, fr.ints[vec], fr.ints[sc][0], zz)
			normInts(d, zz)
			return nil
		}, true
	}
	return nil, false
}

func flipPredicate(p int64) int64 {
	switch p {
	case ir.CmpLT:
		return ir.CmpGT
	case ir.CmpLE:
		return ir.CmpGE
	case ir.CmpGT:
		return ir.CmpLT
	case ir.CmpGE:
		return ir.CmpLE
	}
	return p
}

// arithScalar computes z = x op s (or s op x when scalarFirst) for Add, Sub, Mul and Div.
func arithScalar[T int64 | float32](op ir.Op, scalarFirst bool, x []T, s T, z []T) {
	x = x[:len(z)]
	switch {
	case op == ir.Add:
		for i := range z {
			z[i] = x[i] + s
		}
	case op == ir.Mul:
		for i := range z {
			z[i] = x[i] * s
		}
	case op == ir.Sub && scalarFirst:
		for i := range z {
			z[i] = s - x[i]
		}
	case op == ir.Sub:
		for i := range z {
			z[i] = x[i] - s
		}
	case op == ir.Div && scalarFirst:
		for i := range z {
			z[i] = s / x[i]
		}
	default: // Div (floats only: integer division never absorbs a splat)
		for i := range z {
			z[i] = x[i] / s
		}
	}
}

func cmpScalar[T int64 | float32 | float64](pred int64, x []T, s T, z []int64) {
	x = x[:len(z)]
	switch pred {
	case ir.CmpEQ:
		for i := range z {
			z[i] = b2i(x[i] == s)
		}
	case ir.CmpNE:
		for i := range z {
			z[i] = b2i(x[i] != s)
		}
	case ir.CmpLT:
		for i := range z {
			z[i] = b2i(x[i] < s)
		}
	case ir.CmpLE:
		for i := range z {
			z[i] = b2i(x[i] <= s)
		}
	case ir.CmpGT:
		for i := range z {
			z[i] = b2i(x[i] > s)
		}
	default:
		for i := range z {
			z[i] = b2i(x[i] >= s)
		}
	}
}

// arithScalarI32 is arithScalar for i32 (Add, Sub, Mul), wrapping in the same pass.
func arithScalarI32(op ir.Op, scalarFirst bool, x []int64, s int64, z []int64) {
	x = x[:len(z)]
	switch {
	case op == ir.Add:
		for i := range z {
			z[i] = int64(int32(x[i] + s))
		}
	case op == ir.Mul:
		for i := range z {
			z[i] = int64(int32(x[i] * s))
		}
	case scalarFirst:
		for i := range z {
			z[i] = int64(int32(s - x[i]))
		}
	default:
		for i := range z {
			z[i] = int64(int32(x[i] - s))
		}
	}
}

// arithScalarF32 is arithScalar for fp32 with the AVX2 loops where they apply.
func arithScalarF32(op ir.Op, scalarFirst bool, x []float32, s float32, z []float32) {
	n := 0
	switch {
	case op == ir.Add:
		n = vecF32Scalar('+', x, s, z)
	case op == ir.Mul:
		n = vecF32Scalar('*', x, s, z)
	case op == ir.Sub && scalarFirst:
		n = vecF32Scalar('r', x, s, z)
	case op == ir.Sub:
		n = vecF32Scalar('+', x, -s, z) // x - s is exactly x + (-s) in IEEE arithmetic
	case op == ir.Div && scalarFirst:
		n = vecF32Scalar('q', x, s, z)
	case op == ir.Div:
		n = vecF32Scalar('/', x, s, z)
	}
	if n < len(z) {
		arithScalar(op, scalarFirst, x[n:len(z)], s, z[n:])
	}
}

// minMaxPropScalarF32 computes z = maxProp(x, s) (minProp for Min), or of (s, x) when
// scalarFirst, with the AVX2 loop when s is not NaN and comes second.
func minMaxPropScalarF32(op ir.Op, scalarFirst bool, x []float32, s float32, z []float32) {
	x = x[:len(z)]
	pick := maxProp[float32]
	vop := byte('N')
	if op == ir.Min {
		pick, vop = minProp[float32], 'n'
	}
	if scalarFirst {
		for i := range z {
			z[i] = pick(s, x[i])
		}
		return
	}
	i := 0
	if s == s {
		i = vecF32Scalar(vop, x, s, z)
	}
	for ; i < len(z); i++ {
		z[i] = pick(x[i], s)
	}
}
