package graph

import (
	"math"
	"slices"
)

// Indexing, masking and the element-wise math the PyTorch idioms of attention code need:
// x[:, 0] (select), x[..., :T] (slice), masked_fill, where, comparisons, tril/triu, rsqrt.

func init() {
	defOp("slice", x1, []attrDef{{"dim", required}, {"start", nil}, {"end", nil}, {"step", 1}, {"end_follows", nil}}, inferSlice)
	defOp("select", x1, []attrDef{{"dim", required}, {"index", required}}, inferSelect)
	for _, name := range []string{"rsqrt", "sqrt", "exp", "log"} {
		defOp(name, x1, noAttrs, func(c *ctx) {
			if c.needFloat(0) {
				c.out(c.x(0))
			}
		})
	}
	for _, name := range []string{"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"} {
		defOp(name, binSlots, noAttrs, inferCompare)
	}
	defOp("logical_not", x1, noAttrs, func(c *ctx) { c.out(Type{clone(c.x(0).Shape), Bool}) })
	defOp("masked_fill", []slot{{name: "x"}, {name: "mask"}}, []attrDef{{"value", required}}, inferMaskedFill)
	defOp("where", []slot{{name: "condition"}, {name: "input", scalarOK: true}, {name: "other", scalarOK: true}}, noAttrs, inferWhere)
	for _, name := range []string{"tril", "triu"} {
		defOp(name, x1, []attrDef{{"diagonal", 0}}, func(c *ctx) {
			c.Int("diagonal", -maxDim)
			if !c.failed && c.x(0).Rank() < 2 {
				c.inErr(0, "%s needs a tensor of rank >= 2 (a matrix or a batch of them), %q has shape %v", c.n.Op, c.in[0].Name, c.x(0).Shape)
				return
			}
			c.out(c.x(0))
		})
	}
}

// sliceBound resolves a Python slice bound against a dim of size n (negative counts from the
// end; out-of-range bounds clamp, as in PyTorch).
func sliceBound(v, n int) int {
	if v < 0 {
		v += n
	}
	return min(max(v, 0), n)
}

func inferSlice(c *ctx) {
	x := c.x(0)
	if x.Rank() == 0 {
		c.inErr(0, "slice needs a tensor of rank >= 1, %q is a scalar", c.in[0].Name)
		return
	}
	d := c.Dim("dim", x.Rank())
	start, hasStart := c.IntOrNull("start")
	end, hasEnd := c.IntOrNull("end")
	step := c.Int("step", 1)
	if c.failed {
		return
	}
	size := x.Shape[d]
	if !hasStart {
		start = 0
	}
	if !hasEnd {
		end = size
	}
	if !c.sliceEndFollows(end, hasEnd, size, d) {
		return
	}
	start, end = sliceBound(start, size), sliceBound(end, size)
	n := 0
	if end > start {
		n = (end - start + step - 1) / step
	}
	if n == 0 {
		c.errf("attrs.start", c.attrPos("start"), "slice [%v:%v:%d] of dim %d (size %d) is empty; widejit tensors have no zero-size dims",
			c.n.Attrs["start"], c.n.Attrs["end"], step, d, size)
		return
	}
	c.n.Attrs["start"], c.n.Attrs["end"] = start, end
	s := clone(x.Shape)
	s[d] = n
	c.out(Type{s, x.DType})
}

func inferSelect(c *ctx) {
	x := c.x(0)
	if x.Rank() == 0 {
		c.inErr(0, "select needs a tensor of rank >= 1, %q is a scalar", c.in[0].Name)
		return
	}
	d := c.Dim("dim", x.Rank())
	idx := c.Int("index", -maxDim)
	if c.failed {
		return
	}
	size := x.Shape[d]
	if idx < -size || idx >= size {
		c.errf("attrs.index", c.attrPos("index"), "index %d is out of range for dim %d of size %d", idx, d, size)
		return
	}
	if idx < 0 {
		idx += size
	}
	c.n.Attrs["index"] = idx
	s := append(clone(x.Shape[:d]), x.Shape[d+1:]...)
	c.out(Type{s, x.DType})
}

// operandType is the type a tensor or scalar operand contributes to broadcasting and promotion.
func operandShape(o Operand) []int {
	if o.Kind == ScalarOperand {
		return nil
	}
	return o.Type.Shape
}

func inferCompare(c *ctx) {
	a, b := c.in[0], c.in[1]
	if a.Kind == ScalarOperand && b.Kind == ScalarOperand {
		c.errf("inputs", c.r.inputs, "%s needs at least one tensor operand, got two numbers", c.n.Op)
		return
	}
	shape, ok := broadcast(operandShape(a), operandShape(b))
	if !ok {
		c.inErr(1, "shape mismatch: %s cannot broadcast %q %v with %q %v", c.n.Op, a.Name, a.Type.Shape, b.Name, b.Type.Shape)
		return
	}
	c.out(Type{shape, Bool})
}

// specialFloat reads a number attribute that may also be "inf", "-inf" or "nan" (JSON has no
// literal for them, and masked_fill(-inf) is how attention masks are written).
func (c *ctx) specialFloat(name string) float64 {
	v, given := c.value(name)
	if !given {
		return 0
	}
	if v.kind == jString {
		f, ok := map[string]float64{"inf": math.Inf(1), "-inf": math.Inf(-1), "nan": math.NaN()}[v.str]
		if !ok {
			c.errf("attrs."+name, v, "%s must be a number, \"inf\", \"-inf\" or \"nan\", got %q", name, v.str)
		}
		c.n.Attrs[name] = f
		return f
	}
	if v.kind != jNumber {
		c.wrongType(name, `a number, "inf", "-inf" or "nan"`, v)
		return 0
	}
	return c.Float(name)
}

func inferMaskedFill(c *ctx) {
	c.specialFloat("value")
	if c.failed {
		return
	}
	x, m := c.x(0), c.x(1)
	if m.DType != Bool {
		c.inErr(1, "masked_fill needs a bool mask, %q is %s (compare it first, e.g. mask == 0)", c.in[1].Name, m.DType)
		return
	}
	shape, ok := broadcast(x.Shape, m.Shape)
	if !ok || !slices.Equal(shape, x.Shape) {
		c.inErr(1, "shape mismatch: mask %q %v does not broadcast to %q %v", c.in[1].Name, m.Shape, c.in[0].Name, x.Shape)
		return
	}
	c.out(x)
}

func inferWhere(c *ctx) {
	cond, a, b := c.in[0], c.in[1], c.in[2]
	if cond.Type.DType != Bool {
		c.inErr(0, "where needs a bool condition, %q is %s", cond.Name, cond.Type.DType)
		return
	}
	if a.Kind == ScalarOperand && b.Kind == ScalarOperand {
		c.errf("inputs", c.r.inputs, "where needs a tensor input or other, got two numbers")
		return
	}
	shape, ok := broadcast(cond.Type.Shape, operandShape(a))
	if ok {
		shape, ok = broadcast(shape, operandShape(b))
	}
	if !ok {
		c.inErr(2, "shape mismatch: where cannot broadcast %v, %v and %v", cond.Type.Shape, operandShape(a), operandShape(b))
		return
	}
	var dt DType
	switch {
	case a.Kind == ScalarOperand:
		dt = scalarPromote(b.Type.DType, a)
	case b.Kind == ScalarOperand:
		dt = scalarPromote(a.Type.DType, b)
	default:
		dt = promote(a.Type.DType, b.Type.DType)
	}
	c.out(Type{shape, dt})
}

// sliceEndFollows checks a slice's "end_follows": [input, dim], which says that its end is the
// size of a dynamic dim of an input (a causal mask sliced to the sequence length, mask[:T]):
// the end must be that size, and a dim shorter than it is refused rather than clamped, since
// the slice could not follow that size.
func (c *ctx) sliceEndFollows(end int, hasEnd bool, size, d int) bool {
	v := c.attrV("end_follows")
	if v == nil || v.kind == jNull {
		return true
	}
	var name string
	var dim int
	ok := v.kind == jArray && len(v.arr) == 2 && v.arr[0].kind == jString
	if ok {
		name = v.arr[0].str
		dim, ok = intValue(v.arr[1])
	}
	in := c.l.g.inputs[name]
	switch {
	case !ok:
		c.errf("attrs.end_follows", v, "end_follows must be [input name, dim], got %s", describe(v))
	case in == nil:
		c.errf("attrs.end_follows", v, "end_follows names %q, which is not an input", name)
	case !slices.Contains(in.dynamicDims, dim):
		c.errf("attrs.end_follows", v, "end_follows names dim %d of input %q, which is not one of its dynamic_dims %v", dim, name, in.dynamicDims)
	case !hasEnd || end != in.Type.Shape[dim]:
		c.errf("attrs.end", c.attrPos("end"), "the slice end %v follows dim %d of input %q, whose size is %d", c.n.Attrs["end"], dim, name, in.Type.Shape[dim])
	case end > size:
		c.errf("attrs.end", c.attrPos("end"), "the slice end follows dim %d of input %q, now %d, beyond dim %d (size %d) of %q %v: its size is baked in at %d",
			dim, name, end, d, size, c.in[0].Name, c.x(0).Shape, size)
	default:
		return true
	}
	return false
}
