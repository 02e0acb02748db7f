package lowering

import (
	"fmt"
	"slices"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/triton/templates"
)

// Squeeze-excite on the CPU: a global average pool, a pointwise FC (a 1x1 convolution of the
// pooled 1x1 images, or a Linear over them), its activation, a second pointwise convolution
// and its gate (sigmoid, hardsigmoid) run as one kernel (se.py), a program per sample and
// model, instead of a pool and two matmul launches: each is almost no work (2 x C x C/4
// multiply-adds a sample), so what they cost was their programs' fixed steps (copies of
// masked tiles, element-wise passes) and launches.
// The scale the kernel writes is then applied by the 1x1 convolution that reads it
// (channelScaleFor), as before.

// cpuSqueezeExcite turns se.py on; BenchmarkSqueezeExcite turns it off to compare with the
// pool and matmul launches in one process.
var cpuSqueezeExcite = true

// seMaxHidden bounds the first FC's width: one program holds a whole hidden vector, and its
// weight tiles are [BLOCK_S, BLOCK_C].
const seMaxHidden = 512

// seTile is the elements of se.py's weight and pool tiles (256 KiB, in a core's L2): fewer,
// larger steps measured faster than cpuRowTile's (BenchmarkSqueezeExcite).
const seTile = 8 * cpuRowTile

// seGroup is a squeeze-excite block's squeeze and excitation: s = gate(W2 act(W1 mean(x) +
// b1) + b2), per sample, for x [B, C, H, W] read as [B, C, R] rows.
type seGroup struct {
	groupBase
	x       View // the pooled input, [B * C, R] rows (the pool's)
	b, c, r int  // samples, channels, pixels per plane
	w1, w2  View // [S, C] and [N, S], rows along their second dim
	s, n    int  // hidden width, output channels
	hidden  *epilogue
}

// trySqueezeExcite merges fc2, the pending matmul of a pointwise convolution of 1x1 images
// (lowerConvAsMatmul, not yet added), with the FC that produced its input and the global
// average pool that produced that FC's input, when both are pending with no other reader,
// into one seGroup in the FC's place; the pool's launch goes. It reports whether it did.
func (l *lowerer) trySqueezeExcite(n *graph.Node, fc2 *matmulGroup) bool {
	if !cpuSqueezeExcite || !l.opts.Device.Caps.HostThreads || n.Inputs[0].Kind != graph.TensorOperand {
		return false
	}
	fc1, ok := l.fusable(n.Inputs[0].Name).(*matmulGroup)
	if !ok || fc1.batch != 1 || fc1.nb != 0 || fc1.head != nil || len(fc1.tails) > 0 || fc1.store != nil ||
		fc1.aSK != 1 || fc1.bSK != 1 || fc1.bSN != fc1.k || fc1.nn != fc2.k || fc1.nn > seMaxHidden ||
		fc1.epi == nil || fc1.epi.usesRandom() {
		return false
	}
	w, ok := l.writer[fc1.a.Buf]
	if !ok || w >= len(l.groups) {
		return false
	}
	pool, ok := l.groups[w].(*reduceGroup)
	if !ok || pool.kind != "mean" || pool.inner != 1 || len(pool.nodes) != 1 || (pool.epi != nil && pool.epi.root != nil) || l.fusable(pool.value) != pool ||
		pool.out.Buf != fc1.a.Buf || pool.out.Offset != fc1.a.Offset || pool.outer != fc1.m*fc1.k || (fc1.m > 1 && fc1.aSM != fc1.k) {
		return false
	}
	for _, v := range []View{pool.x, fc1.weight, fc2.weight, fc1.out, fc2.out} {
		if v.DType != graph.Float32 {
			return false
		}
	}
	if !pool.x.Contiguous() || fc2.bSK != 1 || fc2.bSN != fc2.k {
		return false
	}
	chain := append(append(slices.Clone(pool.ops), fc1.ops...), fc2.ops...)
	fuse, reason := l.decideFusion(chain, fc2.out, fc1.ops, n.Op)
	if !fuse {
		l.notes[fc1] = append(l.notes[fc1], fmt.Sprintf("%s not fused with %s into one squeeze-excite kernel: %s", fc1.nodes[0], n.Name, reason))
		return false
	}
	g := &seGroup{
		groupBase: groupBase{index: fc1.index, out: fc2.out, epi: fc2.epi,
			nodes: append(append(slices.Clone(pool.nodes), fc1.nodes...), n.Name),
			ops:   chain,
			fused: append(append(slices.Clone(pool.fused), fc1.fused...),
				fmt.Sprintf("%s, %s and %s in one squeeze-excite kernel (the pool, both FCs and their activations, a program per sample): %s", pool.nodes[0], fc1.nodes[0], n.Name, reason))},
		x: pool.x, b: fc1.m, c: fc1.k, r: pool.r, w1: fc1.weight, w2: fc2.weight, s: fc1.nn, n: fc2.nn, hidden: fc1.epi,
	}
	l.notes[g] = slices.Clone(l.notes[pool])
	delete(l.owner, pool.value)
	delete(l.owner, fc1.value)
	l.groups[fc1.index] = g
	l.dropGroup(pool.index)
	l.addedAt(g, n.Name)
	return true
}

// dropGroup removes the group at index i, whose output nothing reads any more, from the
// launch order.
func (l *lowerer) dropGroup(i int) {
	l.groups = slices.Delete(l.groups, i, i+1)
	for b, w := range l.writer {
		switch {
		case w == i:
			delete(l.writer, b)
		case w > i:
			l.writer[b] = w - 1
		}
	}
	for k := i; k < len(l.groups); k++ {
		l.groups[k].base().index = k
	}
}

// addedAt makes g, already in l.groups at its index, the producer of value.
func (l *lowerer) addedAt(g group, value string) {
	b := g.base()
	b.value = value
	l.writer[b.out.Buf] = b.index
	l.values[value] = b.out
	l.owner[value] = g
}

// blocks: the hidden vector whole (BLOCK_S), channel blocks of about seTile elements for the
// pool's [BLOCK_C, BLOCK_R] and the first FC's [BLOCK_S, BLOCK_C] tiles, output blocks of
// about as many for the second FC's [BLOCK_N, BLOCK_S].
func (g *seGroup) blocks() (bc, br, bs, bn int) {
	bs = clamp(nextPow2(g.s), 4, seMaxHidden)
	br = clamp(nextPow2(g.r), 4, 1024)
	bc = clamp(min(seTile/bs, seTile/br), 8, max(nextPow2(g.c), 8))
	bn = clamp(seTile/bs, 16, max(nextPow2(g.n), 16))
	return bc, br, bs, bn
}

func (g *seGroup) emit(l *lowerer) (*Launch, error) {
	fn := kernelName(g.index, g.ops)
	hid := *g.hidden
	hid.vars = []string{"0", "b", "rs[None, :]"}
	hid.masks = []string{"", "", "(rs[None, :] < S)"}
	hre, err := hid.render("h", "rs[None, :] < S", "tl.float32", "", "hid")
	if err != nil {
		return nil, err
	}
	hidden := hiddenBody(hre.body)
	epi := *g.epi
	epi.vars = []string{"0", "b", "rn[None, :]"}
	epi.masks = []string{"", "", "(rn[None, :] < N)"}
	re, err := epi.render("acc", "cmask", "tl.float32", "", "e")
	if err != nil {
		return nil, err
	}
	bc, br, bs, bn := g.blocks()
	var args []LaunchArg
	args = append(args, ptrArgs("x", g.x)...)
	args = append(args, intArg("x_bstride", g.c*g.r))
	args = append(args, ptrArgs("w1", g.w1)...)
	args = append(args, intArg("w1_ss", g.w1.Strides[0]))
	args = append(args, hre.args...)
	args = append(args, ptrArgs("w2", g.w2)...)
	args = append(args, intArg("w2_sn", g.w2.Strides[0]))
	args = append(args, ptrArgs("c", g.out)...)
	args = append(args, intArg("c_bstride", g.n))
	args = append(args, re.args...)
	args = append(args, intArg("C", g.c), intArg("R", g.r), intArg("S", g.s), intArg("N", g.n))
	args = append(args, re.extra...)
	// se.py reads mlp.py's fields: the hidden layer's and the output's epilogues
	d := mlpData{Fn: fn, Header: header(g.nodes, g.ops), HiddenArgs: argNames(hre.args), HiddenLoads: hre.loads, Hidden: hidden,
		Epilogue: re.loads, EpilogueArgs: argNames(re.args), ExtraArgs: argNames(re.extra), Body: re.body}
	text, err := templates.Render("se.py", d)
	if err != nil {
		return nil, err
	}
	return &Launch{
		Kernel: newKernel("se.py", fn, text, map[string]any{"BLOCK_C": int64(bc), "BLOCK_R": int64(br),
			"BLOCK_S": int64(bs), "BLOCK_N": int64(bn)}),
		Grid:      [3]int{g.b, 1, l.n},
		ModelAxis: 2,
		Args:      args,
	}, nil
}
