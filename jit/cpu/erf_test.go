package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// erf.go and the erf vector loops must agree bit for bit with float32(math.Erf(float64(x))),
// on every path: erfF32AVX512, erfF32AVX2 (erfAVX512 off) and the scalar erf32.

func erfRef(x float32) float32 { return float32(math.Erf(float64(x))) }

// erfPaths runs f once per vector loop this CPU has, with its name.
func erfPaths(t *testing.T, f func(t *testing.T)) { vectorPaths(t, &erfAVX512, haveAVX512, f) }

// erfSpecials are the edges of erf.go's ranges and of float32: zeros, tiny values and
// denormals, infinities, NaN, the interval and grid boundaries and erfWideOne.
func erfSpecials() []float32 {
	nan := float32(math.NaN())
	xs := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 0x1p-149, 0x1p-127, -0x1p-127,
		0x1p-126, -0x1p-126, 0x1p-61, 0x1p-60, -0x1p-60, 0x1.fffffep-61, 1e-30, -1e-30, 1e-7,
		6, -6, 5.999999, 4, -4, 8, -8, 1e30, math.MaxFloat32, -math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), nan, -nan, math.Float32frombits(0x7fc00001),
		0.84375, 1.25, 2.857, 3.9, erfWideOne, -erfWideOne}
	edges := []float32{erfWideOne, erfGridMax}
	for i := range erfWideN + 1 {
		edges = append(edges, float32(i)/erfWideInv, (float32(i)+0.5)/erfWideInv)
	}
	for i := range erfGridMax*erfGridInv + 1 {
		edges = append(edges, float32(i)/erfGridInv)
	}
	for _, e := range edges {
		for _, s := range []float32{1, -1} {
			x := s * e
			xs = append(xs, x, math.Nextafter32(x, 0), math.Nextafter32(x, 10*x+s))
		}
	}
	return xs
}

// checkErf runs erfF32Vec and erfF32 over xs and compares every lane.
func checkErf(t *testing.T, xs []float32) {
	t.Helper()
	vec := make([]float32, len(xs))
	done := erfF32Vec(xs, vec)
	if haveVecFMA && done < len(xs)-3 {
		t.Fatalf("erfF32Vec did %d of %d lanes with AVX2 present", done, len(xs))
	}
	all := make([]float32, len(xs))
	erfF32(xs, all)
	for i, x := range xs {
		want := erfRef(x)
		if got := erf32(x); !sameF32(got, want) {
			t.Fatalf("erf32(%g) = %g (%#x), want %g (%#x)", x, got, math.Float32bits(got), want, math.Float32bits(want))
		}
		if got := vec[i]; i < done && !sameF32(got, want) {
			t.Fatalf("erfF32Vec lane %d: erf(%g) = %g (%#x), want %g (%#x)", i, x, got, math.Float32bits(got), want, math.Float32bits(want))
		}
		if got := all[i]; !sameF32(got, want) {
			t.Fatalf("erfF32 lane %d: erf(%g) = %g (%#x), want %g (%#x)", i, x, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
}

func TestErfF32SpecialsAndRandom(t *testing.T) {
	xs := erfSpecials()
	r := rand.New(rand.NewPCG(11, 12))
	for range 200000 {
		xs = append(xs, float32(r.Float64()*16-8), float32(r.NormFloat64()), float32(r.NormFloat64()*1e-3))
	}
	erfPaths(t, func(t *testing.T) { checkErf(t, xs) })
}

// TestErfF32Lengths runs erfF32 on every length 0..33 (the vector loops, the AVX2 group of 4
// after the AVX-512 groups of 8, the scalar tail) and on offset starts.
func TestErfF32Lengths(t *testing.T) {
	xs := erfSpecials()
	r := rand.New(rand.NewPCG(13, 14))
	for range 64 {
		xs = append(xs, float32(r.Float64()*16-8))
	}
	erfPaths(t, func(t *testing.T) { checkLengths(t, "erf", xs, 33, 7, erfF32, erfRef) })
}

// TestErfF32EveryNthFloat32 checks every 13th float32 bit pattern (with -short every 61st)
// through both vector loops (erf32 on every 39th), and the error of erfWide (the AVX-512 loop's float64
// value) against the margin of the midpoint test.
func TestErfF32EveryNthFloat32(t *testing.T) {
	step := uint64(13)
	if testing.Short() {
		step = 61
	}
	maxUlps, fallbacks, fast := sweepFloat32s(t, step, func(xs, scratch []float32) (worst float64, fb, fs int) {
		v512, v2 := scratch[:len(xs)], scratch[len(xs):]
		d512, d2 := 0, 0
		if haveAVX512 {
			d512 = erfF32VecWith(true, xs, v512)
		}
		d2 = erfF32VecWith(false, xs, v2)
		for i, x := range xs {
			f := float64(x)
			ref := math.Erf(f)
			want := float32(ref)
			if i < d512 && !sameF32(v512[i], want) {
				t.Errorf("avx512: erf(%g) = %#x, want %#x", x, math.Float32bits(v512[i]), math.Float32bits(want))
			}
			if i < d2 && !sameF32(v2[i], want) {
				t.Errorf("avx2: erf(%g) = %#x, want %#x", x, math.Float32bits(v2[i]), math.Float32bits(want))
			}
			// erf32 (the scalar tail) on every third of them: 39th.
			if i%3 == 0 {
				if got := erf32(x); !sameF32(got, want) {
					t.Errorf("erf32(%g) = %#x, want %#x", x, math.Float32bits(got), math.Float32bits(want))
				}
			}
			// erfWide's value is the same for x and -x: measure x > 0.
			if f >= 0x1p-60 && f < erfWideOne {
				y := erfWide(f)
				worst = max(worst, ulpsFrom(y, ref))
				fs++
				if erfNear(y) {
					fb++
				}
			}
		}
		return worst, fb, fs
	})
	// The midpoint test's margin is 2^14 ulps; math.Erf is within 1 of erf(x).
	if maxUlps > 1<<10 {
		t.Errorf("erfWide is %.0f ulps from math.Erf, too close to the 2^14-ulp margin", maxUlps)
	}
	t.Logf("max |erfWide - math.Erf| = %.2f ulps; %d of %d fast-range inputs near a midpoint (%.4f%%)",
		maxUlps, fallbacks, fast, 100*float64(fallbacks)/float64(max(fast, 1)))
}

// TestErfWideOne checks erfWideOne: float32(math.Erf) is 1 on every float32 from it to 6
// (math.Erf is 1 beyond), and not 1 just below it.
func TestErfWideOne(t *testing.T) {
	one := float32(erfWideOne)
	if float64(one) != erfWideOne || erfRef(math.Nextafter32(one, 0)) == 1 {
		t.Fatalf("erfWideOne %g is not the least float32 whose erf rounds to 1", erfWideOne)
	}
	step := uint32(1)
	if testing.Short() {
		step = 97
	}
	for b := math.Float32bits(one); b <= math.Float32bits(6); b += step {
		if x := math.Float32frombits(b); erfRef(x) != 1 {
			t.Fatalf("float32(math.Erf(%g)) = %g, want 1", x, erfRef(x))
		}
	}
}

// BenchmarkErfF32 is the fp32 erf step of GELU (inputs ~ N(0, 1)) per element: the
// executor's loop on each vector path against the per-element float32(math.Erf(x)).
func BenchmarkErfF32(b *testing.B) {
	const n = 4096
	r := rand.New(rand.NewPCG(9, 10))
	a := make([]float32, n)
	for i := range a {
		a[i] = float32(r.NormFloat64())
	}
	z := make([]float32, n)
	run := func(b *testing.B, f func(a, z []float32)) {
		b.SetBytes(4 * n)
		for b.Loop() {
			f(a, z)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
	}
	b.Run("math.Erf", func(b *testing.B) {
		run(b, func(a, z []float32) {
			for i := range z {
				z[i] = float32(math.Erf(float64(a[i])))
			}
		})
	})
	b.Run("erf32", func(b *testing.B) {
		run(b, func(a, z []float32) {
			for i := range z {
				z[i] = erf32(a[i])
			}
		})
	})
	old := erfAVX512
	defer func() { erfAVX512 = old }()
	if haveAVX512 {
		erfAVX512 = true
		b.Run("erfF32/avx512", func(b *testing.B) { run(b, erfF32) })
	}
	erfAVX512 = false
	b.Run("erfF32/avx2", func(b *testing.B) { run(b, erfF32) })
}
