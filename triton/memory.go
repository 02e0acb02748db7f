package triton

import (
	"math"
	"slices"

	"github.com/widejit/widejit/triton/ir"
)

// This file implements loads, stores, atomics, tl.dot and block pointers.

func registerMemory(t map[string]builtinFn) {
	t["tl.make_block_ptr"] = func(s *spec, ca callArgs) value { return s.makeBlockPtr(ca) }
	t["tl.advance"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.advance", ca, []string{"base", "offsets"})
		bp, ok := a[0].(*blockPtr)
		if !ok {
			s.fail("tl.advance needs a block pointer, got %s", typeName(a[0]))
		}
		deltas := s.scalarList("tl.advance", "offsets", a[1], ir.I32)
		if len(deltas) != len(bp.offsets) {
			s.fail("tl.advance: %d offsets for a block pointer of rank %d", len(deltas), len(bp.offsets))
		}
		n := *bp
		n.offsets = make([]*ir.Value, len(bp.offsets))
		for i := range deltas {
			n.offsets[i] = s.emit(ir.Add, bp.offsets[i].Type, bp.offsets[i], deltas[i])
		}
		return &n
	}
	atomics := map[string]int64{"add": ir.AtomicAdd, "max": ir.AtomicMax, "min": ir.AtomicMin, "and": ir.AtomicAnd,
		"or": ir.AtomicOr, "xor": ir.AtomicXor, "xchg": ir.AtomicXchg}
	for name, kind := range atomics {
		name, kind := name, kind
		t["tl.atomic_"+name] = func(s *spec, ca callArgs) value {
			fn := "tl.atomic_" + name
			a := s.bind(fn, ca, []string{"pointer", "val", "mask", "sem", "scope"})
			s.checkAtomicHints(fn, a[3], a[4])
			p := s.pointerArg(fn, a[0])
			if !ir.AtomicTakesDType(kind, p.Type.Elem) { // the bitwise kinds take integers
				s.fail("%s needs an integer pointer, got %s", fn, p.Type)
			}
			if p.Type.Elem == ir.I1 || p.Type.Elem.Bits() < 16 {
				s.fail("%s does not support %s elements", fn, p.Type.Elem)
			}
			v := s.valueFor(fn, "val", a[1], p)
			m := s.maskFor(fn, a[2], p)
			if m == nil {
				m = s.constant(ir.Tile(ir.I1, p.Type.Shape...), cBool(true))
			}
			in := s.emitInstr(ir.AtomicRMW, []ir.Type{v.Type}, p, v, m)
			in.Int = kind
			return in.Result()
		}
	}
	t["tl.atomic_cas"] = func(s *spec, ca callArgs) value {
		fn := "tl.atomic_cas"
		a := s.bind(fn, ca, []string{"pointer", "cmp", "val", "sem", "scope"})
		s.checkAtomicHints(fn, a[3], a[4])
		p := s.pointerArg(fn, a[0])
		if p.Type.Elem.Bits() < 16 {
			s.fail("%s does not support %s elements", fn, p.Type.Elem)
		}
		c := s.valueFor(fn, "cmp", a[1], p)
		v := s.valueFor(fn, "val", a[2], p)
		return s.emit(ir.AtomicCAS, v.Type, p, c, v)
	}
}

func (s *spec) checkAtomicHints(fn string, sem, scope value) {
	if x, ok := sem.(cStr); ok {
		switch x {
		case "acquire", "release", "acq_rel", "relaxed":
		default:
			s.fail("%s: sem must be acquire, release, acq_rel or relaxed, got %q", fn, string(x))
		}
	}
	if x, ok := scope.(cStr); ok {
		switch x {
		case "gpu", "cta", "sys":
		default:
			s.fail("%s: scope must be gpu, cta or sys, got %q", fn, string(x))
		}
	}
}

func (s *spec) pointerArg(fn string, v value) *ir.Value {
	p, ok := v.(*ir.Value)
	if !ok || !p.Type.Ptr {
		s.fail("%s: expected a pointer or a tensor of pointers, got %s", fn, typeName(v))
	}
	return p
}

// valueFor converts a stored value to the pointer's element type and shape: Python numbers
// and tensors broadcast to the pointer's shape (never enlarging it) and cast implicitly.
func (s *spec) valueFor(fn, param string, v value, p *ir.Value) *ir.Value {
	if v == nil {
		s.fail("%s: missing argument %s", fn, param)
	}
	elem := p.Type.Elem
	var x *ir.Value
	if isPyNumber(v) {
		// Triton makes the literal a tensor and casts it; a constant of the element type
		// holds the same value (the backend rounds Const.Float to the element type).
		d := literalDType(v)
		if d.IsFloat() && !elem.IsFloat() {
			x = s.constant(ir.Scalar(d), v)
		} else {
			if f, ok := v.(cFloat); ok && d == ir.F32 {
				v = cFloat(float32(f)) // Triton rounds the literal to fp32 before the cast
			}
			return s.constant(ir.Type{Elem: elem, Shape: p.Type.Shape}, v)
		}
	} else {
		x = s.tensorArg(fn, param, v)
	}
	if x.Type.Ptr {
		s.fail("%s: %s must not be a pointer", fn, param)
	}
	if p.Type.IsScalar() && !x.Type.IsScalar() {
		s.fail("%s: %s has shape %v but the pointer is a scalar", fn, param, x.Type.Shape)
	}
	s.checkFits(fn, param, x.Type.Shape, p.Type.Shape)
	return s.broadcastTo(s.cast(x, elem), p.Type.Shape)
}

// checkFits fails when shape cannot broadcast to target without enlarging it.
func (s *spec) checkFits(fn, param string, shape, target []int) {
	out, ok := broadcastShapes(shape, target)
	if !ok || !slices.Equal(out, target) {
		s.fail("%s: %s of shape %v cannot be broadcast to the pointer shape %v", fn, param, fmtShape(shape), fmtShape(target))
	}
}

func (s *spec) maskFor(fn string, v value, p *ir.Value) *ir.Value {
	if v == nil {
		return nil
	}
	if _, n := v.(cNone); n {
		return nil
	}
	var m *ir.Value
	if b, ok := v.(cBool); ok {
		m = s.constant(ir.Scalar(ir.I1), b)
	} else {
		m = s.tensorArg(fn, "mask", v)
	}
	if m.Type.Ptr || m.Type.Elem != ir.I1 {
		s.fail("%s: mask must be a boolean (int1) tensor, got %s", fn, m.Type)
	}
	if p.Type.IsScalar() && !m.Type.IsScalar() {
		s.fail("%s: mask has shape %v but the pointer is a scalar", fn, m.Type.Shape)
	}
	s.checkFits(fn, "mask", m.Type.Shape, p.Type.Shape)
	return s.broadcastTo(m, p.Type.Shape)
}

func isNone(v value) bool {
	if v == nil {
		return true
	}
	_, ok := v.(cNone)
	return ok
}

func (s *spec) boundaryCheck(fn string, v value, rank int) []int {
	if isNone(v) {
		return nil
	}
	var dims []int
	switch x := v.(type) {
	case cTuple:
		for _, e := range x {
			dims = append(dims, s.intArg(fn, "boundary_check", e))
		}
	case cInt:
		dims = []int{int(x)}
	default:
		s.fail("%s: boundary_check must be a tuple of dims, got %s", fn, typeName(v))
	}
	for i, d := range dims {
		dims[i] = s.normAxis(fn+" boundary_check", d, rank)
	}
	return dims
}

func (s *spec) load(ca callArgs) value {
	const fn = "tl.load"
	a := s.bind(fn, ca, []string{"pointer", "mask", "other", "boundary_check", "padding_option", "cache_modifier", "eviction_policy", "volatile"})
	volatile := s.boolArg(fn, "volatile", a[7], false)
	if bp, ok := a[0].(*blockPtr); ok {
		if !isNone(a[1]) || !isNone(a[2]) {
			s.fail("tl.load: mask and other are not allowed with a block pointer; use boundary_check and padding_option")
		}
		return s.blockLoad(bp, a[3], a[4], volatile)
	}
	p := s.pointerArg(fn, a[0])
	if bc := s.boundaryCheck(fn, a[3], p.Type.Rank()); len(bc) > 0 {
		s.fail("tl.load: boundary_check is only for block pointers; use a mask with a tensor of pointers")
	}
	if po, ok := a[4].(cStr); ok && po != "" {
		s.fail("tl.load: padding_option is only for block pointers; use other=")
	}
	m := s.maskFor(fn, a[1], p)
	if m == nil && !isNone(a[2]) {
		s.fail("tl.load: other cannot be given without mask")
	}
	var in *ir.Instr
	rt := ir.Type{Elem: p.Type.Elem, Shape: p.Type.Shape}
	if m == nil {
		in = s.emitInstr(ir.Load, []ir.Type{rt}, p)
	} else {
		var other *ir.Value
		if isNone(a[2]) {
			other = s.constant(rt, cInt(0))
		} else {
			other = s.valueFor(fn, "other", a[2], p)
		}
		in = s.emitInstr(ir.Load, []ir.Type{rt}, p, m, other)
	}
	if volatile {
		in.Int = 1
	}
	return in.Result()
}

func (s *spec) store(ca callArgs) {
	const fn = "tl.store"
	a := s.bind(fn, ca, []string{"pointer", "value", "mask", "boundary_check", "cache_modifier", "eviction_policy"})
	if bp, ok := a[0].(*blockPtr); ok {
		if !isNone(a[2]) {
			s.fail("tl.store: mask is not allowed with a block pointer; use boundary_check")
		}
		s.blockStore(bp, a[1], a[3])
		return
	}
	p := s.pointerArg(fn, a[0])
	if bc := s.boundaryCheck(fn, a[3], p.Type.Rank()); len(bc) > 0 {
		s.fail("tl.store: boundary_check is only for block pointers; use a mask with a tensor of pointers")
	}
	v := s.valueFor(fn, "value", a[1], p)
	if m := s.maskFor(fn, a[2], p); m != nil {
		s.emitInstr(ir.Store, nil, p, v, m)
	} else {
		s.emitInstr(ir.Store, nil, p, v)
	}
}

// ---------------------------------------------------------------------------------------------
// dot

func (s *spec) dot(ca callArgs) value {
	const fn = "tl.dot"
	a := s.bind(fn, ca, []string{"input", "other", "acc", "input_precision", "allow_tf32", "max_num_imprecise_acc", "out_dtype"})
	x, y := s.tensorArg(fn, "input", a[0]), s.tensorArg(fn, "other", a[1])
	xr, yr := x.Type.Rank(), y.Type.Rank()
	if xr != yr || (xr != 2 && xr != 3) {
		s.fail("tl.dot needs two 2-D (or two batched 3-D) tensors, got %s and %s", x.Type, y.Type)
	}
	xs, ys := x.Type.Shape, y.Type.Shape
	if xs[xr-1] != ys[yr-2] {
		s.fail("tl.dot: inner dimensions differ: %s and %s (K must match)", x.Type, y.Type)
	}
	if xr == 3 && xs[0] != ys[0] {
		s.fail("tl.dot: batch dimensions differ: %s and %s", x.Type, y.Type)
	}
	if x.Type.Ptr || y.Type.Ptr || x.Type.Elem != y.Type.Elem {
		s.fail("tl.dot: both operands must have the same dtype, got %s and %s", x.Type.Elem, y.Type.Elem)
	}
	in := x.Type.Elem
	out, ok := ir.DotAccumulator(in)
	if !ok {
		s.fail("tl.dot supports fp16, bf16, fp32 and int8 inputs, got %s", in)
	}
	if in.IsFloat() && !isNone(a[6]) { // int8 dots accumulate in i32 whatever out_dtype says
		od := s.dtypeArg(fn, "out_dtype", a[6]).Elem
		if !ir.DotAccumulates(in, od) {
			s.fail("tl.dot: out_dtype %s is not supported for %s inputs", od, in)
		}
		out = od
	}
	prec := ir.PrecisionIEEE
	if in == ir.F32 {
		prec = ir.PrecisionTF32 // Triton's default for fp32 inputs
		if !isNone(a[4]) {
			if s.boolArg(fn, "allow_tf32", a[4], true) {
				prec = ir.PrecisionTF32
			} else {
				prec = ir.PrecisionIEEE
			}
		}
		if p, ok := a[3].(cStr); ok {
			switch p {
			case "ieee":
				prec = ir.PrecisionIEEE
			case "tf32":
				prec = ir.PrecisionTF32
			case "tf32x3":
				prec = ir.PrecisionTF32x3
			case "bf16":
				// widejit's extension (torch's float32_matmul_precision "medium"): both
				// operands rounded to bf16, products accumulated in fp32
				x, y, in, prec = s.cast(x, ir.BF16), s.cast(y, ir.BF16), ir.BF16, ir.PrecisionIEEE
			default:
				s.fail("tl.dot: input_precision must be ieee, tf32, tf32x3 or bf16, got %q", string(p))
			}
		} else if !isNone(a[3]) {
			s.fail("tl.dot: input_precision must be a string")
		}
	}
	shape := append([]int(nil), xs[:xr-1]...)
	shape = append(shape, ys[yr-1])
	rt := ir.Tile(out, shape...)
	var acc *ir.Value
	if isNone(a[2]) {
		acc = s.constant(rt, cInt(0))
	} else {
		acc = s.tensorArg(fn, "acc", a[2])
		if !acc.Type.Equal(rt) {
			s.fail("tl.dot: acc has type %s but the product has type %s", acc.Type, rt)
		}
	}
	d := s.emitInstr(ir.Dot, []ir.Type{rt}, x, y, acc)
	d.Int = prec
	return d.Result()
}

// ---------------------------------------------------------------------------------------------
// block pointers

// scalarList reads a tuple of ints / IR int scalars as IR scalars of dtype d.
func (s *spec) scalarList(fn, param string, v value, d ir.DType) []*ir.Value {
	t, ok := v.(cTuple)
	if !ok {
		s.fail("%s: %s must be a tuple, got %s", fn, param, typeName(v))
	}
	out := make([]*ir.Value, len(t))
	for i, e := range t {
		switch x := e.(type) {
		case cInt:
			if !fitsInt(int64(x), d) {
				s.fail("%s: %s[%d] = %d does not fit %s", fn, param, i, x, d)
			}
			out[i] = s.constant(ir.Scalar(d), x)
		case *ir.Value:
			if !x.Type.IsScalar() || x.Type.Ptr || !x.Type.Elem.IsInt() {
				s.fail("%s: %s[%d] must be an integer scalar, got %s", fn, param, i, x.Type)
			}
			out[i] = s.cast(x, d)
		default:
			s.fail("%s: %s[%d] must be an integer, got %s", fn, param, i, typeName(e))
		}
	}
	return out
}

func (s *spec) makeBlockPtr(ca callArgs) value {
	const fn = "tl.make_block_ptr"
	a := s.bind(fn, ca, []string{"base", "shape", "strides", "offsets", "block_shape", "order"})
	base, ok := a[0].(*ir.Value)
	if !ok || !base.Type.Ptr || !base.Type.IsScalar() {
		s.fail("%s: base must be a scalar pointer, got %s", fn, typeName(a[0]))
	}
	bp := &blockPtr{base: base}
	bp.shape = s.scalarList(fn, "shape", a[1], ir.I64)
	bp.strides = s.scalarList(fn, "strides", a[2], ir.I64)
	bp.offsets = s.scalarList(fn, "offsets", a[3], ir.I32)
	bp.blockShape = s.shapeArg(fn, a[4])
	r := len(bp.blockShape)
	if len(bp.shape) != r || len(bp.strides) != r || len(bp.offsets) != r {
		s.fail("%s: shape, strides, offsets and block_shape must have one length, got %d, %d, %d and %d", fn, len(bp.shape), len(bp.strides), len(bp.offsets), r)
	}
	if ot, ok := a[5].(cTuple); ok {
		seen := make([]bool, r)
		for _, e := range ot {
			o := s.intArg(fn, "order", e)
			if o < 0 || o >= r || seen[o] {
				s.fail("%s: order %s is not a permutation of 0..%d", fn, constString(ot), r-1)
			}
			seen[o] = true
			bp.order = append(bp.order, o)
		}
		if len(bp.order) != r {
			s.fail("%s: order has %d entries for rank %d", fn, len(bp.order), r)
		}
	} else if !isNone(a[5]) {
		s.fail("%s: order must be a tuple", fn)
	}
	return bp
}

// blockAddressing lowers a block pointer to a pointer tile and, for the checked dims, a mask:
// element (i0, i1, ...) is at base + sum((offsets[d] + i_d) * strides[d]), valid when
// 0 <= offsets[d] + i_d < shape[d].
func (s *spec) blockAddressing(fn string, bp *blockPtr, check []int) (*ir.Value, *ir.Value) {
	shape := bp.blockShape
	r := len(shape)
	var off, mask *ir.Value
	for d := 0; d < r; d++ {
		ar := s.emitInstr(ir.Arange, []ir.Type{ir.Tile(ir.I32, shape[d])})
		ar.Ints = []int{0, shape[d]}
		idx := s.emit(ir.Add, ar.Result().Type, ar.Result(), s.broadcastTo(bp.offsets[d], []int{shape[d]}))
		idx64 := s.cast(idx, ir.I64)
		term := s.emit(ir.Mul, idx64.Type, idx64, s.broadcastTo(bp.strides[d], []int{shape[d]}))
		term = s.placeDim(term, d, shape)
		if off == nil {
			off = term
		} else {
			off = s.emit(ir.Add, off.Type, off, term)
		}
		if containsInt(check, d) {
			lo := s.compare(">=", idx64, cInt(0))
			hi := s.compare("<", idx64, bp.shape[d])
			m := s.placeDim(s.emit(ir.And, lo.Type, lo, hi), d, shape)
			if mask == nil {
				mask = m
			} else {
				mask = s.emit(ir.And, mask.Type, mask, m)
			}
		}
	}
	ptr := s.emit(ir.PtrAdd, bp.base.Type.WithShape(shape), s.broadcastTo(bp.base, shape), off)
	return ptr, mask
}

// placeDim turns a 1-D tile along dim d into the full block shape (expand + broadcast).
func (s *spec) placeDim(x *ir.Value, d int, shape []int) *ir.Value {
	for i := 0; i < len(shape); i++ {
		if i != d {
			x = s.expandDims(x, i)
		}
	}
	return s.broadcastTo(x, shape)
}

func containsInt(list []int, x int) bool {
	for _, e := range list {
		if e == x {
			return true
		}
	}
	return false
}

func (s *spec) blockLoad(bp *blockPtr, bcv, padv value, volatile bool) value {
	const fn = "tl.load"
	check := s.boundaryCheck(fn, bcv, len(bp.blockShape))
	pad := ""
	if p, ok := padv.(cStr); ok {
		pad = string(p)
	} else if !isNone(padv) {
		s.fail("tl.load: padding_option must be \"\", \"zero\" or \"nan\"")
	}
	switch pad {
	case "", "zero":
	case "nan":
		if !bp.base.Type.Elem.IsFloat() {
			s.fail("tl.load: padding_option=\"nan\" needs a floating-point pointer, got %s", bp.base.Type)
		}
	default:
		s.fail("tl.load: padding_option must be \"\", \"zero\" or \"nan\", got %q", pad)
	}
	ptr, mask := s.blockAddressing(fn, bp, check)
	rt := ir.Tile(bp.base.Type.Elem, bp.blockShape...)
	var in *ir.Instr
	if mask == nil {
		in = s.emitInstr(ir.Load, []ir.Type{rt}, ptr)
	} else {
		var other *ir.Value
		if pad == "nan" {
			other = s.constant(rt, cFloat(math.NaN()))
		} else {
			other = s.constant(rt, cInt(0))
		}
		in = s.emitInstr(ir.Load, []ir.Type{rt}, ptr, mask, other)
	}
	if volatile {
		in.Int = 1
	}
	return in.Result()
}

func (s *spec) blockStore(bp *blockPtr, v value, bcv value) {
	const fn = "tl.store"
	check := s.boundaryCheck(fn, bcv, len(bp.blockShape))
	ptr, mask := s.blockAddressing(fn, bp, check)
	val := s.valueFor(fn, "value", v, ptr)
	if mask == nil {
		s.emitInstr(ir.Store, nil, ptr, val)
	} else {
		s.emitInstr(ir.Store, nil, ptr, val, mask)
	}
}
