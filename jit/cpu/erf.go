package cpu

import (
	"math"
	"unsafe"
)

// erf32 is float32(math.Erf(x)), bit for bit, at a fraction of its cost: GELU makes erf the
// hottest transcendental of MLP kernels. A degree-6 Taylor expansion around the nearest
// point of a 1/32 grid on [0, 6) gives erf(|x|) to a relative 2^-41 (checked against
// math.Erf over every 13th float32 of (2^-63, 6]); when that value lies within 2^14 float64
// ulps of a float32 rounding midpoint, where the error could change the rounding, the result
// comes from math.Erf itself. Tiny, large and NaN inputs go to math.Erf too. erfF32AVX2
// (vec_amd64.s) is the same computation on 4 lanes at a time; erfF32AVX512 computes erfWide
// (below) on 8 lanes at a time with the same midpoint test.

const (
	erfGridInv = 32 // grid points per unit
	erfGridMax = 6  // math.Erf is 1 from here on
	erfDegree  = 6
)

// erfTaylor[i][n] is the n-th Taylor coefficient of erf at i/erfGridInv; rows are padded to
// 8 (64 bytes), so the vector code loads a lane's row as two 256-bit halves.
var erfTaylor [erfGridMax*erfGridInv + 1][8]float64

func init() {
	// erf^(n)(x) = 2/sqrt(pi) (-1)^(n-1) H_(n-1)(x) exp(-x^2), H the physicists' Hermite
	// polynomials (H_(n+1) = 2x H_n - 2n H_(n-1)).
	for i := range erfTaylor {
		x0 := float64(i) / erfGridInv
		c := &erfTaylor[i]
		c[0] = math.Erf(x0)
		g := 2 / math.SqrtPi * math.Exp(-x0*x0)
		hPrev, h, fact := 0.0, 1.0, 1.0
		for n := 1; n <= erfDegree; n++ {
			fact *= float64(n)
			sign := 1.0
			if n%2 == 0 {
				sign = -1
			}
			c[n] = sign * h * g / fact
			hPrev, h = h, 2*x0*h-2*float64(n-1)*hPrev
		}
	}
}

// erfF32 sets z[i] = float32(math.Erf(float64(a[i]))) for every lane of z.
func erfF32(a, z []float32) {
	a = a[:len(z)]
	for i := erfF32Vec(a, z); i < len(z); i++ {
		z[i] = erf32(a[i])
	}
}

// erfNear reports whether y lies within 2^14 float64 ulps of a float32 rounding midpoint:
// float32 rounding looks at the low 29 mantissa bits, 1<<28 is the midpoint.
func erfNear(y float64) bool {
	low := math.Float64bits(y) & (1<<29 - 1)
	return low-(1<<28-1<<14) < 1<<15
}

func erf32(x float32) float32 {
	ax := math.Abs(float64(x))
	if !(ax >= 0x1p-60) || ax >= erfGridMax { // also NaN
		return float32(math.Erf(float64(x)))
	}
	i := int(ax*erfGridInv + 0.5)
	h := ax - float64(i)/erfGridInv
	c := &erfTaylor[i]
	h2 := h * h // Estrin's scheme: a short dependency chain
	y := (c[0] + h*c[1]) + h2*((c[2]+h*c[3])+h2*((c[4]+h*c[5])+h2*c[6]))
	if erfNear(y) {
		return float32(math.Erf(float64(x)))
	}
	// erf is odd. (Copying the sign bit through integer registers made the compiler's
	// float64->float32 conversion depend on the previous call's result: 5x slower.)
	if x < 0 {
		y = -y
	}
	return float32(y)
}

// The AVX-512 erf (erfF32AVX512 in vec_amd64.s) trades the 1/32 grid, whose per-lane rows
// must be loaded and transposed, for 16 intervals of width 1/4 on [0, 4): a lane's
// coefficients then come from two zmm registers' worth of table with one VPERMT2PD each,
// no gathers. Interval i >= 1 holds a degree-13 Taylor expansion around its midpoint
// (|h| <= 1/8); interval 0 holds the Maclaurin series (h = |x| < 1/4), so small inputs keep
// their relative accuracy. Error bound (erfWideMaxErr): the Maclaurin series alternates with
// decreasing terms, so its truncation error is below the first omitted term,
// 2/sqrt(pi)/(7!*15) x^15, a relative 2^-44 of erf(x) at x = 1/4, 2^9 float64 ulps; on the
// other intervals Cramer's bound on Hermite functions puts the remainder under 2^-55. Over
// every float32 of (2^-63, 4) the measured error of erfWide is at most 250 ulps (interval 0
// near 1/4) and 1 ulp elsewhere; math.Erf is within 1 ulp, so the 2^14-ulp midpoint margin
// of erf32 holds with room to spare and the fallback rate stays about 2^-14. From
// erfWideOne on, float32(math.Erf) is 1 (checked by TestErfWideOne): those lanes are +-1
// with no fallback.
const (
	erfWideInv = 4  // intervals per unit
	erfWideN   = 16 // intervals: [0, 4)
	erfWideDeg = 13
	// erfWideOne is the least float32 x with float32(math.Erf(x)) == 1 (3.919206).
	erfWideOne = 0x1.f5a88ap+1
)

// erfWide is laid out by coefficient: erfWide[0] holds the 16 intervals' centers,
// erfWide[1+n] their n-th Taylor coefficients. erfWideTab is the same, 64-byte aligned
// (the assembly's 512-bit loads then never split a cache line).
var (
	erfWideBuf [(erfWideDeg+2)*erfWideN + 8]float64
	erfWideTab *[erfWideDeg + 2][erfWideN]float64
)

func init() {
	off := 0
	for uintptr(unsafe.Pointer(&erfWideBuf[off]))%64 != 0 {
		off++
	}
	erfWideTab = (*[erfWideDeg + 2][erfWideN]float64)(unsafe.Pointer(&erfWideBuf[off]))
	for i := range erfWideN {
		x0 := (float64(i) + 0.5) / erfWideInv
		if i == 0 {
			x0 = 0
		}
		erfWideTab[0][i] = x0
		erfWideTab[1][i] = math.Erf(x0)
		g := 2 / math.SqrtPi * math.Exp(-x0*x0)
		hPrev, h, fact := 0.0, 1.0, 1.0
		for n := 1; n <= erfWideDeg; n++ {
			fact *= float64(n)
			sign := 1.0
			if n%2 == 0 {
				sign = -1
			}
			erfWideTab[1+n][i] = sign * h * g / fact
			hPrev, h = h, 2*x0*h-2*float64(n-1)*hPrev
		}
	}
}

// erfWide is erf(ax) for 0 <= ax < 4, computed as erfF32AVX512 does (the same operations
// and roundings, FMA included); the tests measure its error against math.Erf.
func erfWide(ax float64) float64 {
	i := int(ax*erfWideInv) & (erfWideN - 1)
	t := erfWideTab
	h := ax - t[0][i]
	h2 := h * h
	h4 := h2 * h2
	h8 := h4 * h4
	var a [7]float64
	for k := range a {
		a[k] = math.FMA(h, t[2+2*k][i], t[1+2*k][i])
	}
	b0 := math.FMA(h2, a[1], a[0])
	b1 := math.FMA(h2, a[3], a[2])
	b2 := math.FMA(h2, a[5], a[4])
	d0 := math.FMA(h4, b1, b0)
	d1 := math.FMA(h4, a[6], b2)
	return math.FMA(h8, d1, d0)
}
