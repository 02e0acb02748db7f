package graph

// The hard activations and clamps of mobile networks (MobileNetV3's hardsigmoid and relu6,
// hardtanh, clamp), the periodic functions of rotary embeddings (sin, cos), typed like their
// input, and `to`, a cast between float dtypes (x.float() in a bfloat16 model, RoPE computed in
// float64 and returned as float32).

func init() {
	floatOnly := func(c *ctx) {
		if c.needFloat(0) {
			c.out(c.x(0))
		}
	}
	for _, name := range []string{"hardsigmoid", "relu6", "sin", "cos"} {
		defOp(name, x1, noAttrs, floatOnly)
	}
	defOp("hardtanh", x1, []attrDef{{"min_val", -1.0}, {"max_val", 1.0}}, func(c *ctx) {
		lo, hi := c.Float("min_val"), c.Float("max_val")
		if !c.failed && lo > hi {
			c.errf("attrs.max_val", c.attrPos("max_val"), "max_val %g is below min_val %g", hi, lo)
			return
		}
		floatOnly(c)
	})
	defOp("clamp", x1, []attrDef{{"min", nil}, {"max", nil}}, func(c *ctx) {
		_, hasLo := c.floatOrNull("min", true)
		_, hasHi := c.floatOrNull("max", true)
		if !c.failed && !hasLo && !hasHi {
			c.errf("attrs", c.attrPos("min"), "clamp needs min or max (both are null)")
			return
		}
		floatOnly(c)
	})
	defOp("to", x1, []attrDef{{"dtype", required}}, func(c *ctx) {
		d := DType(c.Enum("dtype", string(Float32), string(Float16), string(BFloat16), string(Float64)))
		if c.failed {
			return
		}
		if x := c.x(0); x.DType.IsFloat() || x.DType == Bool {
			c.out(Type{clone(x.Shape), d})
			return
		}
		c.inErr(0, "to casts float and bool tensors, %q is %s", c.in[0].Name, c.x(0).DType)
	})
}
