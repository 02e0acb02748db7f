package cpu

import (
	"math/rand/v2"
	"testing"
)

// TestPairKernelsMatchDot: a pair kernel sums its panels into two pieces of panelCols/2
// columns, off apart (off 0: one piece twice), bit for bit as gemmF32 does panel by panel, and
// writes nothing else, at odd offsets, k and leading dimensions, on every kernel variant.
func TestPairKernelsMatchDot(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	eachPairKernel(t, func(half int) {
		for _, pk := range panelKernels {
			for _, off := range []int{0, half, half + 1, half + 3, 3*half - 1, 5 * half} {
				for _, ks := range [][]int{{1}, {2, 3}, {7, 1, 16}} {
					row, col := r.IntN(3), r.IntN(5)
					cols := col + max(off, half) + half + r.IntN(4)
					ldc := cols + r.IntN(7)
					c := normalF32(r, (row+pk.rows)*ldc)
					want := append([]float32(nil), c...)
					var g []gemmPanel
					var scratch []float32
					for _, k := range ks {
						lda, ldb := k+row+r.IntN(9), cols+r.IntN(11)
						a, b := normalF32(r, (row+pk.rows)*lda), normalF32(r, k*ldb)
						g = append(g, gemmPanel{a: &a[0], lda: lda, b: &b[0], ldb: ldb, k: k})
						at := row * lda
						gemmF32(pk.rows, half, k, a[at:], lda, b[col:], ldb, want[row*ldc+col:], ldc, &scratch)
						if off != 0 {
							gemmF32(pk.rows, half, k, a[at:], lda, b[col+off:], ldb, want[row*ldc+col+off:], ldc, &scratch)
						}
					}
					pk.pair(&g[0], len(g), row, col, &c[row*ldc+col], ldc, off)
					for i := range c {
						if c[i] != want[i] {
							t.Fatalf("%s %d rows, off %d, k %v: c[%d][%d] = %g, gemmF32 gives %g", dotKernelName(), pk.rows, off, ks, i/ldc, i%ldc, c[i], want[i])
						}
					}
				}
			}
		}
	})
}

// TestGemmPanelsPairStrips: given the live columns of row-aligned maps (rows w wide, wp
// apart, as a convolution's flat padded pixels; two samples folded, their rows restarting;
// tail dead columns after the last row, as a tile of whole rows has), gemmPanels runs pair
// strips (rows a strip wide: plain strips) and their columns hold bit for bit what the panels' gemmF32
// calls in turn give; columns no piece reaches are left as they were.
func TestGemmPanelsPairStrips(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	eachPairKernel(t, func(half int) {
		cases := []struct {
			name            string
			w, wp, h, m, ks int
			samples, sample int // folded samples, sample's columns
			tail            int
		}{
			{"resblock", half, half + 2, 16, 64, 3, 1, 0, 0},
			{"odd rows", half, half + 2, 5, 20, 2, 1, 0, 0},
			{"wide rows", 3 * half, 3*half + 2, 4, 30, 2, 1, 0, 0},
			{"folded", half, half + 2, 3, 24, 2, 2, (3-1)*(half+2) + half, 0},
			{"strip rows", 2 * half, 2*half + 2, 15, 32, 2, 1, 0, 4},
			{"two-strip rows, a tile's tail", 4 * half, 4*half + 2, 3, 20, 3, 1, 0, 2},
			{"odd rows, a tile's tail", half + 3, 2*half + 1, 4, 22, 2, 1, 0, 13},
		}
		for _, tc := range cases {
			var live []colSpan
			cols := 0
			for s := range tc.samples {
				for y := range tc.h {
					lo := s*tc.sample + y*tc.wp
					live = append(live, colSpan{lo, lo + tc.w})
					cols = lo + tc.w
				}
			}
			cols += tc.tail
			ldc := cols + 5
			c := normalF32(r, (tc.m+1)*ldc)
			want := append([]float32(nil), c...)
			var ps []dotPanel
			var scratch []float32
			for range tc.ks {
				k := 1 + r.IntN(20)
				lda, ldb := k+r.IntN(5), cols+r.IntN(40)
				a, b := normalF32(r, tc.m*lda), normalF32(r, k*ldb)
				gemmF32(tc.m, cols, k, a, lda, b, ldb, want, ldc, &scratch)
				ps = append(ps, dotPanel{a: a, lda: lda, b: b, ldb: ldb, m: tc.m, n: cols, k: k})
			}
			before := append([]float32(nil), c...)
			runs := pairStripRuns.Load()
			var asm []gemmPanel
			gemmPanels(ps, c, ldc, &scratch, &asm, nil, 0, 0, nil, live)
			if pairStripRuns.Load() == runs {
				t.Fatalf("%s %s: no pair strips", dotKernelName(), tc.name)
			}
			isLive := make([]bool, ldc)
			for _, sp := range live {
				for j := sp.lo; j < sp.hi; j++ {
					isLive[j] = true
				}
			}
			for i := range c {
				if isLive[i%ldc] && c[i] != want[i] {
					t.Fatalf("%s %s: c[%d][%d] = %g, the dots in turn give %g", dotKernelName(), tc.name, i/ldc, i%ldc, c[i], want[i])
				}
				if i%ldc >= cols && c[i] != before[i] {
					t.Fatalf("%s %s: c[%d][%d] past the columns changed", dotKernelName(), tc.name, i/ldc, i%ldc)
				}
			}
		}
	})
}

// TestPlanPairStrips: the pieces pair in order, the last one alone taking the dead columns
// after it or itself twice; spans a piece cannot cover without reaching the next are refused.
func TestPlanPairStrips(t *testing.T) {
	defer func(c int) { panelCols = c }(panelCols)
	panelCols = 32
	got, ok := planPairStrips([]colSpan{{0, 16}, {18, 34}, {36, 52}}, 52, nil)
	if !ok || len(got) != 2 || got[0] != (pairStrip{0, 18}) || got[1] != (pairStrip{36, 0}) {
		t.Fatalf("three rows: %v %v", got, ok)
	}
	got, ok = planPairStrips([]colSpan{{0, 16}, {18, 34}, {36, 52}}, 70, nil)
	if !ok || got[1] != (pairStrip{36, 16}) {
		t.Fatalf("three rows, room after: %v %v", got, ok)
	}
	if _, ok := planPairStrips([]colSpan{{0, 24}, {26, 50}}, 50, nil); ok {
		t.Fatal("24-wide rows 26 apart: a piece would reach the next row")
	}
	var rows []colSpan // a tile of 15 whole rows 32 wide, 34 apart, and 2 columns of the next
	for y := range 15 {
		rows = append(rows, colSpan{34 * y, 34*y + 32})
	}
	got, ok = planPairStrips(rows, 512, nil)
	if !ok || len(got) != 15 || got[0] != (pairStrip{0, 16}) || got[14] != (pairStrip{14 * 34, 16}) {
		t.Fatalf("rows a strip wide: %v %v", got, ok)
	}
	if _, ok := planPairStrips([]colSpan{{0, 64}}, 64, nil); ok {
		t.Fatal("no dead column: plain strips")
	}
}

// normalF32 is n normal samples.
func normalF32(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// eachPairKernel runs f on every kernel variant, with half panelCols/2; skipped without pair
// kernels.
func eachPairKernel(t *testing.T, f func(half int)) {
	eachMicroKernel(func() {
		if len(panelKernels) == 0 || panelKernels[0].pair == nil {
			t.Skipf("no pair kernels (%s)", dotKernelName())
		}
		f(panelCols / 2)
	})
}
