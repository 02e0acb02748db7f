package triton

import (
	"math"

	"github.com/widejit/widejit/triton/ir"
)

// kindOf is Triton's dtype kind order for weak scalars: bool < integral < floating.
func kindOf(d ir.DType) int {
	switch {
	case d == ir.I1:
		return 0
	case d.IsInt():
		return 1
	default:
		return 2
	}
}

// fitsInt reports whether v is representable in the integer dtype d.
func fitsInt(v int64, d ir.DType) bool {
	switch d {
	case ir.I1:
		return v == 0 || v == 1
	case ir.I8:
		return v >= math.MinInt8 && v <= math.MaxInt8
	case ir.I16:
		return v >= math.MinInt16 && v <= math.MaxInt16
	case ir.I32:
		return v >= math.MinInt32 && v <= math.MaxInt32
	case ir.I64:
		return true
	case ir.U8:
		return v >= 0 && v <= math.MaxUint8
	case ir.U16:
		return v >= 0 && v <= math.MaxUint16
	case ir.U32:
		return v >= 0 && v <= math.MaxUint32
	case ir.U64:
		return v >= 0
	}
	return false
}

// literalDType is the dtype a Python scalar gets when it becomes a tensor (Triton's
// to_tensor): bool -> i1; int -> the first of i32, u32, i64 that holds it; float -> fp32
// unless its magnitude is outside fp32's normal range (then fp64).
func literalDType(v value) ir.DType {
	switch x := v.(type) {
	case cBool:
		return ir.I1
	case cInt:
		switch {
		case x >= math.MinInt32 && x <= math.MaxInt32:
			return ir.I32
		case x >= 0 && x <= math.MaxUint32:
			return ir.U32
		default:
			return ir.I64
		}
	case cFloat:
		a := math.Abs(float64(x))
		if math.IsInf(a, 0) || a == 0 || a != a || (a >= math.Ldexp(1, -126) && a <= (2-math.Ldexp(1, -23))*math.Ldexp(1, 127)) {
			return ir.F32
		}
		return ir.F64
	}
	return ir.Invalid
}

// integerPromote is C's usual arithmetic conversion between two integer dtypes.
func integerPromote(a, b ir.DType) ir.DType {
	as, bs := a.IsUnsigned(), b.IsUnsigned()
	switch {
	case as == bs:
		if a.Bits() > b.Bits() {
			return a
		}
		return b
	case as:
		if a.Bits() >= b.Bits() {
			return a
		}
		return b
	default:
		if b.Bits() >= a.Bits() {
			return b
		}
		return a
	}
}

// computationType is Triton's computation_type_impl: the dtype both operands of an arithmetic
// op are converted to. aWeak/bWeak mark Python scalars, which do not take part in promotion
// unless their kind is higher than the tensor's.
func computationType(a ir.DType, aWeak bool, b ir.DType, bWeak bool, divOrMod bool) (ir.DType, string) {
	if aWeak != bWeak {
		s, t := a, b
		if bWeak {
			s, t = b, a
		}
		if kindOf(s) <= kindOf(t) {
			if divOrMod && (t == ir.F16 || t == ir.BF16) {
				return ir.F32, ""
			}
			return t, ""
		}
	}
	switch {
	case a == ir.F64 || b == ir.F64:
		return ir.F64, ""
	case a == ir.F32 || b == ir.F32:
		return ir.F32, ""
	case a == ir.F16 || b == ir.F16:
		if divOrMod {
			return ir.F32, ""
		}
		return ir.F16, ""
	case a == ir.BF16 || b == ir.BF16:
		if divOrMod || a != b {
			return ir.F32, ""
		}
		return ir.BF16, ""
	}
	if divOrMod && tritonUnsigned(a) != tritonUnsigned(b) {
		return ir.Invalid, "cannot use /, // or % with " + a.String() + " and " + b.String() +
			" because they have different signedness; cast them to the same signedness"
	}
	return integerPromote(a, b), ""
}

// broadcastShapes is NumPy broadcasting of two static shapes.
func broadcastShapes(a, b []int) ([]int, bool) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := 0; i < n; i++ {
		da, db := 1, 1
		if j := i - (n - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (n - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db:
			out[i] = da
		case da == 1:
			out[i] = db
		case db == 1:
			out[i] = da
		default:
			return nil, false
		}
	}
	return out, true
}

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// tritonUnsigned is Triton's int_signedness: int1 counts as unsigned.
func tritonUnsigned(d ir.DType) bool { return d == ir.I1 || d.IsUnsigned() }
