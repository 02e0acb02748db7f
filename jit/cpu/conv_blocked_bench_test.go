package cpu

import (
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/widejit/widejit/internal/testkit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

// The zoo's conv pair's second convolution (bench/zoo/conv3x3.json: 32 -> 32, 3x3, pad 1,
// bias, ReLU; N = 12 models, batch 8, 32x32 maps) in two forms, for deciding whether a
// channel-blocked layout pays (bench/results/zoo_conv.md):
//
//   - flat: conv_flat.py as the plan renders it (lowering's k4 of the pair): planes [channel,
//     Hp, Wp] zero-padded, the tile [32 oc, 512 px] = W[oc, (tap, ch)] x x[(tap, ch), px], the
//     output stored row by row into the graph's dense planes (flat), or, as the pair's
//     conv1 stores it, whole into the next convolution's zero-padded planes, the dead columns
//     zeroed by a select (flat-padded).
//   - blocked: both activations as [sample, C/16, Hp, Wp, 16] (oneDNN's nChw16c, padded): the
//     tile is transposed, [512 px, 32 oc] = x_blk[px + tap shift, 16 ch] x w[tap, cb][16 ch,
//     32 oc], A rows 16 floats apart (one contiguous run a tap and channel block), and each
//     channel block's output is one contiguous run of the next convolution's padded blocked
//     input (the dead columns past each row fall on its border, zeroed by a select);
//     blocked-noborder without the select (its border is not written: a bound on what the
//     select costs, not a usable kernel).
//
// Each launch is one run of the convolution over all the models; reported per CPU-second of
// the process (other load on a shared machine moves that less than the clock). -count repeats
// a sub-benchmark before the next one: for an A/B, alternate the forms from the shell:
//
//	go test -c -o /tmp/cpu.test ./jit/cpu
//	for i in 1 2 3 4; do for f in 'flat$' flat-padded 'blocked$' blocked-noborder; do
//	  /tmp/cpu.test -test.run '^$' -test.bench "BlockedConvPair/avx512/pair/$f" -test.benchtime 60x; done; done
const blockedPairSource = `
import triton
import triton.language as tl

@triton.jit
def conv_flat(
    x_ptr, x_mstride, x_bstride, x_cstride,
    w_ptr, w_mstride,
    c_ptr, c_mstride, c_bstride, c_cstride, c_rstride,
    e0_ptr, e0_mstride,
    Wp, OW, OH, Q, OCG, KW, KHW, CG, w_tstride,
    BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr, BLOCK_K: tl.constexpr, PADDED: tl.constexpr,
):
    pid = tl.program_id(0)
    bidx = tl.program_id(1)
    model = tl.program_id(2)
    q0 = pid * BLOCK_P
    q = q0 + tl.arange(0, BLOCK_P)
    rn = tl.arange(0, BLOCK_OC)
    rk = tl.arange(0, BLOCK_K)
    x_base = x_ptr + model * x_mstride + bidx * x_bstride
    ocmask = rn[:, None] < OCG
    acc = tl.zeros((BLOCK_OC, BLOCK_P), dtype=tl.float32)
    smask = ocmask & (q[None, :] < Q)
    w_base = w_ptr + model * w_mstride
    a_ptrs = w_base + rn[:, None] * CG + rk[None, :]
    b_ptrs = x_base + rk[:, None] * x_cstride + q[None, :]
    for tap in range(0, KHW):
        toff = (tap // KW) * Wp + (tap % KW)
        for c0 in range(0, CG, BLOCK_K):
            a = tl.load(a_ptrs + (tap * w_tstride + c0), mask=ocmask, other=0.0)
            b = tl.load(b_ptrs + (toff + c0 * x_cstride), mask=q[None, :] < Q, other=0.0)
            acc += tl.dot(a, b, input_precision="ieee")
    qi = q0 + tl.arange(0, BLOCK_P)
    ow = qi % Wp
    e0 = tl.load(e0_ptr + model * e0_mstride + rn[:, None], mask=(rn[:, None] < OCG), other=0).to(tl.float32)
    et1 = acc + e0
    y = tl.maximum(et1, 0.0, propagate_nan=tl.PropagateNan.ALL)
    qs = q0 + tl.arange(0, BLOCK_P)
    if PADDED:
        c_base = c_ptr + model * c_mstride + bidx * c_bstride + (Wp + 1) + rn[:, None] * c_cstride
        tl.store(c_base + qs[None, :], tl.where(ow[None, :] < OW, y, 0.0), mask=smask)
    else:
        c_base = c_ptr + model * c_mstride + bidx * c_bstride + rn[:, None] * c_cstride
        q_row = qs[None, :]
        c_q = c_base + qs[None, :]
        for oh in range(q0 // Wp, min((q0 + BLOCK_P - 1) // Wp + 1, OH)):
            lo = oh * Wp
            tl.store(c_q + oh * (c_rstride - Wp), y, mask=smask & (q_row >= lo) & (q_row < lo + OW))

# conv_blocked is the blocked form. The bias is the accumulator's first value (added
# after the dots, a [1, oc] broadcast is a step of its own, not one of the panels flush's).
# The pixels' loads are masked to q < Q so that the dots of the last tile cover its live
# rows alone. BORDER: the dead columns past each output row, which fall on the next
# convolution's border, are zeroed by a select before the stores; without, they are left
# out of the figures' correctness (a bound on what the select costs).
@triton.jit
def conv_blocked(
    x_ptr, x_mstride, x_bstride, x_kstride, w_ptr, w_mstride,
    c_ptr, c_mstride, c_bstride, c_kstride, c_off, e0_ptr, e0_mstride,
    Wp, OW, Q, OC, CB, KW, KHW,
    BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr, BC: tl.constexpr, BORDER: tl.constexpr,
):
    # (pixel tile, sample, model); pixels on the tile's rows, output channels on its columns
    q0 = tl.program_id(0) * BLOCK_P
    x_base = x_ptr + tl.program_id(2) * x_mstride + tl.program_id(1) * x_bstride
    q = q0 + tl.arange(0, BLOCK_P)
    rn = tl.arange(0, BLOCK_OC)
    smask = (q[:, None] < Q) & (rn[None, :] < OC)
    rc = tl.arange(0, BC)
    a_ptrs = x_base + q[:, None] * BC + rc[None, :]
    model = tl.program_id(2)
    b_ptrs = w_ptr + model * w_mstride + rc[:, None] * OC + rn[None, :]
    acc = tl.zeros((BLOCK_P, BLOCK_OC), dtype=tl.float32) + tl.load(e0_ptr + model * e0_mstride + rn)[None, :]
    for tap in range(0, KHW):
        toff = (tap // KW) * Wp + (tap % KW)
        for cb in range(0, CB):
            a = tl.load(a_ptrs + (cb * x_kstride + toff * BC), mask=q[:, None] < Q, other=0.0)
            b = tl.load(b_ptrs + (tap * CB + cb) * (BC * OC))
            acc += tl.dot(a, b, input_precision="ieee")
    y = tl.maximum(acc, 0.0, propagate_nan=tl.PropagateNan.ALL)
    qs = q0 + tl.arange(0, BLOCK_P)
    if BORDER:
        y = tl.where((qs % Wp)[:, None] < OW, y, 0.0)
    rs = tl.arange(0, BLOCK_OC)
    c_base = c_ptr + model * c_mstride + tl.program_id(1) * c_bstride + c_off * BC
    for blk in range(0, BLOCK_OC // BC):
        tl.store(c_base + blk * c_kstride + qs[:, None] * BC + (rs[None, :] - blk * BC), y,
                 mask=smask & (rs[None, :] >= blk * BC) & (rs[None, :] < blk * BC + BC))
`

// blockedPair holds the pair's conv2 operands in both layouts.
type blockedPair struct {
	n, batch, c, h, w, hp, wp int
	bc                        int       // channels a block
	x, wFlat, wBlk, bias      []float32 // x: [model, sample, c, h, w]; w: [model, oc, c, 3, 3]
	xFlat, xBlk               *Buffer
	wFlatBuf, wBlkBuf         *Buffer
	biasBuf, yFlat, yBlk      *Buffer
	yFlatPadded               *Buffer
	slack                     int
}

// newBlockedPair sets up n models' operands: c channels in and out, batch samples of hw x hw.
func newBlockedPair(n, batch, c, hw int) *blockedPair {
	p := &blockedPair{n: n, bc: 16, batch: batch, c: c, h: hw, w: hw, hp: hw + 2, wp: hw + 2, slack: 512 * c}
	rng := rand.New(rand.NewSource(7))
	nx := n * p.batch * p.c * p.h * p.w
	p.x = make([]float32, nx)
	for i := range p.x {
		p.x[i] = float32(math.Max(rng.Float64()*2-1, 0)) // ReLU'd, as conv1's output
	}
	wsz := p.c * p.c * 9
	w := randF32(rng, n*wsz, 0.1)
	p.bias = randF32(rng, n*p.c, 0.1)
	plane := p.hp * p.wp
	// flat: padded planes, the weight relaid [tap, oc, ch]
	xf := make([]float32, n*p.batch*p.c*plane+p.slack)
	xb := make([]float32, n*p.batch*p.c*plane+p.slack)
	for m := range n {
		for s := range p.batch {
			for ch := range p.c {
				for i := range p.h {
					for j := range p.w {
						v := p.x[(((m*p.batch+s)*p.c+ch)*p.h+i)*p.w+j]
						pix := (i+1)*p.wp + j + 1
						xf[((m*p.batch+s)*p.c+ch)*plane+pix] = v
						xb[(((m*p.batch+s)*(p.c/p.bc)+ch/p.bc)*plane+pix)*p.bc+ch%p.bc] = v
					}
				}
			}
		}
	}
	wf := make([]float32, n*wsz)
	wb := make([]float32, n*wsz)
	for m := range n {
		for oc := range p.c {
			for ch := range p.c {
				for t := range 9 {
					v := w[m*wsz+(oc*p.c+ch)*9+t]
					wf[m*wsz+(t*p.c+oc)*p.c+ch] = v
					// [tap, cb, ch16, oc]
					wb[m*wsz+((t*(p.c/p.bc)+ch/p.bc)*p.bc+ch%p.bc)*p.c+oc] = v
				}
			}
		}
	}
	p.wFlat, p.wBlk = w, wb
	mk := func(v []float32) *Buffer {
		b, _ := NewBuffer(ir.F32, len(v))
		copy(b.f32(), v)
		return b
	}
	p.xFlat, p.xBlk, p.wFlatBuf, p.wBlkBuf, p.biasBuf = mk(xf), mk(xb), mk(wf), mk(wb), mk(p.bias)
	p.yFlat, _ = NewBuffer(ir.F32, n*p.batch*p.c*p.h*p.w)
	p.yBlk, _ = NewBuffer(ir.F32, n*p.batch*p.c*plane+p.slack)
	p.yFlatPadded, _ = NewBuffer(ir.F32, n*p.batch*p.c*plane)
	return p
}

// convForm is one of the benchmark's kernels.
type convForm int

const (
	flatDense       convForm = iota // conv_flat.py, the graph's dense output
	flatPadded                      // conv_flat.py, the next convolution's padded planes
	blocked                         // the blocked form, the border zeroed by a select
	blockedNoBorder                 // the same without the select (its border unchecked)
)

func (p *blockedPair) flops() int { return 2 * p.n * p.batch * p.h * p.w * p.c * p.c * 9 }

func (p *blockedPair) compile(tb testing.TB, form convForm) (jit.Kernel, func(jit.Kernel) error) {
	c := jit.NewCompiler(jit.CompilerOptions{Version: "test"})
	dev := NewDevice(0)
	plane := p.hp * p.wp
	q := (p.h-1)*p.wp + p.w
	const blockP = 512
	grid := [3]int{(q + blockP - 1) / blockP, p.batch, p.n}
	i64 := func(v int) jit.Arg { return jit.Arg{Scalar: int64(v)} }
	if form == flatDense || form == flatPadded {
		sig := map[string]string{"x_ptr": "*fp32", "w_ptr": "*fp32", "c_ptr": "*fp32", "e0_ptr": "*fp32"}
		for _, s := range []string{"x_mstride", "x_bstride", "x_cstride", "w_mstride", "c_mstride", "c_bstride", "c_cstride", "c_rstride",
			"e0_mstride", "Wp", "OW", "OH", "Q", "OCG", "KW", "KHW", "CG", "w_tstride"} {
			sig[s] = "i32"
		}
		k, err := c.Load(dev, jit.Source{File: "conv_blocked_pair.py", Text: blockedPairSource, Fn: "conv_flat"}, jit.Spec{Sig: sig,
			Consts: map[string]any{"BLOCK_P": int64(blockP), "BLOCK_OC": int64(p.c), "BLOCK_K": int64(32), "PADDED": form == flatPadded}})
		if err != nil {
			tb.Fatal(err)
		}
		out := []jit.Arg{{Buf: p.yFlat}, i64(p.batch * p.c * p.h * p.w), i64(p.c * p.h * p.w), i64(p.h * p.w), i64(p.w)}
		if form == flatPadded {
			out = []jit.Arg{{Buf: p.yFlatPadded}, i64(p.batch * p.c * plane), i64(p.c * plane), i64(plane), i64(p.wp)}
		}
		args := slices.Concat([]jit.Arg{{Buf: p.xFlat}, i64(p.batch * p.c * plane), i64(p.c * plane), i64(plane),
			{Buf: p.wFlatBuf}, i64(p.c * p.c * 9)}, out, []jit.Arg{
			{Buf: p.biasBuf}, i64(p.c),
			i64(p.wp), i64(p.w), i64(p.h), i64(q), i64(p.c), i64(3), i64(9), i64(p.c), i64(p.c * p.c)})
		return k, func(k jit.Kernel) error { return k.Launch(grid, args) }
	}
	sig := map[string]string{"x_ptr": "*fp32", "w_ptr": "*fp32", "c_ptr": "*fp32", "e0_ptr": "*fp32"}
	for _, s := range []string{"x_mstride", "x_bstride", "x_kstride", "w_mstride", "c_mstride", "c_bstride", "c_kstride", "c_off",
		"e0_mstride", "Wp", "OW", "Q", "OC", "CB", "KW", "KHW"} {
		sig[s] = "i32"
	}
	k, err := c.Load(dev, jit.Source{File: "conv_blocked_pair.py", Text: blockedPairSource, Fn: "conv_blocked"}, jit.Spec{Sig: sig,
		Consts: map[string]any{"BLOCK_P": int64(blockP), "BLOCK_OC": int64(p.c), "BC": int64(p.bc), "BORDER": form == blocked}})
	if err != nil {
		tb.Fatal(err)
	}
	args := []jit.Arg{{Buf: p.xBlk}, i64(p.batch * p.c * plane), i64(p.c * plane), i64(p.bc * plane),
		{Buf: p.wBlkBuf}, i64(p.c * p.c * 9),
		{Buf: p.yBlk}, i64(p.batch * p.c * plane), i64(p.c * plane), i64(p.bc * plane), i64(p.wp + 1),
		{Buf: p.biasBuf}, i64(p.c),
		i64(p.wp), i64(p.w), i64(q), i64(p.c), i64(p.c / p.bc), i64(3), i64(9)}
	return k, func(k jit.Kernel) error { return k.Launch(grid, args) }
}

// check compares both outputs with a float64 reference at a sample of points, and the
// blocked output's border with zeros.
func (p *blockedPair) check(tb testing.TB, form convForm) {
	rng := rand.New(rand.NewSource(3))
	plane := p.hp * p.wp
	yf, yb, yp := p.yFlat.f32(), p.yBlk.f32(), p.yFlatPadded.f32()
	wsz := p.c * p.c * 9
	for range 2000 {
		m, s, oc, i, j := rng.Intn(p.n), rng.Intn(p.batch), rng.Intn(p.c), rng.Intn(p.h), rng.Intn(p.w)
		ref := float64(p.bias[m*p.c+oc])
		for ch := range p.c {
			for kh := range 3 {
				for kw := range 3 {
					ii, jj := i+kh-1, j+kw-1
					if ii < 0 || jj < 0 || ii >= p.h || jj >= p.w {
						continue
					}
					ref += float64(p.wFlat[m*wsz+(oc*p.c+ch)*9+kh*3+kw]) * float64(p.x[(((m*p.batch+s)*p.c+ch)*p.h+ii)*p.w+jj])
				}
			}
		}
		ref = math.Max(ref, 0)
		var got float64
		switch form {
		case flatDense:
			got = float64(yf[(((m*p.batch+s)*p.c+oc)*p.h+i)*p.w+j])
		case flatPadded:
			got = float64(yp[((m*p.batch+s)*p.c+oc)*plane+(i+1)*p.wp+j+1])
		default:
			got = float64(yb[(((m*p.batch+s)*(p.c/p.bc)+oc/p.bc)*plane+(i+1)*p.wp+j+1)*p.bc+oc%p.bc])
		}
		if math.Abs(got-ref) > 1e-4 {
			tb.Fatalf("form %d: model %d sample %d oc %d (%d, %d) = %v, want %v", form, m, s, oc, i, j, got, ref)
		}
	}
	if form == flatDense || form == blockedNoBorder {
		return
	}
	if form == flatPadded {
		yb = yp
	}
	lanes := p.bc // channels a pixel: a block's, or a plane's one
	if form == flatPadded {
		lanes = 1
	}
	for blk := range p.n * p.batch * p.c / lanes {
		for pix := range plane {
			r, col := pix/p.wp, pix%p.wp
			if r >= 1 && r <= p.h && col >= 1 && col <= p.w {
				continue
			}
			for l := range lanes {
				if v := yb[(blk*plane+pix)*lanes+l]; v != 0 {
					tb.Fatalf("form %d: border of block %d, pixel %d lane %d = %v", form, blk, pix, l, v)
				}
			}
		}
	}
}

// TestBlockedConvPair checks both forms of the benchmark against a float64 reference, and
// the padded outputs' borders for zeros, under every micro-kernel set.
func TestBlockedConvPair(t *testing.T) {
	eachMicroKernel(func() {
		for _, sh := range blockedShapes {
			p := newBlockedPair(2, sh.batch, sh.c, sh.hw)
			for _, form := range []convForm{flatDense, flatPadded, blocked, blockedNoBorder} {
				k, launch := p.compile(t, form)
				if err := launch(k); err != nil {
					t.Fatal(err)
				}
				p.check(t, form)
			}
		}
	})
}

// blockedShapes are the benchmark's convolutions: the pair's conv2 (N = 12) and, for
// comparison, the ResBlock's (64 -> 64 on 16x16, N = 8; bias and ReLU in place of its
// BatchNorm and residual).
var blockedShapes = []struct {
	name            string
	n, batch, c, hw int
}{{"pair", 12, 8, 32, 32}, {"resblock", 8, 4, 64, 16}}

func BenchmarkBlockedConvPair(b *testing.B) {
	eachISA(b, func(b *testing.B) {
		for _, sh := range blockedShapes {
			b.Run(sh.name, func(b *testing.B) { benchmarkBlockedConv(b, newBlockedPair(sh.n, sh.batch, sh.c, sh.hw)) })
		}
	})
}

func benchmarkBlockedConv(b *testing.B, p *blockedPair) {
	for _, form := range []struct {
		name string
		form convForm
	}{{"flat", flatDense}, {"flat-padded", flatPadded}, {"blocked", blocked}, {"blocked-noborder", blockedNoBorder}} {
		b.Run(form.name, func(b *testing.B) {
			k, launch := p.compile(b, form.form)
			if err := launch(k); err != nil {
				b.Fatal(err)
			}
			peak := PeakGFLOPS(50 * time.Millisecond)
			b.ResetTimer()
			cpu0 := testkit.CPUTime()
			for range b.N {
				if err := launch(k); err != nil {
					b.Fatal(err)
				}
			}
			cpuTime := testkit.CPUTime() - cpu0
			b.StopTimer()
			peak = max(peak, PeakGFLOPS(50*time.Millisecond))
			flops := float64(p.flops()) * float64(b.N)
			if cpuTime > 0 && peak > 0 {
				b.ReportMetric(flops/cpuTime.Seconds()/1e9, "GFLOP/cpu-s")
				b.ReportMetric(100*flops/cpuTime.Seconds()/1e9/peak, "%peak")
			}
		})
	}
}
