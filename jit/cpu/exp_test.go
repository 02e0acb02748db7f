package cpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// exp.go must agree bit for bit with float32(math.Exp(float64(x))), on every path:
// expF32AVX512, expF32AVX2 (expAVX512 off) and the scalar exp32.

// expPaths runs f once per vector loop this CPU has, with its name.
func expPaths(t *testing.T, f func(t *testing.T)) {
	vectorPaths(t, &expAVX512, haveAVX512 && haveVecFMA, f)
}

// vectorPaths runs f with the AVX-512 loop switched on by *wide (when the CPU has it, avx512)
// and then off, restoring *wide.
func vectorPaths(t *testing.T, wide *bool, avx512 bool, f func(t *testing.T)) {
	old := *wide
	defer func() { *wide = old }()
	if avx512 {
		*wide = true
		t.Run("avx512", f)
	}
	*wide = false
	t.Run("avx2", f)
}

// checkLengths runs fn on every length 0..maxN of xs, from starts step apart, against ref bit
// for bit (name names the function in failures).
func checkLengths(t *testing.T, name string, xs []float32, maxN, step int, fn func(a, z []float32), ref func(float32) float32) {
	t.Helper()
	for n := 0; n <= maxN; n++ {
		for off := 0; off+n <= len(xs); off += step {
			a := xs[off : off+n]
			z := make([]float32, n)
			fn(a, z)
			for i, x := range a {
				if want := ref(x); !sameF32(z[i], want) {
					t.Fatalf("n=%d off=%d: %s(%g) = %#x, want %#x", n, off, name, x, math.Float32bits(z[i]), math.Float32bits(want))
				}
			}
		}
	}
}

func expRef(x float32) float32 { return float32(math.Exp(float64(x))) }

func sameF32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// expSpecials are the edges of exp.go's ranges and of float32: zeros, denormals, infinities,
// NaN, the float32 overflow and denormal thresholds, and the fast range's bounds.
func expSpecials() []float32 {
	xs := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, -0.5, 1e-45, -1e-45, 0x1p-126, -0x1p-126,
		0x1p-25, -0x1p-25, 0x1p-24, -0x1p-24, 0x1p-60, -0x1p-60,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32,
		88.72, 88.7228, 88.72284, 88.7229, 89, 89.5, -87.3, -87.33, -87.3365, -87.34, -100, -103.9,
		-103.972, -103.98, -104, -104.1, -150, 709, 710, -745, -746}
	for _, b := range []float32{88.72283, -87.3, -87.33654, -103.97208, -104, 89, float32(math.Ln2 / 2), -float32(math.Ln2 / 2)} {
		x := b
		for range 64 { // the float32 neighbours of each edge
			xs = append(xs, x)
			x = math.Nextafter32(x, float32(math.Inf(1)))
		}
		x = b
		for range 64 {
			x = math.Nextafter32(x, float32(math.Inf(-1)))
			xs = append(xs, x)
		}
	}
	// the rounding boundaries of n = round(x/ln2), where r is largest
	for n := -150; n <= 130; n++ {
		b := float32((float64(n) + 0.5) * math.Ln2)
		xs = append(xs, b, math.Nextafter32(b, 0), math.Nextafter32(b, 200))
	}
	return xs
}

func TestExp32MatchesMathExp(t *testing.T) { expPaths(t, testExp32MatchesMathExp) }

func testExp32MatchesMathExp(t *testing.T) {
	xs := expSpecials()
	r := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		xs = append(xs, float32(r.Float64()*40-20), float32(r.NormFloat64()*30), math.Float32frombits(r.Uint32()))
	}
	vec := make([]float32, len(xs))
	done := expF32Vec(xs, vec)
	if haveVecFMA && done < len(xs)-3 {
		t.Fatalf("expF32Vec did %d of %d lanes with AVX2 and FMA present", done, len(xs))
	}
	for i, x := range xs {
		want := expRef(x)
		if got := exp32(x); !sameF32(got, want) {
			t.Fatalf("exp32(%g) = %g (%#x), want %g (%#x)", x, got, math.Float32bits(got), want, math.Float32bits(want))
		}
		if got := vec[i]; i < done && !sameF32(got, want) {
			t.Fatalf("expF32Vec lane %d: exp(%g) = %g (%#x), want %g (%#x)", i, x, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
}

// TestExp32EveryNthFloat32 checks every 13th float32 bit pattern (with -short every 61st)
// through exp32 and expF32Vec, and the error of the float64 value both round against
// the margin of exp.go's midpoint test.
func TestExp32EveryNthFloat32(t *testing.T) {
	step := uint64(13)
	if testing.Short() {
		step = 61
	}
	maxUlps, fallbacks, fast := sweepFloat32s(t, step, func(xs, scratch []float32) (worst float64, fb, fs int) {
		out := scratch[:len(xs)]
		done := expF32Vec(xs, out)
		for i, x := range xs {
			f := float64(x)
			ref := math.Exp(f)
			want := float32(ref)
			if got := exp32(x); !sameF32(got, want) {
				t.Errorf("exp32(%g) = %#x, want %#x", x, math.Float32bits(got), math.Float32bits(want))
			}
			if i < done && !sameF32(out[i], want) {
				t.Errorf("expF32Vec: exp(%g) = %#x, want %#x", x, math.Float32bits(out[i]), math.Float32bits(want))
			}
			if f >= expLo && f <= expHi {
				y := expFast(f)
				worst = max(worst, ulpsFrom(y, ref))
				fs++
				if expNear(y) {
					fb++
				}
			}
		}
		return worst, fb, fs
	})
	// The midpoint test's margin is 2^14 ulps; math.Exp is within 1 of e^x.
	if maxUlps > 1<<10 {
		t.Errorf("expFast is %.0f ulps from math.Exp, too close to the 2^14-ulp margin", maxUlps)
	}
	t.Logf("max |expFast - math.Exp| = %.2f ulps; %d of %d fast-range inputs near a midpoint (%.4f%%)",
		maxUlps, fallbacks, fast, 100*float64(fallbacks)/float64(max(fast, 1)))
}

// TestExpF32Lengths runs the executor's exp loops on every length 0..17 (vector parts and
// scalar tail) and on an offset start.
func TestExpF32Lengths(t *testing.T) { expPaths(t, testExpF32Lengths) }

func testExpF32Lengths(t *testing.T) {
	xs := expSpecials()
	r := rand.New(rand.NewPCG(7, 8))
	for range 64 {
		xs = append(xs, float32(r.Float64()*40-20))
	}
	checkLengths(t, "exp", xs, 17, 5, expF32, expRef)
}

func TestExpSplitConstants(t *testing.T) {
	if math.Float64bits(expLn2Hi) != 0x3fe62e42fee00000 || math.Float64bits(expLn2Lo) != 0x3dea39ef35793c76 {
		t.Fatalf("ln2 split = %#x %#x", math.Float64bits(expLn2Hi), math.Float64bits(expLn2Lo))
	}
	if math.Float64bits(expLn2Hi)&(1<<21-1) != 0 {
		t.Fatal("expLn2Hi has more than 32 significant bits: n*expLn2Hi may be inexact")
	}
}

// BenchmarkExpF32 is the fp32 exp step of a softmax row (inputs x - max in [-20, 0]) per
// element: the executor's loop against the per-element float32(math.Exp(float64(x))).
func BenchmarkExpF32(b *testing.B) {
	const n = 4096
	r := rand.New(rand.NewPCG(9, 10))
	a := make([]float32, n)
	for i := range a {
		a[i] = float32(-20 * r.Float64())
	}
	z := make([]float32, n)
	run := func(b *testing.B, f func(a, z []float32)) {
		b.SetBytes(4 * n)
		for b.Loop() {
			f(a, z)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
	}
	b.Run("math.Exp", func(b *testing.B) {
		run(b, func(a, z []float32) {
			for i := range z {
				z[i] = float32(math.Exp(float64(a[i])))
			}
		})
	})
	b.Run("exp32", func(b *testing.B) {
		run(b, func(a, z []float32) {
			for i := range z {
				z[i] = exp32(a[i])
			}
		})
	})
	b.Run("expF32", func(b *testing.B) { run(b, expF32) })
}

// sweepFloat32s runs check over every step-th float32 bit pattern (every one of 2^32 / step),
// in chunks, on all cores, and combines what check measures of a fast float64 path: the
// largest error in float64 ulps, and how many inputs it covered (fast) and sent back to the
// reference for being near a float32 rounding midpoint (fallbacks).
//
// check gets the chunk and a scratch slice of twice its length, the worker's own.
func sweepFloat32s(t *testing.T, step uint64, check func(xs, scratch []float32) (worstUlps float64, fallbacks, fast int)) (maxUlps float64, fallbacks, fast int) {
	workers := max(1, runtime.GOMAXPROCS(0))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			const chunk = 4096
			xs := make([]float32, 0, chunk)
			scratch := make([]float32, 2*chunk)
			worst, fb, fs := 0.0, 0, 0
			flush := func() {
				wu, b, s := check(xs, scratch[:2*len(xs)])
				worst, fb, fs = max(worst, wu), fb+b, fs+s
				xs = xs[:0]
			}
			for b := uint64(w) * step; b < 1<<32; b += step * uint64(workers) {
				xs = append(xs, math.Float32frombits(uint32(b)))
				if len(xs) == chunk {
					flush()
					if t.Failed() {
						return
					}
				}
			}
			flush()
			mu.Lock()
			maxUlps, fallbacks, fast = max(maxUlps, worst), fallbacks+fb, fast+fs
			mu.Unlock()
		}()
	}
	wg.Wait()
	return maxUlps, fallbacks, fast
}

// ulpsFrom is how many float64 ulps of ref y is from ref.
func ulpsFrom(y, ref float64) float64 {
	return math.Abs(y-ref) / (math.Nextafter(ref, math.Inf(1)) - ref)
}
