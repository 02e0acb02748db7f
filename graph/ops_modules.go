package graph

import (
	"fmt"
	"slices"
)

var (
	x1       = []slot{{name: "x"}}
	noAttrs  []attrDef
	binSlots = []slot{{name: "a", scalarOK: true}, {name: "b", scalarOK: true}}
)

func init() {
	defOp("linear", x1, []attrDef{{"in_features", required}, {"out_features", required}, {"bias", true}}, inferLinear)
	defOp("embedding", []slot{{name: "indices"}}, []attrDef{{"num_embeddings", required}, {"embedding_dim", required}, {"padding_idx", nil}}, inferEmbedding)
	defOp("mlp_embedder", x1, []attrDef{{"in_dim", required}, {"hidden_dim", required}}, inferMLPEmbedder)
	for k := 1; k <= 3; k++ {
		defOp(fmt.Sprintf("conv%dd", k), x1, []attrDef{{"in_channels", required}, {"out_channels", required}, {"kernel_size", required},
			{"stride", 1}, {"padding", 0}, {"dilation", 1}, {"groups", 1}, {"bias", true}, {"padding_mode", "zeros"}}, inferConv(k))
		defOp(fmt.Sprintf("batch_norm%dd", k), x1, []attrDef{{"num_features", required}, {"eps", 1e-5}, {"momentum", 0.1},
			{"affine", true}, {"track_running_stats", true}, {"training", false}}, inferBatchNorm(k))
	}
	for k := 1; k <= 3; k++ {
		defOp(fmt.Sprintf("conv_transpose%dd", k), x1, []attrDef{{"in_channels", required}, {"out_channels", required}, {"kernel_size", required},
			{"stride", 1}, {"padding", 0}, {"output_padding", 0}, {"groups", 1}, {"bias", true}, {"dilation", 1}}, inferConvTranspose(k))
		defOp(fmt.Sprintf("max_pool%dd", k), x1, []attrDef{{"kernel_size", required}, {"stride", nil}, {"padding", 0}, {"dilation", 1}, {"ceil_mode", false}}, inferPool(k, true))
		avg := []attrDef{{"kernel_size", required}, {"stride", nil}, {"padding", 0}, {"ceil_mode", false}, {"count_include_pad", true}}
		if k >= 2 {
			avg = append(avg, attrDef{"divisor_override", nil})
		}
		defOp(fmt.Sprintf("avg_pool%dd", k), x1, avg, inferPool(k, false))
		defOp(fmt.Sprintf("adaptive_avg_pool%dd", k), x1, []attrDef{{"output_size", required}}, inferAdaptivePool(k))
	}
	for k := 1; k <= 2; k++ {
		defOp(fmt.Sprintf("instance_norm%dd", k), x1, []attrDef{{"num_features", required}, {"eps", 1e-5}, {"momentum", 0.1},
			{"affine", false}, {"track_running_stats", false}}, inferInstanceNorm(k))
	}
	defOp("layer_norm", x1, []attrDef{{"normalized_shape", required}, {"eps", 1e-5}, {"elementwise_affine", true}, {"bias", true}}, inferLayerNorm)
	defOp("group_norm", x1, []attrDef{{"num_groups", required}, {"num_channels", required}, {"eps", 1e-5}, {"affine", true}}, inferGroupNorm)
	defOp("rms_norm", x1, []attrDef{{"normalized_shape", required}, {"eps", nil}, {"elementwise_affine", true}}, inferRMSNorm)
	defOp("ada_layer_norm_zero", []slot{{name: "x"}, {name: "emb"}}, []attrDef{{"embedding_dim", required}, {"eps", 1e-6}}, inferAdaLayerNormZero)
	defOp("multihead_attention", []slot{{name: "query"}, {name: "key"}, {name: "value"}, {name: "key_padding_mask", optional: true}, {name: "attn_mask", optional: true}},
		[]attrDef{{"embed_dim", required}, {"num_heads", required}, {"dropout", 0.0}, {"bias", true}, {"add_bias_kv", false}, {"add_zero_attn", false},
			{"kdim", nil}, {"vdim", nil}, {"batch_first", false}, {"need_weights", true}, {"average_attn_weights", true}, {"is_causal", false}}, inferMHA)
	rnnAttrs := []attrDef{{"input_size", required}, {"hidden_size", required}, {"num_layers", 1}, {"bias", true}, {"batch_first", false}, {"dropout", 0.0}, {"bidirectional", false}}
	defOp("rnn", []slot{{name: "x"}, {name: "h0", optional: true}}, append([]attrDef{{"nonlinearity", "tanh"}}, rnnAttrs...), inferRNN(1))
	defOp("gru", []slot{{name: "x"}, {name: "h0", optional: true}}, rnnAttrs, inferRNN(3))
	defOp("lstm", []slot{{name: "x"}, {name: "h0", optional: true}, {name: "c0", optional: true}}, rnnAttrs, inferRNN(4))
	defOp("dropout", x1, []attrDef{{"p", 0.5}, {"training", false}}, func(c *ctx) {
		if p := c.Float("p"); p < 0 || p > 1 {
			c.errf("attrs.p", c.attrPos("p"), "dropout probability must be in [0, 1], got %v", p)
		}
		c.Bool("training")
		c.out(c.x(0))
	})
	defOp("identity", x1, noAttrs, func(c *ctx) { c.out(c.x(0)) })
}

func inferLinear(c *ctx) {
	in, out, bias := c.Int("in_features", 1), c.Int("out_features", 1), c.Bool("bias")
	if c.failed || !c.needFloat(0) {
		return
	}
	x := c.x(0)
	if x.Rank() < 1 || x.Shape[x.Rank()-1] != in {
		c.inErr(0, "shape mismatch: linear with in_features=%d needs [..., %d], %q has shape %v", in, in, c.in[0].Name, x.Shape)
		return
	}
	c.param("weight", true, []int{out, in}, x.DType, "")
	c.param("bias", bias, []int{out}, x.DType, "bias=false")
	c.out(Type{append(clone(x.Shape[:x.Rank()-1]), out), x.DType})
}

func clone(s []int) []int { return append([]int{}, s...) }

func inferEmbedding(c *ctx) {
	num, dim := c.Int("num_embeddings", 1), c.Int("embedding_dim", 1)
	if pad, ok := c.IntOrNull("padding_idx"); ok {
		if pad < -num || pad >= num {
			c.errf("attrs.padding_idx", c.attrPos("padding_idx"), "padding_idx %d must be within num_embeddings (%d..%d)", pad, -num, num-1)
		} else if pad < 0 {
			c.n.Attrs["padding_idx"] = pad + num
		}
	}
	x := c.x(0)
	if !x.DType.IsInteger() {
		c.inErr(0, "embedding indices must be an integer tensor, %q is %s", c.in[0].Name, x.DType)
		return
	}
	if c.failed {
		return
	}
	var wt DType
	if c.r.params != nil {
		if v := c.r.params.obj["weight"]; v != nil && v.kind == jString {
			if p := c.l.g.params[v.str]; p != nil {
				wt = p.Type.DType
			}
		}
	}
	c.param("weight", true, []int{num, dim}, "", "")
	if wt != "" && !wt.IsFloat() {
		c.errf("params.weight", c.r.params.obj["weight"], "embedding weight must be a float tensor, got %s", wt)
	}
	c.out(Type{append(clone(x.Shape), dim), wt})
}

func inferMLPEmbedder(c *ctx) {
	in, hid := c.Int("in_dim", 1), c.Int("hidden_dim", 1)
	if c.failed || !c.needFloat(0) {
		return
	}
	x := c.x(0)
	if x.Rank() < 1 || x.Shape[x.Rank()-1] != in {
		c.inErr(0, "shape mismatch: mlp_embedder with in_dim=%d needs [..., %d], %q has shape %v", in, in, c.in[0].Name, x.Shape)
		return
	}
	c.param("in_layer.weight", true, []int{hid, in}, x.DType, "")
	c.param("in_layer.bias", true, []int{hid}, x.DType, "")
	c.param("out_layer.weight", true, []int{hid, hid}, x.DType, "")
	c.param("out_layer.bias", true, []int{hid}, x.DType, "")
	c.out(Type{append(clone(x.Shape[:x.Rank()-1]), hid), x.DType})
}

// spatialInput checks a [B, C, *spatial] or [C, *spatial] input and returns the batch prefix,
// the channel count and the spatial sizes.
func (c *ctx) spatialInput(k int) (prefix []int, ch int, spatial []int, ok bool) {
	what := fmt.Sprintf("[B, C, %s] or unbatched [C, %s]", spatialNames(k), spatialNames(k))
	if !c.needRank(0, what, k+1, k+2) {
		return nil, 0, nil, false
	}
	s := c.x(0).Shape
	b := len(s) - k - 1
	return clone(s[:b]), s[b], clone(s[b+1:]), true
}

func spatialNames(k int) string {
	return [...]string{"", "L", "H, W", "D, H, W"}[k]
}

func inferConv(k int) func(c *ctx) {
	return func(c *ctx) {
		in, outC, groups := c.Int("in_channels", 1), c.Int("out_channels", 1), c.Int("groups", 1)
		kernel := c.Tuple("kernel_size", k, 1)
		stride := c.Tuple("stride", k, 1)
		dilation := c.Tuple("dilation", k, 1)
		bias := c.Bool("bias")
		c.Enum("padding_mode", "zeros")
		padBefore, padAfter := c.convPadding(k, kernel, stride, dilation)
		if c.failed || !c.needFloat(0) {
			return
		}
		if in%groups != 0 || outC%groups != 0 {
			c.errf("attrs.groups", c.attrPos("groups"), "in_channels (%d) and out_channels (%d) must be divisible by groups (%d)", in, outC, groups)
			return
		}
		prefix, ch, spatial, ok := c.spatialInput(k)
		if !ok {
			return
		}
		if ch != in {
			c.inErr(0, "shape mismatch: %s with in_channels=%d got %d channels (%q has shape %v)", c.n.Op, in, ch, c.in[0].Name, c.x(0).Shape)
			return
		}
		outS := make([]int, k)
		for i := range spatial {
			eff := dilation[i]*(kernel[i]-1) + 1
			padded := spatial[i] + padBefore[i] + padAfter[i]
			if padded < eff {
				c.inErr(0, "input spatial size %v (padded %d) is smaller than the effective kernel size %d in dim %d", spatial, padded, eff, i)
				return
			}
			outS[i] = (padded-eff)/stride[i] + 1
		}
		dt := c.x(0).DType
		c.param("weight", true, append([]int{outC, in / groups}, kernel...), dt, "")
		c.param("bias", bias, []int{outC}, dt, "bias=false")
		c.out(Type{append(append(prefix, outC), outS...), dt})
	}
}

// convPadding reads padding (int, list, "same", "valid") as pads before and after each dim.
func (c *ctx) convPadding(k int, kernel, stride, dilation []int) (before, after []int) {
	v := c.attrV("padding")
	if v != nil && v.kind == jString {
		switch v.str {
		case "valid":
			before, after = repeat(0, k), repeat(0, k)
		case "same":
			for _, s := range stride {
				if s != 1 {
					c.errf("attrs.padding", v, `padding="same" is not supported for strided convolutions (stride %v)`, stride)
					return repeat(0, k), repeat(0, k)
				}
			}
			before, after = make([]int, k), make([]int, k)
			for i := range before {
				total := dilation[i] * (kernel[i] - 1)
				before[i] = total / 2
				after[i] = total - before[i]
			}
		default:
			c.errf("attrs.padding", v, `padding must be an integer, a list, "same" or "valid", got %q`, v.str)
			return repeat(0, k), repeat(0, k)
		}
		c.n.Attrs["padding"] = before
		c.n.Attrs["padding_end"] = after
		return before, after
	}
	before = c.Tuple("padding", k, 0)
	after = clone(before)
	c.n.Attrs["padding_end"] = after
	return before, after
}

func inferConvTranspose(k int) func(c *ctx) {
	return func(c *ctx) {
		in, outC, groups := c.Int("in_channels", 1), c.Int("out_channels", 1), c.Int("groups", 1)
		kernel := c.Tuple("kernel_size", k, 1)
		stride := c.Tuple("stride", k, 1)
		dilation := c.Tuple("dilation", k, 1)
		padding := c.Tuple("padding", k, 0)
		outPad := c.Tuple("output_padding", k, 0)
		bias := c.Bool("bias")
		if c.failed || !c.needFloat(0) {
			return
		}
		for i := range outPad {
			if outPad[i] >= stride[i] && outPad[i] >= dilation[i] {
				c.errf("attrs.output_padding", c.attrPos("output_padding"), "output_padding %v must be smaller than either stride %v or dilation %v", outPad, stride, dilation)
				return
			}
		}
		if in%groups != 0 || outC%groups != 0 {
			c.errf("attrs.groups", c.attrPos("groups"), "in_channels (%d) and out_channels (%d) must be divisible by groups (%d)", in, outC, groups)
			return
		}
		prefix, ch, spatial, ok := c.spatialInput(k)
		if !ok {
			return
		}
		if ch != in {
			c.inErr(0, "shape mismatch: %s with in_channels=%d got %d channels (%q has shape %v)", c.n.Op, in, ch, c.in[0].Name, c.x(0).Shape)
			return
		}
		outS := make([]int, k)
		for i := range spatial {
			outS[i] = (spatial[i]-1)*stride[i] - 2*padding[i] + dilation[i]*(kernel[i]-1) + outPad[i] + 1
			if outS[i] < 1 {
				c.inErr(0, "output size %d in dim %d is not positive (input %v, padding %v)", outS[i], i, spatial, padding)
				return
			}
		}
		dt := c.x(0).DType
		c.param("weight", true, append([]int{in, outC / groups}, kernel...), dt, "")
		c.param("bias", bias, []int{outC}, dt, "bias=false")
		c.out(Type{append(append(prefix, outC), outS...), dt})
	}
}

func (c *ctx) eps(name string) {
	if e := c.Float(name); e < 0 {
		c.errf("attrs."+name, c.attrPos(name), "%s must be >= 0, got %v", name, e)
	}
}

func inferBatchNorm(k int) func(c *ctx) {
	return func(c *ctx) {
		nf := c.Int("num_features", 1)
		c.eps("eps")
		c.floatOrNull("momentum", true)
		affine, track, training := c.Bool("affine"), c.Bool("track_running_stats"), c.Bool("training")
		if c.failed || !c.needFloat(0) {
			return
		}
		var ok bool
		switch k {
		case 1:
			ok = c.needRank(0, "[B, C] or [B, C, L]", 2, 3)
		case 2:
			ok = c.needRank(0, "[B, C, H, W]", 4)
		case 3:
			ok = c.needRank(0, "[B, C, D, H, W]", 5)
		}
		if !ok {
			return
		}
		x := c.x(0)
		if x.Shape[1] != nf {
			c.inErr(0, "shape mismatch: %s with num_features=%d got %d channels (%q has shape %v)", c.n.Op, nf, x.Shape[1], c.in[0].Name, x.Shape)
			return
		}
		if (training || !track) && x.Numel()/nf == 1 {
			c.inErr(0, "batch statistics need more than 1 value per channel, %q has shape %v", c.in[0].Name, x.Shape)
			return
		}
		c.param("weight", affine, []int{nf}, x.DType, "affine=false")
		c.param("bias", affine, []int{nf}, x.DType, "affine=false")
		c.param("running_mean", track, []int{nf}, x.DType, "track_running_stats=false")
		c.param("running_var", track, []int{nf}, x.DType, "track_running_stats=false")
		c.out(x)
	}
}

func inferInstanceNorm(k int) func(c *ctx) {
	return func(c *ctx) {
		nf := c.Int("num_features", 1)
		c.eps("eps")
		c.floatOrNull("momentum", true)
		affine, track := c.Bool("affine"), c.Bool("track_running_stats")
		if c.failed || !c.needFloat(0) {
			return
		}
		_, ch, spatial, ok := c.spatialInput(k)
		if !ok {
			return
		}
		x := c.x(0)
		if (affine || track) && ch != nf {
			c.inErr(0, "shape mismatch: %s with num_features=%d got %d channels (%q has shape %v)", c.n.Op, nf, ch, c.in[0].Name, x.Shape)
			return
		}
		if numel(spatial) == 1 {
			c.inErr(0, "instance statistics need more than 1 spatial element, %q has shape %v", c.in[0].Name, x.Shape)
			return
		}
		c.param("weight", affine, []int{nf}, x.DType, "affine=false")
		c.param("bias", affine, []int{nf}, x.DType, "affine=false")
		c.param("running_mean", track, []int{nf}, x.DType, "track_running_stats=false")
		c.param("running_var", track, []int{nf}, x.DType, "track_running_stats=false")
		c.out(x)
	}
}

// normalizedShape reads normalized_shape and checks it against the input's trailing dims.
func (c *ctx) normalizedShape() ([]int, bool) {
	ns, _, ok := c.IntOrList("normalized_shape")
	if !ok {
		return nil, false
	}
	for _, d := range ns {
		if d < 1 {
			c.errf("attrs.normalized_shape", c.attrPos("normalized_shape"), "normalized_shape dims must be >= 1, got %v", ns)
			return nil, false
		}
	}
	c.n.Attrs["normalized_shape"] = ns
	x := c.x(0)
	if len(ns) == 0 || x.Rank() < len(ns) || !slices.Equal(x.Shape[x.Rank()-len(ns):], ns) {
		c.inErr(0, "shape mismatch: %s with normalized_shape=%v needs [..., %s], %q has shape %v", c.n.Op, ns, trimBrackets(ns), c.in[0].Name, x.Shape)
		return nil, false
	}
	return ns, true
}

func trimBrackets(s []int) string {
	str := shapeString(s)
	return str[1 : len(str)-1]
}

func inferLayerNorm(c *ctx) {
	c.eps("eps")
	affine, bias := c.Bool("elementwise_affine"), c.Bool("bias")
	if c.failed || !c.needFloat(0) {
		return
	}
	ns, ok := c.normalizedShape()
	if !ok {
		return
	}
	dt := c.x(0).DType
	c.param("weight", affine, ns, dt, "elementwise_affine=false")
	c.param("bias", affine && bias, ns, dt, "elementwise_affine=false or bias=false")
	c.out(c.x(0))
}

func inferGroupNorm(c *ctx) {
	groups, ch := c.Int("num_groups", 1), c.Int("num_channels", 1)
	c.eps("eps")
	affine := c.Bool("affine")
	if c.failed || !c.needFloat(0) {
		return
	}
	if ch%groups != 0 {
		c.errf("attrs.num_groups", c.attrPos("num_groups"), "num_channels (%d) must be divisible by num_groups (%d)", ch, groups)
		return
	}
	x := c.x(0)
	if x.Rank() < 2 || x.Shape[1] != ch {
		c.inErr(0, "shape mismatch: group_norm with num_channels=%d needs [B, %d, *], %q has shape %v", ch, ch, c.in[0].Name, x.Shape)
		return
	}
	c.param("weight", affine, []int{ch}, x.DType, "affine=false")
	c.param("bias", affine, []int{ch}, x.DType, "affine=false")
	c.out(x)
}

// finfoEps is torch.finfo(dtype).eps.
func finfoEps(d DType) float64 {
	switch d {
	case Float16:
		return 0.0009765625
	case BFloat16:
		return 0.0078125
	case Float64:
		return 2.220446049250313e-16
	}
	return 1.1920928955078125e-07
}

func inferRMSNorm(c *ctx) {
	eps, given := c.floatOrNull("eps", true)
	affine := c.Bool("elementwise_affine")
	if c.failed || !c.needFloat(0) {
		return
	}
	if given && eps < 0 {
		c.errf("attrs.eps", c.attrPos("eps"), "eps must be >= 0, got %v", eps)
		return
	}
	if !given {
		c.n.Attrs["eps"] = finfoEps(c.x(0).DType)
	}
	ns, ok := c.normalizedShape()
	if !ok {
		return
	}
	c.param("weight", affine, ns, c.x(0).DType, "elementwise_affine=false")
	c.out(c.x(0))
}

func inferAdaLayerNormZero(c *ctx) {
	d := c.Int("embedding_dim", 1)
	c.eps("eps")
	if c.failed || !c.needFloat(0) || !c.needFloat(1) {
		return
	}
	x, emb := c.x(0), c.x(1)
	if x.Rank() != 3 || x.Shape[2] != d {
		c.inErr(0, "shape mismatch: ada_layer_norm_zero with embedding_dim=%d needs x [B, T, %d], %q has shape %v", d, d, c.in[0].Name, x.Shape)
		return
	}
	if emb.Rank() != 2 || emb.Shape[0] != x.Shape[0] || emb.Shape[1] != d {
		c.inErr(1, "shape mismatch: ada_layer_norm_zero needs emb [%d, %d], %q has shape %v", x.Shape[0], d, c.in[1].Name, emb.Shape)
		return
	}
	if emb.DType != x.DType {
		c.inErr(1, "dtype mismatch: x is %s, emb is %s", x.DType, emb.DType)
		return
	}
	c.param("linear.weight", true, []int{6 * d, d}, x.DType, "")
	c.param("linear.bias", true, []int{6 * d}, x.DType, "")
	vec := Type{[]int{x.Shape[0], d}, x.DType}
	c.tuple(x, vec, vec, vec, vec)
}

func inferMHA(c *ctx) {
	e, heads := c.Int("embed_dim", 1), c.Int("num_heads", 1)
	if p := c.Float("dropout"); p < 0 || p > 1 {
		c.errf("attrs.dropout", c.attrPos("dropout"), "dropout must be in [0, 1], got %v", p)
	}
	bias, biasKV, zeroAttn := c.Bool("bias"), c.Bool("add_bias_kv"), c.Bool("add_zero_attn")
	kdim, ok := c.IntOrNull("kdim")
	if !ok {
		kdim = e
	}
	vdim, ok := c.IntOrNull("vdim")
	if !ok {
		vdim = e
	}
	if kdim < 1 || vdim < 1 {
		c.errf("attrs", c.attrPos("kdim"), "kdim and vdim must be >= 1, got %d and %d", kdim, vdim)
	}
	c.n.Attrs["kdim"], c.n.Attrs["vdim"] = kdim, vdim
	batchFirst, needW, avgW := c.Bool("batch_first"), c.Bool("need_weights"), c.Bool("average_attn_weights")
	c.Bool("is_causal")
	if c.failed {
		return
	}
	if e%heads != 0 {
		c.errf("attrs.num_heads", c.attrPos("num_heads"), "embed_dim (%d) must be divisible by num_heads (%d)", e, heads)
		return
	}
	for i := 0; i < 3; i++ {
		if !c.needFloat(i) {
			return
		}
	}
	q, k, v := c.x(0), c.x(1), c.x(2)
	if !c.needRank(0, "query [B, L, E], [L, B, E] or unbatched [L, E]", 2, 3) {
		return
	}
	batched := q.Rank() == 3
	split := func(t Type) (b, l, f int) { // batch, sequence, features
		if !batched {
			return 1, t.Shape[0], t.Shape[1]
		}
		if batchFirst {
			return t.Shape[0], t.Shape[1], t.Shape[2]
		}
		return t.Shape[1], t.Shape[0], t.Shape[2]
	}
	layout := "[L, B, E]"
	if batchFirst {
		layout = "[B, L, E]"
	}
	if !batched {
		layout = "[L, E]"
	}
	if k.Rank() != q.Rank() || v.Rank() != q.Rank() {
		c.inErr(1, "query, key and value must have the same rank (%s), got %v, %v and %v", layout, q.Shape, k.Shape, v.Shape)
		return
	}
	B, L, qe := split(q)
	kb, S, ke := split(k)
	vb, vs, ve := split(v)
	switch {
	case qe != e:
		c.inErr(0, "shape mismatch: query must be %s with E=embed_dim=%d, got %v", layout, e, q.Shape)
		return
	case ke != kdim || kb != B:
		c.inErr(1, "shape mismatch: key must match the query's batch (%d) with kdim=%d features, got %v", B, kdim, k.Shape)
		return
	case ve != vdim || vb != B || vs != S:
		c.inErr(2, "shape mismatch: value must match the key's batch and length (%d, %d) with vdim=%d features, got %v", B, S, vdim, v.Shape)
		return
	case k.DType != q.DType || v.DType != q.DType:
		c.inErr(1, "dtype mismatch: query %s, key %s, value %s", q.DType, k.DType, v.DType)
		return
	}
	if c.has(3) {
		m := c.x(3)
		want := []int{B, S}
		if !batched {
			want = []int{S}
		}
		if !slices.Equal(m.Shape, want) || (m.DType != Bool && m.DType != q.DType) {
			c.inErr(3, "key_padding_mask must be bool or %s %v, got %s", q.DType, want, m)
			return
		}
	}
	if c.has(4) {
		m := c.x(4)
		ok2 := slices.Equal(m.Shape, []int{L, S}) || slices.Equal(m.Shape, []int{B * heads, L, S})
		if !ok2 || (m.DType != Bool && m.DType != q.DType) {
			c.inErr(4, "attn_mask must be bool or %s [%d, %d] or [%d, %d, %d] (batch*heads, L, S), got %s", q.DType, L, S, B*heads, L, S, m)
			return
		}
	}
	same := kdim == e && vdim == e
	dt := q.DType
	c.param("in_proj_weight", same, []int{3 * e, e}, dt, "kdim or vdim differs from embed_dim")
	c.param("q_proj_weight", !same, []int{e, e}, dt, "kdim == vdim == embed_dim (in_proj_weight is used)")
	c.param("k_proj_weight", !same, []int{e, kdim}, dt, "kdim == vdim == embed_dim (in_proj_weight is used)")
	c.param("v_proj_weight", !same, []int{e, vdim}, dt, "kdim == vdim == embed_dim (in_proj_weight is used)")
	c.param("in_proj_bias", bias, []int{3 * e}, dt, "bias=false")
	c.param("out_proj.weight", true, []int{e, e}, dt, "")
	c.param("out_proj.bias", bias, []int{e}, dt, "bias=false")
	c.param("bias_k", biasKV, []int{1, 1, e}, dt, "add_bias_kv=false")
	c.param("bias_v", biasKV, []int{1, 1, e}, dt, "add_bias_kv=false")
	sK := S
	if biasKV {
		sK++
	}
	if zeroAttn {
		sK++
	}
	out := Type{clone(q.Shape), dt}
	if !needW {
		c.tuple(out)
		return
	}
	var w []int
	switch {
	case avgW && batched:
		w = []int{B, L, sK}
	case avgW:
		w = []int{L, sK}
	case batched:
		w = []int{B, heads, L, sK}
	default:
		w = []int{heads, L, sK}
	}
	c.tuple(out, Type{w, dt})
}

// RNNSuffix is PyTorch's suffix of layer l's parameters in direction d (1: reverse), e.g.
// "_l1_reverse" in weight_ih_l1_reverse.
func RNNSuffix(l, d int) string {
	if d == 1 {
		return fmt.Sprintf("_l%d_reverse", l)
	}
	return fmt.Sprintf("_l%d", l)
}

func inferRNN(gates int) func(c *ctx) {
	return func(c *ctx) {
		if c.n.Op == "rnn" {
			c.Enum("nonlinearity", "tanh", "relu")
		}
		in, hid, layers := c.Int("input_size", 1), c.Int("hidden_size", 1), c.Int("num_layers", 1)
		bias, batchFirst := c.Bool("bias"), c.Bool("batch_first")
		if p := c.Float("dropout"); p < 0 || p > 1 {
			c.errf("attrs.dropout", c.attrPos("dropout"), "dropout must be in [0, 1], got %v", p)
		}
		dirs := 1
		if c.Bool("bidirectional") {
			dirs = 2
		}
		if c.failed || !c.needFloat(0) {
			return
		}
		layout := "[L, B, input_size]"
		if batchFirst {
			layout = "[B, L, input_size]"
		}
		if !c.needRank(0, layout+" or unbatched [L, input_size]", 2, 3) {
			return
		}
		x := c.x(0)
		batched := x.Rank() == 3
		if x.Shape[x.Rank()-1] != in {
			c.inErr(0, "shape mismatch: %s with input_size=%d got %v", c.n.Op, in, x.Shape)
			return
		}
		var B, L int
		switch {
		case !batched:
			L = x.Shape[0]
		case batchFirst:
			B, L = x.Shape[0], x.Shape[1]
		default:
			L, B = x.Shape[0], x.Shape[1]
		}
		state := []int{layers * dirs, B, hid}
		if !batched {
			state = []int{layers * dirs, hid}
		}
		if c.n.Op == "lstm" && c.has(1) != c.has(2) {
			c.errf("inputs", c.r.inputs, "lstm takes both h0 and c0 or neither")
			return
		}
		for i := 1; i < len(c.in); i++ {
			if c.has(i) && (!slices.Equal(c.x(i).Shape, state) || c.x(i).DType != x.DType) {
				c.inErr(i, "initial state must be %s%v (num_layers * num_directions, batch, hidden_size), got %s", x.DType, state, c.x(i))
				return
			}
		}
		for l := 0; l < layers; l++ {
			inL := in
			if l > 0 {
				inL = dirs * hid // the previous layer's directions, concatenated
			}
			for d := 0; d < dirs; d++ {
				sfx := RNNSuffix(l, d)
				c.param("weight_ih"+sfx, true, []int{gates * hid, inL}, x.DType, "")
				c.param("weight_hh"+sfx, true, []int{gates * hid, hid}, x.DType, "")
				c.param("bias_ih"+sfx, bias, []int{gates * hid}, x.DType, "bias=false")
				c.param("bias_hh"+sfx, bias, []int{gates * hid}, x.DType, "bias=false")
			}
		}
		var out []int
		switch {
		case !batched:
			out = []int{L, dirs * hid}
		case batchFirst:
			out = []int{B, L, dirs * hid}
		default:
			out = []int{L, B, dirs * hid}
		}
		st := Type{state, x.DType}
		if c.n.Op == "lstm" {
			c.tuple(Type{out, x.DType}, st, st)
		} else {
			c.tuple(Type{out, x.DType}, st)
		}
	}
}

func inferPool(k int, isMax bool) func(c *ctx) {
	return func(c *ctx) {
		kernel := c.Tuple("kernel_size", k, 1)
		stride := c.Tuple("stride", k, 1)
		if stride == nil {
			stride = clone(kernel)
			c.n.Attrs["stride"] = stride
		}
		padding := c.Tuple("padding", k, 0)
		dilation := repeat(1, k)
		if isMax {
			dilation = c.Tuple("dilation", k, 1)
		}
		ceil := c.Bool("ceil_mode")
		if !isMax {
			c.Bool("count_include_pad")
			if k >= 2 {
				if d, ok := c.IntOrNull("divisor_override"); ok && d == 0 {
					c.errf("attrs.divisor_override", c.attrPos("divisor_override"), "divisor_override must not be 0")
				}
			}
		}
		if c.failed || !c.needFloat(0) {
			return
		}
		prefix, ch, spatial, ok := c.spatialInput(k)
		if !ok {
			return
		}
		outS := make([]int, k)
		for i := range spatial {
			if isMax && padding[i] > (dilation[i]*(kernel[i]-1)+1)/2 || !isMax && padding[i] > kernel[i]/2 {
				c.errf("attrs.padding", c.attrPos("padding"), "pad should be at most half of effective kernel size, got padding %v, kernel_size %v", padding, kernel)
				return
			}
			outS[i] = poolOutSize(spatial[i], kernel[i], stride[i], padding[i], dilation[i], ceil)
			if outS[i] < 1 {
				c.inErr(0, "input %v is too small for kernel_size %v (output size would be %d)", c.x(0).Shape, kernel, outS[i])
				return
			}
		}
		c.out(Type{append(append(prefix, ch), outS...), c.x(0).DType})
	}
}

// poolOutSize is PyTorch's pooling_output_shape.
func poolOutSize(in, k, s, p, d int, ceil bool) int {
	num := in + 2*p - d*(k-1) - 1
	if ceil {
		num += s - 1
	}
	out := floorDiv(num, s) + 1
	if ceil && (out-1)*s >= in+p {
		out--
	}
	return out
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func inferAdaptivePool(k int) func(c *ctx) {
	return func(c *ctx) {
		v, given := c.value("output_size")
		if !given {
			return
		}
		var size []int
		switch v.kind {
		case jNumber:
			x, ok := intValue(v)
			if !ok {
				c.wrongType("output_size", "an integer or a list", v)
				return
			}
			size = repeat(x, k)
		case jArray:
			list, ok := c.intList("output_size", v, true)
			if !ok {
				return
			}
			if len(list) != k {
				c.errf("attrs.output_size", v, "output_size must have %d entries, got %d", k, len(list))
				return
			}
			size = list
		default:
			c.wrongType("output_size", "an integer or a list", v)
			return
		}
		if !c.needFloat(0) {
			return
		}
		prefix, ch, spatial, ok := c.spatialInput(k)
		if !ok {
			return
		}
		for i := range size {
			if v.kind == jArray && v.arr[i].kind == jNull {
				size[i] = spatial[i]
			} else if size[i] < 1 {
				c.errf("attrs.output_size", v, "output_size entries must be >= 1 (or null), got %d", size[i])
				return
			}
		}
		c.n.Attrs["output_size"] = size
		c.out(Type{append(append(prefix, ch), size...), c.x(0).DType})
	}
}
