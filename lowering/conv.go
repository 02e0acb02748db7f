package lowering

import (
	"fmt"
	"slices"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/triton/templates"
)

// The convolution family: Conv1d and Conv2d (stride, padding incl. "same"/"valid", dilation,
// groups incl. depthwise, bias) as one implicit-GEMM kernel (conv.py) per node, the N models
// and the (sample, group) pairs on grid axes, with the bias and following element-wise ops
// fused into its epilogue. A 1-d convolution runs as a 2-d one with a height of 1.
// Depthwise convolutions (groups == in_channels) use a direct kernel (conv_depthwise.py)
// instead: a GEMM tile over one group's 1 or 2 output channels would be mostly padding. On the
// CPU they run over channel blocks (conv_dw_blocks.py): the input copied once, zero-padded, in
// blocks of channels laid out channels last, so that each tap is one contiguous tile whose lanes
// are all channels. Grouped convolutions with narrow groups (RegNet's 8 channels a group) run
// there the same way (conv_grouped.py), a lane per group: a block holds one in-group channel of
// many groups.
// Convolutions with wide enough output rows use the row-tiled implicit GEMM (conv_rows.py:
// taps and channel blocks as loops, loads affine along the row, which the CPU backend copies
// row by row instead of gathering), fed by a weight relayout (conv_weight.py) that runs once
// per runner as a prepare launch; conv.py (K = channels x taps flattened) remains for the rest.

func init() {
	registerOp(lowerConv, "conv1d", "conv2d")
}

// convDirectDepthwise selects the direct kernel for depthwise convolutions; tests turn it off
// to check the implicit GEMM on the same problems.
var convDirectDepthwise = true

// convDepthwiseBlocks selects conv_dw_blocks.py (channel blocks, channels last) for the CPU
// plans of depthwise convolutions; tests turn it off to check conv_flat.py's depthwise form.
var convDepthwiseBlocks = true

// convGroupedBlocks selects conv_grouped.py (one in-group channel of many groups a block,
// channels last) for the CPU plans of grouped convolutions with narrow groups on small maps
// (groupedBlocksPayOff); tests turn it off to check conv_flat.py on the same problems.
var convGroupedBlocks = true

// convRowKernel selects the row-tiled implicit GEMM (conv_rows.py) for the convolutions whose
// output rows are at least convRowMinWidth wide and whose steps pay off (rowStepsPayOff);
// narrower rows would leave most of a dot tile (at least 16 wide) idle, and conv.py tiles the
// flat pixel index instead. Tests turn it off to check conv.py on the same problems, and
// turn convRowAlways on to check conv_rows.py on every convolution but depthwise ones.
var convRowKernel = true
var convRowAlways = false

// convFlatKernel selects conv_flat.py for CPU plans of the convolutions that are not
// depthwise or a pointwise GEMM (unit-stride 1x1); tests turn it off to check the other
// kernels on the CPU plan variant.
var convFlatKernel = true

// convTapMajorMinChannels: from this many input channels per group, conv_flat.py reduces tap
// by tap (each tl.dot then has K = channels; below it, K = channels x taps keeps the dots
// long enough to pay for their calls). From an image's 3 channels up (the models' stems):
// the CPU backend queues the taps' dots and sums them in registers (jit/cpu's panels), so a
// K of 3 a dot costs less than gathering the input's rows per step, a copy of the input
// KH x KW times (bench/results/stem.md). Tests lower it to check both forms.
var convTapMajorMinChannels = 3

// convColsKernel selects, for CPU plans of the dense convolutions over small maps (at most
// convColsMaxPixels output pixels a sample, more than one tap), a copy of the padded
// planes' tap shifts as columns of every sample side by side (conv_cols.py) and one GEMM over
// them (conv_flat.py's Folded form): each weight tile is read once a launch instead of once a
// sample, and the pixel tile spans the samples (a 3x3 map's 2 x 13 pixels fill the 32-wide
// dot tile where one sample's 13 left a 16-wide one). Tests turn it off to check the
// per-sample path on the same problems.
var convColsKernel = true

// convFoldSamples lets a grouped convolution over small maps whose producer stores its padded
// input (takePaddedInput) take those planes laid out [channel, sample] and run conv_flat.py's
// Folded form over them (foldSamples); tests turn it off to check the per-sample path.
var convFoldSamples = true

// convColsMaxPixels: the output pixels a sample up to which convColsKernel applies (the 6x6
// and 3x3 maps of a ResNet's last two stages on 96x96 images), where the weight outweighs
// the columns (K x B x QS elements a model).
const convColsMaxPixels = 64

// convColsMaxK: a unit-stride convolution whose reduction (input channels x taps) is at most
// this, one dot's k block (a 3x3 over an image's 3 channels: K = 27), takes the columns at
// any map size: tap by tap its dots would have a K of 3, too short for the panels kernels to
// pay for their steps, where the columns make it one GEMM of K = 27, and the copy is small
// (of a shared input, one for all the models). Strided ones (the models' stems) keep their
// phase planes (not measured on the columns).
const convColsMaxK = 32

// convSamplesInner lets a pointwise convolution over small maps number its programs sample
// fastest (flatSamplesInner); tests turn it off to check the plain order on the same problems.
var convSamplesInner = true

// convPaddedCopies lets a convolution whose output has several readers store the zero-padded
// copy a unit-stride convolution reads (takePaddedCopy); tests turn it off to check the pad
// kernel on the same problems.
var convPaddedCopies = true

// convPhaseStore lets a pointwise convolution store the stride phase planes its strided reader
// reads (takePhasedInput); tests turn it off to check the pad kernel's copy.
var convPhaseStore = true

// convBlockStore lets a pointwise convolution store the channel blocks its depthwise reader
// reads (takeBlockedInput); tests turn it off to check the pad kernel's copy.
var convBlockStore = true

// convPooledStore lets a pooling kernel store the zero-padded planes of the convolution reading
// its output (takePooledInput); tests turn it off to check the pad kernel's copy.
var convPooledStore = true

// convCropDeadTaps lets a depthwise convolution over channel blocks drop the taps that read
// only padding (cropDeadTaps); tests turn it off to check the whole kernel on the same maps.
var convCropDeadTaps = true

// convSharedPhases lets a 1x1 strided convolution read the stride phase planes copied for
// another convolution of its input (sharePhases); tests turn it off to check its own copy.
var convSharedPhases = true

const convRowMinWidth = 8

// convFlatMaxBlockP bounds conv_flat.py's pixel tile, whose last one reads up to that far past
// the last plane of its padded input (paddedBuffer's slack).
const convFlatMaxBlockP = 512

type convGroup struct {
	groupBase
	x, w                   View
	batch, groups          int
	cg, ocg                int // channels per group, in and out
	h, wd, oh, ow          int
	kh, kw                 int
	sh, sw, ph, pw, dh, dw int
	xBStride, xCStride     int
	depthwise              bool       // direct kernel (conv_depthwise.py)
	rows                   bool       // row-tiled implicit GEMM (conv_rows.py), else conv.py
	flat                   bool       // flat padded-pixel implicit GEMM (conv_flat.py), the CPU's
	hp, wp                 int        // conv_flat.py: the padded plane (strided: one phase plane)
	phh, phw               int        // conv_flat.py strided: the phase planes per channel, rows x columns
	outPad                 planePad   // conv_flat.py: the output is written zero-padded for the next one
	outPhases              *padPhases // conv_flat.py pointwise: ... as the stride phase planes of a strided next one (PhaseStore)
	outBlock               int        // conv_flat.py pointwise: ... in channel blocks of this many, channels last, for conv_dw_blocks.py (BlockStore)
	tapMajor               bool       // conv_flat.py: tap by tap, the weight relaid as [tap, OC, CG]
	direct                 bool       // conv_flat.py pointwise: the input's own dense planes, no pad copy
	cols                   bool       // conv_flat.py Folded: over the input's columns (conv_cols.py), the samples in the pixels
	foldedPlanes           bool       // conv_flat.py Folded: over its padded planes laid out [channel, sample], the samples a band apart in the pixels (foldSamples, foldedPad)
	chanBlock              int        // conv_dw_blocks.py: channels per block of its input (xCStride: a block's stride), else 0
	groupBlock             int        // conv_grouped.py: groups per block of its input (xCStride: a block's stride), else 0
	diag                   int        // conv_flat.py: the model's groups merged into one, diag at a time, over a block-diagonal weight (mergedGroups); 1 if none
	scale                  *View      // conv_flat.py pointwise: a per-(sample, channel) input scale [B or 1, C, 1, 1] (channelScaleFor)
	padCopy                *padCopy   // conv_flat.py: a zero-padded copy of the output stored too, for a convolution reading it (takePaddedCopy)
	cropped                bool       // conv_dw_blocks.py: kh, kw, ph, pw and w are the live taps' alone (cropDeadTaps)
}

// cropDeadTaps drops the kernel rows and columns of a unit-stride convolution that read only
// zero padding at every output pixel, where the map is smaller than the kernel's reach
// (MobileNet's and EfficientNet's 5x5 depthwise convolutions on 2x2 maps: 9 of 25 taps live;
// ConvNeXt's 7x7 ones: 9 of 49), and shrinks the padding by as many: the same outputs from
// fewer taps over smaller padded planes. A dropped tap only ever multiplied zeros (PyTorch's
// oneDNN kernel skips them too: a non-finite weight there makes no NaN). The weight becomes a
// view of the live taps, which conv_weight.py relays out.
func (g *convGroup) cropDeadTaps(l *lowerer) {
	if !convCropDeadTaps || g.strided() {
		return
	}
	ch, cw := deadTaps(g.h, g.oh, g.kh, g.ph, g.dh), deadTaps(g.wd, g.ow, g.kw, g.pw, g.dw)
	if ch == 0 && cw == 0 {
		return
	}
	r := len(g.w.Shape) // [OC, CG, KH, KW], or [OC, CG, KW] (1-d: kh = 1, no rows to drop)
	if r == 4 {
		g.w = g.w.slice(2, ch, g.kh-2*ch)
	}
	g.w = g.w.slice(r-1, cw, g.kw-2*cw)
	l.notes[g] = append(l.notes[g], fmt.Sprintf("the map is smaller than the kernel's reach: of its %dx%d taps, the %dx%d that read the map run (the others read only padding)", g.kh, g.kw, g.kh-2*ch, g.kw-2*cw))
	g.kh, g.kw, g.ph, g.pw = g.kh-2*ch, g.kw-2*cw, g.ph-ch*g.dh, g.pw-cw*g.dw
	g.cropped = true
}

// deadTaps is how many taps at each end of a kernel dim read only padding at every output
// position of a unit-stride convolution (map size, output size, kernel, padding, dilation):
// tap t reads o + t*dil - pad, in the map for some output o in [0, out) exactly when
// (pad - out + 1) / dil <= t <= (size - 1 + pad) / dil. With the output size padding gives
// (size + 2*pad - dil*(kernel-1)) both ends drop alike; 0 where they would not.
func deadTaps(size, out, kernel, pad, dil int) int {
	lo := 0
	if d := pad - out + 1; d > 0 {
		lo = cdiv(d, dil)
	}
	hi := min(kernel-1, (size-1+pad)/dil)
	if lo == 0 || lo > hi || kernel-1-hi != lo {
		return 0
	}
	return lo
}

// convInput is a convolution node's input, refused unless float32, float16 or bfloat16 (as its
// weight) with zero padding.
func convInput(l *lowerer, n *graph.Node) (View, error) {
	x, err := l.input(n, 0)
	if err != nil {
		return View{}, err
	}
	if err := dotFamilyData("input", x, "convolutions"); err != nil {
		return View{}, err
	}
	if a := n.Attrs; a.Has("padding_mode") && a.String("padding_mode") != "zeros" {
		return View{}, fmt.Errorf("padding_mode %q is not lowered (only zeros)", a.String("padding_mode"))
	}
	return x, nil
}

// convLayout reads a convolution's per-model [B, C, *spatial] input (unbatched: [C, *spatial],
// B = 1) and output, k spatial dims: whether batched, B, and the channels in and out.
func convLayout(in, out []int, k int) (batched bool, batch, inC, outC int) {
	batched, batch = len(in) == k+2, 1
	if batched {
		batch = in[0]
	}
	return batched, batch, in[len(in)-k-1], out[len(out)-k-1]
}

// fuseConvBias adds the node's bias, if any, to the epilogue of its output out ([outC]
// broadcast over k spatial dims).
func fuseConvBias(l *lowerer, n *graph.Node, epi *epilogue, out View, outC, k int) error {
	p := n.Param("bias")
	if p == nil {
		return nil
	}
	bv, _ := l.values[p.Name].reshape(append([]int{outC}, ones(k)...))
	if !epi.tryFuse(opExpr("add", inExpr(), leafExpr(0)), []View{bv}) {
		return fmt.Errorf("bias %s does not broadcast to %s", shapeStr(bv.Shape), shapeStr(out.Shape))
	}
	return nil
}

func lowerConv(l *lowerer, n *graph.Node) error {
	x, err := convInput(l, n)
	if err != nil {
		return err
	}
	a := n.Attrs
	k := 1
	if n.Op == "conv2d" {
		k = 2
	}
	kernel, stride, pad, dil := a.Ints("kernel_size"), a.Ints("stride"), a.Ints("padding"), a.Ints("dilation")
	outShape := n.Output().Shape
	batched, batch, inC, outC := convLayout(x.Shape, outShape, k)
	spatial := x.Shape[len(x.Shape)-k:]
	outSpatial := outShape[len(outShape)-k:]
	groups := a.Int("groups")
	g := &convGroup{batch: batch, groups: groups, cg: inC / groups, ocg: outC / groups, diag: 1}
	if k == 1 {
		g.h, g.wd, g.oh, g.ow = 1, spatial[0], 1, outSpatial[0]
		g.kh, g.kw = 1, kernel[0]
		g.sh, g.sw, g.ph, g.pw, g.dh, g.dw = 1, stride[0], 0, pad[0], 1, dil[0]
	} else {
		g.h, g.wd, g.oh, g.ow = spatial[0], spatial[1], outSpatial[0], outSpatial[1]
		g.kh, g.kw = kernel[0], kernel[1]
		g.sh, g.sw, g.ph, g.pw, g.dh, g.dw = stride[0], stride[1], pad[0], pad[1], dil[0], dil[1]
	}
	if l.opts.Device.Caps.HostThreads && g.pointwise() && groups == 1 && g.h*g.wd == 1 {
		return lowerConvAsMatmul(l, n, x, batched, batch, inC, outC, k)
	}
	// conv_flat.py reads a pointwise convolution's input planes in place (g.direct)
	pointwiseFlat := l.opts.Device.Caps.HostThreads && convFlatKernel && g.pointwise() && !(groups == inC && groups > 1)
	var scaled group // the squeeze-excite mul this convolution applies itself (channelScaleFor)
	if n.Op == "conv2d" && pointwiseFlat {
		if mul, xs, s, ok := l.channelScaleFor(n, x); ok {
			scaled, x, g.scale = mul, xs, &s
		}
	}
	g.w = l.values[n.Param("weight").Name]
	if l.opts.Device.Caps.HostThreads && g.patchEmbedding() {
		if w, ok := g.w.reshape(append([]int{outC, inC * g.kh * g.kw}, make1s(k)...)); ok {
			x, g.w = l.patchesAsChannels(x, n, g, k), w
			inC = g.cg
			l.notes[g] = append(l.notes[g], "patch embedding (kernel == stride): patches copied as channels, then a pointwise GEMM")
		}
	}
	if pointwiseFlat && batched && k == 2 && densePlanes(x) {
		// any channel and sample strides (a channel slice of a wider tensor: ShuffleNet's
		// chunk), no copy
		g.x, g.xCStride, g.xBStride = x, x.Strides[1], x.Strides[0]
	} else {
		g.x = l.contiguous(x, n)
		g.xCStride = g.h * g.wd
		g.xBStride = inC * g.xCStride
	}
	out := l.newOutput(n.Name, outShape, n.Output().DType)
	g.groupBase = groupBase{nodes: []string{n.Name}, ops: []string{n.Op}, out: out}
	g.depthwise = convDirectDepthwise && groups == inC && groups > 1
	g.flat = convFlatKernel && l.opts.Device.Caps.HostThreads && !(g.pointwise() && g.depthwise)
	if g.depthwise && g.flat && convDepthwiseBlocks {
		g.flat = false
		g.cropDeadTaps(l)
		pad := g.padGeometry()
		g.chanBlock = depthwiseChannelBlock(outC, (g.oh-1)*pad.wp+g.ow)
	}
	if g.flat && !g.depthwise {
		if d := g.mergedGroups(); d > 1 {
			l.notes[g] = append(l.notes[g], fmt.Sprintf("%d groups of %d channels run as %d of %d over a block-diagonal weight (zeros between the groups): whole dot tiles, %dx fewer programs", groups, g.cg, groups/d, d*g.cg, d))
			g.diag, g.groups, g.cg, g.ocg = d, groups/d, d*g.cg, d*g.ocg
		}
	}
	if g.flat && !g.depthwise && convGroupedBlocks && g.groupedBlocksPayOff() {
		g.flat, g.groupBlock = false, depthwiseChannelBlock(groups, depthwiseBlocksMaxTile) // (blocks of up to 64: conv_grouped.py's lanes)
	}
	chBound := "OCG"
	switch {
	case g.depthwise && g.flat:
		l.notes[g] = append(l.notes[g], "depthwise: per-tap multiply-adds over zero-padded planes (conv_flat.py), no GEMM over 1-channel groups")
	case g.chanBlock > 0:
		chBound = "OC"
		l.notes[g] = append(l.notes[g], fmt.Sprintf("depthwise: per-tap multiply-adds of contiguous [pixels, %d channels] tiles of the input copied in channel blocks (conv_dw_blocks.py)", g.chanBlock))
	case g.depthwise:
		chBound = "OC"
		l.notes[g] = append(l.notes[g], "depthwise: direct kernel, no GEMM over 1-channel groups")
	case g.groupBlock > 0:
		chBound = "GROUPS"
		l.notes[g] = append(l.notes[g], fmt.Sprintf("%d groups of %d channels: per-tap multiply-adds of contiguous [pixels, %d groups] tiles of the input copied in group blocks, a lane per group (conv_grouped.py)", groups, g.cg, g.groupBlock))
	}
	g.rows = !g.depthwise && g.groupBlock == 0 && convRowKernel && (convRowAlways || g.rowWidth() >= convRowMinWidth && g.rowStepsPayOff())
	// (one tap, as a 1x1 stride-2 shortcut: its columns would be a second copy of the phase
	// plane it reads, costing more than the weight's second read saves; measured)
	g.cols = g.flat && convColsKernel && n.Op == "conv2d" && !g.depthwise && groups == 1 && g.kh*g.kw > 1 &&
		(g.oh*g.ow <= convColsMaxPixels || inC*g.kh*g.kw <= convColsMaxK && !g.strided()) && g.scale == nil
	if g.flat {
		g.rows = false
		switch {
		case g.pointwise():
			// a pointwise GEMM reads its input planes as they are (no border to pad), and
			// may store the next convolution's padded planes
			g.direct = true
			g.hp, g.wp, g.phh, g.phw = g.h, g.wd, 1, 1
		case g.takePaddedInput(l, n.Inputs[0].Name, inC), g.takePaddedCopy(l, n.Inputs[0].Name, inC), g.takePooledInput(l, n.Inputs[0].Name, inC),
			g.sharePhases(l, inC):
		default:
			g.padInput(l, n.Name, inC)
		}
		if g.cols {
			g.colsInput(l, n.Name, inC)
		}
	}
	switch {
	case g.chanBlock > 0 && g.takeBlockedInput(l, n.Inputs[0].Name, inC, outC):
	case g.chanBlock > 0 || g.groupBlock > 0:
		g.blockInput(l, n.Name, inC, outC)
	}
	if g.groupBlock > 0 {
		if err := g.groupedWeight(l, n.Name); err != nil {
			return err
		}
	}
	if g.rows || g.flat || g.chanBlock > 0 || g.groupBlock > 0 { // [channel, pixel] accumulators
		g.epi = newConvRowsEpilogue(out, batched, chBound)
		if g.folded() { // the sample is a column's: q // QS
			g.epi.vars[0], g.epi.masks[0] = "qb[None, :]", "(q[None, :] < Q)"
		}
		if g.flat && g.outPhases == nil && g.wp <= 2*g.ow && !g.foldedPlanes {
			// rp = (q // Wp) * OW + q % Wp is below P for every q < Q (a row's dropped
			// columns reach at most Wp - OW <= OW pixels into the next row): the affine
			// q < Q masks the dense operands as well, symbolic where rp < P is a gathered tile
			g.epi.masks[2] = "(q[None, :] < Q)"
		}
	} else {
		g.epi = newConvEpilogue(out, batched, chBound)
	}
	// Channels enough per group (convTapMajorMinChannels): conv_flat.py reduces tap by tap,
	// so that its input tile is channel planes at one shift (affine, read in place) rather
	// than rows gathered per k.
	// (Folded: one "tap" of every channel x tap, the weight [OC, C*KH*KW] as it lies)
	// (merged groups: only the tap-major weight is laid out block-diagonal)
	g.tapMajor = g.flat && !g.depthwise && (g.cg >= convTapMajorMinChannels || g.cols || g.diag > 1)
	if g.cols && !g.w.Contiguous() {
		return fmt.Errorf("weight %s is not contiguous", shapeStr(g.w.Shape))
	}
	if (g.rows || g.tapMajor || g.chanBlock > 0) && (g.kh*g.kw > 1 || g.cropped) && !g.cols {
		// conv_rows.py and tap-major conv_flat.py read one tap's [out, in] weight tile per step: laid out as
		// [tap, out, in], the tile is one contiguous block when it spans the group, which the
		// CPU backend reads in place (a copy of O(weights) per run, against a strided gather
		// per program and tap); conv_dw_blocks.py's per-tap channel row likewise (and its
		// live taps of a cropped kernel, whatever their number).
		if !g.w.Contiguous() && !g.cropped {
			return fmt.Errorf("weight %s is not contiguous", shapeStr(g.w.Shape))
		}
		// "#" like the other internal values (name#copy): "<node>.weight" may be a parameter,
		// e.g. the weight of node k reused by node k_1, which would then read this copy as it
		name := n.Name + "#weight"
		wg := &convWeightGroup{w: g.w, oc: outC, cg: g.cg / g.diag, taps: g.kh * g.kw, diag: g.diag, ocg: g.ocg / g.diag, cropped: g.cropped}
		what := " (weight as [tap, out, in])"
		if g.diag > 1 {
			what = fmt.Sprintf(" (weight as [tap, out, in], block-diagonal over %d groups)", g.diag)
		}
		wg.groupBase = groupBase{nodes: []string{n.Name + what}, ops: []string{"relayout"},
			out: l.newOutput(name, []int{g.kh * g.kw, outC, g.cg}, g.w.DType)}
		l.addGroup(wg, name)
		g.w = wg.out
	}
	if err := fuseConvBias(l, n, g.epi, out, outC, k); err != nil {
		return err
	}
	if scaled != nil {
		if !g.direct {
			return fmt.Errorf("internal error: the channel scale of %s went to a convolution that does not read its input directly", scaled.base().nodes[0])
		}
		l.takePlace(scaled, g, n.Name)
		return nil
	}
	l.addGroup(g, n.Name)
	return nil
}

// channelScaleFor finds a squeeze-excite scale in front of pointwise convolution n: its input
// v is the value of a pending element-wise group that is one mul of a dense [B, C, H, W]
// tensor x by a per-(sample, channel) s [B or 1, C, 1, 1], read by n alone. The convolution
// then reads x and scales its weight tiles' input channels (or its input tiles' rows) by s
// instead, taking the mul's place in the launch order (x and s are ready there); the mul
// kernel and the scaled tensor disappear. Where the scaled tensor has other readers the mul
// stays a kernel.
func (l *lowerer) channelScaleFor(n *graph.Node, v View) (mul group, x, s View, ok bool) {
	if n.Inputs[0].Kind != graph.TensorOperand {
		return nil, View{}, View{}, false
	}
	eg, isEW := l.fusable(n.Inputs[0].Name).(*ewGroup)
	if !isEW || len(eg.ops) != 1 || eg.ops[0] != "mul" || eg.out.Buf != v.Buf || eg.out.Offset != v.Offset || !v.Contiguous() {
		return nil, View{}, View{}, false
	}
	e := eg.epi
	if e.root == nil || e.root.op != "mul" || len(e.root.args) != 2 || len(e.leaves) != 2 || len(v.Shape) < 3 {
		return nil, View{}, View{}, false
	}
	// the scale: 1 past the channel dim (dim -3: [.., C, H, W]), the channel dim C; the
	// scaled tensor: v's own shape, dense
	scaleOf := func(t View) bool {
		r, c := len(t.Shape), len(v.Shape)-3
		if r != len(v.Shape) || t.Shape[c] != v.Shape[c] || t.DType != graph.Float32 {
			return false
		}
		for d := range t.Shape {
			if d != c && t.Shape[d] != 1 && (d > c || t.Shape[d] != v.Shape[d]) {
				return false
			}
		}
		return true
	}
	for i, a := range e.root.args {
		b := e.root.args[1-i]
		if a.op != exprLeaf || b.op != exprLeaf {
			return nil, View{}, View{}, false
		}
		xv, sv := e.leaves[a.leaf].view, e.leaves[b.leaf].view
		if !slices.Equal(xv.Shape, v.Shape) || !xv.Contiguous() || xv.DType != graph.Float32 || !scaleOf(sv) {
			continue
		}
		fused, reason := l.decideFusion([]string{"mul", n.Op}, eg.out, eg.ops, n.Op)
		if !fused {
			l.notes[eg] = append(l.notes[eg], fmt.Sprintf("%s not applied by %s: %s", eg.nodes[0], n.Name, reason))
			return nil, View{}, View{}, false
		}
		eg.fused = append(eg.fused, fmt.Sprintf("%s applied by %s to the weight or input tiles it loads (W (x * s) = (W s) x: no mul kernel, no scaled tensor): %s", eg.nodes[0], n.Name, reason))
		return eg, xv, sv, true
	}
	return nil, View{}, View{}, false
}

// scaleArgs address the channel scale s [B or 1, C, 1, 1] (or unbatched [C, 1, 1]) by
// model, sample and input channel.
func (g *convGroup) scaleArgs() []LaunchArg {
	s := *g.scale
	c := len(s.Shape) - 3
	bs := 0
	if c > 0 && s.Shape[0] > 1 {
		bs = s.Strides[0]
	}
	return append(ptrArgs("s", s), intArg("s_bstride", bs), intArg("s_cstride", s.Strides[c]))
}

// patchEmbedding reports a convolution whose windows tile the image without overlap or
// gaps (kernel == stride, no padding, one group): ViT's and MLP-Mixer's patch embedding.
// On the strided path each stride phase holds one pixel per patch, a dot of a few channels
// per tap; copying each patch's pixels into channels first makes it one pointwise GEMM over
// all of a patch's values. Over many channels the strided path's dots are long already and
// its phase copy beats this copy's gather (ConvNeXt's 96-channel 2x2 downsampling: 1.3-1.5x
// slower as patches).
func (g *convGroup) patchEmbedding() bool {
	return g.groups == 1 && g.cg <= convPatchMaxChannels && g.kh*g.kw > 1 &&
		g.sh == g.kh && g.sw == g.kw && g.ph == 0 && g.pw == 0 && (g.dh == 1 || g.kh == 1) && (g.dw == 1 || g.kw == 1)
}

// patchesAsChannels copies the patches of x ([B, C, *spatial] or unbatched) to
// [B, C*KH*KW, *outSpatial] (a tap's channel is c*KH*KW + i*KW + j, the weight's own order;
// rows and columns past the last whole patch are dropped, as the convolution drops them)
// and turns g into the pointwise convolution over them.
func (l *lowerer) patchesAsChannels(x View, n *graph.Node, g *convGroup, k int) View {
	lead, sp := len(x.Shape)-k, x.Strides[len(x.Shape)-k:]
	v := x
	v.Shape, v.Strides = append([]int(nil), x.Shape[:lead]...), append([]int(nil), x.Strides[:lead]...)
	taps, out := []int{g.kw}, []int{g.ow}
	if k == 2 {
		taps, out = []int{g.kh, g.kw}, []int{g.oh, g.ow}
	}
	v.Shape = append(append(v.Shape, taps...), out...)
	v.Strides = append(v.Strides, sp...)
	for d, s := range sp {
		v.Strides = append(v.Strides, s*taps[d])
	}
	p := l.materialize(v, n.Name+".patches", []string{n.Name + " (patches as channels)"})
	g.cg *= g.kh * g.kw
	p, _ = p.reshape(append(append(append([]int(nil), x.Shape[:lead-1]...), g.cg), out...)) // contiguous: always
	g.h, g.wd = g.oh, g.ow
	g.kh, g.kw, g.sh, g.sw, g.dh, g.dw = 1, 1, 1, 1, 1, 1
	return p
}

// convPatchMaxChannels is the most input channels a patch embedding runs as patches with:
// images (3 channels) and up to 16 channels measured faster that way, 32 as fast, 48 and 96
// slower.
const convPatchMaxChannels = 16

// make1s is k ones: a weight's 1x1 kernel dims.
func make1s(k int) []int {
	s := make([]int, k)
	for i := range s {
		s[i] = 1
	}
	return s
}

// newConvEpilogue addresses the output [B, C, *spatial] (or [C, *spatial]) by the kernel's
// sample index, global output channel and flat output pixel; chBound names the kernel's bound
// of the channel tile index rn.
func newConvEpilogue(out View, batched bool, chBound string) *epilogue {
	r := len(out.Shape)
	nb := 0
	if batched {
		nb = 1
	}
	return &epilogue{shape: out.Shape,
		axes:  [][2]int{{0, nb}, {nb, nb + 1}, {nb + 1, r}},
		vars:  []string{"bidx", "oc_g[None, :]", "rp[:, None]"},
		masks: []string{"", "(rn[None, :] < " + chBound + ")", "(rp[:, None] < P)"}}
}

// newConvRowsEpilogue is newConvEpilogue for conv_rows.py, whose accumulator is
// [BLOCK_OC, BLOCK_P] (channels on the first axis).
func newConvRowsEpilogue(out View, batched bool, chBound string) *epilogue {
	e := newConvEpilogue(out, batched, chBound)
	e.vars = []string{"bidx", "oc_g[:, None]", "rp[None, :]"}
	e.masks = []string{"", "(rn[:, None] < " + chBound + ")", "(rp[None, :] < P)"}
	return e
}

// pointwise reports a 1x1 convolution with unit stride and no padding: a plain GEMM over
// the flat pixels, which conv_rows.py runs as one row of H*W pixels.
func (g *convGroup) pointwise() bool {
	return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0
}

// rowGeometry is the (H, W, OH, OW) conv_rows.py runs with: the real ones, or one row of
// all pixels for a pointwise convolution.
func (g *convGroup) rowGeometry() (h, w, oh, ow int) {
	if g.pointwise() {
		return 1, g.h * g.wd, 1, g.oh * g.ow
	}
	return g.h, g.wd, g.oh, g.ow
}

func (g *convGroup) rowWidth() int { _, _, _, ow := g.rowGeometry(); return ow }

// rowStepsPayOff: conv_rows.py runs one dot per (tap, channel block), so with only a few
// input channels per group its steps are small and only pay for wide tiles. Measured on the
// CPU: 3 -> 32 channels, 32 pixels wide, rows 1.6x faster than conv.py; 3 -> 16 channels, 16
// wide, 1.6x slower (examples/classifier).
func (g *convGroup) rowStepsPayOff() bool {
	return g.cg >= 16 || g.ocg*g.rowWidth() >= 1024
}

type convData struct {
	Fn              string
	Header          []string
	Epilogue        []loadLine
	EpilogueArgs    []string
	ExtraArgs       []string
	Body            []string
	TapMajor        bool // conv_flat.py: reduce tap by tap over the weight as [tap, OC, CG]
	PaddedStore     bool // conv_flat.py: the output's padded planes are as wide as the input's, or the output is dense and q its pixel (Wp == OW)
	EvenK           bool // conv_flat.py tap-major: BLOCK_K divides the channels (no k mask)
	Strided         bool // conv_flat.py: the input comes as phase planes
	Depthwise       bool // conv_flat.py: per-tap multiply-adds of one input plane per channel, no dot
	Pointwise       bool // conv_flat.py: a 1x1 convolution over the input's own planes (g.direct): one loop over the channels
	PhaseStore      bool // conv_flat.py pointwise: store the output as the stride phase planes of the next, strided convolution (takePhasedInput)
	BlockStore      bool // conv_flat.py pointwise: store the output in the channel blocks of the next, depthwise convolution (takeBlockedInput)
	DenseStore      bool // conv_flat.py PaddedStore: every column of the tile is an output pixel (Wp == OW): no border zeros to write, q is the pixel
	QMask           bool // conv_flat.py: mask the last pixel tile's dead columns (flatQMask)
	RowTiles        bool // conv_flat.py: pixel tiles start on a padded row, TILE_Q pixels apart (rowTileQ)
	Scale           bool // conv_flat.py: scale the weight tile's input channels by s (channelScaleFor)
	ScaleInput      bool // ... by scaling the input tile's rows instead (it is the smaller: bn channels against the live pixels)
	CopyStore       bool // conv_flat.py: store a zero-padded copy of the output too (takePaddedCopy)
	CopyPaddedStore bool // ... whose planes are as wide as this convolution's padded input
	HalfProducts    bool // conv_flat.py and conv_dw_blocks.py depthwise: fp16/bf16 tiles, multiplied in fp32
	Phases          bool // conv_pad.py: write phase planes for a strided convolution
	PlaneTiles      bool // conv_pad.py Phases: a plane a program, as [row, column] tiles
	Blocks          bool // conv_pad.py: write channel blocks, channels last (conv_dw_blocks.py)
	Mult            bool // conv_pad.py Blocks: output channels read input channel c // MULT
	Grouped         bool // conv_pad.py Blocks: a block holds one in-group channel of BLOCK_PL groups (conv_grouped.py)
	Folded          bool // conv_flat.py: over the columns of conv_cols.py, the samples folded into the pixels
	FoldedPlanes    bool // conv_flat.py Folded: over padded planes [channel, sample] (foldSamples), QS a band: its rows past the output masked
	SamplesInner    bool // conv_flat.py pointwise: the grid's samples on axis 0, a weight tile's programs consecutive (flatSamplesInner)
	Merged          bool // conv_flat.py tap-major: each group is g.diag narrow ones over a block-diagonal weight (mergedGroups)
	OneBlock        bool // conv_flat.py tap-major: a group's channels are one block, no channel loop (oneChannelBlock)
	StaticTaps      bool // conv_flat.py OneBlock: the taps unrolled (staticTaps)
	Cropped         bool // conv_weight.py: the weight is a convolution weight's live taps (cropDeadTaps), read through its strides

	Outs []int // conv_grouped.py: the output channels of a group, 0 .. OCG-1 (an accumulator each)
}

// heuristicBlocks is the built-in tile choice of the implicit GEMM (the default tunables
// candidate, tunables.go).
// For conv_rows.py BLOCK_P tiles one output row and BLOCK_K the input channels of one tap.
func (g *convGroup) heuristicBlocks() (bp, boc, bk int) {
	if g.flat {
		// a whole group's channels per step (the weight tile is then one block), output
		// channels and pixels split where the cores balance (spreadOverCores); up to 512
		// pixels a tile, as the taps' products are summed in registers (jit/cpu's panels)
		// whatever the tile, and a program's fixed costs (epilogue steps, its partial last
		// tile: 286 pixels of a 16x16 image were a 256 and a 30 tile) count per tile
		ocg, _ := g.flatChannels()
		// few pixels (the 3x3 images of a ResNet's last stage): more output channels a tile,
		// so that each dot step is large enough to pay for itself
		bp0 := clamp(nextPow2(g.gemmPixels()), 16, convFlatMaxBlockP)
		bp, boc := g.spreadOverCores(bp0, clamp(nextPow2(ocg), 16, max(64, 4096/bp0)),
			g.gemmPixels(), ocg, g.flatSamples()*g.residues(), g.cg*g.kh*g.kw)
		if g.scaledSmallMap(bp0) {
			bp, boc = bp0, clamp(nextPow2(ocg), 16, convScaledMaxBlockOC)
		}
		// an input tile of at most 16K elements (64 KB, within a core's L2 share, and within
		// a GPU's shared memory with the weight tile: the kernel must assemble there too)
		return bp, boc, clamp(nextPow2(g.kExtent()), 16, max(16, min(256, 16384/bp)))
	}
	if g.rows {
		return clamp(nextPow2(g.rowWidth()), 16, 64), clamp(nextPow2(g.ocg), 16, 64), clamp(nextPow2(g.cg), 16, 64)
	}
	return clamp(nextPow2(g.oh*g.ow), 16, 64), clamp(nextPow2(g.ocg), 16, 64), clamp(nextPow2(g.cg*g.kh*g.kw), 16, 64)
}

// scaledSmallMap reports a pointwise convolution applying a squeeze-excite scale (g.scale)
// to a map of one pixel tile of at most convScaledMaxPixels (RegNet's 6x6 and 3x3 stages):
// it takes every output channel in one tile and scales its input tile (ScaleInput), once
// per sample, rather than each weight tile per sample: the weight (channels x channels) is
// many times the input (channels x pixels) there. Only where the samples alone give each
// core two programs (bench/results/pointwise.md).
func (g *convGroup) scaledSmallMap(bp int) bool {
	return g.scale != nil && g.direct && !g.cols && g.gemmPixels() <= min(bp, convScaledMaxPixels) &&
		g.flatSamples()*g.models >= 2*g.cores
}

// convScaledMaxPixels and convScaledMaxBlockOC bound scaledSmallMap: a 6x6 map's 36 pixels
// in a 64 tile, and output channel tiles of up to 512 (a tile's rows past the channels are
// never stored, so the CPU executor skips them).
const (
	convScaledMaxPixels  = 64
	convScaledMaxBlockOC = 512
)

// flatPixels is Q, the flat padded pixels conv_flat.py computes: every output row Wp wide
// but the last, whose columns past OW would only be dropped (a 1-d convolution's 256 outputs
// padded to 258 were a 512-pixel tile, half of it dead).
func (g *convGroup) flatPixels() int {
	return (g.oh-1)*g.wp + g.ow
}

// gemmPixels is the pixels of conv_flat.py's GEMM: Q, or every sample's when Folded, or a
// column residue's with PhaseStore.
func (g *convGroup) gemmPixels() int {
	if g.cols {
		return g.batch * g.flatPixels()
	}
	if g.foldedPlanes {
		return (g.batch-1)*g.hp*g.wp + g.flatPixels()
	}
	if ph := g.outPhases; ph != nil {
		return g.oh * (g.ow / ph.sw)
	}
	return g.flatPixels()
}

// residues is the column residues conv_flat.py's pixels run by (PhaseStore), else 1.
func (g *convGroup) residues() int {
	if ph := g.outPhases; ph != nil {
		return ph.sw
	}
	return 1
}

// colsStride is how far apart the rows of the Folded form's columns lie: every sample's
// pixels rounded up to a power of two, so that no pixel tile (BLOCK_P <= nextPow2 of them) is
// wider than a row and the GEMM's input tiles are strided views whose rows do not overlap,
// which the CPU executor reads in place (and queues: jit/cpu's far-row dots); the columns past
// the pixels are never written, read only into accumulator columns never stored.
func (g *convGroup) colsStride() int { return nextPow2(g.gemmPixels()) }

// flatSamples is the grid's (sample x group) axis of conv_flat.py: the groups alone when
// Folded.
func (g *convGroup) flatSamples() int {
	_, groups := g.flatChannels()
	if g.folded() {
		return groups
	}
	return g.batch * groups
}

// folded reports conv_flat.py's Folded form: the samples side by side in the pixels, over the
// columns (cols) or the padded planes laid out [channel, sample] (foldedPlanes).
func (g *convGroup) folded() bool { return g.cols || g.foldedPlanes }

// flatQMask reports whether conv_flat.py masks the pixels past Q (q of them, in tiles of bp
// starting step apart; Folded: every sample's, the columns' slack up to the tile computed
// otherwise).
// Through tl.dot (dot), the micro-kernel then computes the live columns alone, at the cost of
// a finiteness scan of the weight tile a step (extent.go: about one column's work), while a
// whole tile computes every dead column at full cost (the 286 pixels of a 16x16 image in a
// 512 tile were 1.8x the work; bench/results/zoo_conv.md):
// masked once a vector (16) of columns is dead. Depthwise (no dot) keeps the rule measured
// for it: masked when the dead columns are most of the last tile (a 64-pixel rest of 512).
func flatQMask(q, bp, step int, dot bool) bool {
	dead := (cdiv(q, step)-1)*step + bp - q
	if dot {
		return dead >= 16
	}
	return dead > bp-dead
}

// rowTileQ is how far apart conv_flat.py's pixel tiles of bp start: bp, or a whole number of
// padded rows (RowTiles) where the output rows have dead columns after them (Wp > OW) and
// span more than one tile, so that every tile starts on a row. jit/cpu then cuts each tile's
// rows into strips of live columns alone (panels.go planPairStrips); a tile starting mid-row
// leaves a piece of a row at its end, which no strip fits. The tile's columns past its rows
// are masked from the stores (and computed only by plain strips). Not where whole rows
// would take more tiles than bp-pixel ones, nor on the forms with tiles of their own
// (Folded, PhaseStore, channel-block stores) or without a dot (depthwise).
func (g *convGroup) rowTileQ(bp int) int {
	q := g.flatPixels()
	if g.folded() || g.outPhases != nil || g.outBlock > 0 || g.depthwise || g.direct || g.wp <= g.ow || g.wp > bp || q <= bp {
		return bp
	}
	tq := bp / g.wp * g.wp
	if cdiv(q, tq) > cdiv(q, bp) {
		return bp
	}
	return tq
}

// flatChannels is the (output channels per group, groups) conv_flat.py runs with: a depthwise
// convolution's channel tile spans every group (one group's MULT channels would fill a
// 16-row tile with one).
func (g *convGroup) flatChannels() (ocg, groups int) {
	if g.depthwise {
		return g.ocg * g.groups, 1
	}
	return g.ocg, g.groups
}

// kExtent is the reduction length of one tl.dot step sequence: the channels of a group when
// tap-major, else channels x taps.
func (g *convGroup) kExtent() int {
	if g.tapMajor && !g.cols {
		return g.cg
	}
	return g.cg * g.kh * g.kw
}

func (g *convGroup) emit(l *lowerer) (*Launch, error) {
	if g.chanBlock > 0 {
		return g.emitDepthwiseBlocks(l)
	}
	if g.groupBlock > 0 {
		return g.emitGrouped(l)
	}
	if g.depthwise && !g.flat {
		return g.emitDepthwise(l)
	}
	if g.flat {
		return g.emitFlat(l)
	}
	if g.rows {
		return g.emitRows(l)
	}
	p := g.oh * g.ow
	ktot := g.cg * g.kh * g.kw
	return g.implicitGEMM(l, "conv.py", "oc_g[None, :] * P + rp[:, None]", p, func(bp, tilesOC int) ([]LaunchArg, int) {
		return []LaunchArg{intArg("H", g.h), intArg("W", g.wd), intArg("OW", g.ow), intArg("P", p),
			intArg("OCG", g.ocg), intArg("KTOT", ktot), intArg("KW", g.kw), intArg("KHW", g.kh*g.kw),
			intArg("CG", g.cg), intArg("GROUPS", g.groups),
			intArg("stride_h", g.sh), intArg("stride_w", g.sw), intArg("pad_h", g.ph), intArg("pad_w", g.pw),
			intArg("dil_h", g.dh), intArg("dil_w", g.dw), intArg("tiles_oc", tilesOC)}, cdiv(p, bp) * tilesOC
	})
}

// implicitGEMM renders one of the implicit-GEMM convolution templates (conv.py,
// conv_rows.py, conv_flat.py): the arguments every one takes (input, weight, output and the
// epilogue's, whose store offset within a model and sample is cOffs), then the template's
// own geometry and its count of (pixel tile x channel tile) programs, given the chosen
// BLOCK_P and the number of channel tiles, then the epilogue's extras.
func (g *convGroup) implicitGEMM(l *lowerer, tmpl, cOffs string, p int, geometry func(bp, tilesOC int) ([]LaunchArg, int)) (*Launch, error) {
	fn := kernelName(g.index, g.ops)
	sample := "bidx"
	if g.folded() {
		sample = "qb[None, :]"
	}
	re, err := g.epi.render("acc", "cmask", "tl.float32", "(model + model_base) * c_mstride + "+sample+" * c_bstride + "+cOffs, "e")
	if err != nil {
		return nil, err
	}
	bp, bn, bk := g.blocks() // the chosen tunables, else heuristicBlocks
	ocg, samples := g.ocg, g.batch*g.groups
	if tmpl == "conv_flat.py" {
		ocg, _ = g.flatChannels()
		samples = g.flatSamples()
	}
	tilesOC := cdiv(ocg, bn)
	geo, programs := geometry(bp, tilesOC)
	tileQ := bp
	if tmpl == "conv_flat.py" {
		tileQ = g.rowTileQ(bp)
	}
	samplesInner := tmpl == "conv_flat.py" && flatSamplesInner(g.direct && !g.cols, samples, programs, tilesOC)
	var args []LaunchArg
	args = append(args, ptrArgs("x", g.x)...)
	args = append(args, intArg("x_bstride", g.xBStride), intArg("x_cstride", g.xCStride))
	args = append(args, ptrArgs("w", g.w)...)
	if g.scale != nil {
		args = append(args, g.scaleArgs()...)
	}
	args = append(args, ptrArgs("c", g.out)...)
	strided := tmpl == "conv_flat.py" && g.strided() && !g.cols
	if tmpl == "conv_flat.py" {
		// the output's planes, rows and first pixel (dense, or padded for the next convolution)
		cs, rs := p, g.ow
		bs := g.ocg * g.groups * cs
		switch o := g.outPad; {
		case g.outBlock > 0: // blocks of channels last
			cs, rs = o.hp*o.wp*g.outBlock, o.wp
			if ph := g.outPhases; ph != nil {
				cs *= ph.phh * ph.phw
			}
			bs = cdiv(g.ocg*g.groups, g.outBlock) * cs
		case g.outPhases != nil:
			cs, rs = g.outPhases.phh*g.outPhases.phw*o.hp*o.wp, o.wp
			bs = g.ocg * g.groups * cs
		case o.hp > 0 && o.channelMajor:
			cs, rs, bs = g.batch*o.hp*o.wp, o.wp, o.hp*o.wp
		case o.hp > 0:
			cs, rs, bs = o.hp*o.wp, o.wp, g.ocg*g.groups*o.hp*o.wp
		case len(g.out.Shape) == 4: // [B, C, H, W], dense planes, maybe a slice of a cat (convStoresInto)
			bs, cs, rs = g.out.Strides[0], g.out.Strides[1], g.out.Strides[2]
		}
		args = append(args, intArg("c_bstride", bs), intArg("c_cstride", cs), intArg("c_rstride", rs), intArg("c_off", g.outPad.off))
		if pc := g.padCopy; pc != nil {
			plane := pc.pad.hp * pc.pad.wp
			args = append(args, ptrArgs("p", pc.out)...)
			args = append(args, intArg("p_bstride", g.ocg*g.groups*plane), intArg("p_cstride", plane), intArg("p_rstride", pc.pad.wp), intArg("p_off", pc.pad.off))
		}
	} else {
		args = append(args, intArg("c_bstride", g.ocg*g.groups*p))
	}
	args = append(args, re.args...)
	args = append(args, geo...)
	args = append(args, re.extra...)
	d := convData{Fn: fn, Header: header(g.nodes, g.ops), Epilogue: re.loads,
		EpilogueArgs: argNames(re.args), ExtraArgs: argNames(re.extra), Body: re.body, TapMajor: g.tapMajor,
		PhaseStore: g.outPhases != nil, BlockStore: g.outBlock > 0,
		PaddedStore: !g.folded() && g.outPhases == nil && g.outBlock == 0 && (g.outPad.hp > 0 && g.outPad.wp == g.wp || g.outPad.hp == 0 && g.wp == g.ow), EvenK: (g.tapMajor || g.direct) && g.kExtent()%bk == 0, Strided: strided,
		Depthwise: tmpl == "conv_flat.py" && g.depthwise, Pointwise: tmpl == "conv_flat.py" && g.direct,
		DenseStore: tmpl == "conv_flat.py" && !g.folded() && g.outPad.hp == 0 && g.wp == g.ow && g.padCopy == nil, Scale: g.scale != nil, ScaleInput: g.scale != nil && bn > min(bp, g.gemmPixels()), CopyStore: g.padCopy != nil,
		CopyPaddedStore: !g.folded() && g.padCopy != nil && g.padCopy.pad.wp == g.wp, QMask: tmpl == "conv_flat.py" && (!g.folded() && (g.direct || flatQMask(g.flatPixels(), bp, tileQ, !g.depthwise)) || g.folded() && flatQMask(g.gemmPixels(), bp, bp, true)),
		RowTiles:     tileQ != bp,
		HalfProducts: g.depthwise && g.x.DType != graph.Float32, Folded: g.folded(), FoldedPlanes: g.foldedPlanes, Merged: tmpl == "conv_flat.py" && g.diag > 1,
		SamplesInner: samplesInner}
	consts := map[string]any{"BLOCK_P": int64(bp), "BLOCK_OC": int64(bn), "BLOCK_K": int64(bk)}
	if tmpl == "conv_flat.py" && g.oneChannelBlock(bk) {
		d.OneBlock, d.StaticTaps = true, g.staticTaps(bn, d.QMask)
		consts["TAPS"], consts["TAPS_W"] = int64(g.kh*g.kw), int64(g.kw)
	}
	text, err := templates.Render(tmpl, d)
	if err != nil {
		return nil, err
	}
	grid := [3]int{programs, samples, l.n}
	if samplesInner {
		grid = [3]int{samples, programs, l.n}
	}
	return &Launch{
		Kernel:    l.dotKernel(tmpl, fn, text, consts),
		Grid:      grid,
		ModelAxis: 2,
		Args:      args,
	}, nil
}

// oneChannelBlock reports whether tap-major conv_flat.py reduces a group's channels in one
// block of bk (OneBlock: the tap loop alone, no channel loop inside it): grouped
// convolutions of more than one tap (a pointwise one runs its own form), whose programs are
// small (a group's 8-64 channels, often a small map's pixels), so that the loops' and index
// steps are a large part of each.
func (g *convGroup) oneChannelBlock(bk int) bool {
	return g.tapMajor && !g.cols && !g.direct && g.groups*g.diag > 1 && g.kExtent() == bk && g.scale == nil
}

// staticTaps reports whether OneBlock unrolls its taps (StaticTaps): where the accumulator
// tile (bn channels, qmask: its last pixels masked) has no dead rows and fewer dead columns
// than a vector. Unrolled, a tap's offsets are constants and its steps the two loads and the
// dot; but jit/cpu skips an accumulator's dead rows and columns only in a loop (observed.go),
// so a tile with many of them keeps the loop (regnet_x's 12x12 map measured slower unrolled,
// its 3x3 map, 27 of 32 pixels live, faster: bench/results/regnet.md).
func (g *convGroup) staticTaps(bn int, qmask bool) bool {
	ocg, _ := g.flatChannels()
	return ocg%bn == 0 && !qmask && g.kh*g.kw <= convStaticTapsMax
}

// convStaticTapsMax bounds the taps StaticTaps unrolls: a 3x3 kernel's.
const convStaticTapsMax = 9

// flatSamplesInner: a pointwise conv_flat.py launch whose samples each fit one pixel tile (the
// small maps of a network's last stages, where the weight is most of what a program reads)
// numbers its programs sample fastest, so that a worker runs a weight tile's samples one after
// another and reads it from memory once (SamplesInner).
func flatSamplesInner(pointwise bool, samples, programs, tilesOC int) bool {
	return convSamplesInner && pointwise && samples > 1 && programs == tilesOC
}

func (g *convGroup) emitRows(l *lowerer) (*Launch, error) {
	h, w, oh, ow := g.rowGeometry()
	p := oh * ow
	return g.implicitGEMM(l, "conv_rows.py", "oc_g[:, None] * P + rp[None, :]", p, func(bp, tilesOC int) ([]LaunchArg, int) {
		tilesOW := cdiv(ow, bp)
		return []LaunchArg{intArg("H", h), intArg("W", w), intArg("OW", ow), intArg("P", p),
			intArg("OC", g.ocg*g.groups), intArg("OCG", g.ocg), intArg("KH", g.kh), intArg("KW", g.kw),
			intArg("CG", g.cg), intArg("GROUPS", g.groups),
			intArg("stride_h", g.sh), intArg("stride_w", g.sw), intArg("pad_h", g.ph), intArg("pad_w", g.pw),
			intArg("dil_h", g.dh), intArg("dil_w", g.dw), intArg("tiles_ow", tilesOW), intArg("tiles_oc", tilesOC)}, oh * tilesOW * tilesOC
	})
}

// convWeightGroup copies a convolution weight [OC, CG, taps] to [taps, OC, CG] for
// conv_rows.py (conv_weight.py).
type convWeightGroup struct {
	groupBase
	w            View
	oc, cg, taps int
	tstride      int  // the output's tap stride: oc * cg * diag, or more (padded)
	diag, ocg    int  // block-diagonal: diag groups of ocg output channels a merged group (mergedGroups), else 0
	cropped      bool // w is a convolution weight's live taps (cropDeadTaps), read through its strides
}

func (g *convWeightGroup) emit(l *lowerer) (*Launch, error) {
	fn := kernelName(g.index, g.ops)
	var args []LaunchArg
	args = append(args, ptrArgs("w", g.w)...)
	args = append(args, ptrArgs("o", g.out)...)
	diag, ocg := max(g.diag, 1), max(g.ocg, 1)
	args = append(args, intArg("OC", g.oc), intArg("CG", g.cg), intArg("KHW", g.taps), intArg("o_tstride", max(g.tstride, g.oc*g.cg*diag)),
		intArg("O_CG", g.cg*diag), intArg("OCG", ocg), intArg("DIAG", diag))
	if g.cropped { // [OC, CG, KH, KW] or [OC, CG, KW]
		st, r := g.w.Strides, len(g.w.Shape)
		hs := 0
		if r == 4 {
			hs = st[2]
		}
		args = append(args, intArg("w_ostride", st[0]), intArg("w_cstride", st[1]), intArg("w_hstride", hs), intArg("w_wstride", st[r-1]), intArg("TKW", g.w.Shape[r-1]))
	}
	text, err := templates.Render("conv_weight.py", convData{Fn: fn, Header: header(g.nodes, g.ops), Cropped: g.cropped})
	if err != nil {
		return nil, err
	}
	bc, bt := clamp(nextPow2(g.cg), 16, 64), max(nextPow2(g.taps), 16)
	return &Launch{
		Kernel:    newKernel("conv_weight.py", fn, text, map[string]any{"BLOCK_C": int64(bc), "BLOCK_T": int64(bt)}),
		Grid:      [3]int{g.oc, 1, l.n},
		ModelAxis: 2,
		Args:      args,
	}, nil
}

func (g *convGroup) emitDepthwise(l *lowerer) (*Launch, error) {
	p := g.oh * g.ow
	outC := g.ocg * g.groups
	bp := clamp(nextPow2(p), 16, 128)
	bc := clamp(nextPow2(outC), 1, 16)
	tilesC := cdiv(outC, bc)
	return g.depthwiseLaunch(l, "conv_depthwise.py", "x_cstride", "oc_g[None, :] * P + rp[:, None]", bp, bc, cdiv(p, bp)*tilesC, []LaunchArg{
		intArg("H", g.h), intArg("W", g.wd), intArg("OW", g.ow), intArg("P", p),
		intArg("OC", outC), intArg("MULT", g.ocg), intArg("KH", g.kh), intArg("KW", g.kw),
		intArg("stride_h", g.sh), intArg("stride_w", g.sw), intArg("pad_h", g.ph), intArg("pad_w", g.pw),
		intArg("dil_h", g.dh), intArg("dil_w", g.dw), intArg("tiles_c", tilesC)})
}

// depthwiseBlocksMaxTile is the most elements of a conv_dw_blocks.py tile (16 KB, within a
// core's L1 share with the accumulator).
const depthwiseBlocksMaxTile = 4096

// emitDepthwiseBlocks runs conv_dw_blocks.py over the channel blocks blockInput laid out:
// tiles of up to 4096 elements (16 KB, within a core's L1 share with the accumulator). The
// pixels computed end at the last output pixel, not at the last row's pad columns: on the
// small maps of a network's last stages those are a large share (a 2x2 map under a 5x5
// kernel: 8 pixels of the flat numbering, not 12, so a tile of 8, not 16).
func (g *convGroup) emitDepthwiseBlocks(l *lowerer) (*Launch, error) {
	p, q := g.oh*g.ow, (g.oh-1)*g.wp+g.ow
	outC := g.ocg * g.groups
	bc := g.chanBlock
	bp := clamp(nextPow2(q), 1, min(depthwiseBlocksMaxTile/bc, convFlatMaxBlockP))
	tilesC := cdiv(outC, bc)
	geo := []LaunchArg{intArg("Wp", g.wp), intArg("OW", g.ow), intArg("OH", g.oh), intArg("Q", q), intArg("P", p), intArg("OC", outC),
		intArg("KW", g.kw), intArg("KHW", g.kh*g.kw), intArg("dil_h", g.dh), intArg("dil_w", g.dw), intArg("tiles_c", tilesC)}
	if g.strided() {
		geo = append(geo, intArg("stride_h", g.sh), intArg("stride_w", g.sw), intArg("PHW", g.phw), intArg("PLANE", g.hp*g.wp))
	}
	return g.depthwiseLaunch(l, "conv_dw_blocks.py", "x_kstride", "oc_g[:, None] * P + rp[None, :]", bp, bc, cdiv(q, bp)*tilesC, geo)
}

// depthwiseLaunch renders a depthwise or conv_grouped.py template (stored to the dense output, element cOffs of a
// model's sample) with the arguments both take (input with its sample stride and channel or
// block stride xStride, weight, output, epilogue) around its own geometry, over programs pixel
// x channel tiles per sample and model.
func (g *convGroup) depthwiseLaunch(l *lowerer, tmpl, xStride, cOffs string, bp, bc, programs int, geometry []LaunchArg) (*Launch, error) {
	fn := kernelName(g.index, g.ops)
	p := g.oh * g.ow
	re, err := g.epi.render("acc", "cmask", "tl.float32", "(model + model_base) * c_mstride + bidx * c_bstride + "+cOffs, "e")
	if err != nil {
		return nil, err
	}
	var args []LaunchArg
	args = append(args, ptrArgs("x", g.x)...)
	args = append(args, intArg("x_bstride", g.xBStride), intArg(xStride, g.xCStride))
	args = append(args, ptrArgs("w", g.w)...)
	args = append(args, ptrArgs("c", g.out)...)
	args = append(args, intArg("c_bstride", g.ocg*g.groups*p))
	args = append(args, re.args...)
	args = append(args, geometry...)
	args = append(args, re.extra...)
	d := convData{Fn: fn, Header: header(g.nodes, g.ops), Epilogue: re.loads, EpilogueArgs: argNames(re.args),
		ExtraArgs: argNames(re.extra), Body: re.body, Strided: g.strided(), HalfProducts: g.x.DType != graph.Float32, Outs: g.groupedOuts()}
	text, err := templates.Render(tmpl, d)
	if err != nil {
		return nil, err
	}
	return &Launch{
		Kernel:    newKernel(tmpl, fn, text, map[string]any{"BLOCK_P": int64(bp), "BLOCK_C": int64(bc)}),
		Grid:      [3]int{programs, g.batch, l.n},
		ModelAxis: 2,
		Args:      args,
	}, nil
}

// depthwiseChannelBlock is the channels per block of conv_dw_blocks.py's input for c channels
// whose tiles span q pixels (up to the last output pixel): the widest of 64, 32 and 16 that
// pads c by at most a half (the padding lanes compute zeros, but each block is a program row
// of both the convolution and its input copy, whose fixed steps cost more than the lanes on
// mobile networks' maps: ShuffleNet's 24 and 48 channels run as one block of 32 or 64), fewer
// for fewer channels; 128 or 256 where a tile of q pixels and that many channels still fits
// depthwiseBlocksMaxTile (EfficientNet's 4x4 and 2x2 maps, 28 and 8 pixels under a 5x5
// kernel): a program's per-tap steps (the tap's offset, the weight row's load) then serve
// more lanes, where at 64 they cost as much as the multiply-adds.
func depthwiseChannelBlock(c, q int) int {
	if c <= 16 {
		return nextPow2(c)
	}
	for _, b := range []int{256, 128, 64, 32} {
		if b > 64 && nextPow2(q)*b > depthwiseBlocksMaxTile {
			continue
		}
		if (cdiv(c, b)*b-c)*2 <= c {
			return b
		}
	}
	return 16
}

// blockInput makes the depthwise convolution read its input as conv_dw_blocks.py does: copied
// (conv_pad.py's Blocks) into the zero-padded planes of padGeometry (phase planes when
// strided), chanBlock output channels a block side by side, each output channel's input
// channel copied to it. A grouped one (groupBlock) reads it as conv_grouped.py does: the blocks
// run (group block, in-group channel ci), a block holding channel ci of groupBlock groups side
// by side. The buffer has conv_flat.py's slack, in pixels of a block.
func (g *convGroup) blockInput(l *lowerer, node string, inC, outC int) {
	pad := g.padGeometry()
	models := l.n
	if g.x.ModelStride == 0 {
		models = 1 // a shared input is copied once
	}
	xBStride := inC * g.h * g.wd
	bc := g.chanBlock
	var blocks int
	var pb *padBlocks
	var layout string
	if g.groupBlock > 0 {
		bc, blocks = g.groupBlock, cdiv(g.groups, g.groupBlock)*g.cg
		pb = &padBlocks{size: bc, oc: g.groups, cg: g.cg, xBStride: xBStride}
		layout = fmt.Sprintf("in blocks of one channel of %d groups, groups last", bc)
	} else {
		blocks = cdiv(outC, bc)
		pb = &padBlocks{size: bc, oc: outC, mult: g.ocg, xBStride: xBStride}
		layout = fmt.Sprintf("in blocks of %d channels, channels last", bc)
	}
	name := node + ".blocked"
	out := g.blockedBuffer(l, name, models, blocks, bc)
	pb.stride = g.xCStride
	pg := &convPadGroup{x: g.x, planes: g.batch * blocks, h: g.h, w: g.wd, pad: pad, models: models, blocks: pb}
	what := fmt.Sprintf(" (input zero-padded %s)", layout)
	if g.strided() {
		pg.phases = &padPhases{padH: g.ph, padW: g.pw, sh: g.sh, sw: g.sw, phh: g.phh, phw: g.phw}
		what = fmt.Sprintf(" (input zero-padded %s, as %dx%d stride phases)", layout, g.phh, g.phw)
	}
	pg.groupBase = groupBase{nodes: []string{node + what}, ops: []string{"pad"}, out: out}
	l.addGroup(pg, name)
	g.x = pg.out
}

// blockedBuffer allocates the channel blocks of padGeometry's planes blockInput lays out
// (blocks of bc channels a sample, models of them), with conv_flat.py's slack in pixels of a
// block, and sets the strides the convolution reads them with.
func (g *convGroup) blockedBuffer(l *lowerer, name string, models, blocks, bc int) View {
	phases := g.phh * g.phw
	g.xCStride = phases * g.hp * g.wp * bc
	g.xBStride = blocks * g.xCStride
	per, ms := g.batch*g.xBStride, 0
	if models > 1 {
		ms = per
	}
	b := l.newBuffer(TempBuffer, name, g.x.DType, models*per+(convFlatMaxBlockP+(g.kw-1)*g.dw)*bc)
	b.Sparse = true // only the interior is written: the border and channels past outC stay zero
	return fullView(b, []int{g.batch * blocks, phases, g.hp, g.wp, bc}, ms)
}

// takeBlockedInput is takePaddedInput (takePhasedInput when strided) for a depthwise
// convolution over channel blocks (conv_dw_blocks.py, one input channel an output channel):
// the pending pointwise conv_flat.py group producing value stores its output in those zero-
// padded blocks itself (BlockStore), in place of conv_pad.py's Blocks copy (EfficientNet's
// and MobileNet's expansion 1x1 in front of each depthwise convolution).
func (g *convGroup) takeBlockedInput(l *lowerer, value string, inC, outC int) bool {
	prod, ok := l.fusable(value).(*convGroup)
	if !convBlockStore || !ok || g.ocg != 1 || g.groupBlock > 0 || prod.groups != 1 || !g.storingProducer(prod, inC) {
		return false
	}
	pad := g.padGeometry()
	if g.strided() && !g.phasesStorable(prod) {
		return false
	}
	bc := g.chanBlock
	out := g.blockedBuffer(l, value+".blocked", l.n, cdiv(outC, bc), bc)
	prod.outPad, prod.out, prod.outBlock = pad, out, bc
	what := fmt.Sprintf("zero-padded [%d, %d] planes", pad.hp, pad.wp)
	if g.strided() {
		prod.outPhases = &padPhases{padH: g.ph, padW: g.pw, sh: g.sh, sw: g.sw, phh: g.phh, phw: g.phw}
		what = fmt.Sprintf("the %dx%d stride phases of zero-padded [%d, %d] planes", g.phh, g.phw, pad.hp, pad.wp)
	}
	l.writer[out.Buf] = prod.index
	delete(l.owner, value) // nothing more fuses into its epilogue
	l.notes[prod] = append(l.notes[prod], fmt.Sprintf("stores its output as %s in blocks of %d channels, channels last, for %s", what, bc, g.nodes[0]))
	g.x = out
	return true
}

// padInput makes the convolution read a zero-padded copy of its input (conv_pad.py) laid out
// as planes [Hp, Wp], for conv_flat.py.
func (g *convGroup) padInput(l *lowerer, node string, inC int) {
	pad := g.padGeometry()
	planes := g.batch * inC
	models := l.n
	if g.x.ModelStride == 0 {
		models = 1 // a shared input is padded once
	}
	name := node + ".padded"
	out := g.paddedBuffer(l, name, models, planes)
	pg := &convPadGroup{x: g.x, planes: planes, h: g.h, w: g.wd, pad: pad, models: models}
	what := " (input zero-padded)"
	if g.strided() {
		pg.phases = &padPhases{padH: g.ph, padW: g.pw, sh: g.sh, sw: g.sw, phh: g.phh, phw: g.phw}
		what = fmt.Sprintf(" (input zero-padded, as %dx%d stride phases)", g.phh, g.phw)
	}
	pg.groupBase = groupBase{nodes: []string{node + what}, ops: []string{"pad"}, out: out}
	l.addGroup(pg, name)
	l.padCopies = append(l.padCopies, padCopy{src: g.x, out: pg.out, pad: pad, h: g.h, w: g.wd, planes: planes, by: pg.nodes[0], phases: pg.phases})
	g.x = pg.out
}

// sharePhases makes a 1x1 strided convolution read its input from the stride phase planes
// already copied for another convolution of the same input and strides (ResNet's and
// ConvNeXt's downsampling shortcut next to its block's 3x3 stride-2 convolution): its output
// pixel (oh, ow) reads padded pixel (stride*oh + d) of that copy, d = the other's padding
// minus its own, which lies at (oh + d // stride) of phase d % stride. So it runs as the
// strided kernel's single tap over that phase plane (a flat shift of q, the phase plane's
// border columns computed and dropped), and its own phase copy disappears. It reports false
// when no such copy holds every pixel it reads.
func (g *convGroup) sharePhases(l *lowerer, inC int) bool {
	if !convSharedPhases || !g.strided() || g.kh != 1 || g.kw != 1 {
		return false
	}
	for _, pc := range l.padCopies {
		p := pc.phases
		if p == nil || p.sh != g.sh || p.sw != g.sw || pc.src.Buf != g.x.Buf || pc.src.Offset != g.x.Offset ||
			pc.src.ModelStride != g.x.ModelStride || !slices.Equal(pc.src.Shape, g.x.Shape) || pc.src.DType != g.x.DType ||
			pc.planes != g.batch*inC || pc.h != g.h || pc.w != g.wd {
			continue
		}
		dh, dw := p.padH-g.ph, p.padW-g.pw
		// every pixel read is in the copy: the phase is copied, and the last output row and
		// column land inside the phase plane (where the border holds the zeros of this
		// convolution's own padding)
		if dh < 0 || dw < 0 || dh%g.sh >= p.phh || dw%g.sw >= p.phw ||
			g.oh-1+dh/g.sh >= pc.pad.hp || g.ow-1+dw/g.sw >= pc.pad.wp {
			continue
		}
		plane := pc.pad.hp * pc.pad.wp
		g.hp, g.wp, g.phh, g.phw = pc.pad.hp, pc.pad.wp, p.phh, p.phw
		g.xCStride = p.phh * p.phw * plane
		g.xBStride = inC * g.xCStride
		g.x = pc.out
		g.x.Offset += ((dh%g.sh)*p.phw+dw%g.sw)*plane + (dh/g.sh)*pc.pad.wp + dw/g.sw
		l.notes[g] = append(l.notes[g], fmt.Sprintf("reads phase (%d, %d) of the stride phase planes copied for %s: no copy of its own", dh%g.sh, dw%g.sw, pc.by))
		return true
	}
	return false
}

// padCopy is a zero-padded copy of a convolution input: src's planes [h, w] (planes of them)
// lie at pad.off of out's planes [pad.hp, pad.wp]; by names the kernel writing it. Its
// buffer is never shared (Buffer.Sparse), so the copy stays valid for the rest of the run.
type padCopy struct {
	src, out     View
	pad          planePad
	h, w, planes int
	by           string
	phases       *padPhases // stride phase planes, each a pad plane (pad.off unused), else nil
}

// readPaddedLeaves makes the epilogue read a leaf that is the whole dense output-shaped
// tensor (the residual of a ResNet block: its input, zero-padded for the block's first
// convolution) from a padded copy as wide as this convolution's flat pixels: there pixel q
// lies at pad.off + q of its plane, an affine tile read in place, where the dense tensor
// needs a gather by (q // Wp) * OW + q % Wp. The dropped columns read the border (zeros) and
// are dropped again at the store.
func (g *convGroup) readPaddedLeaves(l *lowerer) {
	outC := g.ocg * g.groups
	for k := range g.epi.leaves {
		lf := &g.epi.leaves[k]
		v := lf.view
		if len(v.Shape) < 2 || !v.Contiguous() || !slices.Equal(v.Shape, g.out.Shape) {
			continue
		}
		for _, pc := range l.padCopies {
			if pc.phases != nil || pc.src.Buf != v.Buf || pc.src.Offset != v.Offset || pc.src.ModelStride != v.ModelStride ||
				!slices.Equal(pc.src.Shape, v.Shape) || pc.pad.wp != g.wp || pc.h != g.oh || pc.w != g.ow ||
				pc.planes != g.batch*outC {
				continue
			}
			plane := pc.pad.hp * pc.pad.wp
			lf.view = pc.out
			lf.offset = fmt.Sprintf("bidx * %d + oc_g[:, None] * %d + %d + q[None, :]", outC*plane, plane, pc.pad.off)
			lf.mask = "ocmask & (q[None, :] < Q)"
			l.notes[g] = append(l.notes[g], fmt.Sprintf("reads its residual %s from the zero-padded copy made for %s", shapeStr(v.Shape), pc.by))
			break
		}
	}
}

// planePad is the layout of zero-padded planes [hp, wp] whose interior starts at off; the zero
// value is a dense layout.
type planePad struct {
	hp, wp, off  int
	channelMajor bool // the planes lie [channel, sample], for a reader folding the samples into its pixels (foldSamples)
}

// padGeometry sets the padded plane conv_flat.py reads: the rows and columns the output
// reads, both paddings (which differ for an even kernel under padding="same": the extra one
// is at the end). Strided, it is one phase plane (the rows and columns a tap's shift reaches
// past the output's), and the phases a tap reads: all stride_h x stride_w, or fewer when the
// window is narrower than the stride (a 1x1 stride-2 convolution reads phase (0, 0) only).
// The interior offset of a phase layout is left 0: conv_pad.py places every pixel itself.
func (g *convGroup) padGeometry() planePad {
	if g.strided() {
		g.hp, g.wp = g.oh+(g.kh-1)*g.dh/g.sh, g.ow+(g.kw-1)*g.dw/g.sw
		g.phh, g.phw = min(g.sh, (g.kh-1)*g.dh+1), min(g.sw, (g.kw-1)*g.dw+1)
		return planePad{hp: g.hp, wp: g.wp}
	}
	g.phh, g.phw = 1, 1
	g.hp, g.wp = g.oh+(g.kh-1)*g.dh, g.ow+(g.kw-1)*g.dw
	return planePad{hp: g.hp, wp: g.wp, off: g.ph*g.wp + g.pw}
}

// strided reports a convolution with a stride above 1, which conv_flat.py runs over the
// phase planes of its input.
func (g *convGroup) strided() bool { return g.sh > 1 || g.sw > 1 }

// paddedBuffer allocates zero-padded input planes for conv_flat.py, with slack at the end:
// the dropped columns of the last output row read (KW-1)*dil_w elements past the last plane,
// and the pixels of the last tile past the output's up to a tile more. Only the interior is ever written: the border keeps the zeros every device
// allocates buffers with (jit.Device.Alloc).
func (g *convGroup) paddedBuffer(l *lowerer, name string, models, planes int) View {
	phases := g.phh * g.phw
	b := l.newBuffer(TempBuffer, name, g.x.DType, models*planes*phases*g.hp*g.wp+(g.kw-1)*g.dw+convFlatMaxBlockP)
	b.Sparse = true
	ms := planes * phases * g.hp * g.wp
	if models == 1 && g.x.ModelStride == 0 {
		ms = 0
	}
	g.xCStride = phases * g.hp * g.wp
	g.xBStride = planes / g.batch * g.xCStride
	if phases > 1 {
		return fullView(b, []int{planes, phases, g.hp, g.wp}, ms)
	}
	return fullView(b, []int{planes, g.hp, g.wp}, ms)
}

// takePaddedInput makes the pending conv_flat.py group producing value (its one consumer is
// this convolution) store its output zero-padded, as this convolution reads it: the pad
// kernel and a pass over the activation disappear. It reports false when value has another
// producer or use.
func (g *convGroup) takePaddedInput(l *lowerer, value string, inC int) bool {
	prod, ok := l.fusable(value).(*convGroup)
	if ok && g.strided() {
		return g.takePhasedInput(l, prod, value, inC)
	}
	// (Monte Carlo dropout in its epilogue numbers elements by the dense layout: not moved;
	// a producer folding its samples stores row by row of each sample, never checked padded)
	if !ok || g.strided() || !prod.flat || prod.foldedPlanes || prod.outPad.hp > 0 || contains(prod.ops, "dropout") || !prod.out.Contiguous() || prod.out.ModelStride == 0 ||
		prod.batch != g.batch || prod.ocg*prod.groups != inC || prod.oh != g.h || prod.ow != g.wd {
		return false
	}
	pad, shift := g.padGeometry(), 0
	if prod.direct && g.foldSamples() {
		pad, shift = g.foldedPad()
		g.hp, g.wp, g.foldedPlanes = pad.hp, pad.wp, true
	}
	out := g.paddedBuffer(l, value+".padded", l.n, g.batch*inC)
	prod.outPad, prod.out = pad, out
	l.writer[out.Buf] = prod.index
	delete(l.owner, value) // nothing more fuses into its epilogue
	l.notes[prod] = append(l.notes[prod], fmt.Sprintf("stores its output zero-padded to [%d, %d] planes for %s", pad.hp, pad.wp, g.nodes[0]))
	g.x = out
	if g.foldedPlanes {
		g.x.Offset += shift
		g.xCStride, g.xBStride = g.batch*g.hp*g.wp, g.hp*g.wp
		l.notes[g] = append(l.notes[g], fmt.Sprintf("small map: the %d samples side by side in the pixels of one GEMM a group (its input planes laid out [channel, sample], zero rows and columns shared)", g.batch))
	}
	return true
}

// takePhasedInput is takePaddedInput for a strided convolution: the pending pointwise
// conv_flat.py group producing value (its one consumer is this convolution) stores its output
// as this convolution's zero-padded stride phase planes (PhaseStore), each pixel where
// conv_pad.py's phases would copy it. Its pixels then run by column residue (ow % stride_w),
// each residue's an arithmetic progression of the dense input (W a multiple of the stride), so
// that each output row's pixels of a residue land as one run of a phase plane's row: moved
// row by row, where a store addressed per pixel would go element by element (bench/results/
// conv_pads.md). It reports false for any other producer, a width the stride does not
// divide, or phases some tap does not read (a 1x1 strided convolution: computed for nothing).
func (g *convGroup) takePhasedInput(l *lowerer, prod *convGroup, value string, inC int) bool {
	pad := g.padGeometry()
	if !g.storingProducer(prod, inC) || !g.phasesStorable(prod) {
		return false
	}
	out := g.paddedBuffer(l, value+".phases", l.n, g.batch*inC)
	prod.outPad, prod.out = pad, out
	prod.outPhases = &padPhases{padH: g.ph, padW: g.pw, sh: g.sh, sw: g.sw, phh: g.phh, phw: g.phw}
	l.writer[out.Buf] = prod.index
	delete(l.owner, value) // nothing more fuses into its epilogue
	l.notes[prod] = append(l.notes[prod], fmt.Sprintf("stores its output as the %dx%d stride phases of zero-padded [%d, %d] planes for %s",
		g.phh, g.phw, pad.hp, pad.wp, g.nodes[0]))
	g.x = out
	return true
}

// storingProducer reports whether prod, the pending group producing this convolution's input
// (inC channels), is a pointwise conv_flat.py convolution whose store may take this one's
// input layout: over its input's own planes, its output dense and per model, not yet moved
// (Monte Carlo dropout in its epilogue numbers elements by the dense layout: not moved).
func (g *convGroup) storingProducer(prod *convGroup, inC int) bool {
	return prod.flat && prod.direct && !prod.cols && prod.outPad.hp == 0 && prod.padCopy == nil && !contains(prod.ops, "dropout") &&
		prod.out.Contiguous() && prod.out.ModelStride != 0 && prod.batch == g.batch && prod.ocg*prod.groups == inC &&
		prod.oh == g.h && prod.ow == g.wd
}

// phasesStorable reports whether pointwise prod may store this strided convolution's phase
// planes (PhaseStore; padGeometry done): its width a multiple of the stride, every phase read
// (no residue computed for nothing), and at least as many pixels as input channels, as each
// residue's programs read the whole weight: more than the copy saves where the channels
// outnumber the pixels (RegNet's 6x6 map, 208 channels; measured).
func (g *convGroup) phasesStorable(prod *convGroup) bool {
	return convPhaseStore && prod.ow%g.sw == 0 && g.phh == g.sh && g.phw == g.sw && prod.oh*prod.ow >= prod.cg
}

// densePlanes reports a [.., H, W] view whose planes are dense (rows contiguous, W apart),
// whatever its other strides.
func densePlanes(v View) bool {
	r := len(v.Shape)
	return r >= 2 && (v.Shape[r-1] == 1 || v.Strides[r-1] == 1) && (v.Shape[r-2] == 1 || v.Strides[r-2] == v.Shape[r-1])
}

// convStoresInto makes the pending conv_flat.py group producing value x (its one reader
// being cat) store its output straight into dst, the value's slice of the cat's buffer
// (channels maybe strided: a shuffled cat), so no copy moves it there. It reports false when
// value has another producer or use, or an output layout that cannot move.
func (l *lowerer) convStoresInto(value string, x, dst View, cat string) bool {
	prod, ok := l.fusable(value).(*convGroup)
	// (Monte Carlo dropout in its epilogue numbers elements by the dense layout: not moved)
	if !ok || !prod.flat || prod.outPad.hp > 0 || contains(prod.ops, "dropout") || len(dst.Shape) != 4 ||
		!prod.out.Contiguous() || prod.out.ModelStride == 0 || x.Buf != prod.out.Buf || x.Offset != prod.out.Offset ||
		!slices.Equal(x.Shape, prod.out.Shape) || !slices.Equal(dst.Shape, prod.out.Shape) || dst.DType != prod.out.DType || !densePlanes(dst) {
		return false
	}
	prod.out = dst
	if w, ok := l.writer[dst.Buf]; !ok || w < prod.index {
		l.writer[dst.Buf] = prod.index
	}
	delete(l.owner, value) // nothing more fuses into its epilogue
	l.notes[prod] = append(l.notes[prod], fmt.Sprintf("stores its output into its slice of %s (channels %d apart): no copy", cat, dst.Strides[1]))
	return true
}

// takePaddedCopy is takePaddedInput for a value with other readers: the pending conv_flat.py
// group producing it stores its output as it is and, from the same registers, the
// zero-padded planes this (unit-stride) convolution reads, in place of a pad kernel's pass
// over the activation. A later convolution's epilogue may read its residual from that copy
// (readPaddedLeaves). It reports false when value has another producer.
func (g *convGroup) takePaddedCopy(l *lowerer, value string, inC int) bool {
	prod, ok := l.owner[value].(*convGroup)
	v, defined := l.values[value]
	if !convPaddedCopies || l.opts.NoFusion || !ok || prod.value != value || !defined || g.strided() || !prod.flat || prod.outPad.hp > 0 || prod.padCopy != nil ||
		contains(prod.ops, "dropout") || !prod.out.Contiguous() || prod.out.ModelStride == 0 || len(prod.out.Shape) != len(g.x.Shape) ||
		v.Buf != prod.out.Buf || v.Offset != prod.out.Offset || g.x.Buf != prod.out.Buf || g.x.Offset != prod.out.Offset ||
		prod.batch != g.batch || prod.ocg*prod.groups != inC || prod.oh != g.h || prod.ow != g.wd {
		return false
	}
	pad := g.padGeometry()
	out := g.paddedBuffer(l, value+".padded", l.n, g.batch*inC)
	prod.padCopy = &padCopy{src: prod.out, out: out, pad: pad, h: g.h, w: g.wd, planes: g.batch * inC, by: g.nodes[0]}
	l.padCopies = append(l.padCopies, *prod.padCopy)
	l.writer[out.Buf] = prod.index
	l.notes[prod] = append(l.notes[prod], fmt.Sprintf("stores a copy of its output zero-padded to [%d, %d] planes for %s", pad.hp, pad.wp, g.nodes[0]))
	g.x = out
	return true
}

// convPadGroup copies a convolution input into zero-padded planes (conv_pad.py).
type convPadGroup struct {
	groupBase
	x                    View
	planes, h, w, models int
	pad                  planePad
	phases               *padPhases // strided convolutions: phase planes, else nil
	blocks               *padBlocks // conv_dw_blocks.py: channel blocks, channels last, else nil (planes = sample x block)
}

// padBlocks is the channel-block layout conv_pad.py writes for conv_dw_blocks.py: size output
// channels a block, oc of them, each reading input channel c / mult; the input's sample stride
// and the output's block stride.
// Grouped (cg > 0: conv_grouped.py), a block holds in-group channel ci of size groups, oc of
// them, and the blocks run (group block, ci).
type padBlocks struct{ size, oc, mult, cg, xBStride, stride int }

// padPhases is the phase layout conv_pad.py writes for a strided convolution: the input's
// paddings and strides, and the phases per channel (rows x columns), each a planePad's plane.
type padPhases struct{ padH, padW, sh, sw, phh, phw int }

func (g *convPadGroup) emit(l *lowerer) (*Launch, error) {
	fn := kernelName(g.index, g.ops)
	var args []LaunchArg
	args = append(args, ptrArgs("x", g.x)...)
	args = append(args, ptrArgs("o", g.out)...)
	args = append(args, intArg("H", g.h), intArg("W", g.w), intArg("Hp", g.pad.hp), intArg("Wp", g.pad.wp),
		intArg("pad_off", g.pad.off), intArg("PLANES", g.planes))
	if p := g.phases; p != nil {
		args = append(args, intArg("pad_h", p.padH), intArg("pad_w", p.padW), intArg("stride_h", p.sh), intArg("stride_w", p.sw),
			intArg("PHH", p.phh), intArg("PHW", p.phw), intArg("PLANE", g.pad.hp*g.pad.wp))
	}
	// about two programs per core over every model's planes (the grid has a program row per
	// model): a program's planes move together, image row by row, and each row step costs
	// the same whatever its height, so fewer, taller tiles move the planes in fewer steps
	w := g.w
	if p := g.phases; p != nil && g.blocks == nil {
		w = cdiv(g.w, p.sw) // a phase's columns: every stride_w-th of a row
	}
	bw := clamp(nextPow2(w), 16, 128)
	bpl := clamp(nextPow2(cdiv(g.planes*g.models, 2*max(l.opts.Device.Cores, 1))), 1, max(8192/bw, 1))
	programs := cdiv(g.planes, bpl)
	bh := 0 // PlaneTiles' BLOCK_H, 0 when the planes go row by row
	if p := g.phases; p != nil && g.blocks == nil {
		// few large planes (an image's 3 channels into a stem): a plane a program, each
		// phase of it [row, column] tiles, when that takes fewer steps than the row walk
		// (a step costs about the same whatever its tile; both move the same rows)
		rows := cdiv(g.h, p.sh)
		if tile := clamp(nextPow2(rows), 1, max(8192/bw, 1)); g.planes*p.phh*p.phw*cdiv(rows, tile) < programs*g.h*p.phw {
			bh, bpl, programs = tile, 1, g.planes
		}
	}
	if b := g.blocks; b != nil {
		bpl, programs = b.size, g.planes // a program moves one block
		cb := cdiv(b.oc, b.size)
		if b.cg > 0 {
			cb *= b.cg // blocks a sample: (group block, in-group channel)
		}
		args = append(args, intArg("x_bstride", b.xBStride), intArg("OC", b.oc), intArg("CB", cb), intArg("BLOCK_STRIDE", b.stride))
		if b.cg > 0 {
			args = append(args, intArg("CG", b.cg))
		} else if b.mult > 1 {
			args = append(args, intArg("MULT", b.mult))
		}
	}
	text, err := templates.Render("conv_pad.py", convData{Fn: fn, Header: header(g.nodes, g.ops), Phases: g.phases != nil, PlaneTiles: bh > 0,
		Blocks: g.blocks != nil, Mult: g.blocks != nil && g.blocks.cg == 0 && g.blocks.mult > 1, Grouped: g.blocks != nil && g.blocks.cg > 0})
	if err != nil {
		return nil, err
	}
	consts := map[string]any{"BLOCK_PL": int64(bpl), "BLOCK_W": int64(bw)}
	if bh > 0 {
		consts["BLOCK_H"] = int64(bh)
	}
	return &Launch{
		Kernel:    newKernel("conv_pad.py", fn, text, consts),
		Grid:      [3]int{programs, 1, g.models},
		ModelAxis: 2,
		Args:      args,
	}, nil
}

func (g *convGroup) emitFlat(l *lowerer) (*Launch, error) {
	if g.cols {
		return g.emitCols(l)
	}
	p, q := g.oh*g.ow, g.gemmPixels()
	if g.outPhases == nil && !g.foldedPlanes {
		g.readPaddedLeaves(l) // (a leaf read at q: the pixels in their own order)
	}
	return g.implicitGEMM(l, "conv_flat.py", "oc_g[:, None] * P + rp[None, :]", p, func(bp, tilesOC int) ([]LaunchArg, int) {
		ocg, groups := g.flatChannels()
		args := []LaunchArg{intArg("Wp", g.wp), intArg("OW", g.ow), intArg("OH", g.oh), intArg("Q", q), intArg("P", p),
			intArg("OCG", ocg), intArg("KTOT", g.cg*g.kh*g.kw), intArg("KW", g.kw), intArg("KHW", g.kh*g.kw),
			intArg("CG", g.cg), intArg("GROUPS", groups), intArg("dil_h", g.dh), intArg("dil_w", g.dw),
			intArg("w_tstride", g.ocg*g.groups*g.cg), intArg("tiles_oc", tilesOC)}
		if g.strided() {
			args = append(args, intArg("stride_h", g.sh), intArg("stride_w", g.sw), intArg("PHW", g.phw), intArg("PLANE", g.hp*g.wp))
		}
		if g.depthwise {
			args = append(args, intArg("MULT", g.ocg))
		}
		if g.foldedPlanes {
			args = append(args, intArg("QS", g.hp*g.wp), intArg("NB", g.batch))
		}
		if g.diag > 1 {
			args = append(args, intArg("DIAG", g.diag))
		}
		if ph := g.outPhases; ph != nil {
			o := g.outPad
			args = append(args, intArg("WS", g.ow/ph.sw), intArg("o_sh", ph.sh), intArg("o_sw", ph.sw), intArg("o_pad_h", ph.padH), intArg("o_pad_w", ph.padW),
				intArg("o_phw", ph.phw), intArg("o_hp", o.hp), intArg("o_wp", o.wp), intArg("o_plane", o.hp*o.wp))
		}
		if g.outBlock > 0 {
			args = append(args, intArg("o_bc", g.outBlock))
		}
		tq := g.rowTileQ(bp)
		if tq != bp {
			args = append(args, intArg("TILE_Q", tq))
		}
		return args, g.residues() * cdiv(q, tq) * tilesOC
	})
}

// emitCols is emitFlat's Folded form: a pointwise GEMM over the columns (colsInput), its
// pixels every sample's flat padded ones (NB x QS), its reduction every channel x tap at once
// (KHW = 1, CG = KTOT).
func (g *convGroup) emitCols(l *lowerer) (*Launch, error) {
	p, q, k := g.oh*g.ow, g.gemmPixels(), g.cg*g.kh*g.kw
	return g.implicitGEMM(l, "conv_flat.py", "oc_g[:, None] * P + rp[None, :]", p, func(bp, tilesOC int) ([]LaunchArg, int) {
		return []LaunchArg{intArg("Wp", g.wp), intArg("OW", g.ow), intArg("OH", g.oh), intArg("Q", q), intArg("P", p),
			intArg("OCG", g.ocg), intArg("KTOT", k), intArg("KW", 1), intArg("KHW", 1),
			intArg("CG", k), intArg("GROUPS", 1), intArg("dil_h", 1), intArg("dil_w", 1),
			intArg("w_tstride", 0), intArg("tiles_oc", tilesOC), intArg("QS", g.flatPixels()), intArg("NB", g.batch)}, cdiv(q, bp) * tilesOC
	})
}

// colsInput makes the convolution read the columns (conv_cols.py) of the padded planes it
// would read (g.x): [C*KH*KW, B*QS] per model (rows colsStride apart), with a tile's slack at the end (the last pixel
// tile's dead columns read past the last row, into accumulator columns never stored).
func (g *convGroup) colsInput(l *lowerer, node string, inC int) {
	models := l.n
	if g.x.ModelStride == 0 {
		models = 1 // a shared input is gathered once
	}
	k, q := inC*g.kh*g.kw, g.colsStride()
	name := node + ".cols"
	b := l.newBuffer(TempBuffer, name, g.x.DType, models*k*q+convFlatMaxBlockP)
	ms := k * q
	if models == 1 && g.x.ModelStride == 0 {
		ms = 0
	}
	cg := &convColsGroup{x: g.x, conv: g, c: inC, models: models, xBStride: g.xBStride, xCStride: g.xCStride}
	cg.groupBase = groupBase{nodes: []string{fmt.Sprintf("%s (input as columns [%d, %d])", node, k, g.gemmPixels())}, ops: []string{"im2col"},
		out: fullView(b, []int{k, q}, ms)}
	l.addGroup(cg, name)
	g.x, g.xCStride, g.xBStride = cg.out, q, 0
	why := "small maps"
	if g.oh*g.ow > convColsMaxPixels {
		why = fmt.Sprintf("a reduction of %d (channels x taps)", k)
	}
	l.notes[g] = append(l.notes[g], fmt.Sprintf("%s: one GEMM over the columns of all %d samples (conv_cols.py), each weight read once", why, g.batch))
}

// convColsGroup copies a convolution's input columns (conv_cols.py) for conv_flat.py's Folded
// form; conv is the convolution (its geometry), x the padded planes it reads (sample and
// plane strides xBStride, xCStride).
type convColsGroup struct {
	groupBase
	x                  View
	conv               *convGroup
	c, models          int
	xBStride, xCStride int
}

func (g *convColsGroup) emit(l *lowerer) (*Launch, error) {
	fn := kernelName(g.index, g.ops)
	c := g.conv
	var args []LaunchArg
	args = append(args, ptrArgs("x", g.x)...)
	args = append(args, intArg("x_bstride", g.xBStride), intArg("x_cstride", g.xCStride))
	args = append(args, ptrArgs("o", g.out)...)
	args = append(args, intArg("Wp", c.wp), intArg("QS", c.flatPixels()), intArg("NQ", c.colsStride()),
		intArg("KW", c.kw), intArg("KHW", c.kh*c.kw), intArg("dil_h", c.dh), intArg("dil_w", c.dw))
	if c.strided() {
		args = append(args, intArg("stride_h", c.sh), intArg("stride_w", c.sw), intArg("PHW", c.phw), intArg("PLANE", c.hp*c.wp))
	}
	bq := nextPow2(c.flatPixels())
	// the largest power of two dividing the channels (no channel mask), up to 8K elements a tile
	bc := min(g.c&-g.c, max(1, 8192/bq))
	// (a map past convColsMaxPixels, taken for its few input channels: its tile reaches
	// further past QS than the planes' slack)
	qmask := c.oh*c.ow > convColsMaxPixels
	text, err := templates.Render("conv_cols.py", convData{Fn: fn, Header: header(g.nodes, g.ops), Strided: c.strided(), QMask: qmask})
	if err != nil {
		return nil, err
	}
	return &Launch{
		Kernel:    newKernel("conv_cols.py", fn, text, map[string]any{"BLOCK_C": int64(bc), "BLOCK_Q": int64(bq)}),
		Grid:      [3]int{cdiv(g.c, bc), c.batch, g.models},
		ModelAxis: 2,
		Args:      args,
	}, nil
}

// lowerConvAsMatmul lowers a pointwise convolution of 1x1 images (the FCs of a squeeze-excite
// block, after its global pool) as a Linear over the channels: one matmul [B, C] x [C, OC]
// for all samples (matmul.py, the weight transposed once on the CPU), where a convolution
// kernel would tile one pixel per sample.
func lowerConvAsMatmul(l *lowerer, n *graph.Node, x View, batched bool, batch, inC, outC, k int) error {
	x = l.contiguous(x, n)
	w, ok := l.values[n.Param("weight").Name].reshape([]int{outC, inC})
	if !ok {
		return fmt.Errorf("weight %s is not contiguous", shapeStr(l.values[n.Param("weight").Name].Shape))
	}
	outShape := n.Output().Shape
	out := l.newOutput(n.Name, outShape, n.Output().DType)
	g := &matmulGroup{groupBase: groupBase{nodes: []string{n.Name}, ops: []string{n.Op}, out: out},
		a: x, b: w, aSM: inC, aSK: 1, bSK: 1, bSN: inC, batch: 1, m: batch, nn: outC, k: inC, weight: w}
	nm := 0
	if batched {
		nm = 1
	}
	if batch == 1 {
		g.aSM = 0
	}
	// rows: the samples; columns: the output channels (with their 1x1 pixel)
	g.epi = &epilogue{shape: outShape, axes: [][2]int{{0, 0}, {0, nm}, {nm, len(outShape)}},
		vars:  []string{"batch", "rm[:, None]", "rn[None, :]"},
		masks: []string{"", "(rm[:, None] < M)", "(rn[None, :] < N)"}}
	if err := fuseConvBias(l, n, g.epi, out, outC, k); err != nil {
		return err
	}
	l.notes[g] = append(l.notes[g], "pointwise convolution of 1x1 images: a matmul over the channels")
	if l.trySqueezeExcite(n, g) {
		return nil
	}
	l.addGroup(g, n.Name)
	return nil
}
