package cpu

import (
	"github.com/widejit/widejit/internal/half"

	"github.com/widejit/widejit/triton/ir"
)

// roundF16 and roundBF16 round fp32 values to the nearest fp16/bf16 value, in place: fp16 and
// bf16 tiles are kept in []float32 slots holding exactly representable values.
func roundF16(x []float32) {
	for i, v := range x {
		x[i] = half.F16ToF32(half.F32ToF16(v))
	}
}

func roundBF16(x []float32) {
	for i, v := range x {
		x[i] = half.BF16ToF32(half.F32ToBF16(v))
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
