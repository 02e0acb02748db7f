package graph

import (
	"fmt"
	"slices"
)

func init() {
	elementwise := func(name string, attrs []attrDef, check func(c *ctx)) {
		defOp(name, x1, attrs, func(c *ctx) {
			if check != nil {
				check(c)
			}
			if c.failed || !c.needFloat(0) {
				return
			}
			c.out(c.x(0))
		})
	}
	for _, name := range []string{"relu", "silu", "sigmoid", "tanh", "hardswish"} {
		elementwise(name, noAttrs, nil)
	}
	elementwise("gelu", []attrDef{{"approximate", "none"}}, func(c *ctx) { c.Enum("approximate", "none", "tanh") })
	elementwise("leaky_relu", []attrDef{{"negative_slope", 0.01}}, func(c *ctx) { c.Float("negative_slope") })
	elementwise("elu", []attrDef{{"alpha", 1.0}}, func(c *ctx) { c.Float("alpha") })
	elementwise("softplus", []attrDef{{"beta", 1.0}, {"threshold", 20.0}}, func(c *ctx) {
		if c.Float("beta") == 0 {
			c.errf("attrs.beta", c.attrPos("beta"), "beta must not be 0")
		}
		c.Float("threshold")
	})
	for _, name := range []string{"softmax", "log_softmax"} {
		elementwise(name, []attrDef{{"dim", required}}, func(c *ctx) { c.Dim("dim", c.x(0).Rank()) })
	}
	defOp("prelu", x1, []attrDef{{"num_parameters", 1}}, func(c *ctx) {
		np := c.Int("num_parameters", 1)
		if c.failed || !c.needFloat(0) {
			return
		}
		x := c.x(0)
		ch := 1
		if x.Rank() >= 2 {
			ch = x.Shape[1]
		}
		if np != 1 && np != ch {
			c.inErr(0, "prelu with num_parameters=%d needs %d channels in dim 1 (or num_parameters=1), %q has shape %v", np, np, c.in[0].Name, x.Shape)
			return
		}
		c.param("weight", true, []int{np}, x.DType, "")
		c.out(x)
	})

	defOp("add", binSlots, []attrDef{{"alpha", 1}}, inferBinary)
	defOp("sub", binSlots, []attrDef{{"alpha", 1}}, inferBinary)
	defOp("mul", binSlots, noAttrs, inferBinary)
	defOp("div", binSlots, []attrDef{{"rounding_mode", nil}}, inferBinary)
	defOp("pow", binSlots, noAttrs, inferBinary)
	defOp("neg", x1, noAttrs, func(c *ctx) {
		if c.x(0).DType == Bool {
			c.inErr(0, "neg of a bool tensor is not supported")
			return
		}
		c.out(c.x(0))
	})
	defOp("matmul", []slot{{name: "a"}, {name: "b"}}, noAttrs, inferMatmul)
	defOp("flatten", x1, []attrDef{{"start_dim", 0}, {"end_dim", -1}}, inferFlatten)
	defOp("view", x1, []attrDef{{"shape", required}}, inferView)
	defOp("reshape", x1, []attrDef{{"shape", required}}, inferView)
	defOp("permute", x1, []attrDef{{"dims", required}}, inferPermute)
	defOp("transpose", x1, []attrDef{{"dim0", required}, {"dim1", required}}, func(c *ctx) {
		x := c.x(0)
		d0, d1 := c.Dim("dim0", x.Rank()), c.Dim("dim1", x.Rank())
		if c.failed {
			return
		}
		s := clone(x.Shape)
		if len(s) > 0 {
			s[d0], s[d1] = s[d1], s[d0]
		}
		c.out(Type{s, x.DType})
	})
	defOp("contiguous", x1, noAttrs, func(c *ctx) { c.out(c.x(0)) })
	defOp("cat", []slot{{name: "tensors", list: true}}, []attrDef{{"dim", 0}}, inferCat)
	defOp("stack", []slot{{name: "tensors", list: true}}, []attrDef{{"dim", 0}}, inferStack)
	defOp("chunk", x1, []attrDef{{"chunks", required}, {"dim", 0}}, inferChunk)
	defOp("split", x1, []attrDef{{"split_size_or_sections", required}, {"dim", 0}}, inferSplit)
	defOp("unsqueeze", x1, []attrDef{{"dim", required}}, func(c *ctx) {
		x := c.x(0)
		d := c.Dim("dim", x.Rank()+1)
		if c.failed {
			return
		}
		s := append(clone(x.Shape[:d]), 1)
		c.out(Type{append(s, x.Shape[d:]...), x.DType})
	})
	defOp("squeeze", x1, []attrDef{{"dim", nil}}, func(c *ctx) {
		x := c.x(0)
		dims := c.Dims("dim", x.Rank())
		if c.failed {
			return
		}
		var removed, s []int
		for i, d := range x.Shape {
			if d == 1 && contains(intsToStrings(dims), fmt.Sprint(i)) {
				removed = append(removed, i)
				continue
			}
			s = append(s, d)
		}
		if removed == nil {
			removed = []int{}
		}
		if s == nil {
			s = []int{}
		}
		c.n.Attrs["dim"] = removed
		c.out(Type{s, x.DType})
	})
	for _, name := range []string{"mean", "sum", "amax"} {
		defOp(name, x1, []attrDef{{"dim", nil}, {"keepdim", false}}, inferReduce)
	}
	defOp("getitem", []slot{{name: "tuple"}}, []attrDef{{"index", required}}, inferGetitem)
}

// promote follows torch.result_type for two tensors (dims-agnostic: both are treated as
// dimensioned tensors).
func promote(a, b DType) DType {
	if a == b {
		return a
	}
	switch {
	case a.IsFloat() && !b.IsFloat():
		return a
	case b.IsFloat() && !a.IsFloat():
		return b
	case a.IsFloat() && b.IsFloat():
		if a == Float64 || b == Float64 {
			return Float64
		}
		if a == Float32 || b == Float32 {
			return Float32
		}
		return Float32 // float16 with bfloat16
	case a == Bool:
		return b
	case b == Bool:
		return a
	}
	// two integer types
	rank := map[DType]int{Uint8: 1, Int8: 1, Int16: 2, Int32: 3, Int64: 4}
	if (a == Uint8 && b == Int8) || (a == Int8 && b == Uint8) {
		return Int16
	}
	if rank[a] >= rank[b] {
		return a
	}
	return b
}

// broadcast applies PyTorch's broadcasting rule; ok is false when the shapes do not broadcast.
func broadcast(a, b []int) ([]int, bool) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := 0; i < n; i++ {
		da, db := 1, 1
		if j := len(a) - n + i; j >= 0 {
			da = a[j]
		}
		if j := len(b) - n + i; j >= 0 {
			db = b[j]
		}
		switch {
		case da == db || db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, false
		}
	}
	return out, true
}

func inferBinary(c *ctx) {
	op := c.n.Op
	var rounding string
	var alphaV *jvalue
	switch op {
	case "add", "sub":
		c.Float("alpha")
		alphaV = c.attrV("alpha")
		if alphaV == nil || (alphaV.kind == jNumber && !hasFraction(alphaV)) {
			c.n.Attrs["alpha"] = int(c.n.Attrs.Float("alpha"))
		}
	case "div":
		v, given := c.value("rounding_mode")
		if given && v.kind != jNull {
			rounding = c.Enum("rounding_mode", "trunc", "floor")
		} else {
			c.n.Attrs["rounding_mode"] = nil
		}
	}
	if c.failed {
		return
	}
	a, b := c.in[0], c.in[1]
	if a.Kind == ScalarOperand && b.Kind == ScalarOperand {
		c.errf("inputs", c.r.inputs, "%s needs at least one tensor operand, got two numbers", op)
		return
	}
	var shape []int
	var dt DType
	switch {
	case a.Kind == ScalarOperand:
		shape, dt = clone(b.Type.Shape), scalarPromote(b.Type.DType, a)
	case b.Kind == ScalarOperand:
		shape, dt = clone(a.Type.Shape), scalarPromote(a.Type.DType, b)
	default:
		var ok bool
		shape, ok = broadcast(a.Type.Shape, b.Type.Shape)
		if !ok {
			c.inErr(1, "shape mismatch: %s cannot broadcast %q %v with %q %v", op, a.Name, a.Type.Shape, b.Name, b.Type.Shape)
			return
		}
		dt = promote(a.Type.DType, b.Type.DType)
	}
	if (op == "add" || op == "sub") && alphaV != nil && hasFraction(alphaV) && !dt.IsFloat() {
		c.errf("attrs.alpha", alphaV, "alpha must be an integer for %s operands", dt)
		return
	}
	if op == "sub" && dt == Bool {
		c.errf("inputs", c.r.inputs, "sub of bool tensors is not supported")
		return
	}
	if op == "div" && rounding == "" && !dt.IsFloat() {
		dt = Float32 // true division of integers gives the default float dtype
	}
	if op == "pow" && !dt.IsFloat() && b.Kind == ScalarOperand && b.Scalar < 0 {
		c.inErr(1, "integers to negative integer powers are not allowed")
		return
	}
	c.out(Type{shape, dt})
}

func hasFraction(v *jvalue) bool {
	s := v.num.String()
	for i := 0; i < len(s); i++ {
		if s[i] == '.' || s[i] == 'e' || s[i] == 'E' {
			return true
		}
	}
	return false
}

// scalarPromote is the dtype of tensor (dtype t) op Python number s.
func scalarPromote(t DType, s Operand) DType {
	switch {
	case !s.IsInt && !t.IsFloat():
		return Float32
	case s.IsInt && t == Bool:
		return Int64
	}
	return t
}

func inferMatmul(c *ctx) {
	a, b := c.x(0), c.x(1)
	if a.Rank() == 0 || b.Rank() == 0 {
		c.inErr(0, "matmul needs tensors of rank >= 1, got %v and %v", a.Shape, b.Shape)
		return
	}
	if a.DType != b.DType {
		c.inErr(1, "dtype mismatch: matmul of %s and %s", a.DType, b.DType)
		return
	}
	as, bs := clone(a.Shape), clone(b.Shape)
	if len(as) == 1 {
		as = []int{1, as[0]}
	}
	if len(bs) == 1 {
		bs = []int{bs[0], 1}
	}
	m, k := as[len(as)-2], as[len(as)-1]
	k2, n := bs[len(bs)-2], bs[len(bs)-1]
	if k != k2 {
		c.inErr(1, "shape mismatch: matmul of %v and %v (inner dims %d and %d differ)", a.Shape, b.Shape, k, k2)
		return
	}
	batch, ok := broadcast(as[:len(as)-2], bs[:len(bs)-2])
	if !ok {
		c.inErr(1, "shape mismatch: matmul batch dims of %v and %v do not broadcast", a.Shape, b.Shape)
		return
	}
	out := clone(batch)
	if a.Rank() > 1 {
		out = append(out, m)
	}
	if b.Rank() > 1 {
		out = append(out, n)
	}
	c.out(Type{out, a.DType})
}

func inferFlatten(c *ctx) {
	x := c.x(0)
	r := x.Rank()
	s, e := c.Dim("start_dim", r), c.Dim("end_dim", r)
	if c.failed {
		return
	}
	if r == 0 {
		c.out(Type{[]int{1}, x.DType})
		return
	}
	if s > e {
		c.errf("attrs", c.attrPos("start_dim"), "flatten start_dim (%d) must not come after end_dim (%d)", s, e)
		return
	}
	out := append(clone(x.Shape[:s]), numel(x.Shape[s:e+1]))
	c.out(Type{append(out, x.Shape[e+1:]...), x.DType})
}

func inferView(c *ctx) {
	v, given := c.value("shape")
	if !given {
		return
	}
	if v.kind != jArray {
		c.wrongType("shape", "a list of integers", v)
		return
	}
	shape, ok := c.intList("shape", v, false)
	if !ok {
		return
	}
	x := c.x(0)
	infer, known := -1, 1
	for i, d := range shape {
		switch {
		case d == -1 && infer >= 0:
			c.errf("attrs.shape", v, "only one dim can be -1, got %v", shape)
			return
		case d == -1:
			infer = i
		case d < 1:
			c.errf("attrs.shape", v, "dims must be >= 1 or a single -1, got %v", shape)
			return
		default:
			known *= d
			if known > maxNumel {
				c.errf("attrs.shape", v, "shape %v is too large", shape)
				return
			}
		}
	}
	total := x.Numel()
	if infer >= 0 {
		if total%known != 0 {
			c.errf("attrs.shape", v, "shape %v is invalid for input %q of %d elements %v", shape, c.in[0].Name, total, x.Shape)
			return
		}
		shape[infer] = total / known
	} else if known != total {
		c.errf("attrs.shape", v, "shape %v (%d elements) is invalid for input %q of %d elements %v", shape, known, c.in[0].Name, total, x.Shape)
		return
	}
	c.n.Attrs["shape"] = shape
	c.out(Type{shape, x.DType})
}

func inferPermute(c *ctx) {
	v, given := c.value("dims")
	if !given {
		return
	}
	if v.kind != jArray {
		c.wrongType("dims", "a list of integers", v)
		return
	}
	dims, ok := c.intList("dims", v, false)
	if !ok {
		return
	}
	x := c.x(0)
	if len(dims) != x.Rank() {
		c.errf("attrs.dims", v, "permute of a rank-%d input needs %d dims, got %v", x.Rank(), x.Rank(), dims)
		return
	}
	seen := make([]bool, len(dims))
	out := make([]int, len(dims))
	for i, d := range dims {
		rd, ok := c.resolveDim("dims", v, d, x.Rank())
		if !ok {
			return
		}
		if seen[rd] {
			c.errf("attrs.dims", v, "dims %v repeat dim %d", dims, rd)
			return
		}
		seen[rd] = true
		dims[i] = rd
		out[i] = x.Shape[rd]
	}
	c.n.Attrs["dims"] = dims
	c.out(Type{out, x.DType})
}

func inferCat(c *ctx) {
	list := c.in[0].List
	first := list[0].Type
	d := c.Dim("dim", first.Rank())
	if c.failed {
		return
	}
	if first.Rank() == 0 {
		c.inErr(0, "cat cannot concatenate zero-dimensional tensors (%q)", list[0].Name)
		return
	}
	out := clone(first.Shape)
	for _, t := range list[1:] {
		s := t.Type.Shape
		if t.Type.DType != first.DType {
			c.inErr(0, "dtype mismatch: cat of %q (%s) and %q (%s)", list[0].Name, first.DType, t.Name, t.Type.DType)
			return
		}
		okShape := len(s) == len(first.Shape)
		for i := 0; okShape && i < len(s); i++ {
			if i != d && s[i] != first.Shape[i] {
				okShape = false
			}
		}
		if !okShape {
			c.inErr(0, "shape mismatch: cat along dim %d of %q %v and %q %v (other dims must match)", d, list[0].Name, first.Shape, t.Name, s)
			return
		}
		out[d] += s[d]
	}
	c.out(Type{out, first.DType})
}

func inferStack(c *ctx) {
	list := c.in[0].List
	first := list[0].Type
	d := c.Dim("dim", first.Rank()+1)
	if c.failed {
		return
	}
	for _, t := range list[1:] {
		if !slices.Equal(t.Type.Shape, first.Shape) || t.Type.DType != first.DType {
			c.inErr(0, "stack needs equal shapes and dtypes: %q is %s, %q is %s", list[0].Name, first, t.Name, t.Type)
			return
		}
	}
	out := append(clone(first.Shape[:d]), len(list))
	c.out(Type{append(out, first.Shape[d:]...), first.DType})
}

// maxTupleLen bounds chunk/split results: beyond it a graph is certainly a mistake, and
// materialising it would exhaust memory.
const maxTupleLen = 1 << 12

func (c *ctx) pieces(x Type, d int, sizes []int) {
	types := make([]Type, len(sizes))
	for i, sz := range sizes {
		s := clone(x.Shape)
		s[d] = sz
		types[i] = Type{s, x.DType}
	}
	c.tuple(types...)
}

func inferChunk(c *ctx) {
	x := c.x(0)
	chunks := c.Int("chunks", 1)
	if x.Rank() == 0 {
		c.inErr(0, "chunk expects at least a 1-dimensional tensor")
		return
	}
	d := c.Dim("dim", x.Rank())
	if c.failed {
		return
	}
	size := (x.Shape[d] + chunks - 1) / chunks
	if (x.Shape[d]+size-1)/size > maxTupleLen {
		c.errf("attrs.chunks", c.attrPos("chunks"), "chunk would make more than %d pieces", maxTupleLen)
		return
	}
	var sizes []int
	for left := x.Shape[d]; left > 0; left -= size {
		sizes = append(sizes, min(size, left))
	}
	c.pieces(x, d, sizes)
}

func inferSplit(c *ctx) {
	x := c.x(0)
	vals, wasInt, ok := c.IntOrList("split_size_or_sections")
	if x.Rank() == 0 {
		c.inErr(0, "split expects at least a 1-dimensional tensor")
		return
	}
	d := c.Dim("dim", x.Rank())
	if c.failed || !ok {
		return
	}
	pos := c.attrPos("split_size_or_sections")
	var sizes []int
	if wasInt {
		size := vals[0]
		if size < 1 {
			c.errf("attrs.split_size_or_sections", pos, "split size must be >= 1, got %d", size)
			return
		}
		if (x.Shape[d]+size-1)/size > maxTupleLen {
			c.errf("attrs.split_size_or_sections", pos, "split would make more than %d pieces", maxTupleLen)
			return
		}
		for left := x.Shape[d]; left > 0; left -= size {
			sizes = append(sizes, min(size, left))
		}
	} else {
		sum := 0
		for _, s := range vals {
			if s < 1 {
				c.errf("attrs.split_size_or_sections", pos, "sections must be >= 1, got %v", vals)
				return
			}
			sum += s
		}
		if sum != x.Shape[d] || len(vals) == 0 {
			c.errf("attrs.split_size_or_sections", pos, "sections %v must sum to the size of dim %d (%d)", vals, d, x.Shape[d])
			return
		}
		sizes = vals
	}
	c.n.Attrs["split_size_or_sections"] = sizes
	c.pieces(x, d, sizes)
}

func inferReduce(c *ctx) {
	x := c.x(0)
	dims := c.Dims("dim", x.Rank())
	keep := c.Bool("keepdim")
	if c.failed {
		return
	}
	c.n.Attrs["dim"] = dims
	dt := x.DType
	switch c.n.Op {
	case "mean":
		if !dt.IsFloat() {
			c.inErr(0, "mean needs a float tensor, %q is %s", c.in[0].Name, dt)
			return
		}
	case "sum":
		if !dt.IsFloat() {
			dt = Int64
		}
	}
	var out []int
	for i, s := range x.Shape {
		if contains(intsToStrings(dims), fmt.Sprint(i)) {
			if keep {
				out = append(out, 1)
			}
			continue
		}
		out = append(out, s)
	}
	if out == nil {
		out = []int{}
	}
	c.out(Type{out, dt})
}

func inferGetitem(c *ctx) {
	src := c.in[0]
	idx := c.Int("index", -maxDim)
	if c.failed {
		return
	}
	n := c.l.g.nodes[src.Name]
	if n == nil || !n.Tuple {
		c.inErr(0, "getitem takes a tuple-valued node (chunk, split, lstm, multihead_attention, ...); %q is a tensor", src.Name)
		return
	}
	size := len(n.Outputs)
	if idx < -size || idx >= size {
		hint := ""
		if n.Op == "multihead_attention" && !n.Attrs.Bool("need_weights") {
			hint = " (multihead_attention returns no weights when need_weights=false)"
		}
		c.errf("attrs.index", c.attrPos("index"), "index %d is out of range for the %d-element tuple of %q%s", idx, size, src.Name, hint)
		return
	}
	if idx < 0 {
		idx += size
	}
	c.n.Attrs["index"] = idx
	c.out(n.Outputs[idx])
}
