package cpu

import (
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

// paddedKLoop is the K loop of the padded-dot kernels: masked, zero-padded edge tiles of A
// and of B read as rows of B^T (as a Linear's weight), accumulated into acc.
const paddedKLoop = `    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        bt = tl.load(b_ptr + rn[:, None] * K + ks[None, :], mask=(rn[:, None] < N) & (ks[None, :] < K), other=0.0)
        acc += tl.dot(a, tl.trans(bt))
`

// paddedDotKernel multiplies masked, zero-padded edge tiles (B read as rows of B^T, as a
// Linear's weight) and stores the whole accumulator, padded rows and columns included, so
// the test sees exactly what tl.dot produced everywhere.
const paddedDotKernel = `import triton
import triton.language as tl


@triton.jit
def padded_dot(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
` + paddedKLoop + `    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)
`

// TestDotOnLiveExtentsMatchesPaddedReference checks tl.dot on edge tiles against the padded
// product computed in float64 (0*inf = NaN included): odd sizes in every dimension, K
// panels with one live column, and an infinity in a live element, which must spread NaN into
// the padded rows exactly as the kernel is written.
func TestDotOnLiveExtentsMatchesPaddedReference(t *testing.T) {
	const bm, bn, bk = 32, 64, 32
	kn := compileKernel(t, "padded_dot.py", paddedDotKernel, "padded_dot",
		map[string]string{"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"},
		map[string]any{"BM": int64(bm), "BN": int64(bn), "BK": int64(bk)})
	rng := rand.New(rand.NewSource(3))
	for _, tc := range []struct {
		m, n, k int
		inf     bool
	}{{32, 64, 64, false}, {3, 5, 33, false}, {17, 33, 65, false}, {31, 63, 1, false}, {9, 40, 40, true}, {32, 7, 33, true}} {
		t.Run(fmt.Sprintf("m%d_n%d_k%d_inf%v", tc.m, tc.n, tc.k, tc.inf), func(t *testing.T) {
			a, b := randF32(rng, tc.m*tc.k, 1), randF32(rng, tc.n*tc.k, 1)
			if tc.inf {
				b[(tc.n/2)*tc.k+tc.k-1] = float32(math.Inf(1)) // B^T row n/2, last live k
			}
			out := f32Buf(t, make([]float32, bm*bn))
			if err := kn.Launch(grid1(1), []jit.Arg{buf(f32Buf(t, a)), buf(f32Buf(t, b)), buf(out),
				scalar(int64(tc.m)), scalar(int64(tc.n)), scalar(int64(tc.k))}); err != nil {
				t.Fatal(err)
			}
			got := out.f32()
			kp := (tc.k + bk - 1) / bk * bk
			for i := range bm {
				for j := range bn {
					want := 0.0
					for p := range kp {
						var av, bv float64
						if i < tc.m && p < tc.k {
							av = float64(a[i*tc.k+p])
						}
						if j < tc.n && p < tc.k {
							bv = float64(b[j*tc.k+p])
						}
						want += av * bv
					}
					g := float64(got[i*bn+j])
					if !closeOrSameSpecial(g, want) {
						t.Fatalf("c[%d,%d] = %v, want %v", i, j, g, want)
					}
				}
			}
		})
	}
}

// closeOrSameSpecial reports whether got is want within a relative 1e-5 (the fp32 dot's
// rounding against float64), or the same infinity, or both NaN.
func closeOrSameSpecial(got, want float64) bool {
	if math.IsNaN(want) || math.IsInf(want, 0) {
		return math.IsNaN(got) && math.IsNaN(want) || got == want
	}
	return math.Abs(got-want) <= 1e-5*(1+math.Abs(want))
}

func TestAllFiniteFindsEveryNonFiniteLane(t *testing.T) {
	x := make([]float32, 3*40)
	if !allFinite(x, 3, 37, 40) {
		t.Fatal("zeros reported non-finite")
	}
	for _, bad := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
		for i := range 37 {
			x[40+i] = bad
			if allFinite(x, 3, 37, 40) {
				t.Fatalf("%v at column %d not found", bad, i)
			}
			x[40+i] = math.MaxFloat32
		}
		x[40+38] = bad // outside the block
		if !allFinite(x, 3, 37, 40) {
			t.Fatalf("%v outside the block reported", bad)
		}
		x[40+38] = 0
	}
}

// TestDotReadsStridedViewsInPlace runs a dot over unmasked, fully live tiles whose rows are
// apart in the buffers (K longer than BLOCK_K): both operands are read in place, one of them
// through tl.trans, and must match the float64 product.
func TestDotReadsStridedViewsInPlace(t *testing.T) {
	const src = `import triton
import triton.language as tl


@triton.jit
def dense_dot(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + ks[None, :])
        bt = tl.load(b_ptr + rn[:, None] * K + ks[None, :])
        acc += tl.dot(a, tl.trans(bt))
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)
`
	const bm, bn, bk, k = 16, 32, 16, 80
	kn := compileKernel(t, "dense_dot.py", src, "dense_dot",
		map[string]string{"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "K": "i32"},
		map[string]any{"BM": int64(bm), "BN": int64(bn), "BK": int64(bk)})
	rng := rand.New(rand.NewSource(5))
	a, b := randF32(rng, bm*k, 1), randF32(rng, bn*k, 1)
	out := f32Buf(t, make([]float32, bm*bn))
	if err := kn.Launch(grid1(1), []jit.Arg{buf(f32Buf(t, a)), buf(f32Buf(t, b)), buf(out), scalar(int64(k))}); err != nil {
		t.Fatal(err)
	}
	for i := range bm {
		for j := range bn {
			want := 0.0
			for p := range k {
				want += float64(a[i*k+p]) * float64(b[j*k+p])
			}
			if g := float64(out.f32()[i*bn+j]); math.Abs(g-want) > 1e-5*(1+math.Abs(want)) {
				t.Fatalf("c[%d,%d] = %v, want %v", i, j, g, want)
			}
		}
	}
}

// TestDotFoldsIntoItsAdd: s = tl.dot(q, tl.trans(k)) + row, with row a 1-D tile broadcast
// over the rows (a float key-padding mask), and a loop-carried acc += tl.dot: both run as a
// dot accumulating into the Add's other operand and must match float64.
func TestDotFoldsIntoItsAdd(t *testing.T) {
	const src = `import triton
import triton.language as tl


@triton.jit
def k(q_ptr, k_ptr, r_ptr, o_ptr, L, S, DH, BL: tl.constexpr, BS: tl.constexpr, BD: tl.constexpr):
    rl = tl.arange(0, BL)
    rs = tl.arange(0, BS)
    rd = tl.arange(0, BD)
    q = tl.load(q_ptr + rl[:, None] * DH + rd[None, :], mask=(rl[:, None] < L) & (rd[None, :] < DH), other=0.0)
    tot = tl.zeros((BL, BS), dtype=tl.float32)
    for it in range(0, 2):
        kk = tl.load(k_ptr + rs[:, None] * DH + rd[None, :], mask=(rs[:, None] < S) & (rd[None, :] < DH), other=0.0)
        row = tl.load(r_ptr + rs, mask=rs < S, other=0.0)
        s = tl.dot(q, tl.trans(kk)) + row[None, :]
        tot += tl.dot(s, tl.trans(tl.trans(s)) * 0.0 + 1.0)
        tot += s
    tl.store(o_ptr + rl[:, None] * BS + rs[None, :], tot)
`
	const bl, bs, bd = 16, 16, 16
	kn := compileKernel(t, "k.py", src, "k",
		map[string]string{"q_ptr": "*fp32", "k_ptr": "*fp32", "r_ptr": "*fp32", "o_ptr": "*fp32", "L": "i32", "S": "i32", "DH": "i32"},
		map[string]any{"BL": int64(bl), "BS": int64(bs), "BD": int64(bd)})
	L, S, DH := 5, 7, 6
	rng := rand.New(rand.NewSource(1))
	q, kv, row := randF32(rng, L*DH, 1), randF32(rng, S*DH, 1), randF32(rng, S, 1)
	out := f32Buf(t, make([]float32, bl*bs))
	if err := kn.Launch(grid1(1), []jit.Arg{buf(f32Buf(t, q)), buf(f32Buf(t, kv)), buf(f32Buf(t, row)), buf(out),
		scalar(int64(L)), scalar(int64(S)), scalar(int64(DH))}); err != nil {
		t.Fatal(err)
	}
	for i := range bl {
		s := make([]float64, bs)
		sum := 0.0
		for j := range bs {
			if j < S {
				s[j] = float64(row[j])
			}
			for d := 0; d < DH && i < L && j < S; d++ {
				s[j] += float64(q[i*DH+d]) * float64(kv[j*DH+d])
			}
			sum += s[j]
		}
		for j := range bs {
			want := 2 * (sum + s[j]) // two iterations of tot += s @ ones + s
			if g := float64(out.f32()[i*bs+j]); math.Abs(g-want) > 1e-4*(1+math.Abs(want)) {
				t.Fatalf("o[%d,%d] = %v, want %v", i, j, g, want)
			}
		}
	}
}

// maxRow/minRow (plain comparisons) must equal the maxnum/minnum fold on every row,
// NaNs, infinities and signed zeros included, on short rows (scalar chains) and long ones
// (the SIMD rows, with their tails), some all NaN or with few specials.
func TestRowMaxMinMatchMaxnum(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1, -1}
	for trial := range 20000 {
		n := 1 + rng.Intn(19)
		if trial%2 == 1 {
			n = 1 + rng.Intn(150)
		}
		odds := []int{3, 50, 1}[trial%3]
		x := make([]float32, n)
		for i := range x {
			if trial%7 == 0 {
				x[i] = specials[0] // all NaN
			} else if rng.Intn(odds) == 0 {
				x[i] = specials[rng.Intn(len(specials))]
			} else {
				x[i] = float32(rng.NormFloat64())
			}
		}
		for _, k := range []struct {
			kind int
			op   func(a, b float32) float32
		}{{ir.ReduceMax, maxNum32}, {ir.ReduceMin, minNum32}} {
			want := foldRow(x, k.op)
			got := reduceRowF32(k.kind, x)
			if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Fatalf("trial %d kind %d %v: %v, want %v", trial, k.kind, x, got, want)
			}
		}
	}
}

// A reduction along a dim with dims after it (reduceColsF32, row by row) is reduceFloat's
// per-element fold bit for bit: sums, maxnum and minnum, with signed zeros, NaNs and columns
// past one accumulator chunk.
func TestColumnReduceMatchesFold(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	for trial := range 300 {
		g := reduceGeometry{outer: 1 + rng.Intn(3), n: 1 + rng.Intn(40), inner: 1 + rng.Intn(150)}
		x := make([]float32, g.outer*g.n*g.inner)
		for i := range x {
			if rng.Intn(8) == 0 {
				x[i] = special[rng.Intn(len(special))]
			} else {
				x[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.Intn(20)-10)))
			}
		}
		for _, kind := range []int{ir.ReduceSum, ir.ReduceMax, ir.ReduceMin} {
			got := make([]float32, g.outer*g.inner)
			reduceColsF32(kind, x, got, g)
			g.each(func(o, base, stride int) {
				want := float32(reduceFloat(kind, g.n, func(j int) float64 { return float64(x[base+j*stride]) }))
				if math.Float32bits(got[o]) != math.Float32bits(want) && !(got[o] != got[o] && want != want) {
					t.Fatalf("trial %d kind %d %+v: out[%d] = %v, want %v", trial, kind, g, o, got[o], want)
				}
			})
		}
	}
}

// A row sum (float64 accumulation, SIMD on long rows) is the exact sum rounded to fp32, or
// within one fp32 ulp of it (float64 roundings can cross a fp32 rounding midpoint).
func TestRowSumIsNearlyExact(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	for trial := range 5000 {
		x := make([]float32, 1+rng.Intn(300))
		exact := new(big.Float).SetPrec(2000)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.Intn(20)-10)))
			exact.Add(exact, new(big.Float).SetFloat64(float64(x[i])))
		}
		want, _ := exact.Float32()
		got := reduceRowF32(ir.ReduceSum, x)
		if d := math.Float32bits(got) - math.Float32bits(want); d != 0 && d != 1 && d != math.MaxUint32 {
			t.Fatalf("trial %d (n=%d): sum %v, exact %v", trial, len(x), got, want)
		}
	}
}

// A launch records its programs' average time, and a launch whose recorded time is small
// runs on the caller's goroutine (worker 0's frame alone) with the same results. The
// recorded time is set small before each launch: what a vector add measures depends on the
// machine's load (speed is the benchmarks' business, not a test's).
func TestSmallLaunchesRunSerially(t *testing.T) {
	k := loadKernel(t, filepath.Join(tutorialKernels, "vector_add.py"), "add_kernel",
		map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}, map[string]any{"BLOCK_SIZE": int64(64)})
	rng := rand.New(rand.NewSource(4))
	x, y := randF32(rng, 300, 1), randF32(rng, 300, 1)
	for run := range 20 {
		k.programNs.Store(1)
		o := f32Buf(t, make([]float32, 320))
		if err := k.Launch(grid1(5), []jit.Arg{buf(f32Buf(t, x)), buf(f32Buf(t, y)), buf(o), scalar(int64(300))}); err != nil {
			t.Fatal(err)
		}
		if k.programNs.Load() <= 1 {
			t.Fatalf("run %d: no program time recorded", run)
		}
		for i := range 300 {
			if o.f32()[i] != x[i]+y[i] {
				t.Fatalf("run %d: out[%d] = %v, want %v", run, i, o.f32()[i], x[i]+y[i])
			}
		}
	}
	for w := 1; w < len(k.homes); w++ {
		if k.homes[w].Load() != nil {
			t.Errorf("worker %d ran programs of launches recorded as small", w)
		}
	}
}

// maskedDotKernel is padded_dot with a matmul's epilogue, max(acc*s + 1 + bias, 0), stored
// through the output mask, computed before the loop (as templates/matmul.py does).
const maskedDotKernel = `import triton
import triton.language as tl


@triton.jit
def masked_dot(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, s, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
` + paddedKLoop + `    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0)
    y = tl.maximum(acc * s + 1.0 + bias[None, :], 0.0)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], y, mask=cmask)
`

// nestedMaskedDotKernel is maskedDotKernel with its K loop nested in an outer one (as
// conv_flat.py nests channel blocks in taps): the outer loop carries the accumulator out.
var nestedMaskedDotKernel = strings.Replace(maskedDotKernel, paddedKLoop, `    for k1 in range(0, K, 2 * BK):
        for k0 in range(k1, min(k1 + 2 * BK, K), BK):
            ks = k0 + rk
            a = tl.load(a_ptr + rm[:, None] * K + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
            bt = tl.load(b_ptr + rn[:, None] * K + ks[None, :], mask=(rn[:, None] < N) & (ks[None, :] < K), other=0.0)
            acc += tl.dot(a, tl.trans(bt))
`, 1)

// TestDotSkipsChecksWhereNoOneLooks: when the accumulator is stored only through the output
// mask (its K loop nested in another or not), tl.dot drops the products of edge tiles' zero rows and columns without scanning the
// operands for infinities (they could only reach unstored elements) and the epilogue
// computes only the mask's rectangle, yet the stored values are the padded product's,
// infinities and NaNs included, and nothing outside the mask is written. padded_dot, which
// stores everything, still scans.
func TestDotSkipsChecksWhereNoOneLooks(t *testing.T) {
	const bm, bn, bk = 32, 64, 32
	sig := map[string]string{"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"}
	consts := map[string]any{"BM": int64(bm), "BN": int64(bn), "BK": int64(bk)}
	padded := compileKernel(t, "padded_dot.py", paddedDotKernel, "padded_dot", sig, consts)
	rng := rand.New(rand.NewSource(5))
	for _, nested := range []bool{false, true} {
		src := maskedDotKernel
		if nested {
			src = nestedMaskedDotKernel
		}
		masked := compileKernel(t, "masked_dot.py", src, "masked_dot", map[string]string{
			"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "bias_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32", "s": "fp32"}, consts)
		for _, tc := range []struct {
			m, n, k    int
			infA, infB bool
		}{{9, 40, 64, true, false}, {32, 7, 32, false, true}, {17, 33, 64, true, true}, {17, 33, 40, true, true}} {
			t.Run(fmt.Sprintf("nested=%v/m%d_n%d_k%d", nested, tc.m, tc.n, tc.k), func(t *testing.T) {
				a, b := randF32(rng, tc.m*tc.k, 1), randF32(rng, tc.n*tc.k, 1)
				if tc.infA {
					a[(tc.m/2)*tc.k] = float32(math.Inf(-1))
				}
				if tc.infB {
					b[(tc.n-1)*tc.k+tc.k/2] = float32(math.NaN())
				}
				const sentinel = 12345
				c := make([]float32, bm*bn)
				for i := range c {
					c[i] = sentinel
				}
				out := f32Buf(t, c)
				bias := randF32(rng, tc.n, 1)
				before := finiteChecks.Load()
				if err := masked.Launch(grid1(1), []jit.Arg{buf(f32Buf(t, a)), buf(f32Buf(t, b)), buf(out), buf(f32Buf(t, bias)),
					scalar(int64(tc.m)), scalar(int64(tc.n)), scalar(int64(tc.k)), scalar(2.0)}); err != nil {
					t.Fatal(err)
				}
				if checks := finiteChecks.Load() - before; checks != 0 {
					t.Errorf("masked_dot scanned operands %d times, want none", checks)
				}
				got := out.f32()
				for i := range bm {
					for j := range bn {
						g := float64(got[i*bn+j])
						if i >= tc.m || j >= tc.n {
							if g != sentinel {
								t.Fatalf("c[%d,%d] = %v outside the mask, want it untouched", i, j, g)
							}
							continue
						}
						dot := 0.0
						for p := range tc.k {
							dot += float64(a[i*tc.k+p]) * float64(b[j*tc.k+p])
						}
						want := float64(float32(float32(float32(dot)*2)+1) + bias[j])
						if math.IsNaN(want) || want < 0 { // tl.maximum ignores a NaN operand
							want = 0
						}
						if !closeOrSameSpecial(g, want) {
							t.Fatalf("c[%d,%d] = %v, want %v", i, j, g, want)
						}
					}
				}
				before = finiteChecks.Load()
				if err := padded.Launch(grid1(1), []jit.Arg{buf(f32Buf(t, a)), buf(f32Buf(t, b)), buf(f32Buf(t, make([]float32, bm*bn))),
					scalar(int64(tc.m)), scalar(int64(tc.n)), scalar(int64(tc.k))}); err != nil {
					t.Fatal(err)
				}
				if finiteChecks.Load() == before {
					t.Error("padded_dot, which stores the padded rows and columns, did not scan its operands")
				}
			})
		}
	}
}

// rowStoreDotKernel stores padded_dot's accumulator (times 2) a column band of 8 at a time,
// in a loop after the dot's, as conv_flat.py stores an output row at a time: each band's mask
// is built inside that loop. With MASK_BEFORE it is cmask (computed before the dot's loop)
// and'ed with the band, else the bounds and the band alone.
const rowStoreDotKernel = `import triton
import triton.language as tl


@triton.jit
def row_dot(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, MASK_BEFORE: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
` + paddedKLoop + `    y = acc * 2.0
    for j0 in range(0, N, 8):
        if MASK_BEFORE:
            tl.store(c_ptr + rm[:, None] * BN + rn[None, :], y, mask=cmask & (rn[None, :] >= j0) & (rn[None, :] < j0 + 8))
        else:
            tl.store(c_ptr + rm[:, None] * BN + rn[None, :], y, mask=(rm[:, None] < M) & (rn[None, :] >= j0) & (rn[None, :] < min(j0 + 8, N)))
`

// TestDotSkipsChecksThroughRowStores: stores in a loop of their own whose masks are the
// output mask (computed before the dot's loop) and'ed with a band bound what is seen of the
// accumulator as the output mask alone does (observed.go's maskFactorBefore): tl.dot drops
// the edge tiles' zero rows and columns without scanning the operands, and the stored values
// are the padded product's, infinities and NaNs included, nothing outside the mask written.
// The same stores with masks built from scratch in their loop still scan.
func TestDotSkipsChecksThroughRowStores(t *testing.T) {
	checkRowDotScans(t, "row_dot.py", rowStoreDotKernel, 6, []rowDotCase{{9, 40, 64, true, false}, {32, 7, 32, false, true}, {17, 33, 40, true, true}})
}

// rowDotCase is a row_dot problem: A [m, k], B^T [n, k], an infinity in A and a NaN in B or not.
type rowDotCase struct {
	m, n, k    int
	infA, infB bool
}

// checkRowDotScans compiles the row_dot kernel src with MASK_BEFORE on and off and runs both
// on each case (launchRowDot's checks): the dot scans its operands only with the mask built
// in the store loop.
func checkRowDotScans(t *testing.T, file, src string, seed int64, cases []rowDotCase) {
	const bm, bn, bk = 32, 64, 32
	sig := map[string]string{"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"}
	kernels := map[bool]*Kernel{}
	for _, before := range []bool{true, false} {
		kernels[before] = compileKernel(t, file, src, "row_dot", sig,
			map[string]any{"BM": int64(bm), "BN": int64(bn), "BK": int64(bk), "MASK_BEFORE": before})
	}
	rng := rand.New(rand.NewSource(seed))
	for _, tc := range cases {
		t.Run(fmt.Sprintf("m%d_n%d_k%d", tc.m, tc.n, tc.k), func(t *testing.T) {
			a, b := randF32(rng, tc.m*tc.k, 1), randF32(rng, tc.n*tc.k, 1)
			if tc.infA {
				a[(tc.m/2)*tc.k] = float32(math.Inf(-1))
			}
			if tc.infB {
				b[(tc.n-1)*tc.k+tc.k/2] = float32(math.NaN())
			}
			for _, before := range []bool{true, false} {
				if scanned := launchRowDot(t, kernels[before], a, b, tc.m, tc.n, tc.k, 0); scanned != 0 == before {
					t.Errorf("mask built before the dot's loop %v: the dot scanned its operands %d times", before, scanned)
				}
			}
		})
	}
}

// transStoreDotKernel is rowStoreDotKernel storing the accumulator transposed, as
// conv_flat.py stores a pointwise convolution's [channels, pixels] tile into the next
// depthwise convolution's channel blocks as [pixels, channels] rows: element (j, i) of the
// transposed tile goes where row_dot stores (i, j), a band of 8 of its rows at a time. With
// MASK_BEFORE each band's mask is the transposed output mask (computed before the dot's loop)
// and'ed with the band and the rows' bounds (six conditions), else the bounds and the band.
var transStoreDotKernel = strings.NewReplacer(
	"    cmask = (rm[:, None] < M) & (rn[None, :] < N)\n", "    cmask_t = (rn[:, None] < N) & (rm[None, :] < M)\n",
	rowStoreDotKernel[strings.Index(rowStoreDotKernel, "    y = acc * 2.0"):], `    yt = tl.trans(acc * 1.0) * 2.0
    for j0 in range(0, N, 8):
        if MASK_BEFORE:
            tl.store(c_ptr + rn[:, None] + rm[None, :] * BN, yt,
                     mask=cmask_t & (rn[:, None] >= j0) & (rn[:, None] < j0 + 8) & (rm[None, :] >= 0) & (rm[None, :] < BM))
        else:
            tl.store(c_ptr + rn[:, None] + rm[None, :] * BN, yt, mask=(rm[None, :] < M) & (rn[:, None] >= j0) & (rn[:, None] < min(j0 + 8, N)))
`).Replace(rowStoreDotKernel)

// TestDotSkipsChecksThroughTransposedStores: an accumulator stored only transposed, through
// masks that and a transposed output mask computed before the dot's loop, is observed as the
// output mask bounds it (observed.go follows tl.trans and swaps the mask's rectangle): tl.dot
// skips the operands' infinity scan and the epilogue on both sides of the transpose covers
// the rectangle, yet the stored values are the padded product's, infinities and NaNs
// included, and nothing outside the mask is written. Masks built in the store loop still scan.
func TestDotSkipsChecksThroughTransposedStores(t *testing.T) {
	checkRowDotScans(t, "trans_dot.py", transStoreDotKernel, 9,
		[]rowDotCase{{9, 40, 64, true, false}, {32, 7, 32, false, true}, {17, 33, 40, true, true}, {5, 64, 40, true, true}})
}

// launchRowDot runs a row_dot kernel (rowStoreDotKernel, BM = 32, BN = 64, its accumulator
// starting from init) on one program over A [m, kk] and B^T [n, kk], checks that it stored
// (init + A B^T) * 2 inside the mask, infinities and NaNs included, and nothing outside it,
// and returns how many times its dot scanned the operands for infinities.
func launchRowDot(t *testing.T, k *Kernel, a, b []float32, m, n, kk int, init float64) int64 {
	t.Helper()
	const bm, bn, sentinel = 32, 64, 12345
	c := make([]float32, bm*bn)
	for i := range c {
		c[i] = sentinel
	}
	out := f32Buf(t, c)
	checks := finiteChecks.Load()
	if err := k.Launch(grid1(1), []jit.Arg{buf(f32Buf(t, a)), buf(f32Buf(t, b)), buf(out),
		scalar(int64(m)), scalar(int64(n)), scalar(int64(kk))}); err != nil {
		t.Fatal(err)
	}
	scanned := finiteChecks.Load() - checks
	got := out.f32()
	for i := range bm {
		for j := range bn {
			g := float64(got[i*bn+j])
			if i >= m || j >= n {
				if g != sentinel {
					t.Fatalf("c[%d,%d] = %v outside the mask, want it untouched", i, j, g)
				}
				continue
			}
			dot := init
			for p := range kk {
				dot += float64(a[i*kk+p]) * float64(b[j*kk+p])
			}
			if want := float64(float32(dot) * 2); !closeOrSameSpecial(g, want) {
				t.Fatalf("c[%d,%d] = %v, want %v", i, j, g, want)
			}
		}
	}
	return scanned
}

// TestObservedAccumulatorStartsFromItsConstant: an accumulator seen only through the store
// masks starts from its constant (tl.full, 0.75) on their rectangle, filled rather than
// copied (compileFor's initSpans): the stored values are 0.75 + the padded product, times 2,
// nothing outside the mask written, and the dot does not scan its operands.
func TestObservedAccumulatorStartsFromItsConstant(t *testing.T) {
	const bm, bn, bk = 32, 64, 32
	src := strings.Replace(rowStoreDotKernel, "acc = tl.zeros((BM, BN), dtype=tl.float32)", "acc = tl.full((BM, BN), 0.75, tl.float32)", 1)
	if src == rowStoreDotKernel {
		t.Fatal("rowStoreDotKernel no longer starts from tl.zeros")
	}
	k := compileKernel(t, "row_dot_full.py", src, "row_dot", map[string]string{"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"},
		map[string]any{"BM": int64(bm), "BN": int64(bn), "BK": int64(bk), "MASK_BEFORE": true})
	rng := rand.New(rand.NewSource(7))
	for _, tc := range []struct{ m, n, k int }{{9, 40, 64}, {32, 64, 32}, {17, 33, 40}} {
		a, b := randF32(rng, tc.m*tc.k, 1), randF32(rng, tc.n*tc.k, 1)
		if scanned := launchRowDot(t, k, a, b, tc.m, tc.n, tc.k, 0.75); scanned != 0 {
			t.Errorf("%+v: the dot scanned its operands %d times, want none (the accumulator is observed)", tc, scanned)
		}
	}
}

// scaledDotKernel is lowering's conv_flat.py ScaleInput in small: the zero-padded B tile
// (K rows, N columns masked) scaled per row by a vector read in place, then multiplied. The
// whole accumulator is stored, so every padded column is seen.
const scaledDotKernel = `import triton
import triton.language as tl


@triton.jit
def scaled_dot(a_ptr, b_ptr, s_ptr, c_ptr, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + ks[None, :], mask=ks[None, :] < K, other=0.0)
        b = tl.load(b_ptr + ks[:, None] * N + rn[None, :], mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        b = b * tl.load(s_ptr + ks, mask=ks < K, other=0.0)[:, None]
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)
`

// TestScaledOperandKeepsLiveExtent checks a dot whose B operand is a zero-padded tile
// scaled per row (scaledRows) against the padded product in float64, at odd sizes and with
// every micro-kernel set: with a finite scale the product keeps B's live columns, so the
// dot drops the padded ones (after its finiteness check, which the test counts); an
// infinite scale makes the padded lanes 0 * inf = NaN, which must reach the stored
// accumulator as the kernel is written.
func TestScaledOperandKeepsLiveExtent(t *testing.T) {
	const bm, bn, bk = 16, 64, 32
	kn := compileKernel(t, "scaled_dot.py", scaledDotKernel, "scaled_dot",
		map[string]string{"a_ptr": "*fp32", "b_ptr": "*fp32", "s_ptr": "*fp32", "c_ptr": "*fp32", "N": "i32", "K": "i32"},
		map[string]any{"BM": int64(bm), "BN": int64(bn), "BK": int64(bk)})
	rng := rand.New(rand.NewSource(5))
	for _, tc := range []struct {
		n, k int
		inf  bool
	}{{36, 37, false}, {9, 65, false}, {63, 32, false}, {36, 37, true}} {
		eachMicroKernel(func() {
			t.Run(fmt.Sprintf("n%d_k%d_inf%v", tc.n, tc.k, tc.inf), func(t *testing.T) {
				a, b, s := randF32(rng, bm*tc.k, 1), randF32(rng, tc.k*tc.n, 1), randF32(rng, tc.k, 1)
				if tc.inf {
					s[tc.k/2] = float32(math.Inf(1))
				}
				out := f32Buf(t, make([]float32, bm*bn))
				before := finiteChecks.Load()
				if err := kn.Launch(grid1(1), []jit.Arg{buf(f32Buf(t, a)), buf(f32Buf(t, b)), buf(f32Buf(t, s)), buf(out),
					scalar(int64(tc.n)), scalar(int64(tc.k))}); err != nil {
					t.Fatal(err)
				}
				if !tc.inf && finiteChecks.Load() == before {
					t.Errorf("the dot multiplied the whole scaled tile: its padded columns were not dropped")
				}
				got := out.f32()
				for i := range bm {
					for j := range bn {
						want := 0.0
						for p := range (tc.k + bk - 1) / bk * bk {
							var bv, sv float64 // the padding: zeros, scaled
							if p < tc.k {
								sv = float64(s[p])
								if j < tc.n {
									bv = float64(b[p*tc.n+j])
								}
							}
							av := 0.0
							if p < tc.k {
								av = float64(a[i*tc.k+p])
							}
							want += av * (bv * sv)
						}
						if g := float64(got[i*bn+j]); !closeOrSameSpecial(g, want) {
							t.Fatalf("c[%d,%d] = %v, want %v", i, j, g, want)
						}
					}
				}
			})
		})
	}
}
