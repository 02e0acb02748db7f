package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

// The executor's fast paths (erf.go, the min/max vector loops, transposeF32) must agree bit for
// bit with the straightforward definitions.

func TestErf32MatchesMathErf(t *testing.T) {
	xs := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 10, -10, 6, 5.999999, 1e-30, -1e-30, 0x1p-61,
		float32(math.Inf(1)), float32(math.Inf(-1)), 0.84375, 1.25, 2.857, 3.9, 0.5 / 32}
	r := rand.New(rand.NewPCG(1, 2))
	for range 400000 {
		xs = append(xs, float32(r.NormFloat64()*2), math.Float32frombits(r.Uint32()))
	}
	// every grid point and its float32 neighbours
	for i := range erfGridMax*erfGridInv + 1 {
		g := float32(i) / erfGridInv
		xs = append(xs, g, math.Nextafter32(g, 0), math.Nextafter32(g, 10), g+0.5/erfGridInv)
	}
	vec := make([]float32, len(xs))
	done := erfF32Vec(xs, vec)
	if haveVecAVX2 && done < len(xs)-3 {
		t.Fatalf("erfF32Vec did %d of %d lanes with AVX2 present", done, len(xs))
	}
	for i, x := range xs {
		got, want := erf32(x), float32(math.Erf(float64(x)))
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("erf32(%g) = %g (%#x), want %g (%#x)", x, got, math.Float32bits(got), want, math.Float32bits(want))
		}
		if got := vec[i]; i < done && math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("erfF32Vec lane %d: erf(%g) = %g (%#x), want %g (%#x)", i, x, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
}

// maxNumRef is IEEE maxNum written from its definition (a NaN operand is ignored, +0 > -0).
func maxNumRef(a, b float32, isMax bool) float32 {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a == 0 && b == 0:
		if math.Signbit(float64(a)) == math.Signbit(float64(b)) {
			return a
		}
		if isMax {
			return 0
		}
		return float32(math.Copysign(0, -1))
	case (a > b) == isMax:
		return a
	}
	return b
}

func TestMinMaxVectorLoopsFollowMaxNum(t *testing.T) {
	nan := float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	inf := float32(math.Inf(1))
	specials := []float32{nan, 0, negZero, 1, -1, inf, -inf, 1e-45, -1e-45, 3.5}
	var a, b []float32
	for _, x := range specials {
		for _, y := range specials {
			a, b = append(a, x), append(b, y)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for len(a) < 1000 { // a length with a tail after the vector part
		a, b = append(a, float32(r.NormFloat64())), append(b, float32(r.NormFloat64()))
	}
	for _, isMax := range []bool{true, false} {
		z := make([]float32, len(a))
		op := byte('m')
		if isMax {
			op = 'M'
		}
		done := vecF32(op, a, b, z)
		if haveVecAVX2 && done == 0 {
			t.Fatalf("vecF32(%q) did no lanes with AVX2 present", op)
		}
		for i := range done {
			want := maxNumRef(a[i], b[i], isMax)
			if math.Float32bits(z[i]) != math.Float32bits(want) && !(z[i] != z[i] && want != want) {
				t.Fatalf("op %q lane %d: (%g, %g) -> %g, want %g", op, i, a[i], b[i], z[i], want)
			}
		}
	}
}

func TestTransposeF32AgainstLoops(t *testing.T) {
	for _, rc := range [][2]int{{1, 1}, {4, 4}, {5, 3}, {8, 8}, {128, 64}, {64, 128}, {7, 33}, {33, 7}, {17, 40}, {40, 17}, {9, 9}, {16, 8}} {
		rows, cols := rc[0], rc[1]
		src := make([]float32, rows*cols)
		for i := range src {
			src[i] = float32(i)
		}
		dst := make([]float32, rows*cols)
		transposeF32(dst, src, rows, cols)
		for i := range rows {
			for j := range cols {
				if dst[j*rows+i] != src[i*cols+j] {
					t.Fatalf("%dx%d: dst[%d][%d] = %g, want %g", rows, cols, j, i, dst[j*rows+i], src[i*cols+j])
				}
			}
		}
	}
}

const tileCopySrc = `import triton
import triton.language as tl


@triton.jit
def tile_copy(x_ptr, y_ptr, R, C, BR: tl.constexpr, BC: tl.constexpr):
    rr = tl.arange(0, BR)
    cc = tl.arange(0, BC)
    mask = (rr[:, None] < R) & (cc[None, :] < C)
    v = tl.load(x_ptr + rr[:, None] * C + cc[None, :], mask=mask, other=-1.0)
    tl.store(y_ptr + rr[:, None] * BC + cc[None, :], v)
`

// A masked 2-D load whose tile is one contiguous block takes one copy when every lane is
// live; partial masks and out-of-bounds blocks must behave as the row-by-row path does.
func TestWholeTileLoadAgainstLoops(t *testing.T) {
	const br, bc = 8, 16
	c := jit.NewCompiler(jit.CompilerOptions{Version: "test"})
	k, err := c.Load(NewDevice(1), jit.Source{File: "tile_copy.py", Text: tileCopySrc, Fn: "tile_copy"},
		jit.Spec{Sig: map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "R": "i32", "C": "i32"},
			Consts: map[string]any{"BR": int64(br), "BC": int64(bc)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ r, c, xlen int }{{br, bc, br * bc}, {br - 3, bc, br * bc}, {br, bc - 5, br * bc}, {br, bc, br*bc - 1}} {
		xs := make([]float32, tc.xlen)
		for i := range xs {
			xs[i] = float32(i) + 0.5
		}
		x, y := f32Buf(t, xs), f32Buf(t, make([]float32, br*bc))
		err := k.Launch(grid1(1), []jit.Arg{{Buf: x}, {Buf: y}, {Scalar: int64(tc.r)}, {Scalar: int64(tc.c)}})
		if tc.xlen < tc.r*tc.c {
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("element offset %d", tc.xlen)) {
				t.Fatalf("%+v: error %v, want an out-of-bounds load at element offset %d", tc, err, tc.xlen)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		got := y.f32()
		for i := range br {
			for j := range bc {
				want := float32(-1)
				if i < tc.r && j < tc.c {
					want = float32(i*tc.c+j) + 0.5
				}
				if got[i*bc+j] != want {
					t.Fatalf("%+v: y[%d][%d] = %g, want %g", tc, i, j, got[i*bc+j], want)
				}
			}
		}
	}
}

const aliasSrc = `import triton
import triton.language as tl


@triton.jit
def alias_k(x_ptr, y_ptr, BR: tl.constexpr, BC: tl.constexpr):
    rr = tl.arange(0, BR)
    cc = tl.arange(0, BC)
    offs = rr[:, None] * BC + cc[None, :]
    a = tl.load(x_ptr + offs)
    b = a * 2.0
    tl.store(x_ptr + offs, b)
    c = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, b * 0.0)
    d = c + 1.0
    tl.store(y_ptr + offs, d)
`

// A load may view buffer memory only while nothing can write it: here c is read after a
// store to the same memory, so it must hold the values from before that store.
func TestZeroCopyLoadsSeeNoLaterStores(t *testing.T) {
	const br, bc = 4, 32
	c := jit.NewCompiler(jit.CompilerOptions{Version: "test"})
	k, err := c.Load(NewDevice(1), jit.Source{File: "alias_k.py", Text: aliasSrc, Fn: "alias_k"},
		jit.Spec{Sig: map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32"}, Consts: map[string]any{"BR": int64(br), "BC": int64(bc)}})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 { // the second launch reuses the pooled frame
		xs := make([]float32, br*bc)
		for i := range xs {
			xs[i] = float32(i + round)
		}
		x, y := f32Buf(t, xs), f32Buf(t, make([]float32, br*bc))
		if err := k.Launch(grid1(1), []jit.Arg{{Buf: x}, {Buf: y}}); err != nil {
			t.Fatal(err)
		}
		for i := range xs {
			if got, want := y.f32()[i], 2*float32(i+round)+1; got != want {
				t.Fatalf("round %d: y[%d] = %g, want %g", round, i, got, want)
			}
			if x.f32()[i] != 0 {
				t.Fatalf("round %d: x[%d] = %g, want 0", round, i, x.f32()[i])
			}
		}
	}
}

const scaleShiftSrc = `import triton
import triton.language as tl


@triton.jit
def scale_shift(x_ptr, out_ptr, n, scale, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = x * scale + shift
    tl.store(out_ptr + offs, y, mask=mask)
`

// x*scale + shift runs as one fused loop, but must still round twice (no FMA):
// u*u - (1+2^-22) with u = 1+2^-23 is 0 after a rounded multiply, 2^-46 with an FMA.
func TestMulAddRoundsTwice(t *testing.T) {
	const block, n = 128, 300
	c := jit.NewCompiler(jit.CompilerOptions{Version: "test"})
	k, err := c.Load(NewDevice(2), jit.Source{File: "scale_shift.py", Text: scaleShiftSrc, Fn: "scale_shift"},
		jit.Spec{Sig: map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "scale": "fp32", "shift": "fp32"},
			Consts: map[string]any{"BLOCK": int64(block)}})
	if err != nil {
		t.Fatal(err)
	}
	u := float32(1 + math.Ldexp(1, -23))
	shift := -(1 + float32(math.Ldexp(1, -22)))
	xs := make([]float32, n)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range xs {
		xs[i] = u
		if i%3 == 1 {
			xs[i] = float32(r.NormFloat64())
		}
	}
	x, out := f32Buf(t, xs), f32Buf(t, make([]float32, n))
	if err := k.Launch(grid1((n+block-1)/block), []jit.Arg{{Buf: x}, {Buf: out}, {Scalar: int64(n)}, {Scalar: float64(u)}, {Scalar: float64(shift)}}); err != nil {
		t.Fatal(err)
	}
	for i, v := range xs {
		want := float32(v*u) + shift
		if got := out.f32()[i]; !bitsEq(got, want) {
			t.Fatalf("out[%d] = %g, want %g (x = %g)", i, got, want, v)
		}
		if v == u && out.f32()[i] != 0 {
			t.Fatalf("out[%d] = %g: fused into an FMA", i, out.f32()[i])
		}
	}
}

const accumulateSrc = `import triton
import triton.language as tl


@triton.jit
def column_sums(x_ptr, y_ptr, K, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in range(0, K):
        acc += tl.load(x_ptr + k * BLOCK + r)
    tl.store(y_ptr + r, acc)
`

// Constants are computed once per frame and kept: a tl.zeros accumulator must start from
// zero again in the next launch on the same (pooled) frame.
func TestConstantsSurviveRelaunch(t *testing.T) {
	const block, k = 64, 5
	c := jit.NewCompiler(jit.CompilerOptions{Version: "test"})
	kern, err := c.Load(NewDevice(1), jit.Source{File: "column_sums.py", Text: accumulateSrc, Fn: "column_sums"},
		jit.Spec{Sig: map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "K": "i32"}, Consts: map[string]any{"BLOCK": int64(block)}})
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]float32, block*k)
	for i := range xs {
		xs[i] = float32(i%7) - 2
	}
	for launch := range 3 {
		x, y := f32Buf(t, xs), f32Buf(t, make([]float32, block))
		if err := kern.Launch(grid1(2), []jit.Arg{{Buf: x}, {Buf: y}, {Scalar: int64(k)}}); err != nil {
			t.Fatal(err)
		}
		for j := range block {
			var want float32
			for p := range k {
				want += xs[p*block+j]
			}
			if got := y.f32()[j]; got != want {
				t.Fatalf("launch %d: y[%d] = %g, want %g", launch, j, got, want)
			}
		}
	}
}

const biasSrc = `import triton
import triton.language as tl


@triton.jit
def bias_ops(x_ptr, b_ptr, y_ptr, BR: tl.constexpr, BC: tl.constexpr):
    rr = tl.arange(0, BR)
    cc = tl.arange(0, BC)
    offs = rr[:, None] * BC + cc[None, :]
    x = tl.load(x_ptr + offs)
    b = tl.load(b_ptr + cc[None, :])
    y = tl.maximum(b - x, x * b) + b
    tl.store(y_ptr + offs, y)
    c = tl.load(x_ptr + offs) / b
    tl.store(x_ptr + offs, y)
    tl.store(y_ptr + BR * BC + offs, c)
    bcol = tl.load(b_ptr + rr[:, None])
    tl.store(y_ptr + 2 * BR * BC + offs, tl.minimum(x, bcol) - bcol * x)
    tl.store(y_ptr + 3 * BR * BC + offs, (bcol - x) + (x - bcol) * (x / bcol) + (bcol / x) + (x + bcol))
`

// Row and column broadcasts (a [1, N] or [M, 1] bias against [M, N] tiles) read in place,
// as either operand.
func TestRowBroadcastOperandsAgainstLoops(t *testing.T) {
	// column broadcasts over rows of 8..64 lanes: vecColumnRows (TestVecColumnRows checks
	// it at the odd sizes tl.arange cannot make)
	for _, shape := range [][2]int{{4, 64}, {8, 16}, {2, 8}, {16, 32}} {
		testRowBroadcast(t, shape[0], shape[1])
	}
}

// vecColumnRows (a column broadcast's add or multiply over whole short rows) against the
// scalar loop, bit for bit, at row lengths 8..120 and odd row counts, with a partial row
// after the whole ones that it must leave alone.
func TestVecColumnRows(t *testing.T) {
	if !haveVecAVX2 {
		t.Skip("no AVX2: vecColumnRows has no vector loop here")
	}
	r := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{8, 16, 24, 40, 56, 120} {
		for _, rows := range []int{1, 3, 7} {
			for _, op := range []byte{'+', '*'} {
				size := rows*n + 5
				x, col := make([]float32, size), make([]float32, rows+1)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				for i := range col {
					col[i] = float32(r.NormFloat64())
				}
				z := make([]float32, size)
				if got := vecColumnRows(op, x, col, z, n); got != rows {
					t.Fatalf("%c n=%d rows=%d: did %d rows", op, n, rows, got)
				}
				for i, v := range z {
					want := float32(0) // the partial row is the caller's
					if i < rows*n {
						want = x[i] + col[i/n]
						if op == '*' {
							want = x[i] * col[i/n]
						}
					}
					if !bitsEq(v, want) {
						t.Fatalf("%c n=%d rows=%d: z[%d] = %g, want %g", op, n, rows, i, v, want)
					}
				}
			}
		}
	}
	if got := vecColumnRows('+', make([]float32, 12*128), make([]float32, 12), make([]float32, 12*128), 128); got != 0 {
		t.Errorf("rows of 128 lanes (the 32-lane loops' case): did %d rows, want 0", got)
	}
}

func testRowBroadcast(t *testing.T, br, bc int) {
	c := jit.NewCompiler(jit.CompilerOptions{Version: "test"})
	k, err := c.Load(NewDevice(1), jit.Source{File: "bias_ops.py", Text: biasSrc, Fn: "bias_ops"},
		jit.Spec{Sig: map[string]string{"x_ptr": "*fp32", "b_ptr": "*fp32", "y_ptr": "*fp32"}, Consts: map[string]any{"BR": int64(br), "BC": int64(bc)}})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	xs, bs := make([]float32, br*bc), make([]float32, bc)
	for i := range xs {
		xs[i] = float32(r.NormFloat64())
	}
	for i := range bs {
		bs[i] = float32(r.NormFloat64()) + 3
	}
	x, b, y := f32Buf(t, append([]float32(nil), xs...)), f32Buf(t, bs), f32Buf(t, make([]float32, 4*br*bc))
	if err := k.Launch(grid1(1), []jit.Arg{{Buf: x}, {Buf: b}, {Buf: y}}); err != nil {
		t.Fatal(err)
	}
	for i := range br {
		for j := range bc {
			xv, bv := xs[i*bc+j], bs[j]
			want := max(bv-xv, float32(xv*bv)) + bv
			if got := y.f32()[i*bc+j]; !bitsEq(got, want) {
				t.Fatalf("y[%d][%d] = %g, want %g", i, j, got, want)
			}
			if got, want := y.f32()[br*bc+i*bc+j], xv/bv; !bitsEq(got, want) {
				t.Fatalf("c[%d][%d] = %g, want %g", i, j, got, want)
			}
			if got, want := y.f32()[2*br*bc+i*bc+j], min(xv, bs[i])-float32(bs[i]*xv); !bitsEq(got, want) {
				t.Fatalf("column broadcast [%d][%d] = %g, want %g", i, j, got, want)
			}
			bi := bs[i]
			t1, t2, t3, t4, t5 := bi-xv, xv-bi, xv/bi, bi/xv, xv+bi
			if got, want := y.f32()[3*br*bc+i*bc+j], ((t1+float32(t2*t3))+t4)+t5; !bitsEq(got, want) { // float32(): no FMA
				t.Fatalf("column broadcast arithmetic [%d][%d] = %g, want %g", i, j, got, want)
			}
		}
	}
}

// gemmF32 on every edge case of the micro-tiles (narrow, ragged, padded columns) against
// a float64 triple loop.
func TestGemmEdgesAgainstLoops(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var scratch []float32
	// Shapes cover the 32-wide tiles, the 16-wide strip (16- and 8-row blocks), the padded
	// edge after either, and the leftover rows (row-count kernels); under AVX-512 and AVX2 at most.
	shapes := [][3]int{{32, 16, 64}, {16, 16, 16}, {8, 1, 5}, {9, 40, 7}, {33, 70, 3}, {64, 32, 128}, {3, 3, 3}, {128, 32, 64},
		{64, 16, 64}, {24, 16, 9}, {8, 16, 1}, {40, 48, 17}, {25, 50, 6}, {16, 20, 11}, {7, 16, 4}}
	defer selectMicroKernel(true)
	for variant := range 2 {
		selectMicroKernel(variant == 0)
		for _, s := range shapes {
			m, n, k := s[0], s[1], s[2]
			lda, ldb, ldc := k+1, n+2, n+3 // leading dimensions wider than the rows
			a, b, c := make([]float32, m*lda), make([]float32, k*ldb), make([]float32, m*ldc)
			for _, x := range [][]float32{a, b, c} {
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
			}
			want := make([]float64, m*ldc)
			for i := range m {
				for j := range ldc {
					want[i*ldc+j] = float64(c[i*ldc+j])
					if j >= n {
						continue
					}
					for p := range k {
						want[i*ldc+j] += float64(a[i*lda+p]) * float64(b[p*ldb+j])
					}
				}
			}
			gemmF32(m, n, k, a, lda, b, ldb, c, ldc, &scratch)
			for i := range m {
				for j := range ldc {
					got, w := float64(c[i*ldc+j]), want[i*ldc+j]
					if math.Abs(got-w) > 1e-5*(1+math.Abs(w))*float64(k) {
						t.Fatalf("%s %dx%dx%d: c[%d][%d] = %g, want %g", dotKernelName(), m, n, k, i, j, got, w)
					}
				}
			}
		}
	}
}

// The element-wise loops (x op y, x op s, s op x) are plain IEEE arithmetic, so they agree bit
// for bit with Go's float32 operators, specials included (NaN compared as NaN).
func TestVectorLoopsAgainstGo(t *testing.T) {
	specials := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 3, 1e-40, -1e-40, 3e38,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	r := rand.New(rand.NewPCG(7, 8))
	const n = 100 // 3 vector blocks of 32 and a tail
	x, y := make([]float32, n), make([]float32, n)
	for i := range n {
		x[i], y[i] = specials[i%len(specials)], specials[(i/len(specials))%len(specials)]
		if i%3 == 2 {
			x[i], y[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
	}
	same := func(a, b float32) bool {
		return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
	}
	ops := map[byte]func(a, b float32) float32{
		'+': func(a, b float32) float32 { return a + b },
		'-': func(a, b float32) float32 { return a - b },
		'*': func(a, b float32) float32 { return a * b },
		'/': func(a, b float32) float32 { return a / b },
	}
	z := make([]float32, n)
	for op, f := range ops {
		done := vecF32(op, x, y, z) // the vector lanes; the tail is the caller's
		if haveVecAVX2 && done != n&^31 {
			t.Fatalf("x %c y: the vector loop did %d lanes", op, done)
		}
		for i := range done {
			if want := f(x[i], y[i]); !same(z[i], want) {
				t.Fatalf("lane %d: %v %c %v = %v, want %v", i, x[i], op, y[i], z[i], want)
			}
		}
	}
	scalarOps := []struct {
		op          ir.Op
		scalarFirst bool
		f           func(x, s float32) float32
	}{
		{ir.Add, false, func(x, s float32) float32 { return x + s }},
		{ir.Mul, false, func(x, s float32) float32 { return x * s }},
		{ir.Sub, false, func(x, s float32) float32 { return x - s }},
		{ir.Sub, true, func(x, s float32) float32 { return s - x }},
		{ir.Div, true, func(x, s float32) float32 { return s / x }},
		{ir.Div, false, func(x, s float32) float32 { return x / s }},
	}
	for _, so := range scalarOps {
		for _, s := range []float32{0, 1, -2.5, float32(math.Inf(1)), float32(math.NaN())} {
			arithScalarF32(so.op, so.scalarFirst, x, s, z)
			for i := range n {
				if want := so.f(x[i], s); !same(z[i], want) {
					t.Fatalf("%s (scalar first %v) lane %d: x=%v s=%v: %v, want %v", so.op, so.scalarFirst, i, x[i], s, z[i], want)
				}
			}
		}
	}
}

// The NaN-propagating loops (tl.maximum/minimum with propagate_nan=ALL) give maxProp's and
// minProp's bits on every lane, NaN payloads included: both operands as vectors, and with a
// scalar second operand (relu's tl.maximum(x, 0.0, ...)). The reference is written out here:
// a NaN operand wins (the second's when both are), else the second only when strictly
// beyond the first.
func TestPropagatingMinMaxVectorLoops(t *testing.T) {
	nan := float32(math.NaN())
	otherNaN := math.Float32frombits(0x7fc00123)
	negZero := float32(math.Copysign(0, -1))
	inf := float32(math.Inf(1))
	specials := []float32{nan, otherNaN, 0, negZero, 1, -1, inf, -inf, 1e-45, -1e-45, 3.5}
	var a, b []float32
	for _, x := range specials {
		for _, y := range specials {
			a, b = append(a, x), append(b, y)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for len(a) < 1003 {
		a, b = append(a, float32(r.NormFloat64())), append(b, float32(r.NormFloat64()))
	}
	ref := func(x, y float32, isMax bool) float32 {
		switch {
		case y != y:
			return y
		case x != x:
			return x
		case isMax && y > x, !isMax && y < x:
			return y
		}
		return x
	}
	same := func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }
	defer func(v bool) { haveVecAVX2 = v }(haveVecAVX2)
	for _, vec := range []bool{true, false} { // the AVX2 loops (where present), then Go's
		haveVecAVX2 = haveVecAVX2 && vec
		for _, isMax := range []bool{true, false} {
			op := ir.Min
			if isMax {
				op = ir.Max
			}
			z := make([]float32, len(a))
			minMaxPropagating(op)(a, b, z)
			for i := range z {
				if want := ref(a[i], b[i], isMax); !same(z[i], want) {
					t.Fatalf("%s lane %d: (%g, %g) -> %g (%#x), want %g (%#x)", op, i, a[i], b[i], z[i], math.Float32bits(z[i]), want, math.Float32bits(want))
				}
			}
			for _, s := range specials {
				for _, scalarFirst := range []bool{false, true} {
					minMaxPropScalarF32(op, scalarFirst, a, s, z)
					for i := range z {
						want := ref(a[i], s, isMax)
						if scalarFirst {
							want = ref(s, a[i], isMax)
						}
						if !same(z[i], want) {
							t.Fatalf("%s with scalar %g (first %v) lane %d: %g -> %g, want %g", op, s, scalarFirst, i, a[i], z[i], want)
						}
					}
				}
			}
		}
	}
}

// tl.where under an i1 row broadcast over the rows (conv_flat.py's padded store drops columns
// so) copies runs of lanes (rowMaskSelectStep): the values, NaN payloads and signed zeros
// included, match a lane-by-lane choice, for a computed mask row and a symbolic one, with
// runs that cover whole rows, none of them, or alternate.
func TestRowMaskSelectAgainstLanes(t *testing.T) {
	const br, bc = 4, 64
	sig := map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "P": "i32", "K": "i32"}
	x := make([]float32, br*bc)
	for i := range x {
		x[i] = float32(i) - 100
	}
	x[5] = math.Float32frombits(0x7fc00123)  // a NaN with a payload
	x[bc+17] = float32(math.Copysign(0, -1)) // -0
	x[2*bc+40] = float32(math.Inf(-1))
	for _, pk := range [][2]int{{18, 16}, {64, 64}, {64, 0}, {3, 1}, {7, 6}} {
		p, k := pk[0], pk[1]
		kern := loadKernel(t, filepath.Join("testdata", "rowmask.py"), "rowmask_kernel", sig, map[string]any{"BLOCK_R": int64(br), "BLOCK_C": int64(bc)})
		out := f32Buf(t, make([]float32, 2*br*bc))
		if err := kern.Launch(grid1(1), []jit.Arg{buf(f32Buf(t, x)), buf(out), scalar(int64(p)), scalar(int64(k))}); err != nil {
			t.Fatal(err)
		}
		got := out.f32()
		for r := range br {
			for c := range bc {
				i := r*bc + c
				want := float32(0)
				if c%p < k {
					want = x[i]
				}
				if math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Fatalf("P=%d K=%d: where(c %% P < K) at (%d, %d) = %v, want %v", p, k, r, c, got[i], want)
				}
				want = x[i]
				if c < k {
					want = -1
				}
				if math.Float32bits(got[br*bc+i]) != math.Float32bits(want) {
					t.Fatalf("P=%d K=%d: where(c < K) at (%d, %d) = %v, want %v", p, k, r, c, got[br*bc+i], want)
				}
			}
		}
	}
}

const rowMulAddSrc = `import triton
import triton.language as tl


@triton.jit
def taps(x_ptr, w_ptr, y_ptr, K, BR: tl.constexpr, BC: tl.constexpr):
    rr = tl.arange(0, BR)
    cc = tl.arange(0, BC)
    x_tile = x_ptr + rr[:, None] * BC + cc[None, :]
    acc = tl.zeros((BR, BC), dtype=tl.float32)
    for k in range(0, K):
        xv = tl.load(x_tile + k * BC)
        wv = tl.load(w_ptr + k * BC + cc)
        acc += xv * wv[None, :]
    tl.store(y_ptr + rr[:, None] * BC + cc[None, :], acc)
`

// acc += x * w[None, :] over shifted contiguous tiles (a depthwise convolution's taps) runs as
// one fused step per tap, rounding twice as the unfused multiply and add do: lane 0 of every
// row ends at round(u*u) - u*u = 0 with u = 1+2^-23 after a rounded multiply, -2^-46 with an
// FMA. Rows of 16 take the vector loop, rows of 4 the scalar one.
func TestRowMulAddRoundsTwice(t *testing.T) {
	const br, k = 8, 3
	u := float32(1 + math.Ldexp(1, -23))
	for _, bc := range []int{16, 4} {
		comp := jit.NewCompiler(jit.CompilerOptions{Version: "test"})
		kern, err := comp.Load(NewDevice(1), jit.Source{File: "taps.py", Text: rowMulAddSrc, Fn: "taps"},
			jit.Spec{Sig: map[string]string{"x_ptr": "*fp32", "w_ptr": "*fp32", "y_ptr": "*fp32", "K": "i32"},
				Consts: map[string]any{"BR": int64(br), "BC": int64(bc)}})
		if err != nil {
			t.Fatal(err)
		}
		if got := kern.(*Kernel).prog.rowMulAdds; got != 1 {
			t.Errorf("BC=%d: %d fused row multiply-adds, want 1", bc, got)
		}
		r := rand.New(rand.NewPCG(7, 8))
		xs, ws := make([]float32, (br+k)*bc), make([]float32, k*bc)
		for i := range xs {
			xs[i] = float32(r.NormFloat64())
		}
		for i := range ws {
			ws[i] = float32(r.NormFloat64())
		}
		// lane 0: u in every row; tap 0 adds u*u (1+2^-22 rounded), tap 1 adds -u*u, tap 2 0
		for row := range br + k {
			xs[row*bc] = u
		}
		ws[0], ws[bc], ws[2*bc] = u, -u, 0
		x, w, y := f32Buf(t, xs), f32Buf(t, ws), f32Buf(t, make([]float32, br*bc))
		if err := kern.Launch(grid1(1), []jit.Arg{{Buf: x}, {Buf: w}, {Buf: y}, {Scalar: int64(k)}}); err != nil {
			t.Fatal(err)
		}
		for i := range br {
			for j := range bc {
				want := float32(0)
				for tap := range k {
					want += float32(xs[(i+tap)*bc+j] * ws[tap*bc+j])
				}
				if got := y.f32()[i*bc+j]; !bitsEq(got, want) || j == 0 && got != 0 {
					t.Fatalf("BC=%d: y[%d][%d] = %g, want %g", bc, i, j, got, want)
				}
			}
		}
	}
}

const columnMulAddSrc = `import triton
import triton.language as tl


@triton.jit
def scale_shift_rows(x_ptr, s_ptr, t_ptr, y_ptr, R, C, BR: tl.constexpr, BC: tl.constexpr):
    rr = tl.arange(0, BR)
    cc = tl.arange(0, BC)
    m = (rr[:, None] < R) & (cc[None, :] < C)
    x = tl.load(x_ptr + rr[:, None] * C + cc[None, :], mask=m, other=0.0)
    s = tl.load(s_ptr + rr[:, None], mask=rr[:, None] < R, other=0.0)
    t = tl.load(t_ptr + rr[:, None], mask=rr[:, None] < R, other=0.0)
    {{EXPR}}
    tl.store(y_ptr + rr[:, None] * C + cc[None, :], y, mask=m)
`

// x * s[:, None] + t[:, None] (BatchNorm's per-channel scale and shift over a [channels,
// pixels] tile) runs as one fused step, rounding twice as the unfused multiply and add do:
// u*u - (1+2^-22) with u = 1+2^-23 is 0 after a rounded multiply, 2^-46 with an FMA. Rows of
// 37 take the vector loop and its tail, rows of 5 the scalar one; both operand orders fuse.
func TestColumnMulAddRoundsTwice(t *testing.T) {
	u := float32(1 + math.Ldexp(1, -23))
	shiftU := -(1 + float32(math.Ldexp(1, -22)))
	for _, expr := range []string{"y = x * s + t", "y = t + s * x"} {
		for _, sz := range []struct{ r, c, br, bc int }{{7, 37, 8, 64}, {3, 5, 4, 8}} {
			src := strings.Replace(columnMulAddSrc, "{{EXPR}}", expr, 1)
			comp := jit.NewCompiler(jit.CompilerOptions{Version: "test"})
			kern, err := comp.Load(NewDevice(1), jit.Source{File: "scale_shift_rows.py", Text: src, Fn: "scale_shift_rows"},
				jit.Spec{Sig: map[string]string{"x_ptr": "*fp32", "s_ptr": "*fp32", "t_ptr": "*fp32", "y_ptr": "*fp32", "R": "i32", "C": "i32"},
					Consts: map[string]any{"BR": int64(sz.br), "BC": int64(sz.bc)}})
			if err != nil {
				t.Fatal(err)
			}
			if got := kern.(*Kernel).prog.columnMulAdds; got != 1 {
				t.Errorf("%q %dx%d: %d fused column multiply-adds, want 1", expr, sz.r, sz.c, got)
			}
			r := rand.New(rand.NewPCG(9, 10))
			xs, ss, ts := make([]float32, sz.r*sz.c), make([]float32, sz.r), make([]float32, sz.r)
			for i := range xs {
				xs[i] = float32(r.NormFloat64())
			}
			for i := range ss {
				ss[i], ts[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			// row 1: u*u + shiftU in every lane
			ss[1], ts[1] = u, shiftU
			for j := range sz.c {
				xs[sz.c+j] = u
			}
			x, s, sh, y := f32Buf(t, xs), f32Buf(t, ss), f32Buf(t, ts), f32Buf(t, make([]float32, sz.r*sz.c))
			if err := kern.Launch(grid1(1), []jit.Arg{{Buf: x}, {Buf: s}, {Buf: sh}, {Buf: y}, {Scalar: int64(sz.r)}, {Scalar: int64(sz.c)}}); err != nil {
				t.Fatal(err)
			}
			for i := range sz.r {
				for j := range sz.c {
					want := float32(xs[i*sz.c+j]*ss[i]) + ts[i]
					if got := y.f32()[i*sz.c+j]; !bitsEq(got, want) || i == 1 && got != 0 {
						t.Fatalf("%q %dx%d: y[%d][%d] = %g, want %g", expr, sz.r, sz.c, i, j, got, want)
					}
				}
			}
		}
	}
}

const negSrc = `import triton
import triton.language as tl


@triton.jit
def neg(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, -x, mask=m)
`

// Negation (tl.sigmoid's exp(-x)) flips the sign bit of every lane, NaNs, zeros and
// infinities included, on the AVX2 loop (vecF32Scalar '^', 32 lanes a step) and its
// scalar tail, bit for bit Go's -x.
func TestNegFlipsSignBits(t *testing.T) {
	const block, n = 128, 77
	c := jit.NewCompiler(jit.CompilerOptions{Version: "test"})
	k, err := c.Load(NewDevice(1), jit.Source{File: "neg.py", Text: negSrc, Fn: "neg"},
		jit.Spec{Sig: map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "N": "i32"}, Consts: map[string]any{"BLOCK": int64(block)}})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(31, 32))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00001), math.Float32frombits(0xffc00123), math.Float32frombits(0x7f800001), 1e-45}
	xs := make([]float32, block)
	for i := range xs {
		xs[i] = float32(r.NormFloat64())
	}
	copy(xs[3:], specials)
	copy(xs[70:], specials[:7]) // the scalar tail (lanes 64..76)
	x, y := f32Buf(t, xs), f32Buf(t, make([]float32, block))
	if err := k.Launch(grid1(1), []jit.Arg{{Buf: x}, {Buf: y}, {Scalar: int64(n)}}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if got, want := y.f32()[i], -xs[i]; !bitsEq(got, want) {
			t.Fatalf("-x[%d]: %#x, want %#x (x %#x)", i, math.Float32bits(got), math.Float32bits(want), math.Float32bits(xs[i]))
		}
	}
	if !haveVecAVX2 {
		return
	}
	z := make([]float32, 64)
	if done := vecF32Scalar('^', xs[:64], float32(math.Copysign(0, -1)), z); done != 64 {
		t.Fatalf("vecF32Scalar '^' did %d of 64 lanes", done)
	}
	for i, v := range z {
		if !bitsEq(v, -xs[i]) {
			t.Fatalf("vecF32Scalar '^' lane %d: %#x, want %#x", i, math.Float32bits(v), math.Float32bits(-xs[i]))
		}
	}
}

const maskedCopySrc = e2eHeader + `@triton.jit
def masked_copy(x_ptr, y_ptr, R, C, XS, YS, BR: tl.constexpr, BC: tl.constexpr):
    rr = tl.arange(0, BR)
    cc = tl.arange(0, BC)
    mask = (rr[:, None] < R) & (cc[None, :] < C)
    v = tl.load(x_ptr + rr[:, None] * XS + cc[None, :], mask=mask, other=-1.0)
    tl.store(y_ptr + 1 + rr[:, None] * YS + cc[None, :], v, mask=mask)
`

// A copy kernel's load stored under its own mask (conv_pad.py's planes, its tile taller
// than the planes) is viewed in place, its live lanes alone: the masked rows and columns,
// which lie past the source buffer, are neither read nor stored, and a live lane past the
// buffer is still reported.
func TestLoadStoredUnderItsMask(t *testing.T) {
	const br, bc = 8, 16
	c := jit.NewCompiler(jit.CompilerOptions{Version: "test"})
	k, err := c.Load(NewDevice(1), jit.Source{File: "masked_copy.py", Text: maskedCopySrc, Fn: "masked_copy"},
		jit.Spec{Sig: map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "R": "i32", "C": "i32", "XS": "i32", "YS": "i32"},
			Consts: map[string]any{"BR": int64(br), "BC": int64(bc)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ r, c, xs, ys, xlen int }{
		{br, bc, bc, bc + 2, br * bc},  // every lane
		{3, bc, 20, bc + 2, 2*20 + bc}, // rows past R lie past x
		{br, 5, 7, 9, 7*(br-1) + 5},    // columns past C overlap the next row
		{4, 10, 12, 12, 3*12 + 10},     // both
		{4, 10, 12, 12, 3*12 + 9},      // the last live lane out of bounds
		{1, 3, 3, 3, 3},                // one row
	} {
		xs := make([]float32, tc.xlen)
		for i := range xs {
			xs[i] = float32(i) + 0.5
		}
		ylen := 1 + (br-1)*tc.ys + bc
		y := f32Buf(t, make([]float32, ylen))
		for i := range y.f32() {
			y.f32()[i] = -7
		}
		err := k.Launch(grid1(1), []jit.Arg{{Buf: f32Buf(t, xs)}, {Buf: y}, {Scalar: int64(tc.r)}, {Scalar: int64(tc.c)}, {Scalar: int64(tc.xs)}, {Scalar: int64(tc.ys)}})
		if need := (tc.r-1)*tc.xs + tc.c; tc.xlen < need {
			if err == nil || !strings.Contains(err.Error(), "out of bounds") {
				t.Fatalf("%+v: error %v, want an out-of-bounds load", tc, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		want := make([]float32, ylen)
		for i := range want {
			want[i] = -7
		}
		for i := range tc.r {
			for j := range tc.c {
				want[1+i*tc.ys+j] = float32(i*tc.xs+j) + 0.5
			}
		}
		for i, g := range y.f32() {
			if g != want[i] {
				t.Fatalf("%+v: y[%d] = %g, want %g", tc, i, g, want[i])
			}
		}
	}
}
