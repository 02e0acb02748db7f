package cpu

import "math"

// exp32 is float32(math.Exp(x)), bit for bit, at a fraction of its cost: softmax and attention
// make exp the hottest transcendental of transformer blocks. In float64, x = n*ln2 + r with
// n = round(x/ln2) (n*ln2 in two parts, Cody-Waite: n*expLn2Hi is exact), |r| <= ln2/2; a
// degree-11 Taylor polynomial gives e^r to a relative 2^-46.7 (the remainder bound) plus a few
// roundings, and 2^n goes into the exponent bits. That is under 2^7 float64 ulps from e^x, and
// math.Exp is within 1 ulp; so when the value lies 2^14 ulps or more from a float32 rounding
// midpoint, both round to the same float32. Otherwise (about 1 lane in 16000) the result comes
// from math.Exp itself, as it does for NaN, x > 89 and inputs whose exp is a float32
// denormal (-104 <= x < -87.3, where float32 rounds at another bit); below -104 exp rounds
// to +0. expF32Vec (vec_amd64.s) is the same computation on 4 lanes at a time with FMA.

const (
	expLog2e = math.Log2E
	// t = x*log2e + expShift holds round(x*log2e) in its low mantissa bits.
	expShift = 0x1.8p52
	// ln2 = expLn2Hi + expLn2Lo (fdlibm's split): expLn2Hi has 32 significant bits, so
	// n*expLn2Hi is exact for |n| < 2^21 and x - n*expLn2Hi too (Sterbenz).
	expLn2Hi = 6.93147180369123816490e-01 // 0x3fe62e42fee00000
	expLn2Lo = 1.90821492927058770002e-10 // 0x3dea39ef35793c76
	// The fast range: exp(expLo) is a float32 normal, exp(expHi) overflows float32.
	expLo    = -87.3
	expHi    = 89
	expUnder = -104 // exp(x) < 2^-150 for x < expUnder: float32 +0
	expDeg   = 11
)

// expPoly[k] = 1/k!, the Taylor coefficients of e^r.
var expPoly = [expDeg + 1]float64{1, 1, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720,
	1.0 / 5040, 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800}

// expNear reports whether y lies within 2^14 float64 ulps of a float32 rounding midpoint:
// float32 rounding looks at the low 29 mantissa bits, 1<<28 is the midpoint.
func expNear(y float64) bool {
	low := math.Float64bits(y) & (1<<29 - 1)
	return low-(1<<28-1<<14) < 1<<15
}

// expF32 sets z[i] = float32(math.Exp(float64(a[i]))) for every lane of z.
func expF32(a, z []float32) {
	a = a[:len(z)]
	for i := expF32Vec(a, z); i < len(z); i++ {
		z[i] = exp32(a[i])
	}
}

func exp32(x float32) float32 {
	f := float64(x)
	if !(f >= expLo && f <= expHi) { // also NaN
		if f < expUnder {
			return 0
		}
		return float32(math.Exp(f))
	}
	y := expFast(f)
	if expNear(y) {
		return float32(math.Exp(f))
	}
	return float32(y)
}

// expFast is e^f for expLo <= f <= expHi, within 2^7 ulps (the polynomial's error bound).
func expFast(f float64) float64 {
	t := f*expLog2e + expShift
	nd := t - expShift
	r := f - nd*expLn2Hi
	r -= nd * expLn2Lo
	// Estrin's scheme: a short dependency chain.
	c := &expPoly
	r2 := r * r
	r4 := r2 * r2
	b0 := (c[0] + c[1]*r) + r2*(c[2]+c[3]*r)
	b1 := (c[4] + c[5]*r) + r2*(c[6]+c[7]*r)
	b2 := (c[8] + c[9]*r) + r2*(c[10]+c[11]*r)
	p := (b0 + r4*b1) + (r4*r4)*b2
	// 2^n: n sits in the low bits of t; shifted up, it adds to the exponent field.
	return math.Float64frombits(math.Float64bits(p) + math.Float64bits(t)<<52)
}

// expVecConst holds the constants of expF32AVX2, each repeated 4 times (a 256-bit operand);
// the order is the one vec_amd64.s reads them in.
var expVecConst [10 + expDeg + 1][4]float64

func init() {
	bits := func(u uint64) float64 { return math.Float64frombits(u) }
	cs := []float64{expLo, expHi, expUnder, expLog2e, expShift, expLn2Hi, expLn2Lo,
		bits(1<<29 - 1), bits(1<<28 - 1<<14), bits(1 << 15)}
	cs = append(cs, expPoly[:]...)
	for i, c := range cs {
		expVecConst[i] = [4]float64{c, c, c, c}
	}
}
