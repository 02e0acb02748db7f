package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
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
    acc = tl.zeros((BOC, BP), dtype=tl.float32)
    for tap in range(0, T):
        for c0 in range(0, C, BK):
            cs = c0 + rk
            a = tl.load(w_ptr + tap * (BOC * C) + rn[:, None] * C + cs[None, :], mask=rn[:, None] < M, other=0.0)
            b = tl.load(x_ptr + tap + cs[:, None] * XS + q[None, :], mask=qmask, other=0.0)
            acc += tl.dot(a, b)
    s = tl.load(s_ptr + rn[:, None], mask=rn[:, None] < M, other=0.0)
    t = tl.load(t_ptr + rn[:, None], mask=rn[:, None] < M, other=0.0)
EPILOGUE
STORE
`

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
	// a residual tile ends the chain after BatchNorm: the add and ReLU run as steps
	{"residual", `    r = tl.load(r_ptr + rn[:, None] * Q + q[None, :], mask=(rn[:, None] < M) & qmask, other=0.0)
    y = tl.maximum(acc * s + t + r, 0.0, propagate_nan=tl.PropagateNan.ALL)`, 2,
		func(p, s, t, r float64) float64 { return maxProp64(p*s+t+r, 0) }},
	// the residual first: nothing is queued
	{"residual-first", `    r = tl.load(r_ptr + rn[:, None] * Q + q[None, :], mask=(rn[:, None] < M) & qmask, other=0.0)
    y = tl.maximum((acc + r) * s + t, 0.0, propagate_nan=tl.PropagateNan.ALL)`, 0,
		func(p, s, t, r float64) float64 { return maxProp64((p+r)*s+t, 0) }},
	// not the ReLU of NaN-propagating max: the chain stops before it
	{"plain-max", `    y = tl.maximum(acc * s, 0.0)`, 1,
		func(p, s, t, r float64) float64 { return math.Max(p*s, 0) }},
}

// The stores: conv_flat.py's row by row (rows of 10 pixels: the value is read inside a loop)
// and whole.
var flushEpilogueStores = []struct{ name, body string }{
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
// pixels in tiles of 64 and 128 (strips and columns right of them).
func TestFlushEpilogue(t *testing.T) {
	defer func() { queueDots = true }()
	const boc, m, bk, q, xs, taps, ch = 64, 35, 16, 100, 128, 9, 32
	r := rand.New(rand.NewPCG(9, 10))
	x, w := make([]float32, ch*xs+taps), make([]float32, taps*boc*ch)
	sv, tv, res := make([]float32, m), make([]float32, m), make([]float32, m*q)
	for _, v := range [][]float32{x, w, sv, tv, res} {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
	}
	tv[3] = float32(math.NaN()) // one channel's shift: its outputs are NaN through the ReLU
	sum := make([]float64, m*q)
	for o := range m {
		for p := range q {
			for tap := range taps {
				for c := range ch {
					sum[o*q+p] += float64(w[tap*boc*ch+o*ch+c]) * float64(x[tap+c*xs+p])
				}
			}
		}
	}
	for _, form := range flushEpilogueForms {
		for _, store := range flushEpilogueStores {
			for _, bp := range []int{64, 128} {
				t.Run(fmt.Sprintf("%s/%s/bp=%d", form.name, store.name, bp), func(t *testing.T) {
					src := strings.Replace(strings.Replace(tapsEpilogueKernel, "EPILOGUE", form.body, 1), "STORE", store.body, 1)
					kn := compileKernel(t, "taps.py", src, "taps",
						map[string]string{"x_ptr": "*fp32", "w_ptr": "*fp32", "s_ptr": "*fp32", "t_ptr": "*fp32", "r_ptr": "*fp32", "c_ptr": "*fp32",
							"M": "i32", "Q": "i32", "XS": "i32", "T": "i32", "C": "i32"},
						map[string]any{"BP": int64(bp), "BOC": int64(boc), "BK": int64(bk)})
					want := make([]float64, m*q)
					for i := range want {
						want[i] = form.ref(sum[i], float64(sv[i/q]), float64(tv[i/q]), float64(res[i]))
					}
					programs := (q + bp - 1) / bp
					launch := func() []float32 {
						out := f32Buf(t, make([]float32, m*q))
						args := []jit.Arg{buf(f32Buf(t, x)), buf(f32Buf(t, w)), buf(f32Buf(t, sv)), buf(f32Buf(t, tv)), buf(f32Buf(t, res)), buf(out),
							scalar(int64(m)), scalar(int64(q)), scalar(int64(xs)), scalar(int64(taps)), scalar(int64(ch))}
						if err := kn.Launch(grid1(programs), args); err != nil {
							t.Fatal(err)
						}
						return slices.Clone(out.f32())
					}
					eachMicroKernel(func() {
						queueDots = false
						inTurn := launch()
						queueDots = true
						before := flushedEpilogues.Load()
						got := launch()
						if n := flushedEpilogues.Load() - before; n != int64(programs*form.queued) {
							t.Fatalf("%s: %d epilogue steps in the flush, want %d (%d a program)", dotKernelName(), n, programs*form.queued, form.queued)
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
				})
			}
		}
	}
}
