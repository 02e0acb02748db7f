package half

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refF32ToF16 is an independent rounding: exact arithmetic in float64 with RoundToEven, no
// bit manipulation of the float32 encoding.
func refF32ToF16(f float32) uint16 {
	var sign uint16
	if math.Signbit(float64(f)) {
		sign = 0x8000
	}
	if math.IsNaN(float64(f)) {
		return sign | 0x7e00
	}
	a := math.Abs(float64(f))
	if a >= 65520 { // halfway between the largest finite (65504) and 2^16 rounds to inf
		return sign | 0x7c00
	}
	if a < math.Ldexp(1, -14) { // subnormal: units of 2^-24
		return sign | uint16(math.RoundToEven(a*math.Ldexp(1, 24)))
	}
	e := math.Floor(math.Log2(a))
	if math.Ldexp(1, int(e)) > a { // guard Log2's rounding
		e--
	} else if math.Ldexp(1, int(e)+1) <= a {
		e++
	}
	m := math.RoundToEven(a/math.Ldexp(1, int(e))*1024) - 1024 // 10-bit mantissa, may reach 1024
	return sign | uint16(int(e)+15)<<10 + uint16(m)
}

func TestF16RoundTripsEveryValue(t *testing.T) {
	for h := range 1 << 16 {
		f := F16ToF32(uint16(h))
		if math.IsNaN(float64(f)) {
			if back := F32ToF16(f); back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %#04x -> %#04x", h, back)
			}
			continue
		}
		if back := F32ToF16(f); back != uint16(h) {
			t.Fatalf("%#04x -> %v -> %#04x", h, f, back)
		}
	}
}

func TestF32ToF16AgainstReference(t *testing.T) {
	check := func(f float32) {
		if got, want := F32ToF16(f), refF32ToF16(f); got != want && !math.IsNaN(float64(f)) {
			t.Fatalf("F32ToF16(%v = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
	// every midpoint and its neighbours between consecutive finite binary16 values: the ties
	for h := range 0x7bff {
		lo, hi := float64(F16ToF32(uint16(h))), float64(F16ToF32(uint16(h+1)))
		mid := float32((lo + hi) / 2)
		for _, f := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9)} {
			check(f)
			check(-f)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2_000_000 {
		check(math.Float32frombits(r.Uint32()))
	}
	for _, f := range []float32{0, 65504, 65519.99, 65520, 1e-8, 5.96e-8, 2.98e-8, float32(math.Inf(1))} {
		check(f)
		check(-f)
	}
}

func TestBF16(t *testing.T) {
	for _, c := range []struct {
		f float32
		h uint16
	}{{1, 0x3f80}, {-2, 0xc000}, {1 + 1.0/256, 0x3f80}, {1 + 3.0/256, 0x3f82}, {float32(math.Inf(-1)), 0xff80}} {
		if got := F32ToBF16(c.f); got != c.h {
			t.Errorf("F32ToBF16(%v) = %#04x, want %#04x", c.f, got, c.h)
		}
		if back := BF16ToF32(c.h); back != c.f && c.f == BF16ToF32(c.h) {
			t.Errorf("BF16ToF32(%#04x) = %v", c.h, back)
		}
	}
	if h := F32ToBF16(float32(math.NaN())); !math.IsNaN(float64(BF16ToF32(h))) {
		t.Errorf("NaN -> %#04x is not a NaN", h)
	}
}
