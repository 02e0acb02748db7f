package lowering

import (
	"fmt"
	"math"
	"slices"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/templates"
)

// The matmul-like family: Linear and matmul as one tiled tl.dot kernel with a fused epilogue
// (the Linear's bias is its first epilogue term), and Linear-act-Linear as one kernel.

func init() {
	registerOp(lowerLinear, "linear")
	registerOp(lowerMatmul, "matmul")
}

// mlpMaxWeightBytes bounds one model's weights in a fused MLP: both matrices stay in cache
// while a program walks the hidden layer. A CPU core's L2 (1-2 MB) holds cpuMLPMaxWeightBytes:
// the transformer block's 128-512-128 feed-forward (512 KB) runs 4-8% faster fused on Zen 5.
const (
	mlpMaxWeightBytes    = 256 << 10
	cpuMLPMaxWeightBytes = 512 << 10
)

// mlpMaxOut bounds the output width of a fused MLP (one program holds whole output rows).
const mlpMaxOut = 256

// matmulGroup computes C[b] = A[b] @ B[b] (+ epilogue) for every model and batch b.
type matmulGroup struct {
	groupBase
	a, b            View
	aSB, aSM, aSK   int
	bSB, bSK, bSN   int
	batch, m, nn, k int
	// batchIn > 1: the batch index splits into (batch / batchIn, batch % batchIn), strides
	// aSB, bSB for the outer part and aSBIn, bSBIn for the inner (lowerMatmul)
	aSBIn, bSBIn, batchIn int
	nb, split             int   // lowerMatmul's batch dims (a, b and out are [batch..., rows, cols]), split at split
	store                 *View // out's elements in another layout (storePermuted); nil: out's own
	linear                bool
	weight                View       // linear: the weight [out, in] (for MLP fusion)
	tails                 []*rowTail // row ops after the epilogue (rowops.go): BLOCK_N covers N
	head                  *rowHead   // a norm of the rows of a as they load (rowops.go): BLOCK_K covers K
}

// A CPU Linear on up to cpuGemvAnyKRows rows a model, or up to cpuGemvMaxRows over K of
// cpuGemvMinK or more, reads its weight [out, in] in place, as rows of B^T: jit/cpu's gemv
// path (gemvFits, the same rule) multiplies those rows without transposing them. With more
// rows, or fewer over a short K, the transposed weight's register blocks, which reuse each
// loaded weight element over more rows, are faster. A variable so that
// BenchmarkFewRowLinears can compare with the transposed weight (0) in one process.
var cpuGemvMaxRows = 32

const (
	cpuGemvAnyKRows = 3
	cpuGemvMinK     = 256
)

// headRepeats reports whether a row head (rowops.go) on a Linear of weight w would normalise
// the same rows in several programs: every program along N normalises its rows again, and a
// Linear wider than one N tile (2*cpuMaxBlockMN) that cannot become a fused MLP's first (its
// weight alone over cpuMLPMaxWeightBytes: mlp.py's programs take whole hidden rows) runs 3 to
// 12 of them (ConvNeXt's stage 2 and 3 MLPs, 768 and 1536 wide); there the norm runs once, as
// its own kernel (bench/results/convnext_regnet_margins.md).
func headRepeats(w View) bool {
	return w.Shape[0] > 2*cpuMaxBlockMN && w.Numel()*w.DType.Size() > cpuMLPMaxWeightBytes
}

// gemv: on the CPU, a matmul on few rows that reads B^T's rows (a weight [out, in]) in
// place, bound by the weight's bytes rather than its multiply-adds.
func (g *matmulGroup) gemv() bool {
	return g.bRowsAlongK() && g.batch == 1 && g.m <= cpuGemvMaxRows && (g.m <= cpuGemvAnyKRows || g.k >= cpuGemvMinK)
}

// bRowsAlongK: B's rows run along K (a Linear's weight [N, K]), so the kernel reads B^T.
func (g *matmulGroup) bRowsAlongK() bool { return g.bSK == 1 && g.bSN != 1 }

func newMatmulEpilogue(out View, nb, nm int) *epilogue {
	r := len(out.Shape)
	return &epilogue{shape: out.Shape,
		axes:  [][2]int{{0, nb}, {nb, nb + nm}, {r - 1, r}},
		vars:  []string{"batch", "rm[:, None]", "rn[None, :]"},
		masks: []string{"", "(rm[:, None] < M)", "(rn[None, :] < N)"}}
}

func lowerLinear(l *lowerer, n *graph.Node) error {
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	w := l.values[n.Param("weight").Name]
	if err := dotDType(x.DType); err != nil {
		return err
	}
	r := len(x.Shape)
	k := x.Shape[r-1]
	var norm *normGroup
	var head *rowHead
	if !headRepeats(w) {
		norm, head = l.rowHeadFor(n, k) // a LayerNorm this Linear applies as it loads its rows
	}
	if head != nil {
		x = norm.x
	}
	nout := w.Shape[0]
	// rows: all leading dims as one M axis when their strides merge; else the last leading
	// dim as M and the others as the matmul batch (a transposed view needs no copy); else a copy
	nb, batch, sb := 0, 1, 0
	sm, ok := mergeStrides(x.Shape, x.Strides, 0, r-1)
	m := numel(x.Shape[:r-1])
	if !ok && r >= 3 && head == nil && x.Strides[r-2] == 1 && x.Strides[r-1] != 1 {
		if sb, okb := mergeStrides(x.Shape, x.Strides, 0, r-2); okb {
			return l.linearTransposed(n, x, w, sb)
		}
	}
	if !ok && r >= 3 {
		if b, okb := mergeStrides(x.Shape, x.Strides, 0, r-2); okb {
			nb, batch, sb, sm, ok = r-2, numel(x.Shape[:r-2]), b, x.Strides[r-2], true
			m = x.Shape[r-2]
		}
	}
	if !ok {
		x = l.contiguous(x, n)
		sm, _ = mergeStrides(x.Shape, x.Strides, 0, r-1)
	}
	if m == 1 {
		sm = 0
	}
	bias := l.optionalParam(n, "bias")
	// Linear-act-Linear: merge with the Linear that produced x, when it may be fused.
	if prev, ok := l.fusable(n.Inputs[0].Name).(*matmulGroup); ok && prev.linear && prev.mlpCompatible(l, w) {
		chain := append(append([]string(nil), prev.ops...), n.Op)
		fuse, reason := l.decideFusion(chain, prev.out, prev.ops, n.Op)
		if fuse {
			l.mergeMLP(prev, n, w, bias, reason)
			return nil
		}
		l.notes[prev] = append(l.notes[prev], fmt.Sprintf("%s not fused into an MLP kernel: %s", n.Name, reason))
	}
	out := l.newOutput(n.Name, n.Output().Shape, n.Output().DType)
	g := &matmulGroup{groupBase: groupBase{nodes: []string{n.Name}, ops: []string{n.Op}, out: out},
		a: x, b: w, aSB: sb, aSM: sm, aSK: x.Strides[r-1], bSK: 1, bSN: k, batch: batch, m: m, nn: nout, k: k,
		linear: nb == 0, weight: w, head: head}
	g.epi = newMatmulEpilogue(out, nb, len(out.Shape)-1-nb)
	if bias != nil {
		if !g.epi.tryFuse(opExpr("add", inExpr(), leafExpr(0)), []View{*bias}) {
			return fmt.Errorf("bias %s does not broadcast to %s", shapeStr(bias.Shape), shapeStr(out.Shape))
		}
	}
	if head != nil {
		l.takePlace(norm, g, n.Name)
		return nil
	}
	l.addGroup(g, n.Name)
	return nil
}

// linearTransposed lowers a Linear whose input x [..., M, K] is a transposed view, dense
// along M (an MLP-Mixer's token mixing over x.transpose(1, 2)), as the transposed product
// out^T = W @ x^T: the weight is A, read along its rows, and x is B, read along its dense
// rows; the result is stored as out^T, so out is a transposed view in turn, which the next
// token-mixing Linear reads the same way and whose transpose back is dense. The epilogue's
// row and column indices swap accordingly (the bias runs along the kernel's rows).
func (l *lowerer) linearTransposed(n *graph.Node, x, w View, sb int) error {
	r := len(x.Shape)
	nb, m, k, nout := r-2, x.Shape[r-2], x.Shape[r-1], w.Shape[0]
	shape := n.Output().Shape
	swap := make([]int, r)
	for i := range swap {
		swap[i] = i
	}
	swap[r-2], swap[r-1] = r-1, r-2
	out := l.newOutput(n.Name, append(append([]int(nil), shape[:nb]...), nout, m), n.Output().DType).permute(swap)
	g := &matmulGroup{groupBase: groupBase{nodes: []string{n.Name}, ops: []string{n.Op}, out: out},
		a: w, b: x, aSM: w.Strides[0], aSK: w.Strides[1], bSB: sb, bSK: x.Strides[r-1], bSN: x.Strides[r-2],
		batch: numel(shape[:nb]), m: nout, nn: m, k: k}
	g.epi = &epilogue{shape: out.Shape, axes: [][2]int{{0, nb}, {nb, nb + 1}, {r - 1, r}},
		vars:  []string{"batch", "rn[None, :]", "rm[:, None]"},
		masks: []string{"", "(rn[None, :] < N)", "(rm[:, None] < M)"}}
	if bias := l.optionalParam(n, "bias"); bias != nil && !g.epi.tryFuse(opExpr("add", inExpr(), leafExpr(0)), []View{*bias}) {
		return fmt.Errorf("bias %s does not broadcast to %s", shapeStr(bias.Shape), shapeStr(out.Shape))
	}
	l.addGroup(g, n.Name)
	l.notes[g] = append(l.notes[g], fmt.Sprintf("%s's input is a transposed view: computed as its transpose, W @ x^T, and stored so", n.Name))
	return nil
}

// mlpCompatible: the first Linear of a fusable pair reads rows with unit stride, its data and
// both weights have one dtype (float32, float16 or bfloat16), its epilogue is element-wise on
// its own value plus per-column vectors (bias), draws no random numbers, and both weight
// matrices of one model fit in cache.
func (g *matmulGroup) mlpCompatible(l *lowerer, w2 View) bool {
	d := g.a.DType
	if g.aSK != 1 || dotDType(d) != nil || g.out.DType != d || g.weight.DType != d || w2.DType != d {
		return false
	}
	if g.epi.usesRandom() {
		return false
	}
	for _, lf := range g.epi.leaves {
		if lf.strides[1] != 0 { // must not vary along rows
			return false
		}
	}
	bytes, limit := (g.weight.Numel()+w2.Numel())*d.Size(), mlpMaxWeightBytes
	if l.opts.Device.Caps.HostThreads {
		limit = cpuMLPMaxWeightBytes
	}
	return bytes <= limit && w2.Shape[0] <= mlpMaxOut && w2.Shape[1] == g.nn
}

// mlpGroup is Linear-act-Linear in one kernel.
type mlpGroup struct {
	groupBase
	first  *matmulGroup
	w2     View
	o      int
	hidden *epilogue // the first Linear's epilogue (bias, activation)
	// rows: mlp.py's Rows form (the CPU) over w1t = W1^T and w2t = W2^T, prepared at load
	rows     bool
	w1t, w2t View
	tails    []*rowTail // row ops after the epilogue (rowops.go)
	head     *rowHead   // the first Linear's row head (rowops.go): BLOCK_K covers K
	// kept: where the kernel also stores its value before the row tails, for that value's
	// other readers (rowops.go's tryKeptRowTail); nil when none
	kept *View
}

func (l *lowerer) mergeMLP(prev *matmulGroup, n *graph.Node, w2 View, bias *View, reason string) {
	out := l.newOutput(n.Name, n.Output().Shape, n.Output().DType)
	g := &mlpGroup{
		groupBase: groupBase{index: prev.index, nodes: append(append([]string(nil), prev.nodes...), n.Name),
			ops: append(append([]string(nil), prev.ops...), n.Op), out: out,
			fused: append(append([]string(nil), prev.fused...), fmt.Sprintf("%s fused with %s into one MLP kernel: %s", prev.nodes[0], n.Name, reason))},
		first: prev, w2: w2, o: w2.Shape[0], hidden: prev.epi, head: prev.head,
	}
	g.epi = newMatmulEpilogue(out, 0, len(out.Shape)-1)
	if bias != nil {
		g.epi.tryFuse(opExpr("add", inExpr(), leafExpr(0)), []View{*bias})
	}
	l.groups[prev.index] = g
	delete(l.owner, prev.value)
	g.value = n.Name
	l.writer[out.Buf] = prev.index
	l.values[n.Name] = out
	l.owner[n.Name] = g
	l.notes[g] = l.notes[prev]
}

// matmul: torch.matmul with broadcast batch dims; 1-D operands are promoted and the added dim
// removed from the result.
func lowerMatmul(l *lowerer, n *graph.Node) error {
	a, err := l.input(n, 0)
	if err != nil {
		return err
	}
	b, err := l.input(n, 1)
	if err != nil {
		return err
	}
	if err := dotDType(a.DType); err != nil {
		return err
	}
	if err := dotDType(b.DType); err != nil {
		return err
	}
	if len(a.Shape) == 1 {
		a = a.unsqueeze(0)
	}
	if len(b.Shape) == 1 {
		b = b.unsqueeze(1)
	}
	ra, rb := len(a.Shape), len(b.Shape)
	m, k, nn := a.Shape[ra-2], a.Shape[ra-1], b.Shape[rb-1]
	if b.Shape[rb-2] != k {
		return fmt.Errorf("inner dims differ: %s @ %s", shapeStr(a.Shape), shapeStr(b.Shape))
	}
	batchShape, err := broadcastShapes(a.Shape[:ra-2], b.Shape[:rb-2])
	if err != nil {
		return err
	}
	nb := len(batchShape)
	full := func(v View) View {
		f := append(append([]int(nil), batchShape...), v.Shape[len(v.Shape)-2:]...)
		st, _ := v.broadcastStrides(f)
		return View{Buf: v.Buf, Offset: v.Offset, Shape: f, Strides: st, ModelStride: v.ModelStride, DType: v.DType}
	}
	a, b = full(a), full(b)
	// each operand's batch dims must collapse into one stride, or into an outer and an inner
	// stride split at the same dim for both (heads of a [B, T, H, D] view transposed to
	// [B, H, T, D], read in place); otherwise the operand is copied
	split, batchIn := batchSplit(nb, a, b)
	prep := func(v View) (View, int, int) {
		if sOut, sIn, ok := splitStrides(v, split, nb); ok {
			return v, sOut, sIn
		}
		c := l.materialize(v, n.Name+".operand", []string{n.Name + " (broadcast operand)"})
		sOut, sIn, _ := splitStrides(c, split, nb)
		return c, sOut, sIn
	}
	a, aSB, aSBIn := prep(a)
	b, bSB, bSBIn := prep(b)
	inner := append(append([]int(nil), batchShape...), m, nn)
	out := l.newOutput(n.Name, inner, n.Output().DType)
	g := &matmulGroup{groupBase: groupBase{nodes: []string{n.Name}, ops: []string{n.Op}, out: out},
		a: a, b: b, aSB: aSB, aSM: a.Strides[nb], aSK: a.Strides[nb+1], bSB: bSB, bSK: b.Strides[nb], bSN: b.Strides[nb+1],
		aSBIn: aSBIn, bSBIn: bSBIn, batchIn: batchIn, nb: nb, split: split, batch: numel(batchShape), m: m, nn: nn, k: k}
	if m == 1 {
		g.aSM = 0
	}
	result := out
	if !slices.Equal(inner, n.Output().Shape) {
		result, _ = out.reshape(n.Output().Shape)
	} else {
		g.epi = newMatmulEpilogue(out, nb, 1)
	}
	l.addGroup(g, n.Name)
	l.values[n.Name] = result
	return nil
}

// batchSplit picks where a matmul's nb batch dims split into an outer and an inner group
// whose strides every view merges (batchSplit returns nb and an inner size of 1 when every
// view merges them whole, or when no split serves all: then the copied operands merge).
func batchSplit(nb int, vs ...View) (split, inner int) {
	mergeAll := func(lo, hi int) bool {
		for _, v := range vs {
			if _, ok := mergeStrides(v.Shape, v.Strides, lo, hi); !ok {
				return false
			}
		}
		return true
	}
	if nb < 2 || mergeAll(0, nb) {
		return nb, 1
	}
	for s := 1; s < nb; s++ {
		if mergeAll(0, s) && mergeAll(s, nb) {
			return s, numel(vs[0].Shape[s:nb])
		}
	}
	return nb, 1
}

// storePermuted makes the pending matmul producing value (its only use being a permute of
// it, p) store its result in p's order, so that p is dense: attention heads (att @ v,
// [B, H, T, D]) are written as [B, T, H, D] rows, which the merge of the heads reshapes
// without a copy. It reports false, changing nothing, where the matmul cannot.
func (l *lowerer) storePermuted(value string, p View, dims []int) (View, bool) {
	g, ok := l.fusable(value).(*matmulGroup)
	if !ok || g.linear || g.nb == 0 || g.store != nil || len(g.tails) > 0 || g.head != nil || (g.epi != nil && g.epi.usesRandom()) ||
		len(g.out.Shape) != g.nb+2 || p.Contiguous() {
		return View{}, false
	}
	if v := l.values[value]; v.Buf != g.out.Buf || !slices.Equal(v.Shape, g.out.Shape) || !slices.Equal(v.Strides, g.out.Strides) {
		return View{}, false
	}
	dense := contiguousStrides(p.Shape)
	store := g.out
	store.Strides = make([]int, len(dims))
	for j, d := range dims {
		store.Strides[d] = dense[j]
	}
	split, inner := batchSplit(g.nb, g.a, g.b, store)
	aOut, aIn, okA := splitStrides(g.a, split, g.nb)
	bOut, bIn, okB := splitStrides(g.b, split, g.nb)
	if _, _, okS := splitStrides(store, split, g.nb); !okA || !okB || !okS {
		return View{}, false
	}
	g.store, g.split, g.aSB, g.aSBIn, g.bSB, g.bSBIn, g.batchIn = &store, split, aOut, aIn, bOut, bIn, inner
	l.notes[g] = append(l.notes[g], fmt.Sprintf("%s stored in the order of its permute (dense for what reads it)", value))
	return View{Buf: g.out.Buf, Offset: g.out.Offset, Shape: p.Shape, Strides: dense, ModelStride: g.out.ModelStride, DType: g.out.DType}, true
}

// splitStrides gives v's outer and inner batch strides for batch dims split at split: a
// flat batch index b is (b / inner, b % inner). Unsplit (split == nb), the outer stride is
// the merged one and the inner is unused.
func splitStrides(v View, split, nb int) (outer, inner int, ok bool) {
	if outer, ok = mergeStrides(v.Shape, v.Strides, 0, split); !ok {
		return 0, 0, false
	}
	inner, ok = mergeStrides(v.Shape, v.Strides, split, nb)
	return outer, inner, ok
}

// dotDType accepts the dtypes tl.dot multiplies (accumulating in fp32).
func dotDType(d graph.DType) error {
	switch d {
	case graph.Float32, graph.Float16, graph.BFloat16:
		return nil
	}
	return fmt.Errorf("operand is %s; matmuls are lowered for float32, float16 and bfloat16 (tl.dot)", d)
}

func broadcastShapes(a, b []int) ([]int, error) {
	r := len(a)
	if len(b) > r {
		r = len(b)
	}
	out := make([]int, r)
	for i := 0; i < r; i++ {
		da, db := 1, 1
		if j := i - (r - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (r - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db || db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, fmt.Errorf("batch dims %s and %s do not broadcast", shapeStr(a), shapeStr(b))
		}
	}
	return out, nil
}

// matmulData is what matmul.py reads.
type matmulData struct {
	SplitBatch   bool // batch_in, a_bstride_in, b_bstride_in: the operands' batch in two strides
	BRowsAlongK  bool
	Fn           string
	Header       []string
	Epilogue     []loadLine
	EpilogueArgs []string
	ExtraArgs    []string
	Body         []string
	HeadLoads    []loadLine // a row head's parameters (rowops.go), loaded before the K loop
	Head         []string   // its statements, normalising the loaded a
}

func ptrArgs(prefix string, v View) []LaunchArg {
	return []LaunchArg{{Name: prefix + "_ptr", Kind: PtrArg, Buf: v.Buf, Offset: v.Offset, ModelStride: v.ModelStride},
		{Name: prefix + "_mstride", Kind: IntArg, Int: int64(v.ModelStride)}}
}

func intArg(name string, v int) LaunchArg { return LaunchArg{Name: name, Kind: IntArg, Int: int64(v)} }

// heuristicBlocks is the built-in tile choice (the default tunables candidate, tunables.go).
// On the CPU a program multiplies tiles of up to 128 x 128 over K panels of up to 512: few
// large dots keep the per-tile work (loads, the weight tile's transpose) small next to the
// multiply-adds, and edge tiles cost only their live part (jit/cpu's live extents). A tile
// that is exactly a whole operand block (BLOCK_K = K) is read in place, without a copy.
func (g *matmulGroup) heuristicBlocks() (bm, bn, bk int) {
	if g.cpu && g.gemv() && len(g.tails) == 0 {
		// Few rows reading the weight rows in place: a program takes whole rows, all of K at
		// once, so it reads one contiguous block of the weight, which the hardware prefetches
		// as a stream (in K slices of 512, rows 12 KB long were read in 2 KB pieces far apart:
		// convnext_tiny's 3072 -> 768 Linear ran slower than on the transposed weight).
		bk = clamp(nextPow2(g.k), 16, cpuGemvMaxBlockK)
		bm, bn = clamp(nextPow2(g.m), 16, cpuMaxBlockMN), clamp(min(cpuGemvTile/bk, nextPow2(g.nn)), 16, 2*cpuMaxBlockMN)
		bm, bn = g.spreadOverCores(bm, bn, g.m, g.nn, g.batch, g.k)
		return bm, bn, bk
	}
	if g.cpu {
		bm, bn = clamp(nextPow2(g.m), 16, cpuMaxBlockMN), clamp(nextPow2(g.nn), 16, 2*cpuMaxBlockMN)
		if len(g.tails) > 0 {
			// programs hold whole rows: only the rows split, a row costing N x K
			bm, _ = g.spreadOverCores(bm, 1, g.m, 1, g.batch, g.nn*g.k)
		} else {
			bm, bn = g.spreadOverCores(bm, bn, g.m, g.nn, g.batch, g.k)
		}
		return bm, bn, clamp(nextPow2(g.k), 16, cpuMaxBlockK)
	}
	return clamp(nextPow2(g.m), 16, 64), clamp(nextPow2(g.nn), 16, 64), clamp(nextPow2(g.k), 16, 32)
}

// A few-row CPU Linear's weight tile (gemv): up to cpuGemvTile elements (256 KiB, a core's
// L2 holds it with room to spare), K up to cpuGemvMaxBlockK at once.
const (
	cpuGemvTile      = 64 << 10
	cpuGemvMaxBlockK = 4096
)

// The largest CPU dot tiles: a 128 x 512 activation tile and a 512 x 128 weight tile (256 KiB
// each) stay within a core's L2.
const (
	cpuMaxBlockMN = 128
	cpuMaxBlockK  = 512
)

// spreadOverCores picks a CPU launch's output tile of rows x cols blocks from br x bc and
// its halvings, rows first (a block of activation rows reads its rows and the whole weight
// panel in place; halving the weight side made the programs of a 64 x 256 x 128 Linear 40%
// slower), down to 16 rows and 32 columns. It takes the tile whose programs, taken in turn
// by the cores as they come free, end first, counting a fixed cost per program, so odd sizes
// do not leave one core with a full tile and the other with a sliver.
func (g *groupBase) spreadOverCores(br, bc, rows, cols, batch, k int) (int, int) {
	if rows*cols*k*batch*g.models < cpuSerialWork {
		return br, bc // one worker runs it anyway: more programs would only add their costs
	}
	best, bestR, bestC := math.MaxInt, br, bc
	for r, c := br, bc; ; {
		if t := makespan(r, c, rows, cols, batch*g.models, k, g.cores); t < best {
			best, bestR, bestC = t, r, c
		}
		if cdiv(rows, r)*cdiv(cols, c)*batch*g.models >= 8*g.cores {
			break // enough programs to balance any edge
		}
		switch {
		case r > 16:
			r /= 2
		case c > 32:
			c /= 2
		default:
			return bestR, bestC
		}
	}
	return bestR, bestC
}

// cpuSerialWork is the multiply-adds under which a launch keeps its tiles whole: about 25 µs
// at 80 G multiply-adds a second. jit/cpu shares launches of 5 µs or more over the cores, but
// splitting these small ones into more programs measured no faster (the zoo MLP at N = 1: 9 µs
// a run as one program, 11 µs spread at 400K multiply-adds).
const cpuSerialWork = 2 << 20

// programCost is a CPU program's fixed cost in multiply-adds (about 1 µs): its steps, the
// operand tiles' bounds checks and copies.
const programCost = 64 << 10

// makespan is when the last of a launch's programs ends, in multiply-adds, when cores
// workers take the programs in launch order as they come free: a grid of row x column
// tiles repeated copies times, each program costing its live rows x columns x k.
func makespan(br, bc, rows, cols, copies, k, cores int) int {
	free := make([]int, cores) // when each worker is next free
	for range copies {
		for r0 := 0; r0 < rows; r0 += br {
			for c0 := 0; c0 < cols; c0 += bc {
				w := 0
				for i := range free {
					if free[i] < free[w] {
						w = i
					}
				}
				free[w] += min(br, rows-r0)*min(bc, cols-c0)*k + programCost
			}
		}
	}
	return slices.Max(free)
}

func (g *matmulGroup) emit(l *lowerer) (*Launch, error) {
	fn := kernelName(g.index, g.ops)
	// the output's batch strides: one, or outer and inner ones (splitBatch); its layout is out's
	// own unless storePermuted chose another
	splitBatch := g.batchIn > 1
	outBS := g.m * g.nn
	cSB, cSBIn, cSM, cSN := outBS, outBS, g.nn, 1
	if splitBatch {
		cSB = outBS * g.batchIn
	}
	if s := g.store; s != nil {
		cSB, cSBIn, _ = splitStrides(*s, g.split, g.nb)
		cSM, cSN = s.Strides[g.nb], s.Strides[g.nb+1]
	}
	cBatch := "batch * c_bstride"
	if splitBatch {
		cBatch = "(batch // batch_in) * c_bstride + (batch % batch_in) * c_bstride_in"
	}
	var re renderedEpilogue
	if g.epi != nil {
		var err error
		re, err = g.epi.render("acc", "cmask", "tl.float32",
			"(model + model_base) * c_mstride + "+cBatch+" + rm[:, None] * c_sm + rn[None, :] * c_sn", "e")
		if err != nil {
			return nil, err
		}
	} else {
		re.body = []string{"y = acc"}
	}
	bm, bn, bk := g.blocks() // the chosen tunables, else heuristicBlocks
	tilesN := cdiv(g.nn, bn)
	if err := renderRowTails(&re, g.tails, g.epi, g.nn, bn); err != nil {
		return nil, err
	}
	var head headedRows
	if g.head != nil {
		head = g.head.render("a", g.k, bk)
	}
	var args []LaunchArg
	args = append(args, ptrArgs("a", g.a)...)
	args = append(args, intArg("a_bstride", g.aSB), intArg("a_sm", g.aSM), intArg("a_sk", g.aSK))
	args = append(args, ptrArgs("b", g.b)...)
	args = append(args, intArg("b_bstride", g.bSB), intArg("b_sk", g.bSK), intArg("b_sn", g.bSN))
	args = append(args, ptrArgs("c", g.out)...)
	args = append(args, intArg("c_bstride", cSB), intArg("c_sm", cSM), intArg("c_sn", cSN))
	args = append(args, re.args...)
	args = append(args, head.args...)
	args = append(args, intArg("M", g.m), intArg("N", g.nn), intArg("K", g.k), intArg("tiles_n", tilesN))
	if splitBatch {
		args = append(args, intArg("batch_in", g.batchIn), intArg("a_bstride_in", g.aSBIn), intArg("b_bstride_in", g.bSBIn), intArg("c_bstride_in", cSBIn))
	}
	args = append(args, re.extra...)
	d := matmulData{SplitBatch: splitBatch, BRowsAlongK: g.bRowsAlongK(), Fn: fn, Header: header(g.nodes, g.ops), Epilogue: re.loads, EpilogueArgs: argNames(append(re.args, head.args...)),
		ExtraArgs: argNames(re.extra), Body: re.body, HeadLoads: head.loads, Head: head.body}
	text, err := templates.Render("matmul.py", d)
	if err != nil {
		return nil, err
	}
	return &Launch{
		Kernel:    l.dotKernel("matmul.py", fn, text, map[string]any{"BLOCK_M": int64(bm), "BLOCK_N": int64(bn), "BLOCK_K": int64(bk)}),
		Grid:      [3]int{cdiv(g.m, bm) * tilesN, g.batch, l.n},
		ModelAxis: 2,
		Args:      args,
	}, nil
}

// mlpData is what mlp.py reads.
type mlpData struct {
	Rows         bool
	Fn           string
	Header       []string
	HiddenArgs   []string
	HiddenLoads  []loadLine
	Hidden       []string
	Epilogue     []loadLine
	EpilogueArgs []string
	ExtraArgs    []string
	Body         []string
	HeadLoads    []loadLine // the first Linear's row head (rowops.go)
	Head         []string
}

// heuristicBlocks is the built-in tile choice (the default tunables candidate, tunables.go).
func (g *mlpGroup) heuristicBlocks() (bm, bk, bh int) {
	f := g.first
	if g.cpu {
		// programs split the rows only; a row costs both layers' multiply-adds
		bm, _ := g.spreadOverCores(clamp(nextPow2(f.m), 16, 64), 1, f.m, 1, 1, f.nn*f.k+g.o*f.nn)
		bh := clamp(nextPow2(f.nn), 16, cpuMaxBlockMN)
		return bm, clamp(nextPow2(f.k), 16, cpuMaxBlockK), bh
	}
	return clamp(nextPow2(f.m), 16, 32), clamp(nextPow2(f.k), 16, 64), clamp(nextPow2(f.nn), 16, 128)
}

func (g *mlpGroup) emit(l *lowerer) (*Launch, error) {
	fn := kernelName(g.index, g.ops)
	f := g.first
	// the hidden epilogue reads per-unit vectors along the hidden slice rh; mlp.py holds the
	// hidden tile transposed, [BLOCK_H, BLOCK_M], but in its Rows form
	rh := "rh[:, None]"
	if g.rows {
		rh = "rh[None, :]"
	}
	hid := *g.hidden
	hid.vars = []string{"batch", "0", rh}
	hid.masks = []string{"", "", "(" + rh + " < H)"}
	hre, err := hid.render("h", rh+" < H", "tl.float32", "", "hid")
	if err != nil {
		return nil, err
	}
	hidden := hiddenBody(hre.body)
	if t := halfType(f.weight.DType); t != "" {
		// PyTorch stores the hidden activation in the data's dtype, which the second dot takes
		hidden = append(hidden, "h = h.to("+t+")")
	}
	re, err := g.epi.render("acc", "cmask", "tl.float32", "(model + model_base) * c_mstride + rm[:, None] * c_sm + rn[None, :]", "e")
	if err != nil {
		return nil, err
	}
	bm, bk, bh := g.blocks() // the chosen tunables, else heuristicBlocks
	bn := clamp(nextPow2(g.o), 16, mlpMaxOut)
	if g.kept != nil {
		re.args = append(re.args, ptrArgs("kept", *g.kept)...)
		re.body = append(re.body, "tl.store(kept_ptr + model * kept_mstride + rm[:, None] * c_sm + rn[None, :], y, mask=cmask)")
	}
	if err := renderRowTails(&re, g.tails, g.epi, g.o, bn); err != nil {
		return nil, err
	}
	var head headedRows
	if g.head != nil {
		xv := "xt"
		if g.rows {
			xv = "x"
		}
		head = g.head.render(xv, f.k, bk)
	}
	var args []LaunchArg
	args = append(args, ptrArgs("x", f.a)...)
	args = append(args, intArg("x_sm", f.aSM))
	if g.rows {
		args = append(args, ptrArgs("w1", g.w1t)...)
		args = append(args, intArg("w1_sk", g.w1t.Strides[0]))
	} else {
		args = append(args, ptrArgs("w1", f.weight)...)
	}
	args = append(args, hre.args...)
	args = append(args, head.args...)
	if g.rows {
		args = append(args, ptrArgs("w2", g.w2t)...)
		args = append(args, intArg("w2_sk", g.w2t.Strides[0]))
	} else {
		args = append(args, ptrArgs("w2", g.w2)...)
	}
	args = append(args, ptrArgs("c", g.out)...)
	args = append(args, intArg("c_sm", g.o))
	args = append(args, re.args...)
	args = append(args, intArg("M", f.m), intArg("K", f.k), intArg("H", f.nn), intArg("N", g.o))
	args = append(args, re.extra...)
	d := mlpData{Fn: fn, Header: header(g.nodes, g.ops), HiddenArgs: argNames(append(hre.args, head.args...)), HiddenLoads: hre.loads,
		HeadLoads: head.loads, Head: head.body,
		Hidden: hidden, Epilogue: re.loads, EpilogueArgs: argNames(re.args), ExtraArgs: argNames(re.extra), Body: re.body,
		Rows: g.rows}
	text, err := templates.Render("mlp.py", d)
	if err != nil {
		return nil, err
	}
	return &Launch{
		Kernel: l.dotKernel("mlp.py", fn, text, map[string]any{"BLOCK_M": int64(bm), "BLOCK_K": int64(bk),
			"BLOCK_H": int64(bh), "BLOCK_N": int64(bn)}),
		Grid:      [3]int{cdiv(f.m, bm), 1, l.n},
		ModelAxis: 2,
		Args:      args,
	}, nil
}

// hiddenBody is a rendered epilogue body (statements ending in `y = ...`) as the statements of
// a hidden layer, ending in `h = ...` instead.
func hiddenBody(body []string) []string {
	hidden := slices.Clone(body[:len(body)-1])
	return append(hidden, "h = "+body[len(body)-1][len("y = "):])
}

// isParamMatrix reports whether v is a 2-D parameter view with unit column stride (a weight
// as a Linear holds it).
func isParamMatrix(v View) bool {
	return v.Buf.Kind == ParamBuffer && len(v.Shape) == 2 && v.Strides[1] == 1
}

// weightRowAlign is the row stride, in elements, that CPU-prepared weights are padded to:
// 16 fp32 are one 64-byte cache line, so every row of a weight tile starts on a line and
// the dot micro-kernel's vector loads never straddle two (an odd width such as 131 otherwise
// splits nearly every load, and the matmul runs a third slower per multiply-add).
const weightRowAlign = 16

// paddedRows allocates a [N, rows, cols] temp buffer whose rows are weightRowAlign-aligned
// apart; the view covers the cols live elements of each (the rest is never read: tile loads
// mask columns at cols).
func (l *lowerer) paddedRows(name string, rows, cols int, dt graph.DType) View {
	ld := (cols + weightRowAlign - 1) / weightRowAlign * weightRowAlign
	b := l.newBuffer(TempBuffer, name, dt, l.n*rows*ld)
	return View{Buf: b, Shape: []int{rows, cols}, Strides: []int{ld, 1}, ModelStride: rows * ld, DType: dt}
}

func newKernel(template, fn, text string, consts map[string]any) *KernelSource {
	return &KernelSource{Template: template, Source: jit.Source{File: fn + ".py", Text: text, Fn: fn}, Consts: consts}
}

// pretransposeWeights gives the CPU matmuls that read a weight parameter as rows of B^T (a
// Linear's [out, in]) the weight transposed to [in, out], computed once by a prepare launch
// (Plan.markPrepare) placed before every other: each program then reads its weight tile as
// plain rows, in place when they are fully live, instead of transposing it per tile and K
// step. A weight shared by several matmuls is transposed once. A Linear on cpuGemvMaxRows
// rows or fewer keeps its weight as it is: jit/cpu multiplies a few rows by a transposed
// tile without transposing it, reading the weight rows in place, in order (its gemv path).
func (l *lowerer) pretransposeWeights() {
	var pre []group
	done := map[string]View{}
	transposed := func(w View) View {
		key := fmt.Sprint(w.Buf.ID, w.Offset, w.Shape, w.Strides)
		wt, ok := done[key]
		if !ok {
			name := w.Buf.Name + ".T"
			wt = l.paddedRows(name, w.Shape[1], w.Shape[0], w.DType)
			tg := newElementwise(wt, []string{w.Buf.Name + " (transposed once for the CPU)"}, []string{"transpose"})
			tg.epi.root = leafExpr(tg.epi.addLeafUnchecked(w.permute([]int{1, 0})))
			tg.value = name
			pre = append(pre, tg)
			done[key] = wt
		}
		return wt
	}
	for _, gr := range l.groups {
		switch g := gr.(type) {
		case *matmulGroup:
			if g.b.Buf.Kind != ParamBuffer || len(g.b.Shape) != 2 || g.batch != 1 || g.bSK != 1 || g.bSN == 1 {
				continue
			}
			if g.gemv() {
				l.notes[g] = append(l.notes[g], fmt.Sprintf("%d rows a model: the weight's rows are read in place, each once, in order (the CPU's gemv path)", g.m))
				continue
			}
			// transposed takes a weight as a Linear holds it, [N, K] with K contiguous; a
			// matmul's parameter B is [K, N] (x @ w.t(), a [K, 1] column)
			w := g.b
			if slices.Equal(w.Shape, []int{g.k, g.nn}) && (g.k != g.nn || w.Strides[1] != 1) {
				w = g.b.permute([]int{1, 0})
			}
			wt := transposed(w)
			g.b, g.bSK, g.bSN = wt, wt.Strides[0], wt.Strides[1]
		case *mlpGroup:
			// mlp.py's Rows form reads both weights as rows of their transposes
			if w1, w2 := g.first.weight, g.w2; isParamMatrix(w1) && isParamMatrix(w2) {
				g.w1t, g.w2t = transposed(w1), transposed(w2)
				g.rows = true
			}
		}
	}
	if len(pre) == 0 {
		return
	}
	l.groups = append(pre, l.groups...)
	for i, gr := range l.groups {
		b := gr.base()
		b.index = i
		l.writer[b.out.Buf] = i
		if m, ok := gr.(*mlpGroup); ok && m.kept != nil {
			l.writer[m.kept.Buf] = i
		}
	}
}
