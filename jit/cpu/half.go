package cpu

import (
	"math"

	"github.com/widejit/widejit/triton/ir"
)

// f16ToF32 widens an IEEE binary16 value exactly.
func f16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or NaN (payload kept, quiet bit set)
		if mant == 0 {
			return math.Float32frombits(sign | 0x7f800000)
		}
		return math.Float32frombits(sign | 0x7fc00000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: value = mant * 2^-24, exact in fp32.
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// f32ToF16 narrows with round to nearest, ties to even; overflow gives inf, NaN stays NaN.
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant == 0 {
			return sign | 0x7c00
		}
		return sign | 0x7e00 | uint16(mant>>13)
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal or zero in fp16: shift the full significand (with its implicit bit) right.
		if e < -10 {
			return sign // below half the smallest subnormal: rounds to zero
		}
		m := mant | 0x800000
		shift := uint32(14 - e)
		half := uint32(1) << (shift - 1)
		rest := m & (1<<shift - 1)
		r := m >> shift
		if rest > half || (rest == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(e)<<10 | mant>>13
	rest := mant & 0x1fff
	if rest > 0x1000 || (rest == 0x1000 && r&1 == 1) {
		r++ // may carry into the exponent, up to inf: still correct
	}
	return sign | uint16(r)
}

func bf16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// f32ToBF16 narrows with round to nearest, ties to even; NaN stays a quiet NaN.
func f32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// roundF16 and roundBF16 round fp32 values to the nearest fp16/bf16 value, in place: fp16 and
// bf16 tiles are kept in []float32 slots holding exactly representable values.
func roundF16(x []float32) {
	for i, v := range x {
		x[i] = f16ToF32(f32ToF16(v))
	}
}

func roundBF16(x []float32) {
	for i, v := range x {
		x[i] = bf16ToF32(f32ToBF16(v))
	}
}

// roundTo rounds x to dtype d when d is narrower than fp32.
func roundTo(d ir.DType, x []float32) {
	switch d {
	case ir.F16:
		roundF16(x)
	case ir.BF16:
		roundBF16(x)
	}
}
