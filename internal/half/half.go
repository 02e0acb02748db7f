// Package half converts between float32 and the 16-bit float formats, IEEE 754 binary16
// (float16) and bfloat16, rounding to nearest with ties to even. It is the module's one
// implementation: safetensors I/O, the CPU executor and the CUDA driver's scalar arguments
// all go through it, so they agree bit for bit.
package half

import "math"

// F16ToF32 widens a binary16 value exactly. A NaN keeps its payload and becomes quiet.
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or NaN
		if mant == 0 {
			return math.Float32frombits(sign | 0x7f800000)
		}
		return math.Float32frombits(sign | 0x7fc00000 | mant<<13)
	case exp == 0:
		// zero or subnormal: mant * 2^-24, exact in fp32
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// F32ToF16 narrows to binary16, rounding to nearest even; overflow gives inf, a NaN stays a
// (quiet) NaN with the top of its payload.
func F32ToF16(f float32) uint16 {
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
		// subnormal or zero in binary16: shift the significand with its implicit bit
		if e < -10 {
			return sign // below half the smallest subnormal
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
		r++ // a carry into the exponent (up to inf) is still the right answer
	}
	return sign | uint16(r)
}

// BF16ToF32 widens a bfloat16 value exactly.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 narrows to bfloat16, rounding to nearest even; a NaN stays a quiet NaN.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
