package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
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
	for _, x := range xs {
		got, want := erf32(x), float32(math.Erf(float64(x)))
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("erf32(%g) = %g (%#x), want %g (%#x)", x, got, math.Float32bits(got), want, math.Float32bits(want))
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
