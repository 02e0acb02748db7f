package triton

import (
	"fmt"
	"math"
	"slices"

	"github.com/widejit/widejit/triton/ir"
)

// This file holds the IR-building half of the specializer: casts, broadcasting and the
// arithmetic of Triton's semantic.py, emitting explicit Cast/Splat/Broadcast so the IR's
// operands always have exactly the types ops.go documents.

func (s *spec) fail(format string, args ...any) {
	panic(bailout{&Error{Pos: s.pos, Msg: fmt.Sprintf(format, args...), Consts: s.consts}})
}

// maxInstrs bounds the instructions one specialization may emit (dry runs included).
const maxInstrs = 1 << 20

func (s *spec) emit(op ir.Op, t ir.Type, args ...*ir.Value) *ir.Value {
	return s.emitInstr(op, []ir.Type{t}, args...).Result()
}

func (s *spec) emitInstr(op ir.Op, results []ir.Type, args ...*ir.Value) *ir.Instr {
	s.emitted++
	if s.emitted > maxInstrs {
		s.fail("the kernel specializes to more than %d instructions (a runaway tl.static_range?)", maxInstrs)
	}
	return s.f.Emit(s.blk, op, s.pos, results, args...)
}

// constant materializes the Python number v as a Const of type t (scalar or splat tile).
func (s *spec) constant(t ir.Type, v value) *ir.Value {
	in := s.emitInstr(ir.Const, []ir.Type{t})
	f, i, isInt := numParts(v)
	if t.Elem.IsFloat() {
		in.Float = f
	} else {
		if !isInt {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				s.fail("cannot convert %v to %s", f, t.Elem)
			}
			i = int64(f)
		}
		if t.Elem == ir.I1 && i != 0 {
			i = 1
		}
		in.Int = i
	}
	return in.Result()
}

// toTensor turns a Python number into an IR scalar of its literal dtype; IR values pass.
func (s *spec) toTensor(v value) *ir.Value {
	switch x := v.(type) {
	case *ir.Value:
		return x
	case cInt, cFloat, cBool:
		return s.constant(ir.Scalar(literalDType(x)), x)
	}
	s.fail("expected a tensor or a number, got %s", typeName(v))
	return nil
}

// cast converts x to element dtype d keeping its shape (Triton's cast: float narrowing rounds
// to nearest even, float->int truncates, ->i1 is != 0). Pointers convert only to i64.
func (s *spec) cast(x *ir.Value, d ir.DType) *ir.Value {
	if !x.Type.Ptr && x.Type.Elem == d {
		return x
	}
	if x.Type.Ptr && d != ir.I64 {
		s.fail("cannot cast pointer %s to %s (only int64 is allowed)", x.Type, d)
	}
	t := x.Type
	t.Elem, t.Ptr = d, false
	return s.emit(ir.Cast, t, x)
}

// castType converts x to the element type of t (pointer or not), keeping x's shape.
func (s *spec) castType(x *ir.Value, t ir.Type) *ir.Value {
	if t.Ptr {
		if x.Type.Ptr && x.Type.Elem == t.Elem {
			return x
		}
		s.fail("cannot cast %s to pointer type *%s", x.Type, t.Elem)
	}
	return s.cast(x, t.Elem)
}

func (s *spec) bitcast(x *ir.Value, d ir.DType) *ir.Value {
	if x.Type.Ptr {
		return s.cast(x, d)
	}
	if x.Type.Elem == d {
		return x
	}
	t := x.Type
	t.Elem = d
	if ir.CheckCast(x.Type, t, true) != nil {
		s.fail("cannot bitcast %s (%d bits) to %s (%d bits)", x.Type.Elem, x.Type.Elem.Bits(), d, d.Bits())
	}
	in := s.emitInstr(ir.Cast, []ir.Type{t}, x)
	in.Int = 1
	return in.Result()
}

// broadcastTo makes x exactly shape (Splat of a scalar, Reshape to add leading 1s, then
// Broadcast); it fails when NumPy rules do not allow it.
func (s *spec) broadcastTo(x *ir.Value, shape []int) *ir.Value {
	if slices.Equal(x.Type.Shape, shape) {
		return x
	}
	if x.Type.IsScalar() {
		return s.emit(ir.Splat, x.Type.WithShape(shape), x)
	}
	if len(x.Type.Shape) > len(shape) {
		s.fail("cannot broadcast %s to shape %v", x.Type, shape)
	}
	for len(x.Type.Shape) < len(shape) {
		x = s.expandDims(x, 0)
	}
	for i, d := range x.Type.Shape {
		if d != shape[i] && d != 1 {
			s.fail("cannot broadcast %s to shape %v", x.Type, shape)
		}
	}
	if slices.Equal(x.Type.Shape, shape) {
		return x
	}
	return s.emit(ir.Broadcast, x.Type.WithShape(shape), x)
}

func shapeOf(v value) []int {
	if x, ok := v.(*ir.Value); ok {
		return x.Type.Shape
	}
	return nil
}

// commonShape broadcasts the shapes of the operands (Python numbers count as scalars).
func (s *spec) commonShape(what string, vs ...value) []int {
	var shape []int
	for i, v := range vs {
		sh := shapeOf(v)
		if i == 0 {
			shape = sh
			continue
		}
		out, ok := broadcastShapes(shape, sh)
		if !ok {
			s.fail("%s: shapes %v and %v cannot be broadcast together", what, fmtShape(shape), fmtShape(sh))
		}
		shape = out
	}
	return shape
}

func fmtShape(sh []int) string {
	if len(sh) == 0 {
		return "[] (scalar)"
	}
	return fmt.Sprint(sh)
}

// elemType is the scalar type of an operand: IR values by their type, Python numbers by
// their literal dtype.
func elemType(v value) ir.Type {
	if x, ok := v.(*ir.Value); ok {
		return x.Type.ScalarType()
	}
	return ir.Scalar(literalDType(v))
}

// operands implements Triton's binary_op_type_checking_impl: promote both operands to the
// computation type (weak Python scalars included), then broadcast them to a common shape.
func (s *spec) operands(op string, a, b value, allowAPtr, allowBPtr, arith, divOrMod bool) (*ir.Value, *ir.Value) {
	at, bt := elemType(a), elemType(b)
	checkPtr := func(x, y ir.Type, allow bool) {
		if x.Ptr {
			if !allow || (y.Ptr && !x.Equal(y)) || (!y.Ptr && y.Elem.IsFloat()) {
				s.fail("%s: incompatible operand types %s and %s", op, at, bt)
			}
		}
	}
	checkPtr(at, bt, allowAPtr)
	checkPtr(bt, at, allowBPtr)
	shape := s.commonShape(op, a, b)
	materialize := func(v value, t ir.Type) *ir.Value {
		if x, ok := v.(*ir.Value); ok {
			return s.broadcastTo(s.castType(x, t), shape)
		}
		return s.constant(t.WithShape(shape), v)
	}
	if arith && !at.Ptr && !bt.Ptr {
		aw, bw := isPyNumber(a), isPyNumber(b)
		ret, msg := computationType(at.Elem, aw, bt.Elem, bw, divOrMod)
		if msg != "" {
			s.fail("%s: %s", op, msg)
		}
		for _, v := range []value{a, b} {
			if !isPyNumber(v) || !ret.IsInt() {
				continue
			}
			_, i, isInt := numParts(v)
			if !isInt {
				continue
			}
			if i < 0 && ret.IsUnsigned() {
				s.fail("%s: cannot combine an unsigned %s tensor with the negative scalar %d; cast one of them explicitly", op, ret, i)
			}
			if !fitsInt(i, ret) {
				s.fail("%s: scalar %s is out of range for %s", op, constString(v), ret)
			}
		}
		return materialize(a, ir.Scalar(ret)), materialize(b, ir.Scalar(ret))
	}
	return materialize(a, at), materialize(b, bt)
}

// offsetForPtr converts an integer offset to what PtrAdd takes (i32 or i64): narrow signed
// ints widen to i32, unsigned ones zero-extend to i64 so they stay non-negative.
func (s *spec) offsetForPtr(off *ir.Value) *ir.Value {
	d := off.Type.Elem
	switch {
	case off.Type.Ptr || !d.IsInt():
		s.fail("pointer offset must be an integer, got %s", off.Type)
	case d == ir.I32 || d == ir.I64:
		return off
	case d.IsUnsigned():
		return s.cast(off, ir.I64)
	}
	return s.cast(off, ir.I32)
}

// arith applies a Python binary operator to operands of which at least one is an IR value.
func (s *spec) arith(op string, a, b value) *ir.Value {
	switch op {
	case "+":
		x, y := s.operands(op, a, b, true, true, true, false)
		if x.Type.Ptr && y.Type.Ptr {
			s.fail("cannot add pointers together")
		}
		if y.Type.Ptr {
			x, y = y, x
		}
		if x.Type.Ptr {
			return s.emit(ir.PtrAdd, x.Type, x, s.offsetForPtr(y))
		}
		return s.emit(ir.Add, x.Type, x, y)
	case "-":
		x, y := s.operands(op, a, b, true, false, true, false)
		if x.Type.Ptr {
			off := s.offsetForPtr(y)
			return s.emit(ir.PtrAdd, x.Type, x, s.emit(ir.Neg, off.Type, off))
		}
		return s.emit(ir.Sub, x.Type, x, y)
	case "*":
		x, y := s.operands(op, a, b, false, false, true, false)
		return s.emit(ir.Mul, x.Type, x, y)
	case "/":
		x, y := s.operands(op, a, b, false, false, true, true)
		xd, yd := x.Type.Elem, y.Type.Elem
		switch {
		case xd.IsFloat() && !yd.IsFloat():
			y = s.cast(y, xd)
		case !xd.IsFloat() && yd.IsFloat():
			x = s.cast(x, yd)
		case !xd.IsFloat() && !yd.IsFloat():
			x, y = s.cast(x, ir.F32), s.cast(y, ir.F32)
		case xd != yd:
			if mantissa(xd) > mantissa(yd) {
				y = s.cast(y, xd)
			} else {
				x = s.cast(x, yd)
			}
		}
		return s.emit(ir.Div, x.Type, x, y)
	case "//":
		x, y := s.operands(op, a, b, false, false, true, true)
		if !x.Type.Elem.IsInt() || !y.Type.Elem.IsInt() {
			s.fail("// is only defined on integer tensors in Triton, got %s; use tl.floor(a / b) or integer operands", x.Type.Elem)
		}
		return s.emit(ir.Div, x.Type, x, y)
	case "%":
		x, y := s.operands(op, a, b, false, false, true, true)
		return s.emit(ir.Rem, x.Type, x, y)
	case "&", "|", "^", "<<", ">>":
		x, y := s.operands(op, a, b, false, false, true, false)
		if !x.Type.Elem.IsInt() {
			s.fail("operator %s needs integer operands, got %s and %s", op, elemType(a), elemType(b))
		}
		ops := map[string]ir.Op{"&": ir.And, "|": ir.Or, "^": ir.Xor, "<<": ir.Shl, ">>": ir.Shr}
		return s.emit(ops[op], x.Type, x, y)
	case "**":
		s.fail("** is not defined on tensors (Triton rejects it); use tl.exp2/tl.log2 or repeated multiplication")
	case "@":
		s.fail("@ is not defined on tensors; use tl.dot")
	}
	s.fail("unsupported operator %s", op)
	return nil
}

func mantissa(d ir.DType) int {
	switch d {
	case ir.F16:
		return 10
	case ir.BF16:
		return 7
	case ir.F32:
		return 23
	case ir.F64:
		return 52
	}
	return 0
}

var cmpPreds = map[string]int64{"==": ir.CmpEQ, "!=": ir.CmpNE, "<": ir.CmpLT, "<=": ir.CmpLE, ">": ir.CmpGT, ">=": ir.CmpGE}

// compare emits a Cmp between two operands, at least one an IR value.
func (s *spec) compare(op string, a, b value) *ir.Value {
	pred, ok := cmpPreds[op]
	if !ok {
		s.fail("comparison %s is not supported on tensors", op)
	}
	ptrs := elemType(a).Ptr && elemType(b).Ptr
	x, y := s.operands(op, a, b, ptrs, ptrs, true, false)
	in := s.emitInstr(ir.Cmp, []ir.Type{ir.Tile(ir.I1, x.Type.Shape...)}, x, y)
	in.Int = pred
	return in.Result()
}

// toBool converts a tensor to i1 (x != 0) as Triton's logical ops do.
func (s *spec) toBool(x *ir.Value) *ir.Value {
	if !x.Type.Ptr && x.Type.Elem == ir.I1 {
		return x
	}
	return s.compare("!=", x, cInt(0))
}

// where is tl.where: cond cast to i1, a and b promoted (pointers allowed) and all three
// broadcast together.
func (s *spec) where(cond, a, b value) *ir.Value {
	c := s.toTensor(cond)
	c = s.cast(c, ir.I1)
	shape := s.commonShape("where", c, a, b)
	c = s.broadcastTo(c, shape)
	x, y := s.operands("where", a, b, true, true, true, false)
	x, y = s.broadcastTo(x, shape), s.broadcastTo(y, shape)
	return s.emit(ir.Select, x.Type, c, x, y)
}

// unary applies -, +, ~ or not to an IR value.
func (s *spec) unary(op string, x *ir.Value) *ir.Value {
	switch op {
	case "+":
		if x.Type.Ptr {
			s.fail("unary + on a pointer")
		}
		return x
	case "-":
		if x.Type.Ptr {
			s.fail("unary - on a pointer")
		}
		return s.emit(ir.Neg, x.Type, x)
	case "~":
		if x.Type.Ptr || !x.Type.Elem.IsInt() {
			s.fail("~ needs an integer operand, got %s", x.Type)
		}
		return s.emit(ir.Not, x.Type, x)
	case "not":
		b := s.toBool(x)
		return s.emit(ir.Not, b.Type, b)
	}
	s.fail("unsupported unary operator %s", op)
	return nil
}
