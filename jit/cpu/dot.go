package cpu

import (
	"slices"
	"sync/atomic"

	"github.com/widejit/widejit/triton/ir"
)

func (c *compiler) compileDot(in *ir.Instr, args []int, z int) (step, error) {
	a, b, acc := args[0], args[1], args[2]
	ta, tb, tz := c.p.slotType[a], c.p.slotType[b], c.p.slotType[z]
	r := ta.Rank() // 2, or 3 when batched (ir.DotResult)
	batch := 1
	if r == 3 {
		batch = ta.Shape[0]
	}
	m, k, n := ta.Shape[r-2], ta.Shape[r-1], tb.Shape[r-1]
	ca, cz := c.p.slotClass[a], c.p.slotClass[z]
	switch {
	case ca == clsF32 && cz == clsF32:
		out := tz.Elem
		// A loop-carried accumulator used only here is updated in place instead of copied.
		inPlace := c.deadAfter(in.Args[2], in)
		trackA, trackB := r == 2 && c.tracked(in.Args[0]), r == 2 && c.tracked(in.Args[1])
		bt := -1
		if r == 2 {
			bt = c.lazySource(in.Args[1])
		}
		return func(fr *frame) error {
			if inPlace {
				fr.swapSlot(clsF32, z, acc)
			} else {
				copy(fr.f32[z], fr.f32[acc])
			}
			x, y, zz := fr.f32[a], fr.f32[b], fr.f32[z]
			if r == 2 {
				// Operands may view buffers in place (alias.go) and be zero-padded (extent.go).
				fr.dotF32Live(a, b, z, m, n, k, trackA, trackB, nil, false, bt)
				roundTo(out, zz)
				return nil
			}
			for bi := range batch {
				dotF32(m, n, k, x[bi*m*k:], k, y[bi*k*n:], n, zz[bi*m*n:], n, &fr.gemmScratch)
			}
			roundTo(out, zz)
			return nil
		}, nil
	case ca == clsF64 && cz == clsF64:
		return func(fr *frame) error {
			x, y, zz := fr.f64[a], fr.f64[b], fr.f64[z]
			copy(zz, fr.f64[acc])
			for bi := range batch {
				x, y, zz := x[bi*m*k:], y[bi*k*n:], zz[bi*m*n:]
				for i := range m {
					for p := range k {
						av := x[i*k+p]
						row := zz[i*n : i*n+n]
						for j, bv := range y[p*n : p*n+n] {
							row[j] += av * bv
						}
					}
				}
			}
			return nil
		}, nil
	case ca == clsInt && cz == clsInt && !tz.Ptr:
		out := tz.Elem
		return func(fr *frame) error {
			x, y, zz := fr.ints[a], fr.ints[b], fr.ints[z]
			copy(zz, fr.ints[acc])
			for bi := range batch {
				x, y, zz := x[bi*m*k:], y[bi*k*n:], zz[bi*m*n:]
				for i := range m {
					for p := range k {
						av := x[i*k+p]
						row := zz[i*n : i*n+n]
						for j, bv := range y[p*n : p*n+n] {
							row[j] += av * bv
						}
					}
				}
			}
			normInts(out, zz)
			return nil
		}, nil
	}
	return nil, c.errf(in.Pos, in.Op, "%s x %s -> %s is not supported by the CPU backend", ta, tb, tz)
}

// gemmKernel is a register-blocked micro-kernel: c[r, w] += a[r, k] x b[k, w] (leading
// dimensions in elements, k >= 1), r and w fixed per kernel.
type gemmKernel func(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)

// gemmMaskedKernel is a micro-kernel whose last 16 columns load and store only the lanes
// set in mask (AVX-512 k-masks): right edges run on B and C in place.
type gemmMaskedKernel func(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, mask int)

// A gemmStrip is a family of micro-kernels of one width: kern[r] runs r rows (1 <= r <
// len(kern)); row blocks are mr high.
type gemmStrip struct {
	w, mr  int
	kern   []gemmKernel
	masked []gemmMaskedKernel // the same with the last 16 columns masked; nil without AVX-512
	stream []gemmKernel       // kern prefetching a along its rows (gemmStreamA); nil: none
	// masked prefetching a along its rows (gemmStreamA); nil: none
	maskedStream []gemmMaskedKernel
}

// tallRows selects 12-row AVX-512 tiles (12x32, 24 accumulators) over 8-row ones: set on AMD
// CPUs. Measured: on Zen 5 the 1024^3 tl.dot runs 12% faster on 12 rows; on Intel (Emerald
// Rapids) 8 rows were faster.
var tallRows bool

// The micro-kernels in use (set by selectMicroKernel): wide is the main tile (8x32 or 12x32
// under AVX-512, 6x16 under AVX2/FMA), narrow half its width. gemmSIMD false: pure Go. Under
// AVX-512 both also have masked forms for right edges.
var (
	gemmWide, gemmNarrow gemmStrip
	gemmWideEdge         gemmStrip // AVX-512: the last wide strip and a right edge of 1-16 (8x48, masked)
	gemmShort            gemmStrip // a few rows (one block): wider strips for more accumulators
	gemmSIMD             bool
	microName            = "pure Go dot"

	// gemmPackB: copy the B panel of each full-width strip into a contiguous [k, w] panel
	// (packStrips) when several row blocks reuse it and B's rows are 4 KB or more apart over
	// k > 64, or 1 KB or more apart over k > 128 with at least four row blocks (rows that far
	// apart alias in the L1 cache: a strip read in place falls out of it between row
	// blocks; below that, or with fewer rows of either, packing costs more than it saves: a
	// panel of a few rows stays in cache anyway, and a tap-major convolution's per-tap dots
	// read channel planes in place, unpacked).
	gemmPackB = true
	// gemmPackA: copy the rows of A closer together (k+16 apart) when they are 4 KB or more
	// apart and many strips reuse them.
	gemmPackA = true
	// gemmKC: k runs in chunks of at most gemmKC (the B panel of a chunk stays in cache; the
	// order of the sums along k is unchanged). 0: one chunk.
	gemmKC = 512
	// gemmPackKC: gemmKC where B is packed: a packed strip of 32 columns over 256 rows of k
	// (32 KB) stays in the L1 cache while every row block runs on it.
	gemmPackKC = 256
	// gemmPackAhead: rows of B prefetched ahead of the one packStrips copies.
	gemmPackAhead = 4
	// gemmNC: columns packed at once (a multiple of every strip width).
	gemmNC = 128
	// gemmStreamKC: with gemmStreamRows rows or fewer and more columns than one short strip,
	// k runs in chunks of gemmStreamKC so B streams row by row (the order of the sums along k
	// is unchanged). 16 measured fastest of 16/32/64 on weights that are not in cache.
	gemmStreamKC   = 16
	gemmStreamRows = 16
	// gemmStrips48: under AVX-512 on Intel (not tallRows), a product of fewer than 256
	// columns whose B is not packed runs its columns in 48-wide strips (the 8x48 kernels: 24
	// accumulators, three B vectors a broadcast) where they cover it and take fewer strips
	// than 32-wide ones (92 columns: 2 strips, not 3, so each row block of A is read twice, not three
	// times): a folded small-map convolution's pixel tile (conv_flat.py's Folded form).
	gemmStrips48 = true
	// gemmStreamA: when the rows of A are 4 KB or more apart and A is not packed (a
	// convolution's row-major weight [OC, C*KH*KW] against a narrow pixel tile: each weight
	// element used by one strip, read once from the L3 or memory), the wide strips run on
	// kernels that prefetch each row of A a few cache lines ahead, and a loop's deep dots
	// over such an A queue (streamsA, panels.go). The hardware prefetcher does not follow 8
	// rows 1 KB long at once, so the plain kernels wait on every line.
	gemmStreamA = true
	// gemmGemvColumn: on AVX2, a product of 8q + 1 columns (q < 4) runs its last column on
	// the gemv kernels rather than a zero-padded strip (gemmF32, gemvColumns).
	gemmGemvColumn = true
	// gemmGemvAll: under AVX-512 on AMD, a product of 9 columns against far-apart rows of A
	// runs on the gemv kernels alone (gemvTail).
	gemmGemvAll = true
)

// streamedDots counts the gemmF32 calls whose wide strips ran on the kernels that prefetch
// A (gemmStreamA; tests read it).
var streamedDots atomic.Int64

// streamFirstCols is the widest B whose first strip alone prefetches A's rows when they are
// far apart (past streamMaxCols, where every strip does): the folded small maps' columns.
const streamFirstCols = 96

// gemvColumnDots counts the products that ran columns on the gemv kernels (gemvColumns:
// dotF32's 4 and gemvTail's; tests read it).
var gemvColumnDots atomic.Int64

// strips48Dots counts the gemmF32 calls that ran on 48-wide strips (gemmStrips48; tests
// read it).
var strips48Dots atomic.Int64

// packedDots counts the gemmF32 calls that packed B (gemmPackB; tests read it).
var packedDots atomic.Int64

func dotKernelName() string { return microName }

// simdLanes is the fp32 lanes of the vector instructions the micro-kernels use (1: pure Go).
func simdLanes() int {
	if !gemmSIMD {
		return 1
	}
	return gemmNarrow.w
}

// gemmF32 computes c[m,n] += a[m,k] x b[k,n] (row-major with leading dimensions lda, ldb,
// ldc), register-blocked through the micro-kernels, every m, n and k included: columns run in
// full-width strips, then one narrower strip for the rest: masked under AVX-512, else
// zero-padded (its B panel padded once per call, its C rows through a small tile); rows run
// in blocks of mr, the last one on the kernel for exactly the rows left. scratch holds the
// panels (grown as needed).
func gemmF32(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, scratch *[]float32) {
	if k <= 0 || m <= 0 || n <= 0 {
		return
	}
	if !gemmSIMD {
		gemmGo(m, n, k, a, lda, b, ldb, c, ldc)
		return
	}
	chunk := gemmKC
	if gemmPacksB(m, n, k, ldb) {
		chunk = gemmPackKC
	}
	if chunk > 0 && k > chunk {
		for p := 0; p < k; p += chunk {
			kc := min(chunk, k-p)
			gemmF32(m, n, kc, a[p:], lda, b[p*ldb:], ldb, c, ldc, scratch)
		}
		return
	}
	if m <= gemmStreamRows && k > gemmStreamKC && n > gemmShort.w {
		// Few rows (a Linear's GEMV-like product): B is read once, so its rows go by in
		// short chunks, each read left to right across every strip, not strip by strip
		// down all k rows (B's rows apart by N: a page each, no hardware prefetch).
		for p := 0; p < k; p += gemmStreamKC {
			kc := min(gemmStreamKC, k-p)
			gemmF32(m, n, kc, a[p:], lda, b[p*ldb:], ldb, c, ldc, scratch)
		}
		return
	}
	// Bounds that the assembly relies on, checked once here.
	_ = a[(m-1)*lda+k-1]
	_ = b[(k-1)*ldb+n-1]
	_ = c[(m-1)*ldc+n-1]

	// One block of one strip (a common tl.dot tile): straight to the kernel.
	if s := &gemmNarrow; n == s.w && m < len(s.kern) {
		s.kern[m](k, &a[0], lda, &b[0], ldb, &c[0], ldc)
		return
	}
	if s := &gemmWide; n == s.w && m < len(s.kern) {
		s.kern[m](k, &a[0], lda, &b[0], ldb, &c[0], ldc)
		return
	}
	if short := &gemmShort; m < len(short.kern) && n >= short.w {
		// Too few rows to fill the accumulators of the wide tile: wider strips, then the rest.
		nShort := n - n%short.w
		for j := 0; j < nShort; j += short.w {
			short.kern[m](k, &a[0], lda, &b[j], ldb, &c[j], ldc)
		}
		if nShort < n {
			gemmF32(m, n-nShort, k, a, lda, b[nShort:], ldb, c[nShort:], ldc, scratch)
		}
		return
	}

	if strips := strips48(m, n, k, ldb); strips > 0 {
		strips48Dots.Add(1)
		s := &gemmWideEdge
		if gemmStreamA && lda >= 1024 && n <= 2*s.w && s.maskedStream != nil {
			// rows of A 4 KB or more apart against two strips (a convolution's weight against
			// a narrow pixel tile, as streamsA): each strip prefetches them along their rows
			streamed := *s
			streamed.masked = streamed.maskedStream
			s = &streamed
			streamedDots.Add(1)
		}
		for j := 0; j < n; j += s.w {
			gemmMaskedRun(s, m, k, a, lda, b[j:], ldb, c[j:], ldc, min(s.w, n-j))
		}
		return
	}

	if g := gemvTail(m, n, k, lda); g > 0 {
		gemvColumnDots.Add(1)
		if g < n {
			gemmF32(m, n-g, k, a, lda, b, ldb, c, ldc, scratch)
		}
		gemvColumns(m, g, k, a, lda, b[n-g:], ldb, c[n-g:], ldc, scratch)
		return
	}
	wide := &gemmWide
	nFull := n - n%wide.w
	rem := n - nFull
	edge := wide
	if rem <= gemmNarrow.w {
		edge = &gemmNarrow
	}
	// AVX-512: a right edge runs in place on masked kernels, from column maskedAt on (a
	// width of 16 or less joins the last full strip on the 8x48 kernels: it shares its
	// broadcasts, where a 16-wide strip of its own would take one broadcast per FMA).
	masked, maskedAt := edge, -1
	switch {
	case rem > 0 && rem <= 16 && nFull >= wide.w && gemmWideEdge.masked != nil:
		masked, maskedAt = &gemmWideEdge, nFull-wide.w
		nFull, rem = maskedAt, 0
	case rem > 0 && rem < edge.w && edge.masked != nil:
		maskedAt = nFull
		nFull, rem = maskedAt, 0
	}
	pack := gemmPacksB(m, n, k, ldb) && nFull > 0
	padded := rem > 0 && rem < edge.w // the edge needs a padded B panel and a C tile
	need := 0
	if pack {
		need = k * min(gemmNC, nFull) // panels of gemmNC columns, refilled: they stay in cache
	}
	panelAt := need
	if rem > 0 && (pack || padded) {
		need += k * edge.w
	}
	if pack {
		packedDots.Add(1)
	}
	tileAt := need
	if padded {
		need += (len(edge.kern) - 1) * edge.w
	}
	packA := gemmPackA && lda >= 1024 && n >= 256
	// first: the strip that reads A from the L3 or memory and prefetches it, the others
	// finding it in cache; nil: none
	var first *gemmStrip
	if streamsA(lda, n) && !packA && wide.stream != nil && nFull > 0 {
		streamed := *wide
		streamed.kern = streamed.stream
		wide = &streamed
		streamedDots.Add(1)
	} else if gemmStreamA && lda >= 1024 && n <= streamFirstCols && wide.stream != nil && nFull > 0 {
		// a few strips more than streamsA takes (a folded small map's 92 columns on AVX2's
		// 16-wide strips): the first one alone
		streamed := *wide
		streamed.kern = streamed.stream
		first = &streamed
		streamedDots.Add(1)
	}
	aAt := need
	if packA {
		need += m * (k + 16)
	}
	if cap(*scratch) < need {
		*scratch = make([]float32, need)
	}
	buf := (*scratch)[:need]
	if packA {
		// Rows of a 4 KB or more apart alias in the L1 cache: copy them closer, once.
		pa, ld := buf[aAt:], k+16
		for i := range m {
			copy(pa[i*ld:i*ld+k], a[i*lda:i*lda+k])
		}
		a, lda = pa, ld
	}

	for jb := 0; jb < nFull; jb += gemmNC {
		nc := min(gemmNC, nFull-jb)
		if pack {
			packStrips(buf, b[jb:], ldb, k, nc/wide.w, wide.w)
		}
		for s := 0; s < nc; s += wide.w {
			strip := wide
			if first != nil && jb+s == 0 {
				strip = first
			}
			if pack {
				gemmStripRun(strip, m, k, a, lda, &buf[s*k], wide.w, c[jb+s:], ldc)
			} else {
				gemmStripRun(strip, m, k, a, lda, &b[jb+s], ldb, c[jb+s:], ldc)
			}
		}
	}
	switch {
	case rem == 0:
	case !padded && !pack:
		gemmStripRun(edge, m, k, a, lda, &b[nFull], ldb, c[nFull:], ldc)
	case !padded:
		panel := buf[panelAt : panelAt+k*edge.w]
		packPanel(panel, b[nFull:], ldb, k, rem, edge.w)
		gemmStripRun(edge, m, k, a, lda, &panel[0], edge.w, c[nFull:], ldc)
	default:
		panel := buf[panelAt : panelAt+k*edge.w]
		packPanel(panel, b[nFull:], ldb, k, rem, edge.w)
		tile, w := buf[tileAt:], edge.w
		c := c[nFull:]
		for i := 0; i < m; {
			r := gemmRows(edge.mr, len(edge.kern)-1, m-i)
			for x := range r {
				copy(tile[x*w:x*w+rem], c[(i+x)*ldc:(i+x)*ldc+rem])
			}
			edge.kern[r](k, &a[i*lda], lda, &panel[0], w, &tile[0], w)
			for x := range r {
				copy(c[(i+x)*ldc:(i+x)*ldc+rem], tile[x*w:x*w+rem])
			}
			i += r
		}
	}
	if maskedAt >= 0 {
		gemmMaskedRun(masked, m, k, a, lda, b[maskedAt:], ldb, c[maskedAt:], ldc, n-maskedAt)
	}
}

// dotF32 computes c[m,n] += a[m,k] x b[k,n] (as gemmF32) for a whole tl.dot's live product:
// exactly 4 columns (a 1x1 convolution's pixels on a 2x2 map: a quarter of a strip's lanes)
// over a deep k of whole vectors run on the gemv kernels, their lanes along k, each row of a
// read once. Parts of a product (gemmF32's own, the queued panels' edges) keep the sums that
// gemmF32 gives the whole.
func dotF32(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, scratch *[]float32) {
	if gemvKern != nil && n == 4 && m > gemvAnyKRows && k >= narrowGemvMinK && k%gemvLanes == 0 {
		gemvColumnDots.Add(1)
		gemvColumns(m, n, k, a, lda, b, ldb, c, ldc, scratch)
		return
	}
	gemmF32(m, n, k, a, lda, b, ldb, c, ldc, scratch)
}

const narrowGemvMinK = 64 // B's copy and each row's horizontal sums are paid once a row

// gemvColumns computes c[m, g] += a[m, k] x b[k, g] (rows lda, ldb, ldc apart) on the gemv
// kernels, b's g columns gathered contiguous along k into scratch: in fours against A's
// rows, C's in place; the rest (the kernels take 4 columns a call) with the roles swapped, A's
// rows 4 at a time against each column, C's column through scratch.
func gemvColumns(m, g, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, scratch *[]float32) {
	*scratch = slices.Grow((*scratch)[:0], g*k+m)[:g*k+m]
	cols, tile := (*scratch)[:g*k], (*scratch)[g*k:]
	for p := range k {
		for j, v := range b[p*ldb : p*ldb+g] {
			cols[j*k+p] = v
		}
	}
	g4 := g - g%4
	if g4 > 0 {
		gemvF32(m, g4, k, a, lda, cols, k, c, ldc)
	}
	for j := g4; j < g; j++ {
		for i := range tile {
			tile[i] = c[i*ldc+j]
		}
		gemvF32(1, m, k, cols[j*k:], k, a, lda, tile, m)
		for i, v := range tile {
			c[i*ldc+j] = v
		}
	}
}

// gemvTail is how many of an m x n x k product's last columns (rows of A lda apart) gemmF32
// runs on the gemv kernels (gemvColumns) rather than on a strip whose lanes they would fill
// by a fraction: a 3x3 map's 9 pixels a sample, a 1x1 convolution's columns.
//   - AVX2 (no masked kernels; gemmGemvColumn): the one column past 8q (q < 4), which would
//     pad an 8- or 16-wide strip of its own; the 8q others on the strips, per k chunk.
//   - AVX-512 on AMD (tallRows; gemmGemvAll): all 9 columns against rows of A 4 KB or more
//     apart (a weight [OC, C]), where the masked 16-wide strip would use 9 of its lanes and
//     read A down 16 rows at once, which share an L1 set; the gemv kernels read A along its
//     rows.
func gemvTail(m, n, k, lda int) int {
	switch {
	case gemvKern == nil || m < 4:
		return 0
	case gemmGemvColumn && gemmWideEdge.masked == nil && gemmNarrow.masked == nil &&
		n%gemmNarrow.w == 1 && n < 2*gemmWide.w && k >= gemvLanes:
		return 1
	case gemmGemvAll && tallRows && gemmNarrow.masked != nil &&
		n == gemmNarrow.w/2+1 && lda >= 1024 && k >= narrowGemvMinK:
		return n
	}
	return 0
}

// strips48 is the number of 48-wide strips that gemmF32 runs an m x n x k product on
// (gemmStrips48): all its columns, the last strip masked when it holds 33-47 of them. 0:
// none, the product runs on 32-wide strips (also where 48-wide ones would leave 32 columns
// or fewer: those would run on other kernels, with other choices of their own).
func strips48(m, n, k, ldb int) int {
	s := &gemmWideEdge
	if !gemmStrips48 || tallRows || s.masked == nil || n >= 256 || gemmPacksB(m, n, k, ldb) {
		return 0
	}
	if r := n % s.w; r != 0 && r <= gemmWide.w {
		return 0
	}
	strips := (n + s.w - 1) / s.w
	// what 32-wide strips take: a right edge of 16 or less joins the last full strip
	strips32 := n / gemmWide.w
	if r := n % gemmWide.w; r > 16 || r > 0 && strips32 == 0 {
		strips32++
	}
	if strips >= strips32 {
		return 0
	}
	return strips
}

// gemmPacksB reports whether gemmF32 packs the B panels of an m x n x k product with rows of
// B ldb apart (gemmPackB).
func gemmPacksB(m, n, k, ldb int) bool {
	mr := gemmWide.mr
	return gemmPackB && m > mr && n >= gemmWide.w && (ldb >= 1024 && k > 64 || ldb >= 256 && m >= 4*mr && k > 128)
}

// packStrips copies the [k, strips*w] block of b (rows ldb apart) into strips contiguous
// [k, w] panels, one after the other in dst, so that a micro-kernel walks its B panel
// sequentially (rows w apart: no two alias in the L1 cache) and the next strip's panel
// follows it. On SIMD paths with w a multiple of 16 it prefetches the rows of b
// gemmPackAhead further down as it copies.
func packStrips(dst []float32, b []float32, ldb, k, strips, w int) {
	if k <= 0 || strips <= 0 {
		return
	}
	_ = dst[strips*k*w-1]
	_ = b[(k-1)*ldb+strips*w-1]
	if packStripsAsm && gemmSIMD && w%16 == 0 {
		ahead := min(gemmPackAhead, k)
		if k > ahead {
			packStripsAVX(&dst[0], k*w, &b[0], ldb, k-ahead, strips, w, ahead)
		}
		if ahead > 0 {
			packStripsAVX(&dst[(k-ahead)*w], k*w, &b[(k-ahead)*ldb], ldb, ahead, strips, w, 0)
		}
		return
	}
	for p := range k {
		for s := range strips {
			copy(dst[(s*k+p)*w:(s*k+p+1)*w], b[p*ldb+s*w:p*ldb+s*w+w])
		}
	}
}

// packPanel copies the [k, w] block of b into a contiguous [k, width] panel, zero-padded on
// the right.
func packPanel(panel, b []float32, ldb, k, w, width int) {
	if w < 8 { // a call to copy costs more than a few elements
		for p := range k {
			row, src := panel[p*width:p*width+width], b[p*ldb:p*ldb+w]
			for x, v := range src {
				row[x] = v
			}
			for x := w; x < len(row); x++ {
				row[x] = 0
			}
		}
		return
	}
	for p := range k {
		row := panel[p*width : p*width+width]
		copy(row, b[p*ldb:p*ldb+w])
		clear(row[w:])
	}
}

// gemmMaskedRun runs the right edge of w columns (w < s.w, the last 16 columns of s masked)
// on B and C in place.
func gemmMaskedRun(s *gemmStrip, m, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, w int) {
	mask := 1<<(w-(s.w-16)) - 1
	for i := 0; i < m; {
		r := gemmRows(s.mr, len(s.masked)-1, m-i)
		s.masked[r](k, &a[i*lda], lda, &b[0], ldb, &c[i*ldc], ldc, mask)
		i += r
	}
}

// gemmStripRun runs one column strip of s.w columns over all m rows.
func gemmStripRun(s *gemmStrip, m, k int, a []float32, lda int, b *float32, ldb int, c []float32, ldc int) {
	for i := 0; i < m; {
		r := gemmRows(s.mr, len(s.kern)-1, m-i)
		s.kern[r](k, &a[i*lda], lda, b, ldb, &c[i*ldc], ldc)
		i += r
	}
}

// gemmRows is the height of the next row block when left rows remain: blocks of mr, and the
// rows left over join the last full block when a kernel that tall exists (top rows at most),
// else that block and they split into two halves (so that no block is much shorter than the
// accumulators need to hide the FMA latency).
func gemmRows(mr, top, left int) int {
	switch {
	case left <= top:
		return left
	case left >= 2*mr:
		return mr
	}
	return left / 2
}

// gemmGo is the portable kernel: c += a x b in fp32, k in order (the assembly kernels fuse
// each multiply-add, so results differ from it in the last bits only).
func gemmGo(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	for i := range m {
		crow := c[i*ldc : i*ldc+n]
		for p := range k {
			av := a[i*lda+p]
			brow := b[p*ldb : p*ldb+n]
			for j, bv := range brow {
				crow[j] += av * bv
			}
		}
	}
}

// acc + tl.dot(a, b), the way `acc += tl.dot(a, b)` is written, runs as one tl.dot that
// accumulates into acc, as Triton's compiler folds it: no zero-filled result tile to add in a
// second pass. The Dot emits no step; the Add runs it. Both sit in one block, the Dot's
// result is used only by the Add, no store, atomic or region runs between them (its
// operands may view buffer memory), and the other operand is a filled tile (not a splat or
// a row broadcast read in place by its consumers).

// dotAdd is a fused Add: the Dot it runs and its other operand.
type dotAdd struct {
	dot *ir.Instr
	acc *ir.Value
}

// findDotAdds maps each fusable Add to its Dot, and marks those Dots in skip.
func (c *compiler) findDotAdds(f *ir.Func) (adds map[*ir.Instr]dotAdd, skip map[*ir.Instr]bool) {
	adds, skip = map[*ir.Instr]dotAdd{}, map[*ir.Instr]bool{}
	fusionSites(f, func(in *ir.Instr, settled func(*ir.Instr) bool) {
		if in.Op != ir.Add || len(in.Args) != 2 || len(in.Results) != 1 || c.mulAdds[in] != (mulAddPair{}) ||
			!plainF32Tile(in.Results[0]) || in.Results[0].Type.Rank() != 2 {
			return
		}
		for t := range 2 {
			dv := in.Args[t]
			d := dv.Def
			if d == nil || d.Op != ir.Dot || len(d.Args) != 3 || c.uses[dv] != 1 || skip[d] ||
				!isZeroConst(d.Args[2]) || !dv.Type.Equal(in.Results[0].Type) || !in.Args[1-t].Type.Equal(dv.Type) {
				continue
			}
			acc := in.Args[1-t]
			if settled(d) && c.rowBcast[acc] == nil && !c.absorbed[acc] { // acc must be a filled tile
				adds[in] = dotAdd{dot: d, acc: acc}
				skip[d] = true
				return
			}
		}
	})
	return adds, skip
}

// dotAddStep is the fused Add's step: z = acc + a @ b, accumulated in place.
func (c *compiler) dotAddStep(in *ir.Instr, da dotAdd, z int) (step, error) {
	a, b, acc := c.slots[da.dot.Args[0]], c.slots[da.dot.Args[1]], c.slots[da.acc]
	ta, tb := c.p.slotType[a], c.p.slotType[b]
	if c.p.slotClass[a] != clsF32 || c.p.slotClass[b] != clsF32 || ta.Rank() != 2 || tb.Rank() != 2 || ta.Shape[1] != tb.Shape[0] {
		return nil, c.errf(in.Pos, in.Op, "cannot accumulate a dot of %s x %s", ta, tb)
	}
	m, k, n := ta.Shape[0], ta.Shape[1], tb.Shape[1]
	trackA, trackB := c.tracked(da.dot.Args[0]), c.tracked(da.dot.Args[1])
	inPlace := c.deadAfter(da.acc, in)      // a loop-carried accumulator: take its storage over
	observed := c.observedMasks(in, da.acc) // observed.go
	deferOK := c.deferDots[in]              // panels.go
	bt := c.lazySource(da.dot.Args[1])      // gemv.go
	return func(fr *frame) error {
		if inPlace && !fr.viewing(acc) { // never a buffer view's
			fr.swapSlot(clsF32, z, acc)
		} else {
			fr.settle(acc)
			copy(fr.f32[z], fr.f32[acc])
		}
		fr.dotF32Live(a, b, z, m, n, k, trackA, trackB, observed, deferOK, bt)
		return nil
	}, nil
}
