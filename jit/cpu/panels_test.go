package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/widejit/widejit/jit"
)

// TestGemmPanelsMatchDotsInTurn: the queued products give bit for bit what the same dots
// give one after another (dotF32; each element sums the panels in order), on the AVX-512 and
// the AVX2 kernels, for full blocks, edges, panels of different live extents and a single
// panel (of 4 columns: on the gemv kernels, as the dot alone); nothing outside the products
// changes.
func TestGemmPanelsMatchDotsInTurn(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		name    string
		m, n, k []int // per panel
	}{
		{"blocks", []int{32, 32, 32}, []int{256, 256, 256}, []int{16, 16, 16}},
		{"edges", []int{35, 35}, []int{70, 70}, []int{3, 32}},
		{"extents", []int{32, 27, 32, 9}, []int{64, 64, 50, 64}, []int{8, 1, 64, 17}},
		{"one", []int{16}, []int{48}, []int{5}},
		{"four", []int{16}, []int{4}, []int{64}},
		{"thin", []int{3, 3}, []int{200, 200}, []int{16, 16}},
		{"strips", []int{17, 17, 17}, []int{100, 100, 100}, []int{7, 64, 33}},   // 2 x 48 wide, 4 left
		{"mixed", []int{8, 8}, []int{125, 125}, []int{9, 2}},                    // 48 + 2 x 32 + 13
		{"rows64", []int{64, 64}, []int{40, 40}, []int{32, 32}},                 // AVX2: 10 x 6 + 4 rows, 2 x 16 + 8 columns
		{"layer4", []int{128, 128, 128}, []int{26, 26, 26}, []int{256, 256, 7}}, // resnet18's folded layer 4 at N = 3: 16 + 10 columns
		{"narrow", []int{70, 70, 64}, []int{22, 22, 24}, []int{64, 9, 33}},      // AVX2: 16 + 6 columns on the 8-wide panels kernels
	}
	eachMicroKernel(func() {
		if !gemmSIMD || len(panelKernels) == 0 {
			t.Skipf("no SIMD micro-kernels on this CPU (%s)", dotKernelName())
		}
		for _, tc := range cases {
			ldc := slices.Max(tc.n) + 3
			rows := slices.Max(tc.m) + 1
			c := make([]float32, rows*ldc)
			for i := range c {
				c[i] = float32(r.NormFloat64())
			}
			want := slices.Clone(c)
			var ps []dotPanel
			var scratch []float32
			for i := range tc.m {
				m, n, k := tc.m[i], tc.n[i], tc.k[i]
				lda, ldb := k+r.IntN(40), n+1+r.IntN(300)
				a, b := make([]float32, m*lda), make([]float32, k*ldb)
				for _, x := range [][]float32{a, b} {
					for j := range x {
						x[j] = float32(r.NormFloat64())
					}
				}
				dotF32(m, n, k, a, lda, b, ldb, want, ldc, &scratch)
				ps = append(ps, dotPanel{a: a, lda: lda, b: b, ldb: ldb, m: m, n: n, k: k})
			}
			var asm []gemmPanel
			before := gemvColumnDots.Load()
			gemmPanels(ps, c, ldc, &scratch, &asm, nil, 0, 0, nil, nil)
			if took := gemvColumnDots.Load() != before; took != (tc.name == "four") {
				t.Fatalf("%s %s: gemv route taken %v", dotKernelName(), tc.name, took)
			}
			for i := range c {
				if c[i] != want[i] {
					t.Fatalf("%s %s: c[%d][%d] = %g, the dots in turn give %g", dotKernelName(), tc.name, i/ldc, i%ldc, c[i], want[i])
				}
			}
		}
	})
}

// tapsKernel is a convolution's tap loop (conv_flat.py's shape): per tap and channel block,
// a weight tile and a shifted input tile, both read in place, accumulate into one tile; the
// last program's pixels run past Q.
const tapsKernel = `import triton
import triton.language as tl


@triton.jit
def taps(x_ptr, w_ptr, c_ptr, Q, XS, T, C, BP: tl.constexpr, BOC: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    q = pid * BP + tl.arange(0, BP)
    rn = tl.arange(0, BOC)
    rk = tl.arange(0, BK)
    qmask = q[None, :] < Q
    acc = tl.zeros((BOC, BP), dtype=tl.float32)
    for tap in range(0, T):
        for c0 in range(0, C, BK):
            cs = c0 + rk
            a = tl.load(w_ptr + tap * (BOC * C) + rn[:, None] * C + cs[None, :])
            b = tl.load(x_ptr + tap + cs[:, None] * XS + q[None, :], mask=qmask, other=0.0)
            acc += tl.dot(a, b)
    tl.store(c_ptr + rn[:, None] * Q + q[None, :], acc, mask=(rn[:, None] < BOC) & qmask)
`

// TestTapLoopQueuesItsDots: the tap loop's dots are queued and run per register block over
// all taps; the result is bit for bit that of the dots one at a time (the queue off), on the
// AVX-512 and the AVX2 kernels, and matches the float64 sum; 64-pixel tiles (two 32-wide
// strips) and 128 (on AVX-512 Intel, 100 live columns: two 48-wide strips and 4 left).
func TestTapLoopQueuesItsDots(t *testing.T) {
	for _, bp := range []int{64, 128} {
		t.Run(fmt.Sprintf("bp=%d", bp), func(t *testing.T) { testTapLoopQueuesItsDots(t, bp) })
	}
}

func testTapLoopQueuesItsDots(t *testing.T, bp int) {
	defer func() { queueDots = true }()
	const boc, bk, q, xs, taps, ch = 32, 16, 100, 128, 9, 32
	kn := compileKernel(t, "taps.py", tapsKernel, "taps",
		map[string]string{"x_ptr": "*fp32", "w_ptr": "*fp32", "c_ptr": "*fp32", "Q": "i32", "XS": "i32", "T": "i32", "C": "i32"},
		map[string]any{"BP": int64(bp), "BOC": int64(boc), "BK": int64(bk)})
	r := rand.New(rand.NewPCG(5, 6))
	x, w := make([]float32, ch*xs+taps), make([]float32, taps*boc*ch)
	for _, v := range [][]float32{x, w} {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
	}
	want := make([]float64, boc*q)
	for o := range boc {
		for p := range q {
			for tap := range taps {
				for c := range ch {
					want[o*q+p] += float64(w[tap*boc*ch+o*ch+c]) * float64(x[tap+c*xs+p])
				}
			}
		}
	}
	launch := func() []float32 {
		out := f32Buf(t, make([]float32, boc*q))
		args := []jit.Arg{buf(f32Buf(t, x)), buf(f32Buf(t, w)), buf(out), scalar(int64(q)), scalar(int64(xs)), scalar(int64(taps)), scalar(int64(ch))}
		if err := kn.Launch(grid1((q+bp-1)/bp), args); err != nil {
			t.Fatal(err)
		}
		return slices.Clone(out.f32())
	}
	eachMicroKernel(func() {
		inTurn, got, n := launchInTurnThenQueued(launch, &queuedDots)
		if n != int64((q+bp-1)/bp*taps*ch/bk) {
			t.Fatalf("%s: %d products queued, want all %d", dotKernelName(), n, (q+bp-1)/bp*taps*ch/bk)
		}
		checkQueuedDots(t, got, inTurn, want)
	})
}

// launchInTurnThenQueued runs launch with the dots one at a time, then queued, and counts
// what counter (queuedDots, flushedEpilogues) gained in the queued run.
func launchInTurnThenQueued(launch func() []float32, counter *atomic.Int64) (inTurn, queued []float32, counted int64) {
	queueDots = false
	inTurn = launch()
	queueDots = true
	before := counter.Load()
	queued = launch()
	return inTurn, queued, counter.Load() - before
}

// panelStrips covers columns with as few left over as the strip widths allow, wide ones
// first; without a wide kernel, every strip is panelCols wide.
func TestPanelStrips(t *testing.T) {
	defer func(cols, wide int, run func(*gemmPanel, int, int, int, *float32, int)) {
		panelCols, panelWide.cols, panelWide.run = cols, wide, run
	}(panelCols, panelWide.cols, panelWide.run)
	if haveAVX512 && !tallRows && panelWide.cols != 48 {
		t.Fatalf("%s on an Intel AVX-512 CPU: %d-column wide panel strips, want 48", dotKernelName(), panelWide.cols)
	}
	panelCols, panelWide.cols, panelWide.run = 32, 48, func(*gemmPanel, int, int, int, *float32, int) {}
	for _, c := range []struct{ cols, wide, full int }{
		{512, 10, 512}, // 10 x 48 + 32
		{110, 2, 96},   // 14 left either way: wide strips
		{64, 0, 64},    // not 48 and 16 left
		{256, 4, 256},  // 4 x 48 + 2 x 32
		{47, 0, 32},
		{31, 0, 0},
		{96, 2, 96},
		{125, 1, 112}, // 48 + 2 x 32, 13 left
	} {
		if w, f := panelStrips(c.cols); w != c.wide || f != c.full {
			t.Errorf("%d columns: %d wide strips covering %d, want %d covering %d", c.cols, w, f, c.wide, c.full)
		}
	}
	panelWide.cols, panelWide.run = 0, nil
	if w, f := panelStrips(110); w != 0 || f != 96 {
		t.Errorf("no wide kernel, 110 columns: %d wide strips covering %d, want 0 covering 96", w, f)
	}
}

// foldedKernel is a GEMM over a row-major weight [BOC, K] whose rows are far apart (a
// convolution's weight [OC, C*KH*KW] as conv_flat.py's folded form reads it): deep k steps
// (BK past panelMaxK) against a pixel tile, M of the BOC rows live, the last program's
// pixels past Q.
const foldedKernel = `import triton
import triton.language as tl


@triton.jit
def folded(x_ptr, w_ptr, c_ptr, M, Q, K, BP: tl.constexpr, BOC: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    q = pid * BP + tl.arange(0, BP)
    rn = tl.arange(0, BOC)
    rk = tl.arange(0, BK)
    qmask = q[None, :] < Q
    acc = tl.zeros((BOC, BP), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(w_ptr + rn[:, None] * K + ks[None, :], mask=rn[:, None] < M, other=0.0)
        b = tl.load(x_ptr + ks[:, None] * Q + q[None, :], mask=qmask, other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rn[:, None] * Q + q[None, :], acc, mask=(rn[:, None] < M) & qmask)
`

// TestFarWeightRowsQueueTheirDots: dots deeper than panelMaxK whose weight rows are 4 KB or
// more apart are queued too and run per register block over all of k (each block walks its
// rows from end to end; the rows below the blocks run panel by panel); the result is
// bit for bit that of the dots one at a time with gemmStreamA off, on the AVX-512 and the
// AVX2 kernels, and matches the float64 sum.
func TestFarWeightRowsQueueTheirDots(t *testing.T) {
	defer func() { queueDots, gemmStreamA = true, true }()
	const bp, boc, m, bk, q, k = 64, 64, 40, 256, 100, 1280
	kn := compileKernel(t, "folded.py", foldedKernel, "folded",
		map[string]string{"x_ptr": "*fp32", "w_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "Q": "i32", "K": "i32"},
		map[string]any{"BP": int64(bp), "BOC": int64(boc), "BK": int64(bk)})
	r := rand.New(rand.NewPCG(7, 8))
	x, w := make([]float32, k*q), make([]float32, m*k)
	for _, v := range [][]float32{x, w} {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
	}
	want := make([]float64, m*q)
	for o := range m {
		for p := range q {
			for c := range k {
				want[o*q+p] += float64(w[o*k+c]) * float64(x[c*q+p])
			}
		}
	}
	launch := func() []float32 {
		out := f32Buf(t, make([]float32, m*q))
		args := []jit.Arg{buf(f32Buf(t, x)), buf(f32Buf(t, w)), buf(out), scalar(int64(m)), scalar(int64(q)), scalar(int64(k))}
		if err := kn.Launch(grid1((q+bp-1)/bp), args); err != nil {
			t.Fatal(err)
		}
		return slices.Clone(out.f32())
	}
	eachMicroKernel(func() {
		queueDots, gemmStreamA = false, false
		inTurn := launch()
		queueDots, gemmStreamA = true, true
		queued := queuedDots.Load()
		got := launch()
		if n := queuedDots.Load() - queued; n != 2*k/bk {
			t.Fatalf("%s: %d products queued, want all %d", dotKernelName(), n, 2*k/bk)
		}
		checkQueuedDots(t, got, inTurn, want)
	})
}

// panelBlocks covers rows with as few left over as the kernel heights allow, tall ones first.
func TestPanelBlocks(t *testing.T) {
	defer func(ks []panelKernel) { panelKernels = ks }(panelKernels)
	for _, c := range []struct {
		heights []int
		rows    int
		want    [2]int
	}{
		{[]int{12, 8}, 64, [2]int{4, 2}}, // not 5 x 12 with 4 rows left
		{[]int{12, 8}, 32, [2]int{2, 1}},
		{[]int{12, 8}, 36, [2]int{3, 0}},
		{[]int{12, 8}, 13, [2]int{1, 0}}, // 1 left (an 8-row block would leave 5)
		{[]int{12, 8}, 4, [2]int{0, 0}},
		{[]int{8}, 64, [2]int{8, 0}},
		{[]int{6}, 40, [2]int{6, 0}},
		{[]int{6, 4}, 64, [2]int{10, 1}}, // AVX2
		{[]int{6, 4}, 128, [2]int{20, 2}},
		{[]int{6, 4}, 3, [2]int{0, 0}},
	} {
		panelKernels = nil
		for _, h := range c.heights {
			panelKernels = append(panelKernels, panelKernel{rows: h})
		}
		if got := panelBlocks(c.rows); got != c.want {
			t.Errorf("heights %v, %d rows: %v, want %v", c.heights, c.rows, got, c.want)
		}
	}
}

// checkQueuedDots wants the queued dots' result bit for bit the dots' one at a time, and
// within 1e-4 of the float64 sums.
func checkQueuedDots(t *testing.T, got, inTurn []float32, want []float64) {
	t.Helper()
	for i := range got {
		if got[i] != inTurn[i] {
			t.Fatalf("%s: c[%d] = %g queued, %g one at a time", dotKernelName(), i, got[i], inTurn[i])
		}
		if d := math.Abs(float64(got[i]) - want[i]); d > 1e-4*(1+math.Abs(want[i])) {
			t.Fatalf("%s: c[%d] = %g, want %g", dotKernelName(), i, got[i], want[i])
		}
	}
}

// On AVX2 (no masked loads) the columns right of the 16-wide strips run on the panels kernels
// too, through zero-padded copies, not panel by panel through gemmF32 (which walks a
// far-apart weight a k block at a time again): resnet18's layer 4 at N = 3 has 26 columns.
// The sums are checked by TestGemmPanelsMatchDotsInTurn.
func TestPanelEdgeRunsOnPanelsKernels(t *testing.T) {
	eachMicroKernel(func() {
		if !panelPadEdge {
			return
		}
		const m, n, k, lda, ldb, ldc = 64, 26, 256, 4608, 32, 32
		a, b, c := make([]float32, m*lda), make([]float32, k*ldb), make([]float32, m*ldc)
		ps := []dotPanel{{a: a, lda: lda, b: b, ldb: ldb, m: m, n: n, k: k}, {a: a[k:], lda: lda, b: b, ldb: ldb, m: m, n: n, k: k}}
		var scratch []float32
		var asm []gemmPanel
		edges := paddedEdges.Load()
		gemmPanels(ps, c, ldc, &scratch, &asm, nil, 0, 0, nil, nil)
		if got := paddedEdges.Load() - edges; got != 1 {
			t.Errorf("%s: %d columns, %d rows: %d padded edges, want 1", dotKernelName(), n, m, got)
		}
	})
}

// BenchmarkAVX2PanelEdges runs the queued products of resnet18's convolutions (N = 3, batch 2,
// 96x96) whose row or column counts are not multiples of the AVX2 6x16 panels kernel's, on one
// thread under AVX2: the tap loops of layers 1 and 2 (64 or 128 channels, weights [tap, OC,
// CG], 18 panels of a pixel tile) and the folded GEMMs of layer 4 (128 rows of a weight
// [512, 4608] far apart, 26 or 22 pixel columns). "6x16" is the 6-row kernel alone, the rows
// it leaves and the right edge panel by panel through gemmF32; "+4x16" adds the 4-row
// kernel; "+edges" the zero-padded right edges on the 16- and 8-wide panels kernels (the
// kernel set in use). GFLOP per CPU-second of the thread (the clock is no measure on a
// shared machine).
func BenchmarkAVX2PanelEdges(b *testing.B) {
	selectMicroKernel(false)
	defer selectMicroKernel(true)
	if len(panelKernels) != 2 {
		b.Skipf("no AVX2 panels kernels on this CPU (%s)", dotKernelName())
	}
	for _, s := range []struct {
		name             string
		rows, lda, ldb   int // a weight tile's rows, their distance; the input's rows
		n, k, panels, oc int
		folded           bool
	}{
		{"layer1/64x512", 64, 32, 676, 512, 32, 18, 64, false},
		{"layer1/64x110", 64, 32, 676, 110, 32, 18, 64, false},
		{"layer2/128x166", 128, 64, 196, 166, 64, 18, 128, false},
		{"layer4/128x26", 128, 4608, 32, 26, 256, 18, 512, true},
		{"layer4s2/128x22", 128, 2304, 32, 22, 256, 9, 512, true},
	} {
		const models = 3
		w := make([]float32, models*s.oc*s.lda*s.panels)
		if s.folded {
			w = w[:models*s.oc*s.lda]
		}
		x := make([]float32, s.k*s.panels*s.ldb+s.ldb)
		for i := range w {
			w[i] = float32(i%7) * 0.01
		}
		for i := range x {
			x[i] = float32(i%5) * 0.01
		}
		c := make([]float32, s.rows*s.ldb)
		var scratch []float32
		var asm []gemmPanel
		ps := make([]dotPanel, s.panels)
		for _, set := range []string{"6x16", "+4x16", "+edges"} {
			b.Run(s.name+"/"+set, func(b *testing.B) {
				defer selectMicroKernel(false)
				panelPadEdge = set == "+edges"
				if set == "6x16" {
					panelKernels = panelKernels[:1]
				}
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				t0, flops := threadCPUTime(), 0
				for b.Loop() {
					for m := range models {
						for ot := range s.oc / s.rows {
							for p := range ps {
								at := ((m*s.panels+p)*s.oc + ot*s.rows) * s.lda // [tap, OC, CG]
								if s.folded {
									at = (m*s.oc+ot*s.rows)*s.lda + p*s.k // [OC, C*KH*KW]
								}
								a := w[at:]
								ps[p] = dotPanel{a: a, lda: s.lda, b: x[p*s.k*s.ldb:], ldb: s.ldb, m: s.rows, n: s.n, k: s.k}
							}
							gemmPanels(ps, c, s.ldb, &scratch, &asm, nil, 0, 0, nil, nil)
							flops += 2 * s.rows * s.n * s.k * s.panels
						}
					}
				}
				if cpuTime := (threadCPUTime() - t0).Seconds(); cpuTime > 0 {
					b.ReportMetric(float64(flops)/cpuTime/1e9, "GFLOP/cpu-s")
				}
			})
		}
	}
}
