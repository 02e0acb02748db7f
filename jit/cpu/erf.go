package cpu

import "math"

// erf32 is float32(math.Erf(x)), bit for bit, at a fraction of its cost: GELU makes erf the
// hottest transcendental of MLP kernels. A degree-6 Taylor expansion around the nearest
// point of a 1/32 grid on [0, 6) gives erf(|x|) to a relative 2^-41 (checked against
// math.Erf over every 13th float32 of (2^-63, 6]); when that value lies within 2^14 float64
// ulps of a float32 rounding midpoint, where the error could change the rounding, the result
// comes from math.Erf itself. Tiny, large and NaN inputs go to math.Erf too. erfF32Vec
// (vec_amd64.s) is the same computation on 4 lanes at a time.

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
	// float32 rounding looks at the low 29 mantissa bits; 1<<28 is the midpoint.
	if low := math.Float64bits(y) & (1<<29 - 1); low-(1<<28-1<<14) < 1<<15 {
		return float32(math.Erf(float64(x)))
	}
	// erf is odd. (Copying the sign bit through integer registers made the compiler's
	// float64->float32 conversion depend on the previous call's result: 5x slower.)
	if x < 0 {
		y = -y
	}
	return float32(y)
}
