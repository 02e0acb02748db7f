package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Float32s converts the tensor's elements, of any dtype, to float32 (BOOL: 0 or 1).
func (t *Tensor) Float32s() ([]float32, error) {
	f64, err := t.Float64s()
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(f64))
	if t.DType == F32 {
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
		return out, nil
	}
	for i, v := range f64 {
		out[i] = float32(v)
	}
	return out, nil
}

// Float64s converts the tensor's elements, of any dtype, to float64 (BOOL: 0 or 1).
func (t *Tensor) Float64s() ([]float64, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	n := t.Numel()
	out := make([]float64, n)
	d := t.Data
	for i := range out {
		switch t.DType {
		case F32:
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:])))
		case F64:
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(d[8*i:]))
		case F16:
			out[i] = float64(Float16ToFloat32(binary.LittleEndian.Uint16(d[2*i:])))
		case BF16:
			out[i] = float64(BFloat16ToFloat32(binary.LittleEndian.Uint16(d[2*i:])))
		case I64:
			out[i] = float64(int64(binary.LittleEndian.Uint64(d[8*i:])))
		case I32:
			out[i] = float64(int32(binary.LittleEndian.Uint32(d[4*i:])))
		case I16:
			out[i] = float64(int16(binary.LittleEndian.Uint16(d[2*i:])))
		case I8:
			out[i] = float64(int8(d[i]))
		case U8:
			out[i] = float64(d[i])
		case BOOL:
			if d[i] != 0 {
				out[i] = 1
			}
		}
	}
	return out, nil
}

// Int64s converts an integer or BOOL tensor's elements to int64.
func (t *Tensor) Int64s() ([]int64, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if t.DType.IsFloat() {
		return nil, fmt.Errorf("tensor %q: Int64s of a %s tensor", t.Name, t.DType)
	}
	f, err := t.Float64s()
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(f))
	if t.DType == I64 { // float64 cannot hold every int64
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
		}
		return out, nil
	}
	for i, v := range f {
		out[i] = int64(v)
	}
	return out, nil
}

func (t *Tensor) check() error {
	if !t.DType.Valid() {
		return fmt.Errorf("tensor %q: unsupported dtype %q", t.Name, t.DType)
	}
	for _, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("tensor %q: negative dimension in shape %v", t.Name, t.Shape)
		}
	}
	if want := t.Numel() * t.DType.Size(); len(t.Data) != want {
		return fmt.Errorf("tensor %q: %s shape %v needs %d bytes, has %d", t.Name, t.DType, t.Shape, want, len(t.Data))
	}
	return nil
}

// FromFloat32s builds an F32 tensor.
func FromFloat32s(name string, shape []int, v []float32) *Tensor {
	data := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
	}
	return &Tensor{Name: name, DType: F32, Shape: append([]int(nil), shape...), Data: data}
}

// FromFloat64s builds a tensor of float dtype d (F32, F64, F16 or BF16) from float64 values,
// rounding to nearest even.
func FromFloat64s(name string, d DType, shape []int, v []float64) (*Tensor, error) {
	if !d.IsFloat() {
		return nil, fmt.Errorf("FromFloat64s: %s is not a float dtype", d)
	}
	data := make([]byte, d.Size()*len(v))
	for i, x := range v {
		switch d {
		case F32:
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(x)))
		case F64:
			binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(x))
		case F16:
			binary.LittleEndian.PutUint16(data[2*i:], Float32ToFloat16(float32(x)))
		case BF16:
			binary.LittleEndian.PutUint16(data[2*i:], Float32ToBFloat16(float32(x)))
		}
	}
	return &Tensor{Name: name, DType: d, Shape: append([]int(nil), shape...), Data: data}, nil
}

// FromInt64s builds a tensor of integer or BOOL dtype d from int64 values (truncated to d's
// width; BOOL: non-zero is true).
func FromInt64s(name string, d DType, shape []int, v []int64) (*Tensor, error) {
	if !d.Valid() || d.IsFloat() {
		return nil, fmt.Errorf("FromInt64s: %s is not an integer dtype", d)
	}
	data := make([]byte, d.Size()*len(v))
	for i, x := range v {
		switch d {
		case I64:
			binary.LittleEndian.PutUint64(data[8*i:], uint64(x))
		case I32:
			binary.LittleEndian.PutUint32(data[4*i:], uint32(x))
		case I16:
			binary.LittleEndian.PutUint16(data[2*i:], uint16(x))
		case I8, U8:
			data[i] = byte(x)
		case BOOL:
			if x != 0 {
				data[i] = 1
			}
		}
	}
	return &Tensor{Name: name, DType: d, Shape: append([]int(nil), shape...), Data: data}, nil
}

// Float16ToFloat32 decodes an IEEE 754 half-precision value.
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: value = mant * 2^-24
		v := float32(mant) * float32(math.Ldexp(1, -24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// Float32ToFloat16 encodes f as half precision, rounding to nearest even.
func Float32ToFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	if math.IsNaN(float64(f)) {
		return sign | 0x7e00
	}
	a := math.Abs(float64(f))
	if a >= 65520 { // rounds to infinity
		return sign | 0x7c00
	}
	if a < math.Ldexp(1, -14) { // subnormal (or zero): units of 2^-24
		return sign | uint16(math.RoundToEven(a*math.Ldexp(1, 24)))
	}
	exp := int(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	// round the 23-bit mantissa to 10 bits, nearest even; a carry bumps the exponent.
	r := mant >> 13
	rest := mant & 0x1fff
	if rest > 0x1000 || (rest == 0x1000 && r&1 == 1) {
		r++
	}
	return sign | uint16(exp<<10) + uint16(r)
}

// BFloat16ToFloat32 decodes a bfloat16 value.
func BFloat16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Float32ToBFloat16 encodes f as bfloat16, rounding to nearest even.
func Float32ToBFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	if math.IsNaN(float64(f)) {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
