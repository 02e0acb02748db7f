package lowering

import (
	"fmt"

	"github.com/widejit/widejit/graph"
)

// The Flux/DiT blocks as ops of their own:
//   - mlp_embedder (Linear-SiLU-Linear) goes through the Linear lowering, so the pair becomes
//     one MLP kernel whenever the plain Linear-act-Linear pattern would;
//   - ada_layer_norm_zero: emb -> SiLU -> Linear(6D) (two kernels on [B, D] rows), its six
//     chunks views of the Linear's output, and the LayerNorm of x with the shift/scale
//     modulation x_hat * (1 + scale[b]) + shift[b] in the norm kernel's epilogue: the norm
//     walks rows b*T + t, so the modulation vectors are addressed by (row // T).

func init() {
	registerOp(lowerMLPEmbedder, "mlp_embedder")
	registerOp(lowerAdaLayerNormZero, "ada_layer_norm_zero")
}

// step is a node the block is made of, named <block>.<what>, used once (so it may fuse).
func (l *lowerer) step(n *graph.Node, what, op string, in graph.Operand, out graph.Type, params map[string]*graph.Param, attrs graph.Attrs) *graph.Node {
	name := n.Name + "." + what
	if what == "" {
		name = n.Name
	} else {
		l.uses[name] = 1
	}
	if params == nil {
		params = map[string]*graph.Param{}
	}
	return &graph.Node{Name: name, Op: op, Index: n.Index, Inputs: []graph.Operand{in}, Params: params, Attrs: attrs,
		Outputs: []graph.Type{out}}
}

func nodeOperand(s *graph.Node) graph.Operand {
	return graph.Operand{Kind: graph.TensorOperand, Name: s.Name, Source: graph.FromNode, Type: s.Output()}
}

// linearStep is a Linear of the block with the params role+".weight" and role+".bias".
func (l *lowerer) linearStep(n *graph.Node, what, role string, in graph.Operand, out graph.Type) *graph.Node {
	w := n.Param(role + ".weight")
	params := map[string]*graph.Param{"weight": w}
	if b := n.Param(role + ".bias"); b != nil {
		params["bias"] = b
	}
	attrs := graph.Attrs{"in_features": w.Type.Shape[1], "out_features": w.Type.Shape[0], "bias": params["bias"] != nil}
	return l.step(n, what, "linear", in, out, params, attrs)
}

func lowerMLPEmbedder(l *lowerer, n *graph.Node) error {
	x := n.Inputs[0]
	out := n.Output()
	hiddenShape := append(append([]int(nil), x.Type.Shape[:len(x.Type.Shape)-1]...), n.Attrs.Int("hidden_dim"))
	hidden := graph.Type{Shape: hiddenShape, DType: out.DType}
	in := l.linearStep(n, "in_layer", "in_layer", x, hidden)
	act := l.step(n, "silu", "silu", nodeOperand(in), hidden, nil, graph.Attrs{})
	outL := l.linearStep(n, "", "out_layer", nodeOperand(act), out)
	for _, s := range []struct {
		fn lowerFunc
		n  *graph.Node
	}{{lowerLinear, in}, {lowerElementwise, act}, {lowerLinear, outL}} {
		if err := s.fn(l, s.n); err != nil {
			return fmt.Errorf("%s: %w", s.n.Name, err)
		}
	}
	return nil
}

func lowerAdaLayerNormZero(l *lowerer, n *graph.Node) error {
	x, emb := n.Inputs[0], n.Inputs[1]
	d := n.Attrs.Int("embedding_dim")
	shape := x.Type.Shape // [B, T, D]
	b, t := shape[0], shape[1]
	dt := x.Type.DType
	act := l.step(n, "silu", "silu", emb, emb.Type, nil, graph.Attrs{})
	lin := l.linearStep(n, "linear", "linear", nodeOperand(act), graph.Type{Shape: []int{b, 6 * d}, DType: dt})
	l.uses[lin.Name] = 6 // read by every chunk: never fused into
	norm := l.step(n, "norm", "layer_norm", x, x.Type, nil,
		graph.Attrs{"normalized_shape": []int{d}, "eps": n.Attrs.Float("eps"), "elementwise_affine": false, "bias": false})
	if err := lowerElementwise(l, act); err != nil {
		return fmt.Errorf("%s: %w", act.Name, err)
	}
	if err := lowerLinear(l, lin); err != nil {
		return fmt.Errorf("%s: %w", lin.Name, err)
	}
	if err := lowerNorm(l, norm); err != nil {
		return fmt.Errorf("%s: %w", norm.Name, err)
	}
	e := l.values[lin.Name]
	chunk := func(i int) View { return e.slice(1, i*d, d) } // shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp
	g, ok := l.owner[norm.Name].(*normGroup)
	if !ok {
		return fmt.Errorf("internal: %s did not make a norm kernel", norm.Name)
	}
	// rows of the norm are b*T + t: the sample's modulation row is row // T
	g.epi = &epilogue{shape: g.out.Shape, axes: [][2]int{{0, 1}, {1, 2}, {2, 3}},
		vars: []string{fmt.Sprintf("(row // %d)", t), fmt.Sprintf("(row %% %d)", t), "cols"}, masks: []string{"", "", "cmask"}}
	mod := opExpr("add", opExpr("mul", inExpr(), opExpr("add", constExpr(1), leafExpr(0))), leafExpr(1))
	if !g.epi.tryFuse(mod, []View{chunk(1).unsqueeze(1), chunk(0).unsqueeze(1)}) {
		return fmt.Errorf("internal: the modulation of %s does not fit the norm kernel", norm.Name)
	}
	g.nodes[0], g.ops[0] = n.Name, n.Op
	g.fused = append(g.fused, n.Name+": shift/scale modulation fused into the LayerNorm epilogue")
	l.values[tupleName(n.Name, 0)] = g.out
	delete(l.owner, norm.Name)
	g.value = tupleName(n.Name, 0)
	l.owner[g.value] = g
	for i, c := range []int{2, 3, 4, 5} {
		l.values[tupleName(n.Name, i+1)] = chunk(c)
	}
	return nil
}
