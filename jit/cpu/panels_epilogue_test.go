package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

// tapsEpilogueKernel is tapsKernel with M of its BOC rows live and conv_flat.py's epilogue:
// EPILOGUE (statements from acc to y, per-channel vectors s and t) then STORE.
const tapsEpilogueKernel = `import triton
import triton.language as tl


@triton.jit
def taps(x_ptr, w_ptr, s_ptr, t_ptr, r_ptr, c_ptr, M, Q, XS, T, C, BP: tl.constexpr, BOC: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    q = pid * BP + tl.arange(0, BP)
    rn = tl.arange(0, BOC)
    rk = tl.arange(0, BK)
    qmask = q[None, :] < Q
    smask = (rn[:, None] < M) & qmask
    acc = tl.zeros((BOC, BP), dtype=tl.float32)
LOOPS
    s = tl.load(s_ptr + rn[:, None], mask=rn[:, None] < M, other=0.0)
    t = tl.load(t_ptr + rn[:, None], mask=rn[:, None] < M, other=0.0)
EPILOGUE
STORE
`

// The tap loops: conv_flat.py's nest (taps outside, channel blocks inside) and one flat loop
// (its pointwise form's: the stores' masks computed before it then bound what is seen of the
// accumulator, observed.go).
var flushEpilogueLoops = []struct{ name, body string }{
	{"nest", `    for tap in range(0, T):
        for c0 in range(0, C, BK):
            cs = c0 + rk
            a = tl.load(w_ptr + tap * (BOC * C) + rn[:, None] * C + cs[None, :], mask=rn[:, None] < M, other=0.0)
            b = tl.load(x_ptr + tap + cs[:, None] * XS + q[None, :], mask=qmask, other=0.0)
            acc += tl.dot(a, b)`},
	{"flat", `    for i in range(0, T * (C // BK)):
        tap = i // (C // BK)
        cs = (i % (C // BK)) * BK + rk
        a = tl.load(w_ptr + tap * (BOC * C) + rn[:, None] * C + cs[None, :], mask=rn[:, None] < M, other=0.0)
        b = tl.load(x_ptr + tap + cs[:, None] * XS + q[None, :], mask=qmask, other=0.0)
        acc += tl.dot(a, b)`},
}

// The epilogue forms: how many steps each appends to the queue, and y as a function of the
// dots' sum p, the vectors' s and t and the residual r (the float64 reference).
var flushEpilogueForms = []struct {
	name, body string
	queued     int
	ref        func(p, s, t, r float64) float64
}{
	{"batchnorm-relu", `    y = tl.maximum(acc * s + t, 0.0, propagate_nan=tl.PropagateNan.ALL)`, 3,
		func(p, s, t, r float64) float64 { return maxProp64(p*s+t, 0) }},
	{"shift-first", `    y = tl.minimum(0.5, t - acc * s, propagate_nan=tl.PropagateNan.ALL)`, 3,
		func(p, s, t, r float64) float64 { return minProp64(0.5, t-p*s) }},
	{"bias", `    y = acc + t`, 1,
		func(p, s, t, r float64) float64 { return p + t }},
	// a convolution's bias, then its BatchNorm and ReLU
	{"bias-batchnorm-relu", `    y = tl.maximum((acc + t) * s + t, 0.0, propagate_nan=tl.PropagateNan.ALL)`, 4,
		func(p, s, t, r float64) float64 { return maxProp64((p+t)*s+t, 0) }},
	// a residual tile joins the chain (read in place: its rows RS apart in its buffer)
	{"residual", `    r = tl.load(r_ptr + rn[:, None] * RS + q[None, :], mask=(rn[:, None] < M) & qmask, other=0.0)
    y = tl.maximum(acc * s + t + r, 0.0, propagate_nan=tl.PropagateNan.ALL)`, 4,
		func(p, s, t, r float64) float64 { return maxProp64(p*s+t+r, 0) }},
	// the residual the left operand (t + x on the vector loop)
	{"residual-left", `    r = tl.load(r_ptr + rn[:, None] * RS + q[None, :], mask=(rn[:, None] < M) & qmask, other=0.0)
    y = tl.maximum(r + (acc * s + t), 0.0, propagate_nan=tl.PropagateNan.ALL)`, 4,
		func(p, s, t, r float64) float64 { return maxProp64(r+(p*s+t), 0) }},
	// the residual first, then BatchNorm of the sum (the chain step by step)
	{"residual-first", `    r = tl.load(r_ptr + rn[:, None] * RS + q[None, :], mask=(rn[:, None] < M) & qmask, other=0.0)
    y = tl.maximum((acc + r) * s + t, 0.0, propagate_nan=tl.PropagateNan.ALL)`, 4,
		func(p, s, t, r float64) float64 { return maxProp64((p+r)*s+t, 0) }},
	// not the ReLU of NaN-propagating max: the chain stops before it
	{"plain-max", `    y = tl.maximum(acc * s, 0.0)`, 1,
		func(p, s, t, r float64) float64 { return math.Max(p*s, 0) }},
}

// The stores: conv_flat.py's row by row (rows of 10 pixels: the value is read inside a loop),
// whole, and whole under a mask computed before the loop (observed.go: the epilogue then
// covers that rectangle alone).
var flushEpilogueStores = []struct{ name, body string }{
	{"observed", `    tl.store(c_ptr + rn[:, None] * Q + q[None, :], y, mask=smask)`},
	{"rows", `    for lo in range(pid * BP, min(pid * BP + BP, Q), 10):
        tl.store(c_ptr + rn[:, None] * Q + q[None, :], y, mask=(rn[:, None] < M) & (q[None, :] >= lo) & (q[None, :] < lo + 10) & qmask)`},
	{"tile", `    tl.store(c_ptr + rn[:, None] * Q + q[None, :], y, mask=(rn[:, None] < M) & qmask)`},
}

func maxProp64(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Max(a, b)
}

func minProp64(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Min(a, b)
}

// TestFlushEpilogue: a tap loop's per-channel epilogue steps run inside the panels flush
// (each register block through the chain after its last panel) in exactly the forms that
// panels_epilogue.go recognises, counted; the result is bit for bit that of the steps one at
// a time (the queue off) on the AVX-512 and the AVX2 kernels and matches the float64
// reference, NaN shifts included; 35 live rows of 64 (blocks and rows below them), 100 live
// pixels in tiles of 64 and 128 (strips and columns right of them). A residual's rows are
// fxRS (odd) apart in its buffer, read in place by the flush (counted); and, rows Q apart,
// the output written over it: the stores then run after the flush has read it.
func TestFlushEpilogue(t *testing.T) {
	defer func() { queueDots = true }()
	d := newFlushEpilogueData()
	for _, form := range flushEpilogueForms {
		residual := strings.Contains(form.body, "r_ptr")
		for _, store := range flushEpilogueStores {
			for _, loop := range flushEpilogueLoops {
				for _, bp := range []int{64, 128} {
					for _, over := range []bool{false, true} {
						if over && !residual {
							continue
						}
						t.Run(fmt.Sprintf("%s/%s/%s/bp=%d/over=%v", form.name, store.name, loop.name, bp, over), func(t *testing.T) {
							rs := fxRS
							if over {
								rs = fxQ
							}
							body := strings.ReplaceAll(form.body, "RS", fmt.Sprint(rs))
							src := strings.NewReplacer("LOOPS", loop.body, "EPILOGUE", body, "STORE", store.body).Replace(tapsEpilogueKernel)
							testFlushEpilogue(t, src, bp, form.queued, form.ref, d, residual, over)
						})
					}
				}
			}
		}
	}
}

// The sizes of TestFlushEpilogue: output channels (the tile's rows) and the live ones, the
// channel block, pixels, the input's row stride, taps and input channels.
const fxBOC, fxM, fxBK, fxQ, fxXS, fxTaps, fxCh = 64, 35, 16, 100, 128, 9, 32

// fxRS: the residual's row stride in its buffer.
const fxRS = 103

// flushEpilogueData is TestFlushEpilogue's input, weight, vectors, residual and the float64
// sums of the products.
type flushEpilogueData struct {
	x, w, s, t, r []float32
	sum           []float64
}

// newFlushEpilogueData draws TestFlushEpilogue's data (one channel's shift NaN) and sums the
// products in float64.
func newFlushEpilogueData() *flushEpilogueData {
	r := rand.New(rand.NewPCG(9, 10))
	var d flushEpilogueData
	d.x, d.w = make([]float32, fxCh*fxXS+fxTaps), make([]float32, fxTaps*fxBOC*fxCh)
	d.s, d.t, d.r = make([]float32, fxM), make([]float32, fxM), make([]float32, fxM*fxRS)
	for _, v := range [][]float32{d.x, d.w, d.s, d.t, d.r} {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
	}
	d.t[3] = float32(math.NaN()) // one channel's shift: its outputs are NaN through the ReLU
	d.sum = make([]float64, fxM*fxQ)
	for o := range fxM {
		for p := range fxQ {
			for tap := range fxTaps {
				for c := range fxCh {
					d.sum[o*fxQ+p] += float64(d.w[tap*fxBOC*fxCh+o*fxCh+c]) * float64(d.x[tap+c*fxXS+p])
				}
			}
		}
	}
	return &d
}

// compileTapsEpilogue compiles tapsEpilogueKernel (rendered: src) for pixel tiles of bp.
func compileTapsEpilogue(t *testing.T, src string, bp int) *Kernel {
	return compileKernel(t, "taps.py", src, "taps",
		map[string]string{"x_ptr": "*fp32", "w_ptr": "*fp32", "s_ptr": "*fp32", "t_ptr": "*fp32", "r_ptr": "*fp32", "c_ptr": "*fp32",
			"M": "i32", "Q": "i32", "XS": "i32", "T": "i32", "C": "i32"},
		map[string]any{"BP": int64(bp), "BOC": int64(fxBOC), "BK": int64(fxBK)})
}

// testFlushEpilogue checks the kernel src (residual: it reads r_ptr, rows fxRS apart; over:
// rows fxQ apart, and the output is the residual's buffer).
func testFlushEpilogue(t *testing.T, src string, bp, queued int, ref func(p, s, t, r float64) float64, d *flushEpilogueData, residual, over bool) {
	kn := compileTapsEpilogue(t, src, bp)
	rs := fxRS
	if over {
		rs = fxQ
	}
	want := make([]float64, fxM*fxQ)
	for i := range want {
		want[i] = ref(d.sum[i], float64(d.s[i/fxQ]), float64(d.t[i/fxQ]), float64(d.r[i/fxQ*rs+i%fxQ]))
	}
	programs := (fxQ + bp - 1) / bp
	launch := func() []float32 {
		res, out := f32Buf(t, d.r), f32Buf(t, make([]float32, fxM*fxQ))
		if over {
			out = res
		}
		args := []jit.Arg{buf(f32Buf(t, d.x)), buf(f32Buf(t, d.w)), buf(f32Buf(t, d.s)), buf(f32Buf(t, d.t)), buf(res), buf(out),
			scalar(int64(fxM)), scalar(int64(fxQ)), scalar(int64(fxXS)), scalar(int64(fxTaps)), scalar(int64(fxCh))}
		if err := kn.Launch(grid1(programs), args); err != nil {
			t.Fatal(err)
		}
		return slices.Clone(out.f32()[:fxM*fxQ])
	}
	eachMicroKernel(func() {
		inPlace := residualsInPlace.Load()
		inTurn, got, n := launchInTurnThenQueued(launch, &flushedEpilogues)
		if n != int64(programs*queued) {
			t.Fatalf("%s: %d epilogue steps in the flush, want %d (%d a program)", dotKernelName(), n, programs*queued, queued)
		}
		if read := residualsInPlace.Load() - inPlace; residual && read != int64(programs) || !residual && read != 0 {
			t.Fatalf("%s: %d residual tiles read in place, want %d", dotKernelName(), read, programs)
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(inTurn[i]) {
				t.Fatalf("%s: c[%d] = %g with the epilogue in the flush, %g step by step", dotKernelName(), i, got[i], inTurn[i])
			}
			if math.IsNaN(want[i]) != math.IsNaN(float64(got[i])) || math.Abs(float64(got[i])-want[i]) > 1e-4*(1+math.Abs(want[i])) {
				t.Fatalf("%s: c[%d] = %g, want %g", dotKernelName(), i, got[i], want[i])
			}
		}
	})
}

// TestGemmPanelsEpilogueCoversEveryBlock runs gemmPanels with a multiply, add and ReLU, and
// with a bias added before them (a convolution's bias, then its BatchNorm), over
// shapes whose rows and columns leave remainders on every kernel set (AVX2's padded right
// edge, rows below the register blocks, columns past the strips), in both orders (column
// strips outside; row blocks outside where A outweighs B and the L2 cache, counted): every seen element must
// equal the products then the steps one at a time, bit for bit (unseen ones inside a
// register block may go through the steps too), and nothing past the product's columns is
// written. Every chain runs on the vector loop (epilogueRows), also with a residual tile
// added before the ReLU (x + r or r + x), its seen rows an odd stride apart in a buffer that
// ends with them (read in place: a lane past them would be out of range).
func TestGemmPanelsEpilogueCoversEveryBlock(t *testing.T) {
	for _, biased := range []bool{false, true} {
		for _, residual := range []string{"", "right", "left"} {
			t.Run(fmt.Sprintf("bias=%v/residual=%s", biased, residual), func(t *testing.T) { testGemmPanelsEpilogue(t, biased, residual) })
		}
	}
}

func testGemmPanelsEpilogue(t *testing.T, biased bool, residual string) {
	r := rand.New(rand.NewPCG(11, 12))
	eachMicroKernel(func() {
		for _, sz := range []struct{ m, n, seenRows, seenCols, k, panels int }{{64, 26, 64, 26, 40, 3}, {70, 22, 67, 20, 40, 3}, {48, 64, 48, 64, 40, 3}, {35, 100, 35, 100, 40, 3},
			// rows of A past the L2 cache against narrow B (streamedA): row blocks outside
			{64, 26, 64, 26, 128, 20}, {70, 22, 67, 20, 128, 20}, {64, 40, 64, 40, 128, 20}} {
			const ldc = 112
			k := sz.k
			ps := make([]dotPanel, sz.panels)
			for i := range ps {
				a, b := make([]float32, sz.m*k), make([]float32, k*sz.n)
				for _, v := range [][]float32{a, b} {
					for j := range v {
						v[j] = float32(r.NormFloat64())
					}
				}
				ps[i] = dotPanel{a: a, lda: k, b: b, ldb: sz.n, m: sz.m, n: sz.n, k: k}
			}
			bias, mul, add := make([]float32, sz.m), make([]float32, sz.m), make([]float32, sz.m)
			for i := range mul {
				bias[i], mul[i], add[i] = float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			epi := []epilogueOp{{op: ir.Mul, vec: mul}, {op: ir.Add, vec: add}, {op: ir.Max}}
			ldr := sz.seenCols + 7
			res := normalF32(r, (sz.seenRows-1)*ldr+sz.seenCols)
			if residual != "" {
				tile := epilogueOp{op: ir.Add, first: residual == "left", tile: res, tileLd: ldr, tileRows: sz.seenRows, tileCols: sz.seenCols}
				epi = []epilogueOp{epi[0], epi[1], tile, epi[2]}
			}
			if biased {
				epi = append([]epilogueOp{{op: ir.Add, vec: bias}}, epi...)
			}
			if _, _, _, _, _, _, ok := epilogueRows(epi); !ok {
				t.Fatalf("%d steps: not epilogueRowsAVX2's form", len(epi))
			}
			var scratch []float32
			var asm []gemmPanel
			c, want := make([]float32, sz.m*ldc), make([]float32, sz.m*ldc)
			outside := rowsOutside.Load()
			gemmPanels(ps, c, ldc, &scratch, &asm, epi, sz.seenRows, sz.seenCols, nil, nil)
			wide, full := panelStrips(sz.n)
			if panelPadEdge {
				full = sz.n
			}
			if deep := sz.panels > 3 && wide == 0 && full > 0; deep != (rowsOutside.Load() > outside) {
				t.Fatalf("%s, %dx%d over %d panels of k = %d: row blocks outside %v, want %v", dotKernelName(), sz.m, sz.n, sz.panels, k, !deep, deep)
			}
			for _, p := range ps {
				gemmF32(p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, want, ldc, &scratch)
			}
			for i := range sz.m {
				for j := range ldc {
					w := want[i*ldc+j]
					if i < sz.seenRows && j < sz.seenCols {
						if biased {
							w += bias[i]
						}
						w = float32(w*mul[i]) + add[i] // rounded at each step, as the steps do
						if residual != "" {
							w += res[i*ldr+j]
						}
						w = max(w, 0)
					}
					if got := c[i*ldc+j]; got != w && i < sz.seenRows && j < sz.seenCols {
						t.Fatalf("%s, %dx%d (seen %dx%d): c[%d][%d] = %g, want %g", dotKernelName(), sz.m, sz.n, sz.seenRows, sz.seenCols, i, j, got, w)
					}
					if j >= sz.n && c[i*ldc+j] != 0 {
						t.Fatalf("%s, %dx%d: c[%d][%d] = %g past the product's columns", dotKernelName(), sz.m, sz.n, i, j, c[i*ldc+j])
					}
				}
			}
		}
	})
}
