package triton

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/widejit/widejit/triton/ir"
)

// This file implements the tl.* functions.

const maxTileElems = 1 << 20

func (s *spec) tensorArg(fn, param string, v value) *ir.Value {
	switch x := v.(type) {
	case *ir.Value:
		return x
	case nil:
		s.fail("%s: missing argument %s", fn, param)
	}
	if isPyNumber(v) {
		return s.toTensor(v)
	}
	s.fail("%s: %s must be a tensor, got %s", fn, param, typeName(v))
	return nil
}

func (s *spec) intArg(fn, param string, v value) int {
	switch x := v.(type) {
	case cInt:
		return int(x)
	case cBool:
		if x {
			return 1
		}
		return 0
	case nil:
		s.fail("%s: missing argument %s", fn, param)
	case *ir.Value:
		s.fail("%s: %s must be a compile-time int (annotate it with tl.constexpr), got %s", fn, param, typeName(v))
	}
	s.fail("%s: %s must be a compile-time int, got %s", fn, param, typeName(v))
	return 0
}

func (s *spec) boolArg(fn, param string, v value, def bool) bool {
	if v == nil {
		return def
	}
	if _, n := v.(cNone); n {
		return def
	}
	b, ok := truthy(v)
	if !ok || !isConst(v) {
		s.fail("%s: %s must be a compile-time bool, got %s", fn, param, typeName(v))
	}
	return b
}

func (s *spec) dtypeArg(fn, param string, v value) ir.Type {
	d, ok := v.(cDType)
	if !ok {
		s.fail("%s: %s must be a dtype such as tl.float32, got %s", fn, param, typeName(v))
	}
	if len(d.t.Shape) > 0 {
		s.fail("%s: %s must be a scalar dtype, got %s", fn, param, d.t)
	}
	return d.t
}

// shapeArg reads a static tile shape: a tuple/list of compile-time ints, or one int.
func (s *spec) shapeArg(fn string, v value) []int {
	var dims []value
	switch x := v.(type) {
	case cTuple:
		dims = x
	case cInt:
		dims = []value{x}
	default:
		s.fail("%s: shape must be a tuple of compile-time ints, got %s", fn, typeName(v))
	}
	shape := make([]int, len(dims))
	n := 1
	for i, d := range dims {
		shape[i] = s.intArg(fn, "shape", d)
		if !isPow2(shape[i]) {
			s.fail("%s: shape %v: every dim must be a power of 2", fn, shape[:i+1])
		}
		n *= shape[i]
		if n > maxTileElems {
			s.fail("%s: shape has more than 2^20 elements", fn)
		}
	}
	return shape
}

// dimsArg reads varargs dims: f(x, 1, 0) or f(x, (1, 0)).
func (s *spec) dimsArg(fn string, rest []value) []int {
	if len(rest) == 1 {
		if t, ok := rest[0].(cTuple); ok {
			rest = t
		}
	}
	out := make([]int, len(rest))
	for i, v := range rest {
		out[i] = s.intArg(fn, "dims", v)
	}
	return out
}

func (s *spec) normAxis(fn string, axis, rank int) int {
	if axis < 0 {
		axis += rank
	}
	if axis < 0 || axis >= rank {
		s.fail("%s: axis %d is out of range for rank %d", fn, axis, rank)
	}
	return axis
}

func (s *spec) permute(x *ir.Value, order []int) *ir.Value {
	r := x.Type.Rank()
	if len(order) != r {
		s.fail("permute: %d dims given for a tensor of rank %d", len(order), r)
	}
	seen := make([]bool, r)
	shape := make([]int, r)
	for i, d := range order {
		if d < 0 || d >= r || seen[d] {
			s.fail("permute: %v is not a permutation of 0..%d", order, r-1)
		}
		seen[d] = true
		shape[i] = x.Type.Shape[d]
	}
	in := s.emitInstr(ir.Permute, []ir.Type{x.Type.WithShape(shape)}, x)
	in.Ints = append([]int(nil), order...)
	return in.Result()
}

func (s *spec) reshape(x *ir.Value, shape []int) *ir.Value {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if n != x.Type.NumElems() {
		s.fail("reshape: cannot reshape %s (%d elements) to %v (%d elements)", x.Type, x.Type.NumElems(), shape, n)
	}
	if slices.Equal(shape, x.Type.Shape) {
		return x
	}
	return s.emit(ir.Reshape, x.Type.WithShape(shape), x)
}

func (s *spec) unaryMath(fn string, op ir.Op, v value) *ir.Value {
	x := s.tensorArg(fn, "x", v)
	if x.Type.Ptr || !op.TakesDType(x.Type.Elem) {
		s.fail("%s expects fp32 or fp64, got %s; cast first, e.g. x.to(tl.float32)", fn, x.Type)
	}
	return s.emit(op, x.Type, x)
}

func registerTL() {
	t := builtinTable
	t["tl.constexpr"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.constexpr", ca, []string{"value"})
		if a[0] == nil || !isConst(a[0]) {
			s.fail("tl.constexpr needs a compile-time value, got %s", typeName(a[0]))
		}
		return a[0]
	}
	t["tl.pointer_type"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.pointer_type", ca, []string{"element_ty", "address_space", "const"})
		d := s.dtypeArg("tl.pointer_type", "element_ty", a[0])
		return cDType{ir.PtrTo(d.Elem)}
	}
	t["tl.program_id"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.program_id", ca, []string{"axis"})
		return s.gridQuery(ir.ProgramID, "tl.program_id", a[0])
	}
	t["tl.num_programs"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.num_programs", ca, []string{"axis"})
		return s.gridQuery(ir.NumPrograms, "tl.num_programs", a[0])
	}
	t["tl.arange"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.arange", ca, []string{"start", "end"})
		lo, hi := s.intArg("tl.arange", "start", a[0]), s.intArg("tl.arange", "end", a[1])
		if hi <= lo {
			s.fail("tl.arange: end (%d) must be greater than start (%d)", hi, lo)
		}
		if !isPow2(hi - lo) {
			s.fail("tl.arange: the range %d..%d has %d elements, which is not a power of 2", lo, hi, hi-lo)
		}
		if hi-lo > maxTileElems {
			s.fail("tl.arange: more than 2^20 elements")
		}
		if int64(lo) < math.MinInt32 || int64(hi) > math.MaxInt32+1 {
			s.fail("tl.arange: bounds must fit in int32")
		}
		in := s.emitInstr(ir.Arange, []ir.Type{ir.Tile(ir.I32, hi-lo)})
		in.Ints = []int{lo, hi}
		return in.Result()
	}
	t["tl.zeros"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.zeros", ca, []string{"shape", "dtype"})
		shape := s.shapeArg("tl.zeros", a[0])
		d := s.dtypeArg("tl.zeros", "dtype", a[1])
		if d.Ptr {
			s.fail("tl.zeros: pointer dtypes are not allowed")
		}
		return s.constant(ir.Tile(d.Elem, shape...), cInt(0))
	}
	t["tl.zeros_like"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.zeros_like", ca, []string{"input", "dtype"})
		x := s.tensorArg("tl.zeros_like", "input", a[0])
		ty := x.Type
		if a[1] != nil {
			if _, n := a[1].(cNone); !n {
				ty.Elem = s.dtypeArg("tl.zeros_like", "dtype", a[1]).Elem
			}
		}
		ty.Ptr = false
		return s.constant(ty, cInt(0))
	}
	t["tl.full"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.full", ca, []string{"shape", "value", "dtype"})
		shape := s.shapeArg("tl.full", a[0])
		d := s.dtypeArg("tl.full", "dtype", a[2])
		if d.Ptr {
			s.fail("tl.full: pointer dtypes are not allowed")
		}
		if isPyNumber(a[1]) {
			return s.constant(ir.Tile(d.Elem, shape...), a[1])
		}
		v := s.tensorArg("tl.full", "value", a[1])
		if !v.Type.IsScalar() {
			s.fail("tl.full: value must be a scalar, got %s", v.Type)
		}
		return s.broadcastTo(s.cast(v, d.Elem), shape)
	}
	t["tl.cast"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.cast", ca, []string{"input", "dtype", "fp_downcast_rounding", "bitcast"})
		x := s.tensorArg("tl.cast", "input", a[0])
		d := s.dtypeArg("tl.cast", "dtype", a[1])
		if r, ok := a[2].(cStr); ok && r != "rtne" {
			s.fail("tl.cast: fp_downcast_rounding=%q is not supported (only rtne)", string(r))
		}
		if s.boolArg("tl.cast", "bitcast", a[3], false) {
			if d.Ptr {
				s.fail("tl.cast: bitcast to a pointer type is not supported")
			}
			return s.bitcast(x, d.Elem)
		}
		return s.castType(x, d)
	}
	t["tl.to_tensor"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.to_tensor", ca, []string{"x"})
		return s.tensorArg("tl.to_tensor", "x", a[0])
	}
	t["tl.load"] = func(s *spec, ca callArgs) value { return s.load(ca) }
	t["tl.store"] = func(s *spec, ca callArgs) value { s.store(ca); return cNone{} }
	t["tl.dot"] = func(s *spec, ca callArgs) value { return s.dot(ca) }
	t["tl.where"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.where", ca, []string{"condition", "x", "y"})
		for i, n := range []string{"condition", "x", "y"} {
			if a[i] == nil {
				s.fail("tl.where: missing argument %s", n)
			}
		}
		return s.where(a[0], a[1], a[2])
	}
	for _, mm := range []struct {
		name string
		op   ir.Op
	}{{"maximum", ir.Max}, {"minimum", ir.Min}} {
		mm := mm
		t["tl."+mm.name] = func(s *spec, ca callArgs) value {
			a := s.bind("tl."+mm.name, ca, []string{"x", "y", "propagate_nan"})
			propagate := false
			switch pn, _ := a[2].(cStr); pn {
			case "", "none", "NONE":
			case "all", "ALL":
				propagate = true
			default:
				s.fail("tl.%s: propagate_nan=%q: want tl.PropagateNan.ALL or NONE", mm.name, string(pn))
			}
			v := s.elementwiseMinMax("tl."+mm.name, mm.op, a[0], a[1])
			if propagate && v.Type.Elem.IsFloat() && v.Def != nil && v.Def.Op == mm.op {
				v.Def.Int = ir.PropagateNaN
			}
			return v
		}
	}

	t["tl.abs"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.abs", ca, []string{"x"})
		x := s.tensorArg("tl.abs", "x", a[0])
		if x.Type.Ptr {
			s.fail("tl.abs on a pointer")
		}
		if x.Type.Elem.IsUnsigned() || x.Type.Elem == ir.I1 {
			return x
		}
		return s.emit(ir.Abs, x.Type, x)
	}
	for name, op := range map[string]ir.Op{"exp": ir.Exp, "exp2": ir.Exp2, "log": ir.Log, "log2": ir.Log2,
		"sqrt": ir.Sqrt, "sqrt_rn": ir.Sqrt, "rsqrt": ir.Rsqrt, "sin": ir.Sin, "cos": ir.Cos, "erf": ir.Erf,
		"floor": ir.Floor, "ceil": ir.Ceil} {
		name, op := name, op
		t["tl."+name] = func(s *spec, ca callArgs) value {
			a := s.bind("tl."+name, ca, []string{"x"})
			return s.unaryMath("tl."+name, op, a[0])
		}
	}
	t["tl.sigmoid"] = func(s *spec, ca callArgs) value {
		// Triton's standard.py: 1 / (1 + exp(-x)).
		a := s.bind("tl.sigmoid", ca, []string{"x"})
		x := s.tensorArg("tl.sigmoid", "x", a[0])
		e := s.unaryMath("tl.sigmoid", ir.Exp, s.unary("-", x))
		return s.arith("/", cInt(1), s.arith("+", cInt(1), e))
	}
	t["tl.fma"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.fma", ca, []string{"x", "y", "z"})
		shape := s.commonShape("tl.fma", a[0], a[1], a[2])
		x, y := s.operands("tl.fma", a[0], a[1], false, false, true, false)
		z, x2 := s.operands("tl.fma", a[2], x, false, false, true, false)
		z, y2 := s.operands("tl.fma", z, y, false, false, true, false)
		x, y = s.broadcastTo(s.cast(x2, z.Type.Elem), shape), s.broadcastTo(s.cast(y2, z.Type.Elem), shape)
		z = s.broadcastTo(z, shape)
		if !ir.FMA.TakesDType(z.Type.Elem) {
			s.fail("tl.fma expects fp32 or fp64 operands, got %s", z.Type.Elem)
		}
		return s.emit(ir.FMA, z.Type, x, y, z)
	}
	t["tl.clamp"] = func(s *spec, ca callArgs) value {
		// Triton's clamp: operands become tensors (Python numbers are not weak here), bf16 is
		// promoted to fp32, then min(max(x, lo), hi) on floats.
		a := s.bind("tl.clamp", ca, []string{"x", "min", "max", "propagate_nan"})
		s.checkPropagateNan("tl.clamp", a[3])
		xs := make([]*ir.Value, 3)
		for i, n := range []string{"x", "min", "max"} {
			xs[i] = s.promoteBF16(s.tensorArg("tl.clamp", n, a[i]))
		}
		lo, hi := s.operands("tl.clamp", xs[1], xs[2], false, false, true, false)
		x, lo2 := s.operands("tl.clamp", xs[0], lo, false, false, true, false)
		x, hi2 := s.operands("tl.clamp", x, hi, false, false, true, false)
		if !x.Type.Elem.IsFloat() || x.Type.Ptr {
			s.fail("tl.clamp supports floating-point tensors only, got %s", x.Type)
		}
		shape := x.Type.Shape
		lo2, hi2 = s.broadcastTo(s.cast(lo2, x.Type.Elem), shape), s.broadcastTo(s.cast(hi2, x.Type.Elem), shape)
		m := s.emit(ir.Max, x.Type, x, lo2)
		return s.emit(ir.Min, x.Type, m, hi2)
	}
	t["tl.cdiv"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.cdiv", ca, []string{"x", "div"})
		if a[0] == nil || a[1] == nil {
			s.fail("tl.cdiv needs two arguments")
		}
		return s.binop("//", s.binop("-", s.binop("+", a[0], a[1]), cInt(1)), a[1])
	}
	t["tl.umulhi"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.umulhi", ca, []string{"x", "y"})
		x, y := s.operands("tl.umulhi", a[0], a[1], false, false, true, false)
		if !x.Type.Elem.IsInt() || x.Type.Ptr {
			s.fail("tl.umulhi needs integer operands, got %s", x.Type)
		}
		return s.emit(ir.MulHi, x.Type, x, y)
	}
	t["tl.fdiv"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.fdiv", ca, []string{"x", "y", "ieee_rounding"})
		if !elemType(a[0]).Elem.IsFloat() || !elemType(a[1]).Elem.IsFloat() {
			s.fail("tl.fdiv needs floating-point operands")
		}
		x, y := s.operands("tl.fdiv", a[0], a[1], false, false, false, true)
		if x.Type.Elem != y.Type.Elem {
			x, y = s.operands("tl.fdiv", x, y, false, false, true, false)
		}
		return s.emit(ir.Div, x.Type, x, y)
	}
	t["tl.div_rn"] = t["tl.fdiv"]
	t["tl.reshape"] = func(s *spec, ca callArgs) value {
		if len(ca.pos) == 0 {
			s.fail("tl.reshape needs a tensor")
		}
		x := s.tensorArg("tl.reshape", "input", ca.pos[0])
		rest := ca.pos[1:]
		if v, ok := ca.kw["shape"]; ok {
			rest = []value{v}
		}
		if len(rest) == 1 {
			if _, ok := rest[0].(cTuple); !ok {
				rest = cTuple{rest[0]}
			}
		}
		var shape []int
		if len(rest) == 1 {
			shape = s.shapeArg("tl.reshape", rest[0])
		} else {
			shape = s.shapeArg("tl.reshape", cTuple(rest))
		}
		return s.reshape(x, shape)
	}
	t["tl.view"] = t["tl.reshape"]
	t["tl.ravel"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.ravel", ca, []string{"x", "can_reorder"})
		x := s.tensorArg("tl.ravel", "x", a[0])
		return s.reshape(x, []int{x.Type.NumElems()})
	}
	t["tl.trans"] = func(s *spec, ca callArgs) value {
		if len(ca.pos) == 0 {
			s.fail("tl.trans needs a tensor")
		}
		x := s.tensorArg("tl.trans", "input", ca.pos[0])
		dims := s.dimsArg("tl.trans", ca.pos[1:])
		if len(dims) == 0 {
			if x.Type.Rank() != 2 {
				s.fail("tl.trans without dims needs a 2-D tensor, got %s", x.Type)
			}
			dims = []int{1, 0}
		}
		return s.permute(x, dims)
	}
	t["tl.permute"] = func(s *spec, ca callArgs) value {
		if len(ca.pos) == 0 {
			s.fail("tl.permute needs a tensor")
		}
		x := s.tensorArg("tl.permute", "input", ca.pos[0])
		rest := ca.pos[1:]
		if v, ok := ca.kw["dims"]; ok {
			rest = []value{v}
		}
		return s.permute(x, s.dimsArg("tl.permute", rest))
	}
	t["tl.expand_dims"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.expand_dims", ca, []string{"input", "axis"})
		x := s.tensorArg("tl.expand_dims", "input", a[0])
		var axes []int
		if tup, ok := a[1].(cTuple); ok {
			for _, e := range tup {
				axes = append(axes, s.intArg("tl.expand_dims", "axis", e))
			}
		} else {
			axes = []int{s.intArg("tl.expand_dims", "axis", a[1])}
		}
		newRank := x.Type.Rank() + len(axes)
		for i := range axes {
			axes[i] = s.normAxis("tl.expand_dims", axes[i], newRank)
		}
		sortInts(axes)
		for _, ax := range axes {
			x = s.expandDims(x, ax)
		}
		return x
	}
	t["tl.broadcast_to"] = func(s *spec, ca callArgs) value {
		if len(ca.pos) == 0 {
			s.fail("tl.broadcast_to needs a tensor")
		}
		x := s.tensorArg("tl.broadcast_to", "input", ca.pos[0])
		rest := ca.pos[1:]
		if v, ok := ca.kw["shape"]; ok {
			rest = []value{v}
		}
		var shape []int
		if len(rest) == 1 {
			if _, ok := rest[0].(cTuple); ok {
				shape = s.shapeArg("tl.broadcast_to", rest[0])
			}
		}
		if shape == nil {
			shape = s.shapeArg("tl.broadcast_to", cTuple(rest))
		}
		return s.broadcastTo(x, shape)
	}
	t["tl.broadcast"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.broadcast", ca, []string{"input", "other"})
		x, y := s.tensorArg("tl.broadcast", "input", a[0]), s.tensorArg("tl.broadcast", "other", a[1])
		shape := s.commonShape("tl.broadcast", x, y)
		return cTuple{s.broadcastTo(x, shape), s.broadcastTo(y, shape)}
	}
	for _, h := range []string{"multiple_of", "max_contiguous", "max_constancy"} {
		h := h
		t["tl."+h] = func(s *spec, ca callArgs) value {
			a := s.bind("tl."+h, ca, []string{"input", "values"})
			x := s.tensorArg("tl."+h, "input", a[0])
			if a[1] == nil {
				s.fail("tl.%s: missing argument values", h)
			}
			return x
		}
	}
	t["tl.assume"] = func(s *spec, ca callArgs) value { return cNone{} }
	t["tl.debug_barrier"] = func(s *spec, ca callArgs) value {
		s.bind("tl.debug_barrier", ca, nil)
		s.emitInstr(ir.Barrier, nil)
		return cNone{}
	}
	t["tl.static_assert"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.static_assert", ca, []string{"cond", "msg"})
		if !isConst(a[0]) {
			s.fail("tl.static_assert needs a compile-time condition, got %s", typeName(a[0]))
		}
		b, ok := truthy(a[0])
		if !ok {
			s.fail("tl.static_assert: %s has no truth value", typeName(a[0]))
		}
		if !b {
			msg := ""
			if m, ok := a[1].(cStr); ok {
				msg = ": " + string(m)
			}
			s.fail("static_assert failed%s", msg)
		}
		return cNone{}
	}
	t["tl.static_print"] = func(s *spec, ca callArgs) value {
		if s.dry > 0 {
			return cNone{}
		}
		parts := make([]string, 0, len(ca.pos))
		for _, v := range ca.pos {
			if x, ok := v.(cStr); ok {
				parts = append(parts, string(x))
			} else if isConst(v) {
				parts = append(parts, constString(v))
			} else {
				parts = append(parts, describe(v))
			}
		}
		fmt.Fprintln(s.out, strings.Join(parts, " "))
		return cNone{}
	}
	t["tl.device_print"] = func(s *spec, ca callArgs) value {
		prefix := ""
		args := ca.pos
		if len(args) > 0 {
			if p, ok := args[0].(cStr); ok {
				prefix = string(p)
				args = args[1:]
			}
		}
		var vals []*ir.Value
		for _, v := range args {
			if x, ok := v.(cStr); ok {
				prefix += " " + string(x)
				continue
			}
			vals = append(vals, s.tensorArg("tl.device_print", "value", v))
		}
		in := s.emitInstr(ir.Print, nil, vals...)
		in.Str = prefix
		return cNone{}
	}
	t["tl.device_assert"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.device_assert", ca, []string{"cond", "msg", "mask"})
		msg := ""
		if !isNone(a[1]) {
			m, ok := a[1].(cStr)
			if !ok {
				s.fail("tl.device_assert: msg must be a string, got %s", typeName(a[1]))
			}
			msg = string(m)
		}
		s.deviceAssert(a[0], msg, a[2])
		return cNone{}
	}
	t["tl.static_range"] = func(s *spec, ca callArgs) value {
		s.fail("tl.static_range is only allowed as the iterable of a for loop")
		return nil
	}
	t["tl.range"] = func(s *spec, ca callArgs) value {
		s.fail("tl.range is only allowed as the iterable of a for loop")
		return nil
	}
	t["tl.tensor"] = func(s *spec, ca callArgs) value {
		s.fail("tl.tensor cannot be constructed directly")
		return nil
	}
	t["tl.dtype"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.dtype", ca, []string{"name"})
		n, ok := a[0].(cStr)
		if !ok {
			s.fail("tl.dtype needs a name string")
		}
		d, ok := ir.ParseDType(string(n))
		if !ok {
			s.fail("unknown dtype %q", string(n))
		}
		return cDType{ir.Scalar(d)}
	}
	registerReductions(t)
	registerMemory(t)
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

func (s *spec) gridQuery(op ir.Op, fn string, axis value) *ir.Value {
	ax := s.intArg(fn, "axis", axis)
	if ax < 0 || ax > 2 {
		s.fail("%s: axis must be 0, 1 or 2, got %d", fn, ax)
	}
	in := s.emitInstr(op, []ir.Type{ir.Scalar(ir.I32)})
	in.Int = int64(ax)
	return in.Result()
}

func (s *spec) checkPropagateNan(fn string, v value) {
	if pn, ok := v.(cStr); ok && pn != "" && pn != "none" && pn != "NONE" {
		s.fail("%s: propagate_nan=%q is not supported (maxnum semantics only)", fn, string(pn))
	}
}

func (s *spec) promoteBF16(x *ir.Value) *ir.Value {
	if !x.Type.Ptr && x.Type.Elem == ir.BF16 {
		return s.cast(x, ir.F32)
	}
	return x
}

// elementwiseMinMax is tl.maximum/tl.minimum (and the min/max builtins on tensors): as in
// Triton, both operands become tensors first (Python numbers are not weak here) and bf16 is
// promoted to fp32; then the usual promotion and broadcasting apply.
func (s *spec) elementwiseMinMax(fn string, op ir.Op, a, b value) *ir.Value {
	x := s.promoteBF16(s.tensorArg(fn, "x", a))
	y := s.promoteBF16(s.tensorArg(fn, "y", b))
	x, y = s.operands(fn, x, y, false, false, true, false)
	if x.Type.Ptr {
		s.fail("%s on pointers", fn)
	}
	return s.emit(op, x.Type, x, y)
}

// deviceAssert is tl.device_assert (and a Python assert on a runtime condition, as Triton
// compiles it): an Assert that fails the run wherever cond is false and mask is true. A
// condition true at compile time, or a mask false at compile time, emits nothing; a condition
// false at compile time with no mask fails specialization here.
func (s *spec) deviceAssert(cond value, msg string, mask value) {
	if isNone(mask) {
		mask = nil
	}
	if m, ok := mask.(cBool); ok {
		if !m {
			return
		}
		mask = nil
	}
	if b, ok := truthy(cond); ok && isConst(cond) {
		if b {
			return
		}
		if mask == nil {
			s.fail("device_assert on a compile-time false condition: %s", msg)
		}
	}
	c := s.toBool(s.tensorArg("tl.device_assert", "cond", cond))
	if mask != nil {
		m := s.tensorArg("tl.device_assert", "mask", mask)
		if m.Type.Ptr || m.Type.Elem != ir.I1 {
			s.fail("tl.device_assert: mask must be a boolean (int1) tensor, got %s", m.Type)
		}
		shape := s.commonShape("tl.device_assert", c, m)
		c = s.broadcastTo(c, shape)
		m = s.broadcastTo(m, shape)
		// Lanes the mask turns off hold: the condition checked is cond | ~mask.
		c = s.emit(ir.Or, c.Type, c, s.emit(ir.Not, m.Type, m))
	}
	in := s.emitInstr(ir.Assert, nil, c)
	in.Str = msg
}
