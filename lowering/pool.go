package lowering

import (
	"fmt"
	"slices"
	"strings"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/triton/templates"
)

// The pooling family: MaxPool, AvgPool (padding, ceil_mode, count_include_pad,
// divisor_override) and AdaptiveAvgPool, 1-d, 2-d and 3-d, as one window-walking kernel
// (pool.py) over the planes (sample x channel) of a contiguous input. Fewer dims run as 3-d
// with leading sizes of 1. ceil_mode needs no kernel support: the output size (graph shape
// inference) already has the extra window, which the masks and the clipped divisor handle.
// CPU plans run 1-d and 2-d max and average pooling row by row instead (pool_rows.py): each
// window tap is one affine [plane, output column] tile, moved as rows, where pool.py's flat
// element index makes every load a gather, and store the zero-padded planes of a unit-stride
// convolution reading the output (takePooledInput, conv_flat.py's input) in place of a pad
// kernel's copy; and a global average pool (adaptive, to 1 element)
// as the mean of each plane (reduce.go's reduce_rows.py).

func init() {
	registerOp(lowerPool, "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
		"adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d")
}

type poolGroup struct {
	groupBase
	x        View
	kind     string // max, avg, adaptive
	countPad bool
	rows     bool // pool_rows.py (CPU plans, 1-d and 2-d max and average pooling)
	divisor  int  // divisor_override, 0 when absent
	// pool_rows.py: the zero-padded planes of the unit-stride convolution reading the output
	// (takePooledInput), stored in place of (dense false) or besides the dense output
	padded *padCopy
	dense  bool
	// per dim (D, H, W): input and output sizes, window, stride, padding, dilation
	inSize, outSize, k, stride, pad, dil [3]int
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
	k := int(n.Op[len(n.Op)-2] - '0')
	outShape := n.Output().Shape
	g := &poolGroup{}
	g.inSize = dims3(x.Shape[len(x.Shape)-k:], 1)
	g.outSize = dims3(outShape[len(outShape)-k:], 1)
	g.dil = dims3(nil, 1)
	switch {
	case strings.HasPrefix(n.Op, "max_pool"):
		g.kind = "max"
		g.dil = dims3(a.Ints("dilation"), 1)
	case strings.HasPrefix(n.Op, "avg_pool"):
		g.kind = "avg"
		g.countPad = a.Bool("count_include_pad")
		if a.Has("divisor_override") && !a.IsNull("divisor_override") {
			g.divisor = a.Int("divisor_override")
		}
	default:
		g.kind = "adaptive"
	}
	if g.kind == "adaptive" {
		for d := range g.k {
			// the longest window along a dim of size I -> O
			in, out := g.inSize[d], g.outSize[d]
			for o := 0; o < out; o++ {
				g.k[d] = max(g.k[d], ((o+1)*in+out-1)/out-o*in/out)
			}
		}
		g.stride = dims3(nil, 1)
	} else {
		g.k = dims3(a.Ints("kernel_size"), 1)
		g.stride = dims3(a.Ints("stride"), 1)
		g.pad = dims3(a.Ints("padding"), 0)
	}
	g.rows = l.opts.Device.Caps.HostThreads && g.kind != "adaptive" && k <= 2
	g.x = l.contiguous(x, n)
	if l.opts.Device.Caps.HostThreads && g.kind == "adaptive" && numel(outShape[len(outShape)-k:]) == 1 {
		// a global average pool (squeeze-excite, a classifier's head): the mean of each plane,
		// a block of planes per program (reduce_rows.py), not a window walked per output
		spatial := numel(x.Shape[len(x.Shape)-k:])
		out := l.newOutput(n.Name, outShape, n.Output().DType)
		rg := &reduceGroup{groupBase: groupBase{nodes: []string{n.Name}, ops: []string{n.Op}, out: out},
			x: g.x, kind: "mean", outer: x.Numel() / spatial, r: spatial, inner: 1}
		l.addGroup(rg, n.Name)
		return nil
	}
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
	CopyStore         bool // pool_rows.py: a second store, of the zero-padded planes (c_ptr)
}

func (g *poolGroup) emit(l *lowerer) (*Launch, error) {
	if g.rows {
		return g.emitRows(l)
	}
	fn := kernelName(g.index, g.ops)
	m := g.out.Numel()
	var args []LaunchArg
	args = append(args, ptrArgs("x", g.x)...)
	args = append(args, ptrArgs("out", g.out)...)
	args = append(args, intArg("numel", m))
	// per dim (D, H, W) in the kernel's parameter order
	dims := [][3]int{g.inSize, g.outSize, g.k, g.stride, g.pad, g.dil}
	for i, name := range []string{"D", "H", "W", "OD", "OH", "OW", "KD", "KH", "KW", "stride_d", "stride_h", "stride_w",
		"pad_d", "pad_h", "pad_w", "dil_d", "dil_h", "dil_w"} {
		args = append(args, intArg(name, dims[i/3][i%3]))
	}
	args = append(args, intArg("DIVISOR", g.divisor))
	text, err := templates.Render("pool.py", g.data(fn))
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

func (g *poolGroup) data(fn string) poolData {
	compute := "tl.float32"
	if g.x.DType == graph.Float64 {
		compute = "tl.float64"
	}
	return poolData{Fn: fn, Header: header(g.nodes, g.ops), Kind: g.kind, CountPad: g.countPad, Divisor: g.divisor != 0, Compute: compute}
}

// emitRows renders pool_rows.py: a program per output row of a block of planes (up to 4096
// elements a tile).
func (g *poolGroup) emitRows(l *lowerer) (*Launch, error) {
	fn := kernelName(g.index, g.ops)
	oh, ow := g.outSize[1], g.outSize[2]
	planes := g.out.Numel() / (oh * ow)
	var args []LaunchArg
	args = append(args, ptrArgs("x", g.x)...)
	// the output's planes, rows and first element: dense, or the padded planes' interior
	out, oPlane, oRow, oOff := g.out, oh*ow, ow, 0
	var cargs []LaunchArg
	data := g.data(fn)
	if p := g.padded; p != nil {
		cPlane, cRow, cOff := p.pad.hp*p.pad.wp, p.pad.wp, p.pad.off
		if g.dense {
			data.CopyStore = true
			cargs = append(ptrArgs("c", p.out), intArg("C_PLANE", cPlane), intArg("C_ROW", cRow), intArg("C_OFF", cOff))
		} else {
			out, oPlane, oRow, oOff = p.out, cPlane, cRow, cOff
		}
	}
	args = append(args, ptrArgs("out", out)...)
	args = append(args, cargs...)
	args = append(args, intArg("PLANES", planes), intArg("H", g.inSize[1]), intArg("W", g.inSize[2]), intArg("OH", oh), intArg("OW", ow),
		intArg("KH", g.k[1]), intArg("KW", g.k[2]), intArg("stride_h", g.stride[1]), intArg("stride_w", g.stride[2]),
		intArg("pad_h", g.pad[1]), intArg("pad_w", g.pad[2]), intArg("dil_h", g.dil[1]), intArg("dil_w", g.dil[2]), intArg("DIVISOR", g.divisor),
		intArg("O_PLANE", oPlane), intArg("O_ROW", oRow), intArg("O_OFF", oOff))
	text, err := templates.Render("pool_rows.py", data)
	if err != nil {
		return nil, err
	}
	bw := clamp(nextPow2(ow), 16, 64)
	bpl := clamp(nextPow2(planes), 1, 4096/bw)
	return &Launch{
		Kernel:    newKernel("pool_rows.py", fn, text, map[string]any{"BLOCK_PL": int64(bpl), "BLOCK_W": int64(bw)}),
		Grid:      [3]int{cdiv(planes, bpl) * oh, l.n, 1},
		ModelAxis: 1,
		Args:      args,
	}, nil
}

// takePooledInput makes the pending pool_rows.py group producing value store the zero-padded
// planes this unit-stride conv_flat.py convolution reads (ResNet's max pool in front of
// layer1), in place of conv_pad.py's pass over the pooled map: instead of its dense output
// where this convolution is the one reader, besides it (from the same registers) where there
// are others; a later convolution's epilogue may read its residual from the padded planes
// (readPaddedLeaves). It reports false for any other producer.
func (g *convGroup) takePooledInput(l *lowerer, value string, inC int) bool {
	prod, ok := l.owner[value].(*poolGroup)
	if !convPooledStore || l.opts.NoFusion || !ok || prod.value != value || !prod.rows || prod.padded != nil || g.strided() ||
		!prod.out.Contiguous() || prod.out.ModelStride == 0 || g.x.Buf != prod.out.Buf || g.x.Offset != prod.out.Offset ||
		len(prod.out.Shape) != 4 || prod.out.Shape[0] != g.batch || prod.out.Shape[1] != inC || prod.outSize[1] != g.h || prod.outSize[2] != g.wd {
		return false
	}
	pad := g.padGeometry()
	out := g.paddedBuffer(l, value+".padded", l.n, g.batch*inC)
	prod.padded = &padCopy{src: prod.out, out: out, pad: pad, h: g.h, w: g.wd, planes: g.batch * inC, by: prod.nodes[0]}
	prod.dense = l.fusable(value) == nil
	what := "a copy of its output"
	if prod.dense {
		// other readers may read the padded planes too (readPaddedLeaves)
		l.padCopies = append(l.padCopies, *prod.padded)
	} else {
		what = "its output"
		delete(l.owner, value)
	}
	l.writer[out.Buf] = prod.index
	l.notes[prod] = append(l.notes[prod], fmt.Sprintf("stores %s zero-padded to [%d, %d] planes for %s", what, pad.hp, pad.wp, g.nodes[0]))
	g.x = out
	return true
}

// dropUnreadPoolOutputs re-emits each pool that stores a convolution's zero-padded planes
// besides its dense output (takePooledInput, the output having other readers) when, the plan
// emitted, no other launch reads that dense output and it is no graph output: every reader
// took the padded planes (ResNet's block: its first convolution, and its residual add through
// readPaddedLeaves), so the pool stores them alone. Launch i is group i's; strategies are
// their strategies and reasons.
func (l *lowerer) dropUnreadPoolOutputs(plan *Plan, keep map[*Buffer]bool, strategies [][2]string) error {
	for i, gr := range l.groups {
		p, ok := gr.(*poolGroup)
		if !ok || p.padded == nil || !p.dense || keep[p.out.Buf] || slices.ContainsFunc(plan.Launches, func(ln *Launch) bool {
			return ln.Index != i && slices.Contains(ln.buffers(), p.out.Buf)
		}) {
			continue
		}
		p.dense = false
		for k, note := range l.notes[p] {
			if rest, ok := strings.CutPrefix(note, "stores a copy of its output zero-padded"); ok {
				l.notes[p][k] = "stores its output zero-padded" + rest + " (no reader needs its dense output)"
			}
		}
		ln, err := p.emit(l)
		if err != nil {
			return fmt.Errorf("%s: kernel for %s: %w", plan.Graph, strings.Join(p.nodes, ","), err)
		}
		l.applyStrategy(p, ln, strategies[i][0], strategies[i][1])
		ln.Index = i
		plan.Launches[i] = ln
	}
	return nil
}
