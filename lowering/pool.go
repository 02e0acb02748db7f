package lowering

import (
	"fmt"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/triton/templates"
)

// The pooling family: MaxPool, AvgPool (padding, ceil_mode, count_include_pad,
// divisor_override) and AdaptiveAvgPool, 1-d and 2-d, as one window-walking kernel (pool.py)
// over the planes (sample x channel) of a contiguous input. A 1-d pool runs as a 2-d one with a
// height of 1. ceil_mode needs no kernel support: the output size (graph shape inference)
// already has the extra window, which the masks and the clipped divisor handle.

func init() {
	registerOp(lowerPool, "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
		"adaptive_avg_pool1d", "adaptive_avg_pool2d")
}

type poolGroup struct {
	groupBase
	x                      View
	kind                   string // max, avg, adaptive
	countPad               bool
	divisor                int // divisor_override, 0 when absent
	h, w, oh, ow           int
	kh, kw                 int
	sh, sw, ph, pw, dh, dw int
}

func lowerPool(l *lowerer, n *graph.Node) error {
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	if !x.DType.IsFloat() {
		return fmt.Errorf("input is %s, want a floating-point tensor", x.DType)
	}
	a := n.Attrs
	k := 1
	if n.Op[len(n.Op)-2] == '2' {
		k = 2
	}
	outShape := n.Output().Shape
	spatial := x.Shape[len(x.Shape)-k:]
	outSpatial := outShape[len(outShape)-k:]
	g := &poolGroup{}
	// dims as 2-d: [H, W] and [OH, OW]
	g.h, g.w, g.oh, g.ow = 1, spatial[k-1], 1, outSpatial[k-1]
	if k == 2 {
		g.h, g.oh = spatial[0], outSpatial[0]
	}
	two := func(v []int, def int) (int, int) {
		if k == 1 {
			return def, v[0]
		}
		return v[0], v[1]
	}
	g.dh, g.dw = 1, 1
	switch n.Op {
	case "max_pool1d", "max_pool2d":
		g.kind = "max"
		g.dh, g.dw = two(a.Ints("dilation"), 1)
	case "avg_pool1d", "avg_pool2d":
		g.kind = "avg"
		g.countPad = a.Bool("count_include_pad")
		if a.Has("divisor_override") && !a.IsNull("divisor_override") {
			g.divisor = a.Int("divisor_override")
		}
	default:
		g.kind = "adaptive"
	}
	if g.kind == "adaptive" {
		// the longest window along a dim of size I -> O
		win := func(in, out int) int {
			m := 0
			for o := 0; o < out; o++ {
				s, e := o*in/out, ((o+1)*in+out-1)/out
				if e-s > m {
					m = e - s
				}
			}
			return m
		}
		g.kh, g.kw = win(g.h, g.oh), win(g.w, g.ow)
		g.sh, g.sw = 1, 1
	} else {
		g.kh, g.kw = two(a.Ints("kernel_size"), 1)
		g.sh, g.sw = two(a.Ints("stride"), 1)
		g.ph, g.pw = two(a.Ints("padding"), 0)
	}
	g.x = l.contiguous(x, n)
	out := l.newOutput(n.Name, outShape, n.Output().DType)
	g.groupBase = groupBase{nodes: []string{n.Name}, ops: []string{n.Op}, out: out}
	l.addGroup(g, n.Name)
	return nil
}

type poolData struct {
	Fn                string
	Header            []string
	Kind              string
	CountPad, Divisor bool
	Compute           string
}

func (g *poolGroup) emit(l *lowerer) (*Launch, error) {
	fn := kernelName(g.index, g.ops)
	m := g.out.Numel()
	var args []LaunchArg
	args = append(args, ptrArgs("x", g.x)...)
	args = append(args, ptrArgs("out", g.out)...)
	args = append(args, intArg("numel", m), intArg("H", g.h), intArg("W", g.w), intArg("OH", g.oh), intArg("OW", g.ow),
		intArg("KH", g.kh), intArg("KW", g.kw), intArg("stride_h", g.sh), intArg("stride_w", g.sw),
		intArg("pad_h", g.ph), intArg("pad_w", g.pw), intArg("dil_h", g.dh), intArg("dil_w", g.dw),
		intArg("DIVISOR", g.divisor))
	compute := "tl.float32"
	if g.x.DType == graph.Float64 {
		compute = "tl.float64"
	}
	text, err := templates.Render("pool.py", poolData{Fn: fn, Header: header(g.nodes, g.ops), Kind: g.kind,
		CountPad: g.countPad, Divisor: g.divisor != 0, Compute: compute})
	if err != nil {
		return nil, err
	}
	block := vectorBlock(g) // the chosen tunables, else heuristicVectorBlock
	return &Launch{
		Kernel:    newKernel("pool.py", fn, text, map[string]any{"BLOCK": int64(block)}),
		Grid:      [3]int{cdiv(m, block), l.n, 1},
		ModelAxis: 1,
		Args:      args,
	}, nil
}
