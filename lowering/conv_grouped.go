package lowering

import (
	"fmt"
)

// convGroupedMaxWidth is the widest group (input or output channels) conv_grouped.py runs:
// its steps are taps x CG x OCG multiply-adds, OCG of them unrolled, so wide groups belong to
// conv_flat.py's dots.
const convGroupedMaxWidth = 16

// convGroupedMaxPixels is the largest output map (pixels) conv_grouped.py takes by default,
// at unit stride: on RegNet's 3x3 maps it measured faster than conv_flat.py's program per
// group and sample, on its 6x6 to 24x24 maps and its stride-2 convolution to a 3x3 map slower
// (bench/results/dense_conv.md): its multiply-adds stream accumulators and input tiles
// through memory where conv_flat.py's dots keep them in registers, and its input's block copy
// moves short rows (phase planes of them when strided).
const convGroupedMaxPixels = 16

// convGroupedMaxDefaultWidth is the widest group conv_grouped.py takes by default: groups of
// 16 channels fill conv_flat.py's 16-channel dot tiles both ways, and on regnet_x_400mf's
// last stage (25 groups of 16 on a 3x3 map) conv_flat.py's program per group and sample took
// about two thirds of conv_grouped.py's CPU time (bench/results/families.md).
const convGroupedMaxDefaultWidth = 15

// convGroupedAlways makes conv_grouped.py take every grouped convolution it can run,
// whatever its map; tests turn it on to check it at every size.
var convGroupedAlways = false

// convMergeGroups lets conv_flat.py merge narrow groups (mergedGroups); tests and benchmarks
// turn it off to check and measure the groups run one by one.
var convMergeGroups = true

// convMergedMaxWidth bounds a merged group's channels: its dots multiply as many products as
// the groups alone times the groups merged (the zeros between them).
const convMergedMaxWidth = 64

// mergedGroups is how many of a grouped convolution's narrow groups (fewer than 16 channels
// in or out) conv_flat.py runs as one group over a block-diagonal weight (each group's block
// on its diagonal, zeros between them; conv_weight.py lays it out once): the fewest that
// divide the groups and fill a 16-channel dot tile both ways. RegNet's groups of 8 left half
// of every tile masked, so that tl.dot scanned an operand for infinities at every step (jit/cpu
// extent.go), and each (sample, group) program's fixed work outweighed its multiply-adds
// (bench/results/regnet.md). Exact: an infinite or NaN input of one group times the others'
// zero weights would make their outputs NaN, so a program whose tile is not all finite
// recomputes it group by group (conv_flat.py's Merged). 1 (no merging) where no divisor does
// within convMergedMaxWidth channels (a prime number of groups), for depthwise, pointwise and
// 1x1 convolutions, and where conv_grouped.py is forced (convGroupedAlways).
func (g *convGroup) mergedGroups() int {
	w := max(g.cg, g.ocg)
	if !convMergeGroups || convGroupedAlways || g.groups == 1 || g.cg == 1 || w >= 16 || g.kh*g.kw == 1 {
		return 1
	}
	for d := 2; d*w <= convMergedMaxWidth; d++ {
		if g.groups%d == 0 && d*g.cg >= 16 && d*g.ocg >= 16 {
			return d
		}
	}
	return 1
}

// groupedBlocksPayOff reports a grouped convolution (not depthwise, not a pointwise GEMM, its
// groups not merged) with groups narrow enough for conv_grouped.py, at unit stride on a map
// small enough for it to pay off, its groups narrower than a dot tile.
func (g *convGroup) groupedBlocksPayOff() bool {
	return g.groups > 1 && g.diag == 1 && g.cg > 1 && g.cg <= convGroupedMaxWidth && g.ocg <= convGroupedMaxWidth && !g.pointwise() &&
		(convGroupedAlways || !g.strided() && g.oh*g.ow <= convGroupedMaxPixels && max(g.cg, g.ocg) <= convGroupedMaxDefaultWidth)
}

// groupedOuts numbers the output channels of a group for conv_grouped.py, which unrolls them
// (an accumulator each); nil for the other templates.
func (g *convGroup) groupedOuts() []int {
	if g.groupBlock == 0 {
		return nil
	}
	outs := make([]int, g.ocg)
	for i := range outs {
		outs[i] = i
	}
	return outs
}

// groupedWeight makes conv_grouped.py read the weight [GROUPS*OCG, CG, taps] relaid once
// (conv_weight.py, a prepare launch) as [OCG, CG, taps, groups padded to whole blocks]: one
// (co, ci, tap)'s weights of a block's groups one contiguous row, loaded unmasked (the padding
// stays zero). Seen as [GROUPS, OCG*CG*taps] that is a transpose, which conv_weight.py's
// [OC, CG, taps] -> [taps, OC, CG] is with OC = GROUPS, CG = 1.
func (g *convGroup) groupedWeight(l *lowerer, node string) error {
	if !g.w.Contiguous() {
		return fmt.Errorf("weight %s is not contiguous", shapeStr(g.w.Shape))
	}
	name := node + "#weight" // (not a graph name: see lowerConv's weight copy)
	per, padded := g.ocg*g.cg*g.kh*g.kw, g.groupedLanes()
	wg := &convWeightGroup{w: g.w, oc: g.groups, cg: 1, taps: per, tstride: padded}
	wg.groupBase = groupBase{nodes: []string{node + " (weight as [out in group, in, tap, group])"}, ops: []string{"relayout"},
		out: l.newOutput(name, []int{g.ocg, g.cg, g.kh * g.kw, padded}, g.w.DType)}
	l.addGroup(wg, name)
	g.w = wg.out
	return nil
}

// groupedLanes is the groups padded to whole blocks of conv_grouped.py.
func (g *convGroup) groupedLanes() int { return cdiv(g.groups, g.groupBlock) * g.groupBlock }

// emitGrouped runs conv_grouped.py over the group blocks blockInput laid out.
func (g *convGroup) emitGrouped(l *lowerer) (*Launch, error) {
	p, q := g.oh*g.ow, g.oh*g.wp
	bg := g.groupBlock
	bp := groupedPixelBlock(q, bg, g.ocg)
	tilesG := cdiv(g.groups, bg)
	geo := []LaunchArg{intArg("Wp", g.wp), intArg("OW", g.ow), intArg("OH", g.oh), intArg("Q", q), intArg("P", p),
		intArg("GROUPS", g.groups), intArg("GP", g.groupedLanes()), intArg("CG", g.cg), intArg("OCG", g.ocg), intArg("KH", g.kh), intArg("KW", g.kw),
		intArg("dil_h", g.dh), intArg("dil_w", g.dw), intArg("tiles_g", tilesG)}
	if g.strided() {
		geo = append(geo, intArg("stride_h", g.sh), intArg("stride_w", g.sw), intArg("PHW", g.phw), intArg("PLANE", g.hp*g.wp))
	}
	programs := cdiv(q, bp) * tilesG
	return g.depthwiseLaunch(l, "conv_grouped.py", "x_kstride", "oc_g[:, None] * P + rp[None, :]", bp, bg, programs, geo)
}

// groupedStepLanes is what a step of conv_grouped.py costs besides its lanes (its pointer and
// load steps), in lanes of a multiply-add.
const groupedStepLanes = 1024

// groupedPixelBlock is conv_grouped.py's pixel tile for q flat pixels, bg lanes and ocg
// accumulators: the accumulators within 32 KB (a core's L1 share: each step streams one), the
// tile whose steps cost least, their lanes past q included.
func groupedPixelBlock(q, bg, ocg int) int {
	best, cost := 0, 0
	for bp := 1; bp <= max(1, min(8192/(bg*ocg), convFlatMaxBlockP)) && bp < 2*q; bp *= 2 {
		if c := cdiv(q, bp) * (bp*bg + groupedStepLanes); best == 0 || c <= cost {
			best, cost = bp, c
		}
	}
	return best
}

// convFoldMaxPixels bounds the output maps whose samples fold (foldSamples): RegNet's 12x12
// maps (96x96 images) and smaller, as measured; larger maps fill their pixel tiles alone.
const convFoldMaxPixels = 144

// foldSamples reports a grouped convolution that conv_flat.py runs with its samples folded
// into the pixels (Folded over planes; padGeometry done): its zero-padded input planes laid
// out [channel, sample] as foldedPad's bands, so that a channel's samples lie a band apart
// and every tap stays one flat shift of pixels spanning them. A program then covers every
// sample of a group (the grid loses its sample axis): on RegNet's 12x12, 6x6 and 3x3 maps a
// program's and a tap step's fixed work, not the multiply-adds, is most of the cost
// (bench/results/regnet_avx2.md). The pixels between the samples (each band's rows past its
// output, computed and dropped) must stay few: at most a quarter more than the samples' own
// (2 x 13 a 3x3 map's apart, 27 folded; with a whole padded plane a sample, 38 measured
// slower). Only where a pointwise producer stores the padded planes (takePaddedInput, unit
// stride): conv_pad.py copies planes in the dense order.
func (g *convGroup) foldSamples() bool {
	if !convFoldSamples || !g.flat || g.depthwise || g.cols || g.direct || g.scale != nil || g.strided() ||
		g.groups == 1 || g.batch == 1 || g.kh*g.kw == 1 || g.oh*g.ow > convFoldMaxPixels {
		return false
	}
	pad, _ := g.foldedPad()
	qs := pad.hp * pad.wp
	folded := (g.batch-1)*qs + (g.oh-1)*pad.wp + g.ow
	return (g.oh-1)*pad.wp+g.ow <= qs && 4*folded <= 5*g.batch*g.flatPixels()
}

// foldedPad is the padded layout of a convolution folding its samples (foldSamples): per
// channel, the samples' planes stacked as bands of s zero rows and the h input rows, s the
// larger of the top and bottom padding, so that one band's zero rows are the previous
// sample's bottom padding and this one's top (the last sample's bottom padding is the next
// channel's first band); rows wd wide plus the larger of the left and right padding, one
// row's zero columns the previous row's right padding and this one's left. A tap (kh, kw)
// stays the flat shift kh*dil_h*wp + kw*dil_w of the output pixel oh*wp + ow of a band, read
// from shift elements past the buffer's start (the top padding's rows above the first
// interior row).
func (g *convGroup) foldedPad() (pad planePad, shift int) {
	pb := max(0, g.oh+(g.kh-1)*g.dh-g.h-g.ph)
	pr := max(0, g.ow+(g.kw-1)*g.dw-g.wd-g.pw)
	s, wp := max(g.ph, pb), g.wd+max(g.pw, pr)
	return planePad{hp: g.h + s, wp: wp, off: s*wp + g.pw, channelMajor: true}, (s - g.ph) * wp
}
