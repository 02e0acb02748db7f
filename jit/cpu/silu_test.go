package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/widejit/widejit/jit"
)

const siluSrc = `import triton
import triton.language as tl


@triton.jit
def silu(x_ptr, out_ptr, t_ptr, n, o, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    t = -x
    y = %s
    tl.store(out_ptr + offs, y, mask=mask)
%s`

// SiLU and the sigmoid run as one fused step (silu.go) in each operand order the lowering's
// chain can be written in, with literal and runtime scalars, and give the unfused ops'
// results bit for bit (NaN payloads included): the twin that also stores -x (a second use,
// so nothing is fused) is the reference, and a Go loop over the same float32 ops must agree
// up to NaN payloads. The inputs hold NaNs, infinities, signed zeros, tiny and huge values
// (exp overflowing and underflowing); the tile is four chunks, with a masked edge.
func TestSiluFusedBitForBit(t *testing.T) {
	const block, n = 4096, 5000
	xs := make([]float32, n)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range xs {
		xs[i] = float32(r.NormFloat64() * 4)
	}
	copy(xs, []float32{float32(math.NaN()), math.Float32frombits(0xffc12345), float32(math.Inf(1)), float32(math.Inf(-1)),
		0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 1e30, -1e30, 88.7, -88.7, 104, -104, 87, -87})
	o, s := float32(1), float32(1)
	run := func(expr, extra string, fused int) []float32 {
		comp := jit.NewCompiler(jit.CompilerOptions{Version: "test"})
		src := fmt.Sprintf(siluSrc, expr, extra)
		k, err := comp.Load(NewDevice(2), jit.Source{File: "silu.py", Text: src, Fn: "silu"},
			jit.Spec{Sig: map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "t_ptr": "*fp32", "n": "i32", "o": "fp32", "s": "fp32"},
				Consts: map[string]any{"BLOCK": int64(block)}})
		if err != nil {
			t.Fatal(err)
		}
		if got := k.(*Kernel).prog.silus; got != fused {
			t.Errorf("%s: %d fused chains, want %d", src, got, fused)
		}
		x, out, tmp := f32Buf(t, xs), f32Buf(t, make([]float32, n)), f32Buf(t, make([]float32, n))
		args := []jit.Arg{{Buf: x}, {Buf: out}, {Buf: tmp}, {Scalar: int64(n)}, {Scalar: float64(o)}, {Scalar: float64(s)}}
		if err := k.Launch(grid1((n+block-1)/block), args); err != nil {
			t.Fatal(err)
		}
		return out.f32()
	}
	for _, tc := range []struct {
		expr    string
		sigmoid bool
	}{
		{"x / (1.0 + tl.exp(t))", false},
		{"x / (tl.exp(t) + o)", false},
		{"1.0 / (1.0 + tl.exp(t))", true},
		{"s / (tl.exp(t) + 1.0)", true},
	} {
		got := run(tc.expr, "", 1)
		ref := run(tc.expr, "    tl.store(t_ptr + offs, t, mask=mask)\n", 0)
		for i, x := range xs {
			e := make([]float32, 1)
			expF32([]float32{-x}, e)
			num := x
			if tc.sigmoid {
				num = s
			}
			w := num / (o + e[0])
			g, f := got[i], ref[i]
			if math.Float32bits(g) != math.Float32bits(f) || !(g == w || g != g && w != w) {
				t.Fatalf("%s: out[%d] = %g (%#x), unfused %g (%#x), want %g at x = %g",
					tc.expr, i, g, math.Float32bits(g), f, math.Float32bits(f), w, x)
			}
		}
	}
}

// A SiLU of a splat (tl.full: one value for the whole tile; siluAt refuses an absorbed x,
// whose slot holds one value, not a tile) stores the unfused ops' value in every lane.
func TestSiluOfSplat(t *testing.T) {
	const src = `import triton
import triton.language as tl


@triton.jit
def silu_splat(out_ptr, v, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.full([BLOCK], v, tl.float32)
    tl.store(out_ptr + offs, x / (1.0 + tl.exp(-x)))
`
	const block = 64
	comp := jit.NewCompiler(jit.CompilerOptions{Version: "test"})
	k, err := comp.Load(NewDevice(1), jit.Source{File: "silu_splat.py", Text: src, Fn: "silu_splat"},
		jit.Spec{Sig: map[string]string{"out_ptr": "*fp32", "v": "fp32"}, Consts: map[string]any{"BLOCK": int64(block)}})
	if err != nil {
		t.Fatal(err)
	}
	v := float32(0.75)
	out := f32Buf(t, make([]float32, block))
	if err := k.Launch(grid1(1), []jit.Arg{{Buf: out}, {Scalar: float64(v)}}); err != nil {
		t.Fatal(err)
	}
	e := make([]float32, 1)
	expF32([]float32{-v}, e)
	want := v / (1 + e[0])
	for i, got := range out.f32() {
		if !bitsEq(got, want) {
			t.Fatalf("out[%d] = %g, want %g (fused chains: %d)", i, got, want, k.(*Kernel).prog.silus)
		}
	}
}
