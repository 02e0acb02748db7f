package lowering

import (
	"fmt"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/triton/templates"
)

// The recurrent family: nn.RNN (tanh, relu), nn.GRU and nn.LSTM with any number of layers,
// one or two directions, batch_first either way, unbatched input, given or zero initial
// states, with or without biases. Each layer and direction is two launches for all N models:
//   - the input projection x @ W_ih^T + b_ih of every step and sequence, one matmul (the
//     attention family's projection), rows in x's layout;
//   - one rnn.py launch whose programs (batch block, model) run the whole time loop, adding
//     h_prev @ W_hh^T + b_hh and applying the cell at each step.
// Every layer's output is [rows, D*H] in x's layout, the directions side by side as PyTorch
// concatenates them; layer l+1 projects it, and the last one is the node's output. Every
// (layer, direction) kernel writes its rows of h_n (and c_n). Dropout between layers is the
// identity in eval mode and an element-wise kernel on each layer's output but the last in
// Monte Carlo mode.

func init() {
	registerOp(lowerRecurrent, "rnn", "gru", "lstm")
}

// rnnGates is the number of gates of each cell (rows of W_ih and W_hh per hidden unit).
var rnnGates = map[string]int{"rnn_tanh": 1, "rnn_relu": 1, "gru": 3, "lstm": 4}

// rnnGroup is one direction of one layer.
type rnnGroup struct {
	groupBase
	cell         string
	xp           View // the input projection [rows, G*H]
	xpST, xpSB   int  // element strides of a step and a sequence in xp
	w            View // W_hh [G*H, H], read as W^T through (wSK, wSJ)
	wSK, wSJ     int
	bias         *View // b_hh [G*H]
	h0, c0       *View // the initial states' [B, H] rows of this layer and direction
	o            View  // the layer output at this direction's first column
	oST, oSB     int
	hn, cn       View // h_n's (c_n's) [B, H] rows of this layer and direction
	steps, batch int
	hidden       int
	reverse      bool
}

func lowerRecurrent(l *lowerer, n *graph.Node) error {
	a := n.Attrs
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	if err := dotFamilyData("input", x, "recurrent layers"); err != nil {
		return err
	}
	layers, hid := a.Int("num_layers"), a.Int("hidden_size")
	dirs := 1
	if a.Bool("bidirectional") {
		dirs = 2
	}
	dropP := 0.0
	if l.opts.Dropout == "mc" {
		dropP = a.Float("dropout")
	}
	if dropP >= 1 && layers > 1 {
		return fmt.Errorf("dropout p=%g between layers drops everything; Monte Carlo mode needs p < 1", dropP)
	}
	cell := n.Op
	if cell == "rnn" {
		cell = "rnn_" + a.String("nonlinearity")
	}
	gates := rnnGates[cell]
	batched := len(x.Shape) == 3
	batchFirst := a.Bool("batch_first")
	var steps, batch int
	switch {
	case !batched:
		steps, batch = x.Shape[0], 1
	case batchFirst:
		batch, steps = x.Shape[0], x.Shape[1]
	default:
		steps, batch = x.Shape[0], x.Shape[1]
	}
	// element strides of (step, sequence) over the rows of a [rows, width] tensor laid out
	// like x
	rowStrides := func(width int) (int, int) {
		switch {
		case !batched:
			return width, 0
		case batchFirst:
			return width, steps * width
		}
		return batch * width, width
	}
	param := func(role string) *View {
		p := n.Param(role)
		if p == nil {
			return nil
		}
		v := l.values[p.Name]
		return &v
	}
	state := func(i int) (*View, error) {
		if i >= len(n.Inputs) || n.Inputs[i].Kind != graph.TensorOperand {
			return nil, nil
		}
		v, err := l.input(n, i)
		if err != nil {
			return nil, err
		}
		v = l.contiguous(v, n)
		return &v, nil
	}
	h0, err := state(1)
	if err != nil {
		return err
	}
	c0, err := state(2)
	if err != nil {
		return err
	}
	rowsOf := func(v View, k int) View { return v.slice(0, k, 1) } // [1, B, H] or [1, H]
	hn := l.newOutput(n.Name+".h_n", n.Outputs[1].Shape, x.DType)
	var cn View
	if cell == "lstm" {
		cn = l.newOutput(n.Name+".c_n", n.Outputs[2].Shape, x.DType)
	}
	in := x
	if _, ok := mergeStrides(x.Shape, x.Strides, 0, len(x.Shape)-1); !ok {
		in = l.contiguous(x, n) // once, for the projections of both directions
	}
	var out View
	for layer := 0; layer < layers; layer++ {
		out = l.newOutput(fmt.Sprintf("%s.l%d", n.Name, layer), []int{steps * batch, dirs * hid}, x.DType)
		for d := 0; d < dirs; d++ {
			sfx := graph.RNNSuffix(layer, d)
			xp, err := l.projection(n, "ih"+sfx, in, *param("weight_ih" + sfx), param("bias_ih"+sfx))
			if err != nil {
				return err
			}
			g := &rnnGroup{cell: cell, xp: xp, w: *param("weight_hh" + sfx), wSK: 1, wSJ: hid, bias: param("bias_hh" + sfx),
				o: out.slice(1, d*hid, hid), steps: steps, batch: batch, hidden: hid, reverse: d == 1}
			if l.opts.Device.Caps.HostThreads {
				// W_hh^T [H, G*H] once (a prepare launch): the CPU reads the weight tiles of
				// every step as plain rows instead of gathering columns
				g.w = l.transposed(g.w, n)
				g.wSK, g.wSJ = gates*hid, 1
			}
			g.xpST, g.xpSB = rowStrides(gates * hid)
			g.oST, g.oSB = rowStrides(dirs * hid)
			k := layer*dirs + d
			g.hn = rowsOf(hn, k)
			if h0 != nil {
				v := rowsOf(*h0, k)
				g.h0 = &v
			}
			if cell == "lstm" {
				g.cn = rowsOf(cn, k)
				if c0 != nil {
					v := rowsOf(*c0, k)
					g.c0 = &v
				}
			}
			op := n.Op + sfx
			g.groupBase = groupBase{nodes: []string{n.Name}, ops: []string{op}, out: out}
			l.addGroup(g, n.Name+"."+op)
			// h_n and c_n are written by every (layer, direction) kernel, the last one last
			l.writer[hn.Buf] = g.index
			if cell == "lstm" {
				l.writer[cn.Buf] = g.index
			}
		}
		in = out
		if dropP > 0 && layer < layers-1 {
			in = l.dropLayer(out, dropP, fmt.Sprintf("%s.l%d", n.Name, layer))
		}
	}
	final, ok := out.reshape(n.Outputs[0].Shape)
	if !ok {
		return fmt.Errorf("internal: recurrent output %s does not fit %s", shapeStr(out.Shape), shapeStr(n.Outputs[0].Shape))
	}
	l.values[tupleName(n.Name, 0)] = final
	l.values[tupleName(n.Name, 1)] = hn
	if cell == "lstm" {
		l.values[tupleName(n.Name, 2)] = cn
	}
	return nil
}

// dropLayer is Monte Carlo dropout on a layer's output before the next layer reads it, as
// PyTorch's training mode applies it between layers: per-model masks from the run's seed
// and the layer, drawn by the wide element index so every strategy draws the same.
func (l *lowerer) dropLayer(out View, p float64, name string) View {
	e := opExpr("dropout", leafExpr(0))
	e.f1, e.seed = p, l.seedFor(name)
	dropped := l.newOutput(name+".dropout", out.Shape, out.DType)
	g := newElementwise(dropped, []string{name}, []string{"dropout"})
	g.epi.tryFuse(e, []View{out})
	l.addGroup(g, name+".dropout")
	return dropped
}

// rnnData is what rnn.py reads.
type rnnData struct {
	Fn, Cell                string
	Header                  []string
	HasBias, HasH0, Reverse bool
	Stationary              bool
}

// blocks: BLOCK_B sequences a program, hidden units in BLOCK_J slices over BLOCK_K slices of
// h_prev. The GPU keeps a program's four gate accumulators and weight tiles within registers
// and shared memory; the CPU takes whole hidden layers of up to 128 units in one dot.
func (g *rnnGroup) blocks() (bb, bj, bk int) {
	bb = clamp(nextPow2(g.batch), 16, 32)
	if g.cpu {
		// the CPU's dots take any M: no padded rows in the gate math
		bb = clamp(nextPow2(g.batch), 1, 32)
		bj, bk = clamp(nextPow2(g.hidden), 16, 128), clamp(nextPow2(g.hidden), 16, 256)
	} else {
		bj, bk = clamp(nextPow2(g.hidden), 16, 64), clamp(nextPow2(g.hidden), 16, 32)
	}
	if rnnBlockCap > 0 {
		bj, bk = min(bj, rnnBlockCap), min(bk, rnnBlockCap)
	}
	return bb, bj, bk
}

// rnnBlockCap, when positive, caps BLOCK_J and BLOCK_K: tests walk several hidden slices
// on small layers.
var rnnBlockCap = 0

func (g *rnnGroup) emit(l *lowerer) (*Launch, error) {
	fn := kernelName(g.index, g.ops)
	var args []LaunchArg
	args = append(args, ptrArgs("xp", g.xp)...)
	args = append(args, intArg("xp_st", g.xpST), intArg("xp_sb", g.xpSB))
	args = append(args, ptrArgs("w", g.w)...)
	args = append(args, intArg("w_sk", g.wSK), intArg("w_sj", g.wSJ))
	if g.bias != nil {
		args = append(args, ptrArgs("b", *g.bias)...)
	}
	if g.h0 != nil {
		args = append(args, ptrArgs("h0", *g.h0)...)
		if g.c0 != nil {
			args = append(args, ptrArgs("c0", *g.c0)...)
		}
	}
	args = append(args, ptrArgs("out", g.o)...)
	args = append(args, intArg("out_st", g.oST), intArg("out_sb", g.oSB))
	args = append(args, ptrArgs("hn", g.hn)...)
	if g.cell == "lstm" {
		args = append(args, ptrArgs("cn", g.cn)...)
	}
	args = append(args, intArg("T", g.steps), intArg("B", g.batch), intArg("H", g.hidden))
	bb, bj, bk := g.blocks()
	d := rnnData{Fn: fn, Cell: g.cell, Header: header(g.nodes, g.ops), HasBias: g.bias != nil, HasH0: g.h0 != nil, Reverse: g.reverse,
		Stationary: bj >= g.hidden && bk >= g.hidden}
	text, err := templates.Render("rnn.py", d)
	if err != nil {
		return nil, err
	}
	return &Launch{
		Kernel:    l.dotKernel("rnn.py", fn, text, map[string]any{"BLOCK_B": int64(bb), "BLOCK_J": int64(bj), "BLOCK_K": int64(bk)}),
		Grid:      [3]int{cdiv(g.batch, bb), l.n, 1},
		ModelAxis: 1,
		Args:      args,
	}, nil
}

// transposed adds a copy kernel writing the 2-D parameter w transposed; reading parameters
// only, it runs once as a prepare launch.
func (l *lowerer) transposed(w View, n *graph.Node) View {
	name := w.Buf.Name + ".T"
	wt := l.newOutput(name, []int{w.Shape[1], w.Shape[0]}, w.DType)
	tg := newElementwise(wt, []string{w.Buf.Name + " (transposed once for the CPU)"}, []string{"transpose"})
	tg.epi.root = leafExpr(tg.epi.addLeafUnchecked(w.permute([]int{1, 0})))
	l.addGroup(tg, name)
	return wt
}
