package cpu

import (
	"math"
	"testing"
)

// TestErfVecZerosNotFlagged: a GELU's tile has dead lanes, zeros, about 5% of the Mixer's
// erf lanes; each vector loop computes erf(+-0) = +-0 itself rather than flagging the lane
// for math.Erf (which cost the Mixer as much CPU as the vector loop).
func TestErfVecZerosNotFlagged(t *testing.T) {
	if !haveVecFMA {
		t.Skip("no AVX2 and FMA: erf has no vector loop here")
	}
	negZero := float32(math.Copysign(0, -1))
	xs := []float32{0, negZero, 0, 0, negZero, negZero, 0, negZero, 0.5, 0, -1.5, negZero, 0, 0, 0, 0}
	type loop struct {
		name  string
		width int
		run   func(x, z *float32, n int, flags *uint8) int
	}
	loops := []loop{{"avx2", 4, func(x, z *float32, n int, flags *uint8) int {
		return erfF32AVX2(x, z, n, flags, &erfTaylor[0][0])
	}}}
	if haveAVX512 {
		loops = append(loops, loop{"avx512", 8, func(x, z *float32, n int, flags *uint8) int {
			return erfF32AVX512(x, z, n, flags, &erfWideTab[0][0])
		}})
	}
	for _, l := range loops {
		z := make([]float32, len(xs))
		flags := make([]uint8, len(xs)/l.width)
		if any := l.run(&xs[0], &z[0], len(xs), &flags[0]); any != 0 {
			t.Errorf("%s: flags %v for zero lanes, want none", l.name, flags)
		}
		for i, x := range xs {
			if want := erfRef(x); !sameF32(z[i], want) {
				t.Errorf("%s: erf(%g) = %g (%#x), want %g (%#x)", l.name, x, z[i], math.Float32bits(z[i]), want, math.Float32bits(want))
			}
		}
	}
}
