package lowering

import (
	"fmt"

	"github.com/widejit/widejit/graph"
)

// Conv3d and the transposed convolutions (ConvTranspose1d/2d/3d) as one implicit-GEMM kernel
// (conv_nd.py) over three spatial dims, a 1-d or 2-d problem running with leading sizes of 1.
// They share conv.py's plumbing (convGroup.implicitGEMM: arguments, epilogue, tiles,
// tunables): the same grid, the same fused epilogue (bias, eval BatchNorm, activations,
// residual adds), the same K loop over (channel, tap) pairs.
//
// A transposed convolution is the gradient of a convolution, computed as a gather: output o
// sums, over the taps k and input channels of its group, the inputs i with
// o = i*stride - pad + k*dil, i.e. i = (o + pad - k*dil) / stride where that division is exact.
// The stride-dilated input is never built (its holes are masked lanes of the load) and the
// weight [in, out/groups, *k] is read in place through strides, as the convolution's
// [out, in/groups, *k] is, so neither needs a prepare launch.

func init() {
	registerOp(lowerConvND, "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
}

// convNDTapsOuter forces conv_nd.py's loop order for tests: 0 lets the channels per group
// decide (convNDTapsOuterMinChannels), 1 forces taps outside, -1 the flat (channel, tap) loop.
var convNDTapsOuter = 0

// convNDTapsOuterMinChannels: with fewer channels per group, a channel block would leave most
// of a dot's K (at least 16) idle, and the flat (channel, tap) loop keeps the dots full.
const convNDTapsOuterMinChannels = 16

// convNDGroup is a convolution or transposed convolution over [D, H, W]. The embedded
// convGroup carries what implicitGEMM and the conv tunables read: x, w, batch, groups,
// channels per group, strides of x, and oh*ow = output pixels, kh*kw = the taps in the K loop
// (1 with taps outside), so the tile heuristics see the flattened 3-d problem.
type convNDGroup struct {
	convGroup
	transposed          bool
	tapsOuter           bool   // loop over taps, then channel blocks (TAPS_OUTER)
	inSize, outSize, k  [3]int // input, output and kernel sizes (D, H, W)
	stride, pad, dil    [3]int // pad: before each dim (for "same" the end pad only sizes the output)
	wCStride, wOCStride int    // weight strides of an input and an output channel
}

func lowerConvND(l *lowerer, n *graph.Node) error {
	x, err := convInput(l, n)
	if err != nil {
		return err
	}
	a := n.Attrs
	transposed := n.Op != "conv3d"
	k := int(n.Op[len(n.Op)-2] - '0')
	outShape := n.Output().Shape
	rank := len(x.Shape)
	batched, batch, inC, outC := convLayout(x.Shape, outShape, k)
	groups := a.Int("groups")
	g := &convNDGroup{transposed: transposed}
	g.inSize = dims3(x.Shape[rank-k:], 1)
	g.outSize = dims3(outShape[len(outShape)-k:], 1)
	g.k = dims3(a.Ints("kernel_size"), 1)
	g.stride = dims3(a.Ints("stride"), 1)
	g.pad = dims3(a.Ints("padding"), 0)
	g.dil = dims3(a.Ints("dilation"), 1)
	taps := g.k[0] * g.k[1] * g.k[2]
	cg, ocg := inC/groups, outC/groups
	if transposed { // weight [in, out/groups, *k]
		g.wCStride, g.wOCStride = ocg*taps, taps
	} else { // weight [out, in/groups, *k]
		g.wCStride, g.wOCStride = taps, cg*taps
	}
	c := &g.convGroup
	c.batch, c.groups, c.cg, c.ocg = batch, groups, cg, ocg
	g.tapsOuter = convNDTapsOuter > 0 || convNDTapsOuter == 0 && cg >= convNDTapsOuterMinChannels
	c.oh, c.ow, c.kh, c.kw = g.outSize[0]*g.outSize[1], g.outSize[2], g.k[0]*g.k[1], g.k[2]
	if g.tapsOuter { // BLOCK_K tiles the channels alone
		c.kh, c.kw = 1, 1
	}
	c.x = l.contiguous(x, n)
	c.xCStride = g.inSize[0] * g.inSize[1] * g.inSize[2]
	c.xBStride = inC * c.xCStride
	c.w = l.values[n.Param("weight").Name]
	if !c.w.Contiguous() {
		return fmt.Errorf("weight %s is not contiguous", shapeStr(c.w.Shape))
	}
	out := l.newOutput(n.Name, outShape, n.Output().DType)
	c.groupBase = groupBase{nodes: []string{n.Name}, ops: []string{n.Op}, out: out}
	c.epi = newConvEpilogue(out, batched, "OCG")
	if groups == inC && groups > 1 {
		l.notes[g] = append(l.notes[g], "depthwise: implicit GEMM over 1-channel groups")
	}
	if err := fuseConvBias(l, n, c.epi, out, outC, k); err != nil {
		return err
	}
	l.addGroup(g, n.Name)
	return nil
}

func (g *convNDGroup) emit(l *lowerer) (*Launch, error) {
	p := g.outSize[0] * g.outSize[1] * g.outSize[2]
	taps := g.k[0] * g.k[1] * g.k[2]
	ln, err := g.implicitGEMM(l, "conv_nd.py", "oc_g[None, :] * P + rp[:, None]", p, func(bp, tilesOC int) ([]LaunchArg, int) {
		return []LaunchArg{intArg("D", g.inSize[0]), intArg("H", g.inSize[1]), intArg("W", g.inSize[2]),
			intArg("OH", g.outSize[1]), intArg("OW", g.outSize[2]), intArg("P", p),
			intArg("OCG", g.ocg), intArg("KTOT", g.cg*taps), intArg("KT", taps), intArg("KH", g.k[1]), intArg("KW", g.k[2]),
			intArg("KHW", g.k[1]*g.k[2]), intArg("CG", g.cg), intArg("GROUPS", g.groups),
			intArg("w_cstride", g.wCStride), intArg("w_ocstride", g.wOCStride),
			intArg("stride_d", g.stride[0]), intArg("stride_h", g.stride[1]), intArg("stride_w", g.stride[2]),
			intArg("pad_d", g.pad[0]), intArg("pad_h", g.pad[1]), intArg("pad_w", g.pad[2]),
			intArg("dil_d", g.dil[0]), intArg("dil_h", g.dil[1]), intArg("dil_w", g.dil[2]),
			intArg("tiles_oc", tilesOC)}, cdiv(p, bp) * tilesOC
	})
	if err != nil {
		return nil, err
	}
	ln.Kernel.Consts["TRANSPOSED"] = g.transposed
	ln.Kernel.Consts["TAPS_OUTER"] = g.tapsOuter
	return ln, nil
}

// dims3 right-aligns the sizes of up to three spatial dims in [D, H, W]; the leading dims a
// 1-d or 2-d problem lacks get def (1 for sizes, strides and dilations, 0 for padding).
func dims3(src []int, def int) [3]int {
	d := [3]int{def, def, def}
	copy(d[3-len(src):], src)
	return d
}
