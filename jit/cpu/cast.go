package cpu

import (
	"github.com/widejit/widejit/internal/half"
	"math"

	"github.com/widejit/widejit/triton/ir"
)

func (c *compiler) compileCast(in *ir.Instr, a, z int) (step, error) {
	ts, td := c.p.slotType[a], c.p.slotType[z]
	cs, cd := c.p.slotClass[a], c.p.slotClass[z]
	s, d := ts.Elem, td.Elem
	if in.Int == 1 { // bitcast (of equal widths, ir.CheckCast)
		return func(fr *frame) error {
			n := ts.NumElems()
			for i := range n {
				b := fr.rawBits(cs, s, a, i)
				fr.setRawBits(cd, d, z, i, b)
			}
			return nil
		}, nil
	}
	if ts.Ptr || td.Ptr { // to or from i64 (ir.CheckCast): the bits are the address
		return func(fr *frame) error { copy(fr.ints[z], fr.ints[a]); return nil }, nil
	}
	switch {
	case cs == clsF32 && cd == clsF32:
		return func(fr *frame) error {
			copy(fr.f32[z], fr.f32[a])
			if s == ir.F32 || (s == ir.F16 && d == ir.BF16) || (s == ir.BF16 && d == ir.F16) {
				roundTo(d, fr.f32[z])
			}
			return nil
		}, nil
	case cs == clsF32 && cd == clsF64:
		return func(fr *frame) error {
			x, zz := fr.f32[a], fr.f64[z]
			for i := range zz {
				zz[i] = float64(x[i])
			}
			return nil
		}, nil
	case cs == clsF64 && cd == clsF32:
		return func(fr *frame) error {
			x, zz := fr.f64[a], fr.f32[z]
			for i := range zz {
				zz[i] = f64ToF32Exact(x[i], d)
			}
			return nil
		}, nil
	case cs == clsF64 && cd == clsF64:
		return func(fr *frame) error { copy(fr.f64[z], fr.f64[a]); return nil }, nil
	case cs == clsInt && cd == clsInt:
		return func(fr *frame) error {
			x, zz := fr.ints[a], fr.ints[z]
			for i := range zz {
				if d == ir.I1 {
					zz[i] = b2i(x[i] != 0)
				} else {
					zz[i] = normInt(d, x[i])
				}
			}
			return nil
		}, nil
	case cs == clsInt && cd == clsF32:
		return func(fr *frame) error {
			x, zz := fr.ints[a], fr.f32[z]
			for i := range zz {
				if s == ir.U64 {
					zz[i] = float32(uint64(x[i]))
				} else {
					zz[i] = float32(x[i])
				}
			}
			roundTo(d, zz)
			return nil
		}, nil
	case cs == clsInt && cd == clsF64:
		return func(fr *frame) error {
			x, zz := fr.ints[a], fr.f64[z]
			for i := range zz {
				if s == ir.U64 {
					zz[i] = float64(uint64(x[i]))
				} else {
					zz[i] = float64(x[i])
				}
			}
			return nil
		}, nil
	case cd == clsInt: // float -> int
		return func(fr *frame) error {
			zz := fr.ints[z]
			for i := range zz {
				var f float64
				if cs == clsF32 {
					f = float64(fr.f32[a][i])
				} else {
					f = fr.f64[a][i]
				}
				zz[i] = floatToInt(d, f)
			}
			return nil
		}, nil
	}
	return nil, c.errf(in.Pos, in.Op, "unsupported cast %s -> %s", ts, td)
}

// f64ToF32Exact narrows fp64 to fp32 (one rounding) and, for fp16/bf16, on to those. Going
// through fp32 can double-round in rare ties; Triton's own fp64->fp16 does the same.
func f64ToF32Exact(x float64, d ir.DType) float32 {
	f := float32(x)
	switch d {
	case ir.F16:
		return half.F16ToF32(half.F32ToF16(f))
	case ir.BF16:
		return half.BF16ToF32(half.F32ToBF16(f))
	}
	return f
}

// floatToInt truncates toward zero. NaN gives 0 and out-of-range values saturate (the IR
// leaves them backend-defined; saturating is what a careful reader expects).
func floatToInt(d ir.DType, f float64) int64 {
	if d == ir.I1 {
		return b2i(f != 0)
	}
	if f != f {
		return 0
	}
	f = math.Trunc(f)
	if d.IsUnsigned() {
		if f <= 0 {
			return 0
		}
		max := math.Ldexp(1, d.Bits()) - 1
		if f >= max {
			if d == ir.U64 {
				return -1 // all ones
			}
			return int64(max)
		}
		if f >= 1<<63 {
			return int64(uint64(f))
		}
		return int64(f)
	}
	lo, hi := -math.Ldexp(1, d.Bits()-1), math.Ldexp(1, d.Bits()-1)
	if f < lo {
		return int64(lo)
	}
	if f >= hi {
		if d == ir.I64 {
			return math.MaxInt64
		}
		return int64(hi) - 1
	}
	return int64(f)
}

// rawBits gives element i of a slot as its dtype's bit pattern (for bitcasts).
func (fr *frame) rawBits(cls class, d ir.DType, s, i int) uint64 {
	switch cls {
	case clsF32:
		v := fr.f32[s][i]
		switch d {
		case ir.F16:
			return uint64(half.F32ToF16(v))
		case ir.BF16:
			return uint64(half.F32ToBF16(v))
		}
		return uint64(math.Float32bits(v))
	case clsF64:
		return math.Float64bits(fr.f64[s][i])
	}
	v := uint64(fr.ints[s][i])
	if w := d.Bits(); w < 64 {
		v &= 1<<uint(w) - 1
	}
	return v
}

func (fr *frame) setRawBits(cls class, d ir.DType, s, i int, b uint64) {
	switch cls {
	case clsF32:
		switch d {
		case ir.F16:
			fr.f32[s][i] = half.F16ToF32(uint16(b))
		case ir.BF16:
			fr.f32[s][i] = half.BF16ToF32(uint16(b))
		default:
			fr.f32[s][i] = math.Float32frombits(uint32(b))
		}
	case clsF64:
		fr.f64[s][i] = math.Float64frombits(b)
	default:
		fr.ints[s][i] = normInt(d, int64(b))
	}
}
