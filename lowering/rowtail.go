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
	if l.opts.Device.Kind != "cpu" || len(n.Inputs) == 0 || n.Inputs[0].Kind != graph.TensorOperand {
		return false
	}
	g, ok := l.soleProducer(n.Inputs[0].Name).(rowTailGroup)
	if !ok {
		return false
	}
	b := g.base()
	width := g.rowWidth()
	if width > cpuRowTailMaxN || b.out.DType != graph.Float32 || n.Output().DType != graph.Float32 {
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
		t.eps = n.Attrs.Float("eps")
		if p := n.Param("weight"); p != nil {
			v := l.values[p.Name]
			t.w = &v
		}
		if p := n.Param("bias"); p != nil {
			v := l.values[p.Name]
			t.b = &v
		}
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
	delete(l.owner, b.value)
	b.value = n.Name
	l.values[n.Name] = x
	l.owner[n.Name] = g
	return true
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
	if full {
		body = append(body, prefix+"_d = y - tl.sum(y, axis=1)[:, None] / N")
	} else {
		body = append(body, "y = tl.where("+cols+", y, 0.0)",
			prefix+"_d = tl.where("+cols+", y - tl.sum(y, axis=1)[:, None] / N, 0.0)")
	}
	body = append(body, fmt.Sprintf("y = %[1]s_d * (1.0 / tl.sqrt(tl.sum(%[1]s_d * %[1]s_d, axis=1)[:, None] / N + %[1]s_eps))", prefix))
	k := 0
	if t.w != nil {
		body = append(body, fmt.Sprintf("y = y * %s%d", prefix, k))
		k++
	}
	if t.b != nil {
		body = append(body, fmt.Sprintf("y = y + %s%d", prefix, k))
	}
	out.body = body
	out.extra = append(out.extra, LaunchArg{Name: prefix + "_eps", Kind: FloatArg, Float: t.eps})
	return out, nil
}
