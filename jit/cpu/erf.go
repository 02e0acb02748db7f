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
// (vec_amd64.s) evaluates the same grid and polynomial on 4 lanes at a time with FMA,
// halfway inputs going to the even grid point (its float64 value can differ from erf32's
// in the last bits, far inside the midpoint test's margin); erfF32AVX512 computes erfWide (below) on 8 lanes at a time with the same test.

const (
	erfGridInv = 32 // grid points per unit
	erfGridMax = 6  // math.Erf is 1 from here on
	erfDegree  = 6
)

// erfTaylor[i][n] is the n-th Taylor coefficient of erf at i/erfGridInv; rows are padded to
// 8 (64 bytes), so the vector code loads a lane's row as two 256-bit halves.
var erfTaylor [erfGridMax*erfGridInv + 1][8]float64

func init() {
	for i := range erfTaylor {
		copy(erfTaylor[i][:erfDegree+1], erfTaylorAt(float64(i)/erfGridInv, erfDegree))
	}
}

// erfTaylorAt returns the Taylor coefficients of erf at x0 up to degree deg:
// erf^(n)(x) = 2/sqrt(pi) (-1)^(n-1) H_(n-1)(x) exp(-x^2), H the physicists' Hermite
// polynomials (H_(n+1) = 2x H_n - 2n H_(n-1)).
func erfTaylorAt(x0 float64, deg int) []float64 {
	c := make([]float64, deg+1)
	c[0] = math.Erf(x0)
	g := 2 / math.SqrtPi * math.Exp(-x0*x0)
	hPrev, h, fact := 0.0, 1.0, 1.0
	for n := 1; n <= deg; n++ {
		fact *= float64(n)
		sign := 1.0
		if n%2 == 0 {
			sign = -1
		}
		c[n] = sign * h * g / fact
		hPrev, h = h, 2*x0*h-2*float64(n-1)*hPrev
	}
	return c
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
// no gathers. Each interval holds a degree-9 polynomial: the degree-22 Taylor expansion
// economized with Chebyshev polynomials (erfEconomize), which leaves an error close to the
// best degree-9 fit's, where the plain degree-9 Taylor series would need degree 13 for the
// same accuracy (four more coefficients, each a permute and an FMA per 8 lanes). Interval
// i >= 1 is expanded around its midpoint (|h| <= 1/8); interval 0 holds x*q(x), q the
// economized series of erf(x)/x on [0, 1/4], so small inputs keep their relative accuracy.
// In exact arithmetic the relative error is below 2^-45 on every interval (2^-45 on
// interval 0, 2^-46 elsewhere: a truncated Chebyshev series' error is about its first
// omitted term's coefficient); TestErfF32EveryNthFloat32 measures the float64 result
// within 2^10 ulps of math.Erf over every 13th float32 of (2^-63, 4), so the 2^14-ulp
// midpoint margin of erf32 holds and the fallback rate stays about 2^-14. From erfWideOne
// on, float32(math.Erf) is 1 (checked by TestErfWideOne): those lanes are +-1 with no
// fallback.
const (
	erfWideInv = 4  // intervals per unit
	erfWideN   = 16 // intervals: [0, 4)
	erfWideDeg = 9
	// erfWideTaylorDeg is the Taylor degree economized to erfWideDeg: its truncation error,
	// below 2^-80, adds nothing.
	erfWideTaylorDeg = 22
	// erfWideOne is the least float32 x with float32(math.Erf(x)) == 1 (3.919206).
	erfWideOne = 0x1.f5a88ap+1
)

// erfWide is laid out by coefficient: erfWide[0] holds the 16 intervals' centers,
// erfWide[1+n] their n-th coefficients. erfWideTab is the same, 64-byte aligned
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
		var c []float64
		x0 := (float64(i) + 0.5) / erfWideInv
		if i == 0 {
			// erf(x) = x*q(x): economize q (erf's series shifted down one) on [0, 1/4].
			x0 = 0
			q := erfEconomize(erfTaylorAt(0, erfWideTaylorDeg+1)[1:], 0, 1.0/erfWideInv, erfWideDeg-1)
			c = append([]float64{0}, q...)
		} else {
			const r = 0.5 / erfWideInv
			c = erfEconomize(erfTaylorAt(x0, erfWideTaylorDeg), -r, r, erfWideDeg)
		}
		erfWideTab[0][i] = x0
		for n, v := range c {
			erfWideTab[1+n][i] = v
		}
	}
}

// erfEconomize lowers the polynomial sum c[k] h^k to degree deg on [lo, hi]: from the top,
// each term c[n] h^n is replaced by c[n] h^n minus c[n]/2^(n-1)/s^n times T_n(s(h-m)), T_n
// the Chebyshev polynomial, s = 2/(hi-lo), m the interval's middle. That difference has
// degree n-1 and differs from c[n] h^n by at most |c[n]|/(2^(n-1) s^n) on the interval.
func erfEconomize(c []float64, lo, hi float64, deg int) []float64 {
	c = append([]float64(nil), c...)
	s, m := 2/(hi-lo), (lo+hi)/2
	// t[n] holds the monomial coefficients of T_n(s*h - s*m).
	a, b := s, -s*m // T_1 = a h + b
	t := [][]float64{{1}, {b, a}}
	for n := 2; n < len(c); n++ {
		next := make([]float64, n+1)
		for k, v := range t[n-1] {
			next[k+1] += 2 * a * v
			next[k] += 2 * b * v
		}
		for k, v := range t[n-2] {
			next[k] -= v
		}
		t = append(t, next)
	}
	for n := len(c) - 1; n > deg; n-- {
		f := c[n] / t[n][n]
		for k, v := range t[n] {
			c[k] -= f * v
		}
		c[n] = 0
	}
	return c[:deg+1]
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
	var a [5]float64
	for k := range a {
		a[k] = math.FMA(h, t[2+2*k][i], t[1+2*k][i])
	}
	b0 := math.FMA(h2, a[1], a[0])
	b1 := math.FMA(h2, a[3], a[2])
	d0 := math.FMA(h4, b1, b0)
	return math.FMA(h8, a[4], d0)
}
