package lowering

import (
	"fmt"
	"math"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/triton/templates"
)

// The attention family: nn.MultiheadAttention as
//   - the in-projection: one matmul kernel over in_proj_weight [3E, E] for self-attention
//     (query, key and value the same tensor), else one per projection (weight row slices of
//     in_proj_weight, or q/k/v_proj_weight when kdim/vdim differ), biases in their epilogues;
//   - one flash-style attention kernel (attention.py) for every model, sample and head, reading
//     the projections through strides (no head split copies), with causal, attn_mask and
//     key_padding_mask handling;
//   - need_weights: the per-head probabilities, averaged over heads by a mean reduction when
//     average_attn_weights;
//   - the out-projection, a matmul kernel whose rows are already in the query's layout.
// Attention dropout is the identity in eval mode; in Monte Carlo mode it drops attention
// probabilities with per-model masks from the run's seed. add_bias_kv and add_zero_attn are
// refused.

// maxHeadDim bounds the head dim: one program holds a BLOCK_L x head_dim tile of queries.
const maxHeadDim = 256

func init() {
	registerOp(lowerMHA, "multihead_attention")
}

// seqOperand addresses a [rows, features] projection as (sample, position) with column offset.
type seqOperand struct {
	view   View // base view; Offset includes the column offset
	sb, sl int
}

type attentionGroup struct {
	groupBase
	q, k, v, o         seqOperand
	attnMask, padMask  *View
	amKind, kpKind     string
	amSBH, amSL, amSS  int
	kpSB, kpSS         int
	causal             bool
	weights            *View // [B, H, L, S] per-head probabilities, when asked
	batch, heads, l, s int
	headDim            int
	dropP              float64 // Monte Carlo attention dropout; 0: none
	seed               int64
}

func lowerMHA(l *lowerer, n *graph.Node) error {
	a := n.Attrs
	if a.Bool("add_bias_kv") {
		return fmt.Errorf("add_bias_kv=true is not lowered")
	}
	if a.Bool("add_zero_attn") {
		return fmt.Errorf("add_zero_attn=true is not lowered")
	}
	dropP := 0.0
	if l.opts.Dropout == "mc" {
		dropP = a.Float("dropout")
	}
	if dropP >= 1 {
		return fmt.Errorf("attention dropout p=%g drops everything; Monte Carlo mode needs p < 1", dropP)
	}
	q, err := l.input(n, 0)
	if err != nil {
		return err
	}
	k, err := l.input(n, 1)
	if err != nil {
		return err
	}
	v, err := l.input(n, 2)
	if err != nil {
		return err
	}
	if err := dotFamilyData("query", q, "attention layers"); err != nil {
		return err
	}
	if k.DType != q.DType || v.DType != q.DType {
		return fmt.Errorf("query, key and value are %s, %s and %s; attention needs one dtype", q.DType, k.DType, v.DType)
	}
	e, heads := a.Int("embed_dim"), a.Int("num_heads")
	if e/heads > maxHeadDim {
		return fmt.Errorf("head dim %d (embed_dim %d / num_heads %d) is above the attention kernel's %d", e/heads, e, heads, maxHeadDim)
	}
	batched := len(q.Shape) == 3
	batchFirst := a.Bool("batch_first")
	// (samples, positions) of a [B, L, F] / [L, B, F] / [L, F] tensor
	split := func(x View) (int, int) {
		switch {
		case !batched:
			return 1, x.Shape[0]
		case batchFirst:
			return x.Shape[0], x.Shape[1]
		}
		return x.Shape[1], x.Shape[0]
	}
	B, L := split(q)
	_, S := split(k)
	// strides of (sample, position) over the rows of a [rows, width] projection laid out like
	// its input
	seq := func(p View, col, positions int) seqOperand {
		w := p.Strides[0]
		op := seqOperand{view: p}
		op.view.Offset += col
		switch {
		case !batched:
			op.sb, op.sl = 0, w
		case batchFirst:
			op.sb, op.sl = positions*w, w
		default:
			op.sb, op.sl = w, B*w
		}
		return op
	}
	param := func(role string) *View {
		p := n.Param(role)
		if p == nil {
			return nil
		}
		pv := l.values[p.Name]
		return &pv
	}
	bias := param("in_proj_bias")
	biasSlice := func(i int) *View {
		if bias == nil {
			return nil
		}
		s := bias.slice(0, i*e, e)
		return &s
	}
	g := &attentionGroup{batch: B, heads: heads, l: L, s: S, headDim: e / heads, causal: a.Bool("is_causal"), dropP: dropP}
	if dropP > 0 {
		g.seed = l.seedFor(n.Name)
	}
	inW := param("in_proj_weight")
	same := n.Inputs[0].Name == n.Inputs[1].Name && n.Inputs[1].Name == n.Inputs[2].Name
	if inW != nil && same {
		norm, head := l.rowHeadFor(n, e) // a pre-norm LayerNorm the projection applies as it loads
		qkv, err := l.headedProjection(n, "in_proj", q, *inW, bias, norm, head)
		if err != nil {
			return err
		}
		g.q, g.k, g.v = seq(qkv, 0, L), seq(qkv, e, S), seq(qkv, 2*e, S)
	} else {
		weights := [3]View{}
		if inW != nil {
			for i := range weights {
				weights[i] = inW.slice(0, i*e, e)
			}
		} else {
			weights = [3]View{*param("q_proj_weight"), *param("k_proj_weight"), *param("v_proj_weight")}
		}
		var projs [3]View
		for i, x := range []View{q, k, v} {
			p, err := l.projection(n, [...]string{"q_proj", "k_proj", "v_proj"}[i], x, weights[i], biasSlice(i))
			if err != nil {
				return err
			}
			projs[i] = p
		}
		g.q, g.k, g.v = seq(projs[0], 0, L), seq(projs[1], 0, S), seq(projs[2], 0, S)
	}
	if len(n.Inputs) > 3 && n.Inputs[3].Kind == graph.TensorOperand {
		m, err := l.input(n, 3)
		if err != nil {
			return err
		}
		g.padMask, g.kpKind = &m, maskKind(m)
		g.kpSS = m.Strides[len(m.Strides)-1]
		if batched {
			g.kpSB = m.Strides[0]
		}
	}
	if len(n.Inputs) > 4 && n.Inputs[4].Kind == graph.TensorOperand {
		m, err := l.input(n, 4)
		if err != nil {
			return err
		}
		if m.DType == graph.Bool && l.opts.Device.Caps.HostThreads {
			m = l.additiveMask(m, n.Inputs[4].Name, n.Name)
		}
		g.attnMask, g.amKind = &m, maskKind(m)
		r := len(m.Shape)
		g.amSL, g.amSS = m.Strides[r-2], m.Strides[r-1]
		if r == 3 {
			g.amSBH = m.Strides[0]
		}
	}
	rows := B * L
	attnOut := l.newOutput(n.Name+".attn", []int{rows, e}, q.DType)
	g.o = seq(attnOut, 0, L)
	g.groupBase = groupBase{nodes: []string{n.Name}, ops: []string{"attention"}, out: attnOut}
	if a.Bool("need_weights") {
		shape := []int{B, heads, L, S}
		if !batched {
			shape = shape[1:]
		}
		w := l.newOutput(n.Name+".head_weights", shape, q.DType)
		g.weights = &w
	}
	l.addGroup(g, n.Name+".attn")
	if g.weights != nil {
		result := *g.weights
		if a.Bool("average_attn_weights") {
			result = l.newOutput(n.Name+".weights", n.Outputs[1].Shape, q.DType)
			rg := &reduceGroup{groupBase: groupBase{nodes: []string{n.Name}, ops: []string{"mean_heads"}, out: result},
				x: *g.weights, kind: "mean", outer: B, r: heads, inner: L * S}
			l.addGroup(rg, n.Name+".weights")
		}
		l.values[tupleName(n.Name, 1)] = result
	}
	out, err := l.projection(n, "out_proj", attnOut, *param("out_proj.weight"), param("out_proj.bias"))
	if err != nil {
		return err
	}
	final, ok := out.reshape(n.Outputs[0].Shape)
	if !ok {
		return fmt.Errorf("internal: attention output %s does not fit %s", shapeStr(out.Shape), shapeStr(n.Outputs[0].Shape))
	}
	l.values[tupleName(n.Name, 0)] = final
	l.passOwner(n.Name+".out_proj", tupleName(n.Name, 0)) // a residual add fuses into out_proj
	return nil
}

// additiveMask turns a bool attention mask (True: not allowed) into the float mask PyTorch's
// MultiheadAttention adds to the scores: -inf where not allowed, 0 elsewhere. The CPU then adds
// one float tile per key block instead of loading, casting and comparing a bool one; for a
// mask that is a parameter (a causal buffer) the conversion runs once, when the runner is built.
// Every attention reading mask value shares one conversion (the blocks of a GPT share a buffer).
func (l *lowerer) additiveMask(m View, value, node string) View {
	key := value + " (as an additive mask)" // not a graph name: those have no spaces
	if v, ok := l.values[key]; ok {
		return v
	}
	name := node + ".mask_bias"
	out := l.newOutput(name, m.Shape, graph.Float32)
	l.values[key] = out
	g := newElementwise(out, []string{node + " (bool attn_mask as -inf/0 added to the scores)"}, []string{"mask_bias"})
	e := opExpr("masked_fill", constExpr(0), leafExpr(g.epi.addLeafUnchecked(m)))
	e.f1 = math.Inf(-1)
	g.epi.root = e
	l.addGroup(g, name)
	return out
}

func maskKind(m View) string {
	if m.DType == graph.Bool {
		return "bool"
	}
	return "float"
}

// projection adds a Linear kernel y = x @ w^T (+ bias) over the rows of x (every dim but the
// last) and returns y as a dense [rows, out] view whose rows follow x's.
func (l *lowerer) projection(n *graph.Node, what string, x View, w View, bias *View) (View, error) {
	return l.headedProjection(n, what, x, w, bias, nil, nil)
}

// headedProjection is projection with a row head (rowops.go): x is norm's output, and the
// projection reads norm's input instead and normalises the rows it loads.
func (l *lowerer) headedProjection(n *graph.Node, what string, x View, w View, bias *View, norm *normGroup, head *rowHead) (View, error) {
	if head != nil {
		x = norm.x
	}
	r := len(x.Shape)
	kdim := x.Shape[r-1]
	if w.Shape[1] != kdim {
		return View{}, fmt.Errorf("%s: weight %s does not fit input features %d", what, shapeStr(w.Shape), kdim)
	}
	sm, ok := mergeStrides(x.Shape, x.Strides, 0, r-1)
	if !ok {
		x = l.contiguous(x, n)
		sm, _ = mergeStrides(x.Shape, x.Strides, 0, r-1)
	}
	rows := numel(x.Shape[:r-1])
	if rows == 1 {
		sm = 0
	}
	nout := w.Shape[0]
	name := n.Name + "." + what
	out := l.newOutput(name, []int{rows, nout}, x.DType)
	g := &matmulGroup{groupBase: groupBase{nodes: []string{n.Name}, ops: []string{what}, out: out},
		a: x, b: w, aSM: sm, aSK: x.Strides[r-1], bSK: w.Strides[1], bSN: w.Strides[0], batch: 1, m: rows, nn: nout, k: kdim,
		head: head}
	g.epi = newMatmulEpilogue(out, 0, 1)
	if bias != nil {
		if !g.epi.tryFuse(opExpr("add", inExpr(), leafExpr(0)), []View{*bias}) {
			return View{}, fmt.Errorf("%s: bias %s does not broadcast to %s", what, shapeStr(bias.Shape), shapeStr(out.Shape))
		}
	}
	if head != nil {
		l.takePlace(norm, g, name)
		return out, nil
	}
	l.addGroup(g, name)
	return out, nil
}

type attentionData struct {
	Fn                   string
	Header               []string
	Causal, Weights      bool
	Dropout              bool
	AttnMask, KeyPadding string
	NoMask               bool   // BLOCK_S divides S and no mask drops a score
	Half                 string // tl.float16 / tl.bfloat16 data (halfType), "" for float32
}

func seqArgs(prefix string, op seqOperand) []LaunchArg {
	return append(ptrArgs(prefix, op.view), intArg(prefix+"_sb", op.sb), intArg(prefix+"_sl", op.sl))
}

func (g *attentionGroup) emit(l *lowerer) (*Launch, error) {
	fn := kernelName(g.index, g.ops)
	var args []LaunchArg
	args = append(args, seqArgs("q", g.q)...)
	args = append(args, seqArgs("k", g.k)...)
	args = append(args, seqArgs("v", g.v)...)
	args = append(args, seqArgs("o", g.o)...)
	if g.attnMask != nil {
		args = append(args, ptrArgs("am", *g.attnMask)...)
		args = append(args, intArg("am_sbh", g.amSBH), intArg("am_sl", g.amSL), intArg("am_ss", g.amSS))
	}
	if g.padMask != nil {
		args = append(args, ptrArgs("kpm", *g.padMask)...)
		args = append(args, intArg("kpm_sb", g.kpSB), intArg("kpm_ss", g.kpSS))
	}
	if g.weights != nil {
		args = append(args, ptrArgs("w", *g.weights)...)
	}
	args = append(args, intArg("L", g.l), intArg("S", g.s), intArg("HEADS", g.heads), intArg("DH", g.headDim),
		LaunchArg{Name: "scale", Kind: FloatArg, Float: 1 / math.Sqrt(float64(g.headDim))})
	if g.dropP > 0 {
		args = append(args, intArg("BH", g.batch*g.heads), LaunchArg{Name: "seed", Kind: IntArg, Int: g.seed},
			LaunchArg{Name: "p_drop", Kind: FloatArg, Float: g.dropP}, LaunchArg{Name: "keep_scale", Kind: FloatArg, Float: 1 / (1 - g.dropP)},
			LaunchArg{Name: "model_base", Kind: IntArg, ModelBase: true})
	}
	bd := clamp(nextPow2(g.headDim), 16, maxHeadDim)
	// query and key tiles of BLOCK x head_dim stay within 16 KiB each (GPU shared memory)
	rowCap := clamp(4096/bd, 16, 64)
	bl := clamp(nextPow2(g.l), 16, rowCap)
	bs := clamp(nextPow2(g.s), 16, rowCap)
	d := attentionData{Fn: fn, Header: header(g.nodes, g.ops), Causal: g.causal, Weights: g.weights != nil,
		Dropout: g.dropP > 0, AttnMask: g.amKind, KeyPadding: g.kpKind,
		NoMask: g.s%bs == 0 && !g.causal && g.amKind != "bool" && g.kpKind != "bool", Half: halfType(g.o.view.DType)}
	text, err := templates.Render("attention.py", d)
	if err != nil {
		return nil, err
	}
	return &Launch{
		Kernel:    l.dotKernel("attention.py", fn, text, map[string]any{"BLOCK_L": int64(bl), "BLOCK_S": int64(bs), "BLOCK_D": int64(bd)}),
		Grid:      [3]int{cdiv(g.l, bl), g.batch * g.heads, l.n},
		ModelAxis: 2,
		Args:      args,
	}, nil
}
