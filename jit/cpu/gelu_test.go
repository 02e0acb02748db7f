package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/widejit/widejit/jit"
)

const geluSrc = `import triton
import triton.language as tl


@triton.jit
def gelu(x_ptr, out_ptr, t_ptr, n, h, o, c, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    t = %s
    y = %s
    tl.store(out_ptr + offs, y, mask=mask)
%s`

// The exact GELU runs as one fused step (gelu.go) in each operand order the chain can be
// written in, with literal and runtime scalars, and gives the unfused ops' results bit for
// bit (NaN payloads included): its twin that also stores the erf's argument (a second use,
// so nothing is fused) is the reference, and a float64-free Go loop must agree up to NaN
// payloads. The inputs hold NaNs, infinities, signed zeros, tiny and huge values; the tile
// is four chunks, with a masked edge.
func TestGeluFusedBitForBit(t *testing.T) {
	const block, n = 4096, 5000
	xs := make([]float32, n)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range xs {
		xs[i] = float32(r.NormFloat64() * 3)
	}
	copy(xs, []float32{float32(math.NaN()), math.Float32frombits(0x7fc12345), float32(math.Inf(1)), float32(math.Inf(-1)),
		0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 1e30, -1e30, 3.9, -3.9, 5, -5})
	h, o, c := float32(0.5), float32(1), float32(0.7071067811865476)
	want := make([]float32, n)
	for i, x := range xs {
		e := make([]float32, 1)
		erfF32([]float32{x * c}, e)
		want[i] = (x * h) * (o + e[0])
	}
	run := func(arg, expr, extra string, fused int) []float32 {
		comp := jit.NewCompiler(jit.CompilerOptions{Version: "test"})
		src := fmt.Sprintf(geluSrc, arg, expr, extra)
		k, err := comp.Load(NewDevice(2), jit.Source{File: "gelu.py", Text: src, Fn: "gelu"},
			jit.Spec{Sig: map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "t_ptr": "*fp32", "n": "i32", "h": "fp32", "o": "fp32", "c": "fp32"},
				Consts: map[string]any{"BLOCK": int64(block)}})
		if err != nil {
			t.Fatal(err)
		}
		if got := k.(*Kernel).prog.gelus; got != fused {
			t.Errorf("%s: %d fused chains, want %d", src, got, fused)
		}
		x, out, tmp := f32Buf(t, xs), f32Buf(t, make([]float32, n)), f32Buf(t, make([]float32, n))
		args := []jit.Arg{{Buf: x}, {Buf: out}, {Buf: tmp}, {Scalar: int64(n)}, {Scalar: float64(h)}, {Scalar: float64(o)}, {Scalar: float64(c)}}
		if err := k.Launch(grid1((n+block-1)/block), args); err != nil {
			t.Fatal(err)
		}
		return out.f32()
	}
	for _, tc := range []struct{ arg, expr string }{
		{"x * 0.7071067811865476", "0.5 * x * (1.0 + tl.erf(t))"},
		{"0.7071067811865476 * x", "(tl.erf(t) + 1.0) * (x * 0.5)"},
		{"c * x", "x * h * (o + tl.erf(t))"},
		{"x * c", "(o + tl.erf(t)) * (h * x)"},
	} {
		got := run(tc.arg, tc.expr, "", 1)
		ref := run(tc.arg, tc.expr, "    tl.store(t_ptr + offs, t, mask=mask)\n", 0)
		for i := range want {
			g, f, w := got[i], ref[i], want[i]
			if math.Float32bits(g) != math.Float32bits(f) || !(g == w || g != g && w != w) {
				t.Fatalf("%s: out[%d] = %g (%#x), unfused %g (%#x), want %g at x = %g",
					tc.expr, i, g, math.Float32bits(g), f, math.Float32bits(f), w, xs[i])
			}
		}
	}
}
