package graph

import "slices"

// expand: x broadcast to a larger shape (Tensor.expand; the exporter also writes repeat and
// expand_as with it). sizes lists the output's dims: -1 keeps the input's size, a size-1 input
// dim may take any size, new leading dims are added. batch_dims names the output dims whose
// size follows the batch (a class token expanded to x.size(0)): a run at another batch size
// scales them (docs/graph-format.md, "Batch size").

func init() {
	defOp("expand", x1, []attrDef{{"sizes", required}, {"batch_dims", []int{}}}, inferExpand)
}

func inferExpand(c *ctx) {
	sizes, v, ok := c.requiredIntList("sizes")
	if !ok {
		return
	}
	x := c.x(0)
	lead := len(sizes) - x.Rank()
	if lead < 0 {
		c.errf("attrs.sizes", v, "sizes %v has %d entries, fewer than the %d dims of %q %v", sizes, len(sizes), x.Rank(), c.in[0].Name, x.Shape)
		return
	}
	out := make([]int, len(sizes))
	for i, s := range sizes {
		in := 1
		if i >= lead {
			in = x.Shape[i-lead]
		}
		switch {
		case s == -1 && i < lead:
			c.errf("attrs.sizes", v, "sizes[%d] is -1, but a new leading dim needs a size", i)
			return
		case s == -1:
			out[i] = in
		case s < 1:
			c.errf("attrs.sizes", v, "sizes[%d] is %d; sizes are >= 1 or -1 (keep the input's size)", i, s)
			return
		case in != 1 && s != in:
			c.errf("attrs.sizes", v, "sizes[%d] is %d, but dim %d of %q %v is %d (only size-1 dims expand)", i, s, i-lead, c.in[0].Name, x.Shape, in)
			return
		default:
			out[i] = s
		}
	}
	if numel(out) > maxNumel {
		c.errf("attrs.sizes", v, "sizes %v give more than %d elements", out, maxNumel)
		return
	}
	c.n.Attrs["sizes"] = out
	dims := []int{}
	if bd := c.attrV("batch_dims"); bd != nil {
		if dims, _, ok = c.requiredIntList("batch_dims"); !ok {
			return
		}
		for _, d := range dims {
			if d < 0 || d >= len(out) {
				c.errf("attrs.batch_dims", bd, "batch_dims %v: %d is not a dim of the output (0 to %d)", dims, d, len(out)-1)
				return
			}
		}
		slices.Sort(dims)
	}
	c.n.Attrs["batch_dims"] = dims
	c.out(Type{out, x.DType})
}

// requiredIntList reads a list-of-ints attribute that must be given, with its JSON value for
// error positions; ok is false when it is missing or malformed (the error is recorded).
func (c *ctx) requiredIntList(name string) ([]int, *jvalue, bool) {
	v, given := c.value(name)
	if !given {
		return nil, nil, false
	}
	if v.kind != jArray {
		c.wrongType(name, "a list of integers", v)
		return nil, v, false
	}
	list, ok := c.intList(name, v, false)
	return list, v, ok
}
