package lowering

import (
	"fmt"

	"github.com/widejit/widejit/graph"
)

// A row tail is a softmax, log_softmax or LayerNorm over the last dim run inside the matmul
// or fused MLP kernel producing its input, after the epilogue, when one program holds whole
// rows: on the CPU a Linear's BLOCK_N may cover up to cpuRowTailMaxN columns, and the row op
// then costs a few passes over a tile already in cache instead of a launch that reads and
// writes the tensor again (a classifier's Linear-softmax; a post-norm transformer's
// projection or feed-forward, residual add, LayerNorm). GPU plans keep their row kernels.
//
// A row tail closes the group (groupBase.sealed): element-wise ops after it start a kernel of
// their own, as the epilogue runs before the row op; another row op may follow it (softmax,
// then LayerNorm).

// cpuRowTailMaxN is the widest row a CPU matmul program holds whole (its largest BLOCK_N).
const cpuRowTailMaxN = 2 * cpuMaxBlockMN

// rowTail is the row op a matmul group ends with.
type rowTail struct {
	kind string // softmax | log_softmax | layer_norm
	w, b *View  // layer_norm's affine parameters ([N]), when present
	eps  float64
}

// tryRowTail fuses n, a row op over the last dim, into the CPU matmul producing its input.
func (l *lowerer) tryRowTail(n *graph.Node) bool {
	if !l.opts.Device.Caps.HostThreads || len(n.Inputs) == 0 || n.Inputs[0].Kind != graph.TensorOperand {
		return false
	}
	g, ok := l.soleProducer(n.Inputs[0].Name).(rowTailGroup)
	var kept *mlpGroup
	if !ok {
		if kept = l.keptProducer(n); kept == nil {
			return false
		}
		g = kept
	}
	b := g.base()
	width := g.rowWidth()
	if width > cpuRowTailMaxN || b.epi == nil || b.out.DType != graph.Float32 || n.Output().DType != graph.Float32 {
		return false
	}
	x := l.values[n.Inputs[0].Name]
	r := len(x.Shape)
	if r == 0 || x.Shape[r-1] != width || x.Buf != b.out.Buf || x.Offset != b.out.Offset || !x.Contiguous() || x.Numel() != b.out.Numel() {
		return false
	}
	t := &rowTail{kind: n.Op}
	switch n.Op {
	case "softmax", "log_softmax":
		if n.Attrs.Int("dim") != r-1 {
			return false
		}
	case "layer_norm":
		if len(n.Attrs.Ints("normalized_shape")) != 1 {
			return false
		}
		t.eps, t.w, t.b = n.Attrs.Float("eps"), l.optionalParam(n, "weight"), l.optionalParam(n, "bias")
	default:
		return false
	}
	ok, reason := l.decideFusion(append(append([]string(nil), b.ops...), n.Op), b.out, b.ops, n.Op)
	if !ok {
		l.notes[g] = append(l.notes[g], fmt.Sprintf("%s not fused: %s", n.Name, reason))
		return false
	}
	tails := g.rowTails()
	*tails, b.sealed = append(*tails, t), true
	b.nodes = append(b.nodes, n.Name)
	b.ops = append(b.ops, n.Op)
	b.fused = append(b.fused, fmt.Sprintf("%s fused as the kernel's row tail (a program holds whole rows of %d): %s", n.Name, width, reason))
	if kept != nil {
		// the value's other readers, all lowered after n, read the copy stored before the tail
		v := l.newOutput(b.value+".kept", b.out.Shape, b.out.DType)
		kept.kept = &v
		l.writer[v.Buf] = b.index
		l.values[b.value], _ = v.reshape(x.Shape)
		b.fused = append(b.fused, fmt.Sprintf("%s's input also stored as it was, for its other uses", n.Name))
	}
	delete(l.owner, b.value)
	b.value = n.Name
	l.values[n.Name] = x
	l.owner[n.Name] = g
	return true
}

// keptProducer is the CPU MLP kernel whose output n (a row op) reads when that output has
// other uses too, none of them lowered yet (the Mixer's residual stream: the channel MLP's
// output is both the next block's LayerNorm input and its residual), and the kernel has no
// row tail yet: the row op may then become its tail, the kernel storing its value before the
// tail as well. Only for a row op read through transposes alone (the Mixer's token mixing):
// a Linear reading it whole takes it as its row head instead, which stores nothing. nil
// when not.
func (l *lowerer) keptProducer(n *graph.Node) *mlpGroup {
	value := n.Inputs[0].Name
	g, ok := l.owner[value].(*mlpGroup)
	if !ok || l.opts.NoFusion || g.value != value || g.kept != nil || len(g.tails) > 0 || l.uses[value] < 2 {
		return nil
	}
	for _, o := range l.g.Outputs {
		if o.Name == value || o.Name == n.Name {
			return nil
		}
	}
	lowered := true // the nodes before n, in the order they are lowered
	for _, m := range l.g.Nodes {
		if m == n {
			lowered = false
		}
		for _, in := range m.Inputs {
			if in.Kind != graph.TensorOperand {
				continue
			}
			if lowered && in.Name == value {
				return nil // an earlier reader already took the value's view
			}
			if in.Name == n.Name && m.Op != "transpose" && m.Op != "permute" {
				return nil
			}
		}
	}
	return g
}

// rowTailGroup is a group whose programs may hold whole output rows: a CPU matmul (its
// BLOCK_N then covers N) and the fused MLP (mlp.py's BLOCK_N always covers its output row).
type rowTailGroup interface {
	group
	rowWidth() int
	rowTails() *[]*rowTail
}

func (g *matmulGroup) rowWidth() int         { return g.nn }
func (g *matmulGroup) rowTails() *[]*rowTail { return &g.tails }
func (g *mlpGroup) rowWidth() int            { return g.o }
func (g *mlpGroup) rowTails() *[]*rowTail    { return &g.tails }

// renderRowTails appends the tails' loads, arguments and statements to re, the rendered
// epilogue e of a kernel whose tile holds rows of n columns in BLOCK_N = blockN.
func renderRowTails(re *renderedEpilogue, tails []*rowTail, e *epilogue, n, blockN int) error {
	for i, t := range tails {
		tail, err := t.render(e, n, blockN, fmt.Sprintf("rt%d", i))
		if err != nil {
			return err
		}
		re.loads, re.args = append(re.loads, tail.loads...), append(re.args, tail.args...)
		re.body, re.extra = append(re.body, tail.body...), append(re.extra, tail.extra...)
	}
	return nil
}

// render gives the tail's parameter loads, launch arguments and statements, which take y (the
// tile [BLOCK_M, BLOCK_N], columns from N on masked) to the row op's, naming what they add
// with prefix. The statements are norm_rows.py's and reduce_rows.py's one-tile forms, so
// results match the separate kernels'. e is the matmul's epilogue (whose axes address the
// [N] parameters).
func (t *rowTail) render(e *epilogue, n, blockN int, prefix string) (renderedEpilogue, error) {
	cols := "(rn[None, :] < N)"
	full := n == blockN // no column to mask
	switch t.kind {
	case "softmax", "log_softmax":
		body := []string{"# row tail: the whole row is in this tile (tiles_n is 1)"}
		if !full {
			body = append(body, `y = tl.where(`+cols+`, y, float("-inf"))`)
		}
		if t.kind == "softmax" {
			body = append(body, "y = tl.exp(y - tl.max(y, axis=1)[:, None])", "y = y / tl.sum(y, axis=1)[:, None]")
		} else {
			body = append(body, "y = y - tl.max(y, axis=1)[:, None]", "y = y - tl.log(tl.sum(tl.exp(y), axis=1))[:, None]")
		}
		return renderedEpilogue{body: body}, nil
	}
	params := &epilogue{shape: e.shape, axes: e.axes, vars: e.vars, masks: e.masks}
	var leaves []View
	for _, p := range []*View{t.w, t.b} {
		if p != nil {
			leaves = append(leaves, *p)
		}
	}
	for _, v := range leaves {
		if _, err := params.addLeaf(v); err != nil {
			return renderedEpilogue{}, err
		}
	}
	out, err := params.render("y", "cmask", "tl.float32", "", prefix)
	if err != nil {
		return out, err
	}
	body := []string{"# row tail: LayerNorm over the whole row, in this tile (tiles_n is 1)"}
	mask := ""
	if !full {
		mask = cols
		body = append(body, "y = tl.where("+cols+", y, 0.0)") // the columns past N hold the epilogue's bias
	}
	// the parameters are the epilogue's leaves, named by position
	var w, b string
	if t.w != nil {
		w = prefix + "0"
	}
	if t.b != nil {
		b = fmt.Sprintf("%s%d", prefix, len(leaves)-1)
	}
	out.body = append(body, normStatements("y", "N", mask, prefix, true, w, b)...)
	out.extra = append(out.extra, LaunchArg{Name: prefix + "_eps", Kind: FloatArg, Float: t.eps})
	return out, nil
}

// A row head is a LayerNorm or RMSNorm over the last dim whose only reader is a CPU Linear
// that takes whole input rows in one K tile (K up to cpuMaxBlockK): the Linear reads the
// norm's input and normalises each tile it loads, in place of a launch that writes the
// normalised tensor for it to read (a pre-norm transformer's LayerNorm before its
// feed-forward, which keeps it when the Linear becomes the first of a fused MLP, and before
// its self-attention's fused QKV projection; not where each program along a wide N would
// repeat it: headRepeats). The norm's
// group gives up its place in the launch order to the Linear, whose other operands
// (parameters) are ready by then; operands fused later are checked against that place.
type rowHead struct {
	center bool  // LayerNorm (else RMSNorm)
	w, b   *View // the affine parameters ([K]), when present
	eps    float64
}

// rowHeadFor is the pending norm group producing Linear n's input, with the head it becomes,
// when it may fuse into n (k is the Linear's input width).
func (l *lowerer) rowHeadFor(n *graph.Node, k int) (*normGroup, *rowHead) {
	if !l.opts.Device.Caps.HostThreads || k > cpuMaxBlockK || n.Inputs[0].Kind != graph.TensorOperand {
		return nil, nil
	}
	ng, ok := l.fusableReadBy(n, n.Inputs[0].Name).(*normGroup)
	if !ok || len(ng.nodes) != 1 || (ng.ops[0] != "layer_norm" && ng.ops[0] != "rms_norm") || ng.colDims != 1 ||
		ng.r != k || ng.epi.root != nil || ng.out.DType != graph.Float32 || ng.x.DType != graph.Float32 {
		return nil, nil
	}
	if v := l.values[n.Inputs[0].Name]; v.Buf != ng.out.Buf || v.Offset != ng.out.Offset || !v.Contiguous() {
		return nil, nil
	}
	ok, reason := l.decideFusion([]string{ng.ops[0], n.Op}, ng.out, ng.ops, n.Op)
	if !ok {
		l.notes[ng] = append(l.notes[ng], fmt.Sprintf("%s not fused into %s: %s", ng.nodes[0], n.Name, reason))
		return nil, nil
	}
	ng.fused = append(ng.fused, fmt.Sprintf("%s fused as %s's row head (it normalises whole input rows of %d as it loads them): %s", ng.nodes[0], n.Name, k, reason))
	return ng, &rowHead{center: ng.center, w: ng.w, b: ng.b, eps: ng.eps}
}

// fusableReadBy is fusable(value) where node n is value's only reader, however many of its
// operands read it (attention's query, key and value: one input projection reads them).
func (l *lowerer) fusableReadBy(n *graph.Node, value string) group {
	reads := 0
	for _, in := range n.Inputs {
		if in.Kind == graph.TensorOperand && in.Name == value {
			reads++
		}
	}
	if reads > 1 && l.uses[value] == reads {
		l.uses[value] = 1
		defer func() { l.uses[value] = reads }()
	}
	return l.fusable(value)
}

// takePlace puts g where prev (a row head's norm, a convolution's channel scale) was in the
// launch order, as the producer of value: prev's output is no longer written, its only reader
// now computing it from prev's inputs itself.
func (l *lowerer) takePlace(prev group, g group, value string) {
	p := prev.base()
	delete(l.owner, p.value)
	b := g.base()
	b.index, b.value = p.index, value
	b.nodes = append(append([]string(nil), p.nodes...), b.nodes...)
	b.ops = append(append([]string(nil), p.ops...), b.ops...)
	b.fused = append(append([]string(nil), p.fused...), b.fused...)
	l.groups[p.index] = g
	l.writer[b.out.Buf] = b.index
	l.values[value] = b.out
	l.owner[value] = g
	l.notes[g] = append(l.notes[g], l.notes[prev]...)
}

// headedRows is a rendered row head: parameter loads (before the K loop), their arguments,
// and the statements that normalise the loaded tile v, [BLOCK_M, BLOCK_K] of whole rows (ks
// its column indices, K the row length).
type headedRows struct {
	loads []loadLine
	args  []LaunchArg
	body  []string
}

func (h *rowHead) render(v string, k, blockK int) headedRows {
	var out headedRows
	kind := "RMSNorm"
	if h.center {
		kind = "LayerNorm"
	}
	mask := "ks[None, :] < K" // the columns past K were loaded as zeros
	if k == blockK {
		mask = ""
	}
	var w, b string
	if h.w != nil {
		w = "head0"
	}
	if h.b != nil {
		b = "head1"
	}
	body := append([]string{"# row head: " + kind + " of the loaded rows, whole in this K tile"},
		normStatements(v, "K", mask, "head", h.center, w, b)...)
	for i, p := range []*View{h.w, h.b} {
		if p == nil {
			continue
		}
		name := fmt.Sprintf("head%d", i)
		out.args = append(out.args, LaunchArg{Name: name + "_ptr", Kind: PtrArg, Buf: p.Buf, Offset: p.Offset, ModelStride: p.ModelStride},
			LaunchArg{Name: name + "_mstride", Kind: IntArg, Int: int64(p.ModelStride)},
			LaunchArg{Name: name + "_s", Kind: IntArg, Int: int64(p.Strides[0])})
		out.loads = append(out.loads, loadLine{Name: name,
			Load: fmt.Sprintf("tl.load(%[1]s_ptr + model * %[1]s_mstride + rk[None, :] * %[1]s_s, mask=rk[None, :] < K, other=0.0).to(tl.float32)", name)})
	}
	out.args = append(out.args, LaunchArg{Name: "head_eps", Kind: FloatArg, Float: h.eps})
	out.body = body
	return out
}

// normStatements normalise v, a tile of whole rows of width columns, in place as norm_rows.py
// does (LayerNorm when center, else RMSNorm; prefix_d and prefix_eps named after prefix),
// then scale by w and shift by b (tile names, "" when absent). mask is the condition on the
// live columns ("" when every column is live); v's other columns must hold zeros.
func normStatements(v, width, mask, prefix string, center bool, w, b string) []string {
	var body []string
	d := v
	if center {
		d = prefix + "_d"
		mean := v + " - tl.sum(" + v + ", axis=1)[:, None] / " + width
		if mask == "" {
			body = append(body, d+" = "+mean)
		} else {
			body = append(body, d+" = tl.where("+mask+", "+mean+", 0.0)")
		}
	}
	body = append(body, fmt.Sprintf("%s = %s * (1.0 / tl.sqrt(tl.sum(%s * %s, axis=1)[:, None] / %s + %s_eps))", v, d, d, d, width, prefix))
	if w != "" {
		body = append(body, v+" = "+v+" * "+w)
	}
	if b != "" {
		body = append(body, v+" = "+v+" + "+b)
	}
	return body
}
