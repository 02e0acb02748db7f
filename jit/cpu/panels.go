package cpu

import (
	"cmp"
	"slices"
	"sync/atomic"

	"github.com/widejit/widejit/triton/ir"
)

// Deferred dots. A convolution's tap loop (conv_flat.py) adds one shallow product per tap,
// `acc += tl.dot(a, b)` with k only a tap's channels, so each tl.dot on its own would load
// and store the whole accumulator for a few k steps. When a loop nest only carries the
// accumulator (no other instruction reads it) and stores nothing, the dots whose operands
// view buffer memory are queued instead and run together when the outermost loop of the
// nest ends: each register block of the accumulator then sums every panel before it is
// stored (gemmPanels). Every element still sums the panels in order, each along its k in
// order, so the result is bit for bit that of the dots one at a time.

// panelMaxK: a deeper dot runs at once, through gemmF32, which packs and chunks long k;
// unless its A streams (streamsA): queued, each register block sums every panel in turn, so
// that it walks its rows of A from end to end, which the hardware prefetcher follows, rather
// than a k block of every row at a time (rows 4 KB apart, 8 at once, it does not follow).
const panelMaxK = 64

// streamsA says whether a dot's A (rows lda elements apart) against n columns of B is a
// weight streamed from memory (gemmStreamA): rows 4 KB or more apart, each element used by
// a narrow tile (a convolution's pixels) only. Against wider tiles A is reused enough for
// gemmF32's k blocks to pay, and walking all of k per register block evicts B (a Linear's
// weight panel) from the cache.
func streamsA(lda, n int) bool { return gemmStreamA && lda >= 1024 && n <= streamMaxCols }

// streamMaxCols is the widest B that streamsA streams A against: the pixel tiles of the
// folded convolutions.
const streamMaxCols = 64

var (
	queueDots  = true       // tests turn the queue off to compare
	queuedDots atomic.Int64 // products queued (tests read it)
)

// dotPanel is one queued product: a [m, k] (rows lda apart) times b [k, n] (ldb apart),
// m and n the live rows and columns.
type dotPanel struct {
	a, b     []float32
	lda, ldb int
	m, n, k  int
}

// gemmPanel is a dotPanel as the panels micro-kernels read it (dot_asm_gen.go: 40 bytes,
// fields in this order).
type gemmPanel struct {
	a   *float32
	lda int
	b   *float32
	ldb int
	k   int
}

// panelKernel is a panels micro-kernel: it sums the panels' products into a block of rows x
// panelCols of c; narrow, where set, into rows x panelCols/2 (paddedEdge's narrow edges);
// stream, where set, as run, prefetching each row of A ahead (a weight streamed from memory);
// pair, where set, as run, its second panelCols/2 columns off past its first (pairStrip).
type panelKernel struct {
	rows                int
	run, narrow, stream func(p *gemmPanel, np, row, col int, c *float32, ldc int)
	pair                func(p *gemmPanel, np, row, col int, c *float32, ldc, off int)
}

// The panels micro-kernels in use (selectMicroKernel), tallest first, all panelCols wide;
// none: the panels run one at a time. panelWide, where set, is a wider kernel of the one
// height (AVX-512 on Intel: 8x48, 24 accumulators, three B vectors a broadcast where 8x32
// loads two), run on as many column strips as leave no more columns to the narrow ones.
var (
	panelKernels []panelKernel
	panelCols    int
	panelWide    struct {
		cols int
		run  func(p *gemmPanel, np, row, col int, c *float32, ldc int)
	}
)

// panelPadEdge (AVX2) runs the columns right of the panelCols-wide strips on the panels
// kernels too, through zero-padded copies (panelEdge): without masked loads the other way is
// gemmF32 panel by panel, a k block of every row at a time, which reads a far-apart weight
// again in the order the queue avoids (resnet18's layer 4: 26 pixel columns, 16 + 10).
var panelPadEdge bool

// paddedEdges counts the padded edges run (tests read it).
var paddedEdges atomic.Int64

// pairStripRuns counts the gemmPanels calls that run pair strips (tests read it).
var pairStripRuns atomic.Int64

// rowsOutside counts the gemmPanels calls that walk row blocks outside (streamedA; tests
// read it).
var rowsOutside atomic.Int64

// pendingDots is a frame's queue: products to add into c (rows ldc apart).
type pendingDots struct {
	c        []float32
	ldc      int
	panels   []dotPanel
	asm      []gemmPanel
	epilogue []epilogueOp  // steps each element goes through after its dots (panels_epilogue.go)
	vecs     []float32     // the storage of the epilogue's row vectors
	lanes    []bool        // the storage of the epilogue's select conditions
	stores   []queuedStore // stores of the epilogue's result, run per block (panels_store.go)
	runs     []maskRun     // the storage of the stores' column runs
	live     []colSpan     // the storage of the columns the stores read (flushStores)
	// the rectangle [0, seenRows) x [0, seenCols) of c holds every element anyone sees after
	// the epilogue: outside the panels' blocks, it alone goes through the epilogue
	seenRows, seenCols int
}

// deferDot queues c += p; a queue for another accumulator is run first.
func (fr *frame) deferDot(p dotPanel, c []float32, ldc int) {
	_ = p.a[(p.m-1)*p.lda+p.k-1] // the bounds the kernels rely on, checked once here
	_ = p.b[(p.k-1)*p.ldb+p.n-1]
	_ = c[(p.m-1)*ldc+p.n-1]
	d := &fr.dots
	if len(d.panels) > 0 && (&d.c[0] != &c[0] || d.ldc != ldc) {
		fr.flushDots()
	}
	d.c, d.ldc = c, ldc
	d.panels = append(d.panels, p)
	queuedDots.Add(1)
}

// flushDots runs the queued products.
func (fr *frame) flushDots() {
	d := &fr.dots
	if len(d.panels) == 0 {
		return
	}
	gemmPanels(d.panels, d.c, d.ldc, &fr.gemmScratch, &d.asm, d.epilogue, d.seenRows, d.seenCols, d.stores, nil)
	fr.dropDots()
}

// flushStores runs the queued products when the recorded stores are all that read the
// accumulator (endStores): only the columns they copy from need the products.
func (fr *frame) flushStores() {
	d := &fr.dots
	if len(d.panels) == 0 {
		return
	}
	d.live = liveColumns(d.live[:0], d.stores, d.epilogue)
	gemmPanels(d.panels, d.c, d.ldc, &fr.gemmScratch, &d.asm, d.epilogue, d.seenRows, d.seenCols, d.stores, d.live)
	fr.dropDots()
}

// dropDots empties the queue (a failed launch's products are not wanted), holding no buffer.
func (fr *frame) dropDots() {
	d := &fr.dots
	clear(d.panels)
	clear(d.asm)
	clear(d.epilogue)
	clear(d.stores)
	d.panels, d.asm, d.c, d.epilogue, d.vecs, d.lanes, d.stores, d.runs = d.panels[:0], d.asm[:0], nil, d.epilogue[:0], d.vecs[:0], d.lanes[:0], d.stores[:0], d.runs[:0]
}

// gemmPanels computes c += the sum of the panels' products: the blocks that every panel
// covers whole on the panels kernel, the rest panel by panel through gemmF32. Then every
// element of c in rows [0, seenRows) x columns [0, seenCols) goes through epi, then to the
// stores st: each block right after its kernel (whole), the rest at the end. live, when not
// nil, is the columns anyone reads (the stores' own, sorted): the blocks may then skip the
// others (pairStrip).
func gemmPanels(ps []dotPanel, c []float32, ldc int, scratch *[]float32, asm *[]gemmPanel, epi []epilogueOp, seenRows, seenCols int, st []queuedStore, live []colSpan) {
	rows, cols := ps[0].m, ps[0].n
	for _, p := range ps[1:] {
		rows, cols = min(rows, p.m), min(cols, p.n)
	}
	fullR, fullC := 0, 0
	var blocks [2]int // per panel kernel, how many row blocks it takes
	wide := 0         // column strips on panelWide, left of the panelCols-wide ones
	edge := 0         // columns right of the strips on the panels kernels, zero-padded
	if len(panelKernels) > 0 && len(ps) > 1 {
		wide, fullC = panelStrips(cols)
		blocks = panelBlocks(rows)
		for i, pk := range panelKernels {
			fullR += blocks[i] * pk.rows
		}
		if panelPadEdge {
			edge = cols - fullC
		}
	}
	var pairs []pairStrip
	var pairBuf [32]pairStrip
	if fullR > 0 && live != nil && panelKernels[0].pair != nil {
		if s, ok := planPairStrips(live, cols, pairBuf[:0]); ok && !streamedA(ps, fullR, len(s)*panelCols) {
			pairs, wide, fullC, edge = s, 0, cols, 0
		}
	}
	if fullR == 0 || fullC+edge == 0 {
		fullR, fullC, edge = 0, 0, 0
	} else {
		g := (*asm)[:0]
		for _, p := range ps {
			g = append(g, gemmPanel{a: &p.a[0], lda: p.lda, b: &p.b[0], ldb: p.ldb, k: p.k})
		}
		var pe paddedEdge
		if edge > 0 { // the edge's panels: g's again, repointed to zero-padded copies
			g = append(g, g...)
			pe = newPaddedEdge(ps, g[len(ps):], fullR, fullC, edge, scratch)
			g = g[:len(ps)]
		}
		*asm = g
		block := func(i, j, h, w int) { // after the kernel: the epilogue and the stores
			if epi != nil {
				applyEpilogue(epi, c, ldc, i, i+h, j, j+w)
			}
			storeRect(st, c, ldc, i, i+h, j, j+w)
		}
		if pairs != nil {
			// column strips outside, each two pieces of live columns; two side by side are a
			// plain strip (a row of panelCols live columns), the same sums
			pairStripRuns.Add(1)
			half := panelCols / 2
			for _, s := range pairs {
				i := 0
				for b, pk := range panelKernels {
					for range blocks[b] {
						switch s.off {
						case half:
							pk.run(&g[0], len(g), i, s.col, &c[i*ldc+s.col], ldc)
							block(i, s.col, pk.rows, panelCols)
						case 0:
							pk.pair(&g[0], len(g), i, s.col, &c[i*ldc+s.col], ldc, s.off)
							block(i, s.col, pk.rows, half)
						default:
							pk.pair(&g[0], len(g), i, s.col, &c[i*ldc+s.col], ldc, s.off)
							block(i, s.col, pk.rows, half)
							block(i, s.col+s.off, pk.rows, half)
						}
						i += pk.rows
					}
				}
			}
			// the dead columns between: what the epilogue's selects and the stores put there (a
			// select's constant and the steps after it; no product, nor step before it, reaches)
			gapEpi := epi
			for len(gapEpi) > 0 && gapEpi[0].lanes == nil {
				gapEpi = gapEpi[1:]
			}
			at := 0
			for k := 0; k <= len(live); k++ {
				end := cols
				if k < len(live) {
					end = live[k].lo
				}
				if at < end {
					if gapEpi != nil {
						applyEpilogue(gapEpi, c, ldc, 0, fullR, at, end)
					}
					storeRect(st, c, ldc, 0, fullR, at, end)
				}
				if k < len(live) {
					at = live[k].hi
				}
			}
		} else if wide == 0 && streamedA(ps, fullR, fullC+edge) {
			// row blocks outside: a block's rows of A, read from memory once, stay in cache
			// for every strip
			rowsOutside.Add(1)
			i := 0
			for b, pk := range panelKernels {
				for range blocks[b] {
					for j := 0; j < fullC; j += panelCols {
						run := pk.run
						if j == 0 && pk.stream != nil { // the first strip reads the rows from memory
							run = pk.stream
						}
						run(&g[0], len(g), i, j, &c[i*ldc+j], ldc)
						block(i, j, pk.rows, panelCols)
					}
					if edge > 0 {
						pe.run(pk, i, c, ldc)
						block(i, fullC, pk.rows, edge)
					}
					i += pk.rows
				}
			}
		} else {
			// column strips outside: a strip's B panels stay in cache for every row block
			for j := 0; j < fullC; {
				if wide > 0 {
					for i := 0; i < fullR; i += panelKernels[0].rows {
						panelWide.run(&g[0], len(g), i, j, &c[i*ldc+j], ldc)
						block(i, j, panelKernels[0].rows, panelWide.cols)
					}
					wide--
					j += panelWide.cols
					continue
				}
				i := 0
				for b, pk := range panelKernels {
					for range blocks[b] {
						pk.run(&g[0], len(g), i, j, &c[i*ldc+j], ldc)
						block(i, j, pk.rows, panelCols)
						i += pk.rows
					}
				}
				j += panelCols
			}
			if edge > 0 {
				i := 0
				for b, pk := range panelKernels {
					for range blocks[b] {
						pe.run(pk, i, c, ldc)
						block(i, fullC, pk.rows, edge)
						i += pk.rows
					}
				}
			}
		}
		fullC += edge
	}
	for _, p := range ps {
		if fullR == 0 { // no blocks: the whole product, as the dot alone runs it
			dotF32(p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, c, ldc, scratch)
			continue
		}
		if p.m > fullR { // the rows below the blocks, every column
			gemmF32(p.m-fullR, p.n, p.k, p.a[fullR*p.lda:], p.lda, p.b, p.ldb, c[fullR*ldc:], ldc, scratch)
		}
		if p.n > fullC { // the columns right of them
			gemmF32(fullR, p.n-fullC, p.k, p.a, p.lda, p.b[fullC:], p.ldb, c[fullC:], ldc, scratch)
		}
	}
	if epi != nil { // the rest: right of the blocks, then below them
		applyEpilogue(epi, c, ldc, 0, min(fullR, seenRows), fullC, seenCols)
		applyEpilogue(epi, c, ldc, fullR, seenRows, 0, seenCols)
	}
	if st != nil { // the rest, as far as the stores reach (past the dots' columns too)
		storeRect(st, c, ldc, 0, fullR, fullC, ldc)
		storeRect(st, c, ldc, fullR, len(c)/ldc+1, 0, ldc)
	}
}

// colSpan is the columns [lo, hi) of a tile.
type colSpan struct{ lo, hi int }

// liveColumns appends to spans the columns of c whose products reach the stores st: those
// they copy from c (a select's on runs, or every column of the rectangle), sorted and
// merged, less those where a select of the epilogue epi puts its constant.
func liveColumns(spans []colSpan, st []queuedStore, epi []epilogueOp) []colSpan {
	for i := range st {
		s := &st[i]
		if s.runs == nil {
			spans = append(spans, colSpan{s.c0, s.c1})
			continue
		}
		for _, r := range s.runs {
			if lo, hi := max(r.lo, s.c0), min(r.hi, s.c1); r.on && lo < hi {
				spans = append(spans, colSpan{lo, hi})
			}
		}
	}
	slices.SortFunc(spans, func(a, b colSpan) int { return cmp.Compare(a.lo, b.lo) })
	n := 0
	for _, sp := range spans {
		if n > 0 && sp.lo <= spans[n-1].hi {
			spans[n-1].hi = max(spans[n-1].hi, sp.hi)
			continue
		}
		spans[n] = sp
		n++
	}
	spans = spans[:n]
	for _, e := range epi {
		if e.lanes == nil {
			continue
		}
		for _, sp := range spans[:n] { // the parts of each span the select takes from c
			for j := sp.lo; j < sp.hi; {
				k := j + 1
				for k < sp.hi && k < len(e.lanes) && e.lanes[k] == e.lanes[j] {
					k++
				}
				if j >= len(e.lanes) || e.lanes[j] != e.first {
					spans = append(spans, colSpan{j, k})
				}
				j = k
			}
		}
		n = copy(spans, spans[n:])
		spans = spans[:n]
	}
	return spans
}

// pairStrip is a column strip of the pair kernels (row-aligned strips): panelCols/2 columns
// from col and as many from col+off (off 0: the same ones twice, the same sums). On a map as
// wide as half a strip (a 16-wide map under AVX-512) a sample's flat padded pixels have
// Wp - W dead columns after every row, which plain strips compute (and their right edge runs
// panel by panel); a pair takes two rows' live columns and no other.
type pairStrip struct{ col, off int }

// planPairStrips covers the live columns (sorted spans, none past cols) with pieces
// panelCols/2 wide, each span's from its first column on, the last of a span reaching past
// it into dead columns only (not the next span's, nor past cols), and pairs the pieces in
// order. ok is false when they cannot, when no column is dead, or when they would take more
// columns than plain strips over cols (the last one whole, though it runs otherwise).
func planPairStrips(live []colSpan, cols int, buf []pairStrip) (pairs []pairStrip, ok bool) {
	half := panelCols / 2
	pairs, open, n := buf, -1, 0 // open: a piece waiting for its pair; n: live columns
	for k, sp := range live {
		n += sp.hi - sp.lo
		end := cols
		if k+1 < len(live) {
			end = live[k+1].lo
		}
		for x := sp.lo; x < sp.hi; x += half {
			if x+half > end {
				return nil, false
			}
			if open < 0 {
				open = x
				continue
			}
			pairs = append(pairs, pairStrip{open, x - open})
			open = -1
		}
	}
	if open >= 0 { // the last piece: with the dead columns after it, or twice
		off := 0
		if open+2*half <= cols {
			off = half
		}
		pairs = append(pairs, pairStrip{open, off})
	}
	plain := (cols + panelCols - 1) / panelCols * panelCols
	return pairs, len(pairs) > 0 && n < cols && len(pairs)*panelCols <= plain
}

// streamedA reports whether the panels' rows of A (rows of them) outweigh their columns of B
// (cols of them) and the L2 cache: a weight streamed from memory against a narrow tile (a
// convolution's small map, folded), which the row blocks then walk outside the strips.
func streamedA(ps []dotPanel, rows, cols int) bool {
	a, b := 0, 0
	for _, p := range ps {
		a += rows * p.k
		b += cols * p.k
	}
	return a > b && a*4 > streamedABytes
}

// streamedABytes: rows of A past this many bytes do not stay in the L2 cache between the
// strips (half of a 1-2 MB L2, the other half B's).
const streamedABytes = 512 << 10

// paddedEdge is the w (< panelCols) columns of c from col on, rows [0, rows), run on the
// panels kernels through zero-padded copies: each panel's columns copied into a [k, ew]
// panel, and a tile holding c's columns, both zero-padded to ew columns (panelCols, or half
// as many on the narrow kernels when w fits). The same sums in the same order as every other
// strip.
type paddedEdge struct {
	g          []gemmPanel // the panels, b repointed to the padded copies
	tile       []float32   // rows x ew
	col, w, ew int
	narrow     bool
}

// newPaddedEdge copies the panels' columns into scratch, repointing g's b to them.
func newPaddedEdge(ps []dotPanel, g []gemmPanel, rows, col, w int, scratch *[]float32) paddedEdge {
	paddedEdges.Add(1)
	e := paddedEdge{g: g, col: col, w: w, ew: panelCols, narrow: w <= panelCols/2}
	for _, pk := range panelKernels {
		e.narrow = e.narrow && pk.narrow != nil
	}
	if e.narrow {
		e.ew = panelCols / 2
	}
	need := rows * e.ew
	for _, p := range ps {
		need += p.k * e.ew
	}
	if cap(*scratch) < need {
		*scratch = make([]float32, need)
	}
	buf := (*scratch)[:need]
	at := rows * e.ew
	e.tile = buf[:at]
	for i, p := range ps {
		panel := buf[at : at+p.k*e.ew]
		packPanel(panel, p.b[col:], p.ldb, p.k, w, e.ew)
		g[i].b, g[i].ldb = &panel[0], e.ew
		at += len(panel)
	}
	return e
}

// run adds the panels' products into the edge's columns of c for the pk.rows rows from row i:
// c's columns copied into the tile, the kernel run there, the live columns copied back.
func (e *paddedEdge) run(pk panelKernel, i int, c []float32, ldc int) {
	tile := e.tile[i*e.ew : (i+pk.rows)*e.ew]
	clear(tile) // the padding too: a denormal left there would slow every FMA into it
	for r := range pk.rows {
		copy(tile[r*e.ew:r*e.ew+e.w], c[(i+r)*ldc+e.col:(i+r)*ldc+e.col+e.w])
	}
	run := pk.run
	if e.narrow {
		run = pk.narrow
	}
	run(&e.g[0], len(e.g), i, 0, &tile[0], e.ew)
	for r := range pk.rows {
		copy(c[(i+r)*ldc+e.col:(i+r)*ldc+e.col+e.w], tile[r*e.ew:r*e.ew+e.w])
	}
}

// panelStrips splits cols into column strips: wide of them on panelWide (none without it),
// then panelCols-wide ones, covering the first full columns: as many wide strips as leave
// no more columns uncovered (64 columns are 2 x 32, not 48 and 16 left).
func panelStrips(cols int) (wide, full int) {
	full = cols - cols%panelCols
	if panelWide.run == nil {
		return 0, full
	}
	for a := cols / panelWide.cols; a > 0; a-- {
		rest := cols - a*panelWide.cols
		if f := a*panelWide.cols + rest - rest%panelCols; f > full || f == full && wide == 0 {
			wide, full = a, f
		}
	}
	return wide, full
}

// panelBlocks splits rows into row blocks of the panel kernels (one or two, tallest first):
// as many tall blocks as leave the fewest rows to no kernel, those left going one panel at a
// time (64 rows on 12- and 8-row kernels: 4 x 12 + 2 x 8, not 5 x 12 and 4 left).
func panelBlocks(rows int) (blocks [2]int) {
	tall := panelKernels[0].rows
	left := rows + 1
	for a := rows / tall; a >= 0; a-- {
		b, l := 0, rows-a*tall
		if len(panelKernels) > 1 {
			b, l = l/panelKernels[1].rows, l%panelKernels[1].rows
		}
		if l < left {
			blocks, left = [2]int{a, b}, l
		}
		if l == 0 || len(panelKernels) == 1 {
			break
		}
	}
	return blocks
}

// findDeferredDots finds the loop nests whose dots may be queued: dots, the fused Adds
// (dotAdds) that may queue, and flush, the outermost For of each nest, which runs the queue
// when it ends.
func (c *compiler) findDeferredDots(f *ir.Func) (dots, flush map[*ir.Instr]bool) {
	dots, flush = map[*ir.Instr]bool{}, map[*ir.Instr]bool{}
	inner := map[*ir.Instr]bool{} // Fors inside a nest already found
	var walk func(b *ir.Block)
	walk = func(b *ir.Block) {
		for _, in := range b.Instrs {
			if in.Op == ir.For && !inner[in] && !storesIn(in) {
				for i := range in.Results {
					for _, x := range c.carriedDots(in, i) {
						if x.Op == ir.For {
							inner[x] = true
						} else {
							dots[x] = true
						}
						flush[in] = true
					}
				}
			}
			for _, r := range in.Regions {
				walk(r)
			}
		}
	}
	walk(f.Body)
	return dots, flush
}

// carriedDots returns the dot Adds (and the Fors between) that update For loop's carried
// value i when nothing else reads it: the body yields either a dot Add of it, or an inner
// For that takes it over and is such a loop itself. Nil otherwise.
func (c *compiler) carriedDots(loop *ir.Instr, i int) []*ir.Instr {
	body := loop.Regions[0]
	if len(body.Args) <= 1+i || len(body.Instrs) == 0 {
		return nil
	}
	v := body.Args[1+i]
	y := body.Instrs[len(body.Instrs)-1]
	if y.Op != ir.Yield || len(y.Args) <= i {
		return nil
	}
	r := y.Args[i]
	if c.uses[v] != 1 || c.uses[r] != 1 || r.Def == nil || c.defBlock[r] != body {
		return nil
	}
	d := r.Def
	if da, ok := c.dotAdds[d]; ok && da.acc == v {
		return []*ir.Instr{d}
	}
	if d.Op != ir.For || !c.consumedBy(v, d) {
		return nil
	}
	for j, res := range d.Results {
		if res == r && len(d.Args) > 3+j && d.Args[3+j] == v {
			if in := c.carriedDots(d, j); in != nil {
				return append(in, d)
			}
		}
	}
	return nil
}

// storesIn reports whether an instruction's regions write memory.
func storesIn(in *ir.Instr) bool {
	for _, r := range in.Regions {
		for _, x := range r.Instrs {
			if x.Op == ir.Store || x.Op == ir.AtomicRMW || x.Op == ir.AtomicCAS || storesIn(x) {
				return true
			}
		}
	}
	return false
}

// settle runs the queue when it adds into slot s's storage: s is about to be read.
// queuedInto reports whether the queue adds into fp32 slot s: s holds the queue's
// accumulator in its own storage (a view of buffer memory never does).
func (fr *frame) queuedInto(s int) bool {
	d := &fr.dots
	return len(d.panels) > 0 && !fr.viewing(s) && len(fr.f32[s]) > 0 && &fr.f32[s][0] == &d.c[0]
}

func (fr *frame) settle(s int) {
	d := &fr.dots
	if len(d.panels) > 0 && len(fr.f32[s]) > 0 && &fr.f32[s][0] == &d.c[0] {
		fr.flushDots()
	}
}
