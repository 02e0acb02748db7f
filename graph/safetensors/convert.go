package safetensors

import (
	"encoding/binary"
	"fmt"
	"github.com/widejit/widejit/internal/half"
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
			out[i] = float64(half.F16ToF32(binary.LittleEndian.Uint16(d[2*i:])))
		case BF16:
			out[i] = float64(half.BF16ToF32(binary.LittleEndian.Uint16(d[2*i:])))
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
			binary.LittleEndian.PutUint16(data[2*i:], half.F32ToF16(float32(x)))
		case BF16:
			binary.LittleEndian.PutUint16(data[2*i:], half.F32ToBF16(float32(x)))
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
