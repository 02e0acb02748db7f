package graph

// pad is F.pad: pad lists (before, after) pairs from the last dim backwards, as PyTorch
// does; mode "constant" fills with value (negative pads crop), "reflect" mirrors without the
// edge, "replicate" repeats the edge, "circular" wraps around.

func init() {
	defOp("pad", x1, []attrDef{{"pad", required}, {"mode", "constant"}, {"value", 0.0}}, inferPad)
}

func inferPad(c *ctx) {
	pad, v, ok := c.requiredIntList("pad")
	if !ok {
		return
	}
	c.n.Attrs["pad"] = pad
	mode := c.Enum("mode", "constant", "reflect", "replicate", "circular")
	value := 0.0
	if c.attrV("value") != nil {
		value = c.specialFloat("value")
	}
	c.n.Attrs["value"] = value
	if c.failed {
		return
	}
	x := c.x(0)
	k := len(pad) / 2
	switch {
	case len(pad)%2 != 0:
		c.errf("attrs.pad", v, "pad %v must hold (before, after) pairs: an even number of entries", pad)
		return
	case k > x.Rank():
		c.errf("attrs.pad", v, "pad %v pads %d dims, but %q %v has %d", pad, k, c.in[0].Name, x.Shape, x.Rank())
		return
	case mode != "constant" && (k < 1 || k > 3 || x.Rank() < k+1 || x.Rank() > k+2):
		c.errf("attrs.pad", v, "%s padding pads the last 1 to 3 dims of a tensor with 1 or 2 more dims (as PyTorch), got pad %v for %q %v", mode, pad, c.in[0].Name, x.Shape)
		return
	}
	out := clone(x.Shape)
	for i := 0; i < k; i++ {
		d := x.Rank() - 1 - i
		n, before, after := x.Shape[d], pad[2*i], pad[2*i+1]
		switch {
		case mode != "constant" && (before < 0 || after < 0):
			c.errf("attrs.pad", v, "%s padding needs pads >= 0, got %v", mode, pad)
			return
		case mode == "reflect" && (before >= n || after >= n):
			c.errf("attrs.pad", v, "reflect padding of dim %d (size %d) needs pads below its size, got %d and %d", d, n, before, after)
			return
		case mode == "circular" && (before > n || after > n):
			c.errf("attrs.pad", v, "circular padding of dim %d (size %d) needs pads at most its size, got %d and %d", d, n, before, after)
			return
		}
		out[d] = n + before + after
		if out[d] < 1 {
			c.errf("attrs.pad", v, "pad %v leaves dim %d of %q %v with %d elements", pad, d, c.in[0].Name, x.Shape, out[d])
			return
		}
	}
	c.out(Type{out, x.DType})
}
