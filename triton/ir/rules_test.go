package ir

import (
	"slices"
	"testing"
)

// typeRule is one application of a result-type or check rule: want is the derived type
// (unused by check rules), err the exact refusal ("" when the rule accepts).
type typeRule struct {
	name string
	got  func() (Type, error)
	want Type
	err  string
}

// checked adapts a CheckXxx rule to typeRule.
func checked(err error) (Type, error) { return Type{}, err }

func runTypeRules(t *testing.T, rules []typeRule) {
	t.Helper()
	for _, r := range rules {
		got, err := r.got()
		switch {
		case r.err != "" && err == nil:
			t.Errorf("%s: accepted (%s), want the refusal %q", r.name, got, r.err)
		case r.err != "" && err.Error() != r.err:
			t.Errorf("%s: refused with\n  %q, want\n  %q", r.name, err, r.err)
		case r.err == "" && err != nil:
			t.Errorf("%s: refused: %v", r.name, err)
		case r.err == "" && !got.Equal(r.want):
			t.Errorf("%s: %s, want %s", r.name, got, r.want)
		}
	}
}

var (
	f32x4   = Tile(F32, 4)
	i1x4    = Tile(I1, 4)
	i32x4   = Tile(I32, 4)
	ptrF32  = PtrTo(F32)
	ptrF32x = Type{Elem: F32, Ptr: true, Shape: []int{4}}
)

func TestTakesDType(t *testing.T) {
	all := []DType{I1, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64}
	cases := []struct {
		ops  []Op
		want []DType // the dtypes taken; every other one of all is refused
	}{
		{[]Op{Add, Sub, Mul, Div, Rem, Min, Max, Neg, Abs}, all},
		{[]Op{And, Or, Xor, Shl, Shr, MulHi, Not}, []DType{I1, I8, I16, I32, I64, U8, U16, U32, U64}},
		{[]Op{Exp, Exp2, Log, Log2, Sqrt, Rsqrt, Sin, Cos, Erf, Floor, Ceil, FMA}, []DType{F32, F64}},
		{[]Op{Cmp, Select, Cast, Load, Dot, Reduce}, nil}, // not element-wise
	}
	for _, c := range cases {
		for _, op := range c.ops {
			for _, d := range all {
				if got, want := op.TakesDType(d), slices.Contains(c.want, d); got != want {
					t.Errorf("%s.TakesDType(%s) = %v, want %v", op, d, got, want)
				}
			}
			if op.TakesDType(Invalid) || op.TakesDType(DType(99)) {
				t.Errorf("%s takes an invalid dtype", op)
			}
		}
	}
}

func TestElementwiseRules(t *testing.T) {
	runTypeRules(t, []typeRule{
		{"add i32[4]", func() (Type, error) { return ElementwiseResult(Add, i32x4, i32x4) }, i32x4, ""},
		{"div fp16 scalars", func() (Type, error) { return ElementwiseResult(Div, Scalar(F16), Scalar(F16)) }, Scalar(F16), ""},
		{"not i1", func() (Type, error) { return ElementwiseResult(Not, i1x4) }, i1x4, ""},
		{"fma fp64", func() (Type, error) { return ElementwiseResult(FMA, Scalar(F64), Scalar(F64), Scalar(F64)) }, Scalar(F64), ""},
		{"exp fp32", func() (Type, error) { return ElementwiseResult(Exp, f32x4) }, f32x4, ""},
		{"add of i32 and i64", func() (Type, error) { return ElementwiseResult(Add, Scalar(I32), Scalar(I64)) }, Type{},
			"operand 1 has type i64, operand 0 i32"},
		{"mul of different shapes", func() (Type, error) { return ElementwiseResult(Mul, f32x4, Tile(F32, 8)) }, Type{},
			"operand 1 has type fp32[8], operand 0 fp32[4]"},
		{"add of pointers", func() (Type, error) { return ElementwiseResult(Add, ptrF32, ptrF32) }, Type{}, "does not take pointers"},
		{"and of floats", func() (Type, error) { return ElementwiseResult(And, f32x4, f32x4) }, Type{}, "takes integers, got fp32[4]"},
		{"shl of fp64", func() (Type, error) { return ElementwiseResult(Shl, Scalar(F64), Scalar(F64)) }, Type{}, "takes integers, got fp64"},
		{"exp of fp16", func() (Type, error) { return ElementwiseResult(Exp, Scalar(F16)) }, Type{}, "takes fp32 or fp64, got fp16"},
		{"sqrt of i32", func() (Type, error) { return ElementwiseResult(Sqrt, i32x4) }, Type{}, "takes fp32 or fp64, got i32[4]"},
		{"fma of bf16", func() (Type, error) { return ElementwiseResult(FMA, Scalar(BF16), Scalar(BF16), Scalar(BF16)) }, Type{},
			"takes fp32 or fp64, got bf16"},
		{"add of an invalid dtype", func() (Type, error) { return ElementwiseResult(Add, Scalar(Invalid), Scalar(Invalid)) }, Type{},
			"invalid element type invalid"},
		{"fma with two operands", func() (Type, error) { return ElementwiseResult(FMA, f32x4, f32x4) }, Type{}, "has 2 operands, want 3"},
		{"neg with two operands", func() (Type, error) { return ElementwiseResult(Neg, f32x4, f32x4) }, Type{}, "has 2 operands, want 1"},
		{"cmp", func() (Type, error) { return ElementwiseResult(Cmp, f32x4, f32x4) }, Type{}, "cmp is not an element-wise op"},
	})
}

func TestCmpSelectCastRules(t *testing.T) {
	runTypeRules(t, []typeRule{
		{"lt fp32[4,8]", func() (Type, error) { return CmpResult(CmpLT, Tile(F32, 4, 8), Tile(F32, 4, 8)) }, Tile(I1, 4, 8), ""},
		{"eq of pointers", func() (Type, error) { return CmpResult(CmpEQ, ptrF32, ptrF32) }, Scalar(I1), ""},
		{"ne of i1", func() (Type, error) { return CmpResult(CmpNE, i1x4, i1x4) }, i1x4, ""},
		{"predicate 6", func() (Type, error) { return CmpResult(6, f32x4, f32x4) }, Type{}, "bad predicate 6"},
		{"predicate -1", func() (Type, error) { return CmpResult(-1, f32x4, f32x4) }, Type{}, "bad predicate -1"},
		{"fp32 with i32", func() (Type, error) { return CmpResult(CmpGE, Scalar(F32), Scalar(I32)) }, Type{},
			"compares fp32 with i32: operand types differ"},

		{"select fp32[4]", func() (Type, error) { return SelectResult(i1x4, f32x4, f32x4) }, f32x4, ""},
		{"select pointers", func() (Type, error) { return SelectResult(Scalar(I1), ptrF32, ptrF32) }, ptrF32, ""},
		{"select with a scalar condition", func() (Type, error) { return SelectResult(Scalar(I1), f32x4, f32x4) }, Type{},
			"condition has type i1, want i1[4]"},
		{"select with an i32 condition", func() (Type, error) { return SelectResult(i32x4, f32x4, f32x4) }, Type{},
			"condition has type i32[4], want i1[4]"},
		{"select between fp32 and i32", func() (Type, error) { return SelectResult(i1x4, f32x4, i32x4) }, Type{},
			"selects between fp32[4] and i32[4]: operand types differ"},

		{"fp32 to fp16", func() (Type, error) { return checked(CheckCast(f32x4, Tile(F16, 4), false)) }, Type{}, ""},
		{"i1 to fp64", func() (Type, error) { return checked(CheckCast(Scalar(I1), Scalar(F64), false)) }, Type{}, ""},
		{"pointer to i64", func() (Type, error) { return checked(CheckCast(ptrF32x, Tile(I64, 4), false)) }, Type{}, ""},
		{"i64 to pointer", func() (Type, error) { return checked(CheckCast(Scalar(I64), PtrTo(F16), false)) }, Type{}, ""},
		{"bitcast fp32 to i32", func() (Type, error) { return checked(CheckCast(f32x4, i32x4, true)) }, Type{}, ""},
		{"bitcast fp16 to bf16", func() (Type, error) { return checked(CheckCast(Scalar(F16), Scalar(BF16), true)) }, Type{}, ""},
		{"cast of another shape", func() (Type, error) { return checked(CheckCast(f32x4, Tile(I32, 8), false)) }, Type{},
			"cast changes the shape: fp32[4] to i32[8]"},
		{"pointer to i32", func() (Type, error) { return checked(CheckCast(ptrF32, Scalar(I32), false)) }, Type{},
			"pointer casts go to or from i64 only: *fp32 to i32"},
		{"u64 to pointer", func() (Type, error) { return checked(CheckCast(Scalar(U64), ptrF32, false)) }, Type{},
			"pointer casts go to or from i64 only: u64 to *fp32"},
		{"pointer to pointer", func() (Type, error) { return checked(CheckCast(ptrF32, PtrTo(F16), false)) }, Type{},
			"pointer casts go to or from i64 only: *fp32 to *fp16"},
		{"bitcast of a pointer", func() (Type, error) { return checked(CheckCast(ptrF32, Scalar(I64), true)) }, Type{},
			"pointer casts go to or from i64 only: *fp32 to i64"},
		{"bitcast fp32 to i64", func() (Type, error) { return checked(CheckCast(Scalar(F32), Scalar(I64), true)) }, Type{},
			"bitcast between different widths: fp32 to i64"},
		{"bitcast i1 to i8", func() (Type, error) { return checked(CheckCast(Scalar(I1), Scalar(I8), true)) }, Type{},
			"bitcast between different widths: i1 to i8"},
	})
}

func TestMemoryRules(t *testing.T) {
	f16x4, ptrF16x := Tile(F16, 4), Type{Elem: F16, Ptr: true, Shape: []int{4}}
	ptrI32 := PtrTo(I32)
	runTypeRules(t, []typeRule{
		{"ptr_add i32", func() (Type, error) { return PtrAddResult(ptrF32x, i32x4) }, ptrF32x, ""},
		{"ptr_add i64 scalar", func() (Type, error) { return PtrAddResult(ptrF32, Scalar(I64)) }, ptrF32, ""},
		{"ptr_add to a value", func() (Type, error) { return PtrAddResult(f32x4, i32x4) }, Type{}, "ptr_add on fp32[4], not a pointer"},
		{"ptr_add of i16", func() (Type, error) { return PtrAddResult(ptrF32x, Tile(I16, 4)) }, Type{},
			"ptr_add offset i16[4]: want i32 or i64 of the shape of *fp32[4]"},
		{"ptr_add of u64", func() (Type, error) { return PtrAddResult(ptrF32, Scalar(U64)) }, Type{},
			"ptr_add offset u64: want i32 or i64 of the shape of *fp32"},
		{"ptr_add of another shape", func() (Type, error) { return PtrAddResult(ptrF32x, Tile(I32, 8)) }, Type{},
			"ptr_add offset i32[8]: want i32 or i64 of the shape of *fp32[4]"},
		{"ptr_add of a pointer", func() (Type, error) { return PtrAddResult(ptrF32, PtrTo(I32)) }, Type{},
			"ptr_add offset *i32: want i32 or i64 of the shape of *fp32"},

		{"load", func() (Type, error) { return LoadResult(ptrF16x) }, f16x4, ""},
		{"masked load", func() (Type, error) { return LoadResult(ptrF16x, i1x4, f16x4) }, f16x4, ""},
		{"load of a value", func() (Type, error) { return LoadResult(f16x4) }, Type{}, "load from fp16[4], not a pointer"},
		{"load with other of another dtype", func() (Type, error) { return LoadResult(ptrF16x, i1x4, f32x4) }, Type{},
			"load mask i1[4] / other fp32[4] do not match fp16[4]"},
		{"load with a scalar mask", func() (Type, error) { return LoadResult(ptrF16x, Scalar(I1), f16x4) }, Type{},
			"load mask i1 / other fp16[4] do not match fp16[4]"},
		{"load with two operands", func() (Type, error) { return LoadResult(ptrF16x, i1x4) }, Type{},
			"load takes (ptr) or (ptr, mask, other), got 2 operands"},

		{"store", func() (Type, error) { return checked(CheckStore(ptrF32x, f32x4)) }, Type{}, ""},
		{"masked store", func() (Type, error) { return checked(CheckStore(ptrF32x, f32x4, i1x4)) }, Type{}, ""},
		{"store of i32 into fp32", func() (Type, error) { return checked(CheckStore(ptrF32, Scalar(I32))) }, Type{}, "store i32 into *fp32"},
		{"store of another shape", func() (Type, error) { return checked(CheckStore(ptrF32x, Tile(F32, 8))) }, Type{},
			"store fp32[8] into *fp32[4]"},
		{"store of a pointer", func() (Type, error) { return checked(CheckStore(PtrTo(F32), ptrF32)) }, Type{}, "store *fp32 into *fp32"},
		{"store with an i32 mask", func() (Type, error) { return checked(CheckStore(ptrF32x, f32x4, i32x4)) }, Type{},
			"store mask i32[4] does not match *fp32[4]"},
		{"store of nothing", func() (Type, error) { return checked(CheckStore(ptrF32x)) }, Type{},
			"store takes (ptr, value) or (ptr, value, mask), got 1 operands"},

		{"atomic add fp32", func() (Type, error) { return AtomicResult(AtomicRMW, AtomicAdd, ptrF32x, f32x4, i1x4) }, f32x4, ""},
		{"atomic xor i32", func() (Type, error) { return AtomicResult(AtomicRMW, AtomicXor, ptrI32, Scalar(I32), Scalar(I1)) }, Scalar(I32), ""},
		{"atomic cas i32", func() (Type, error) { return AtomicResult(AtomicCAS, 0, ptrI32, Scalar(I32), Scalar(I32)) }, Scalar(I32), ""},
		{"atomic and fp32", func() (Type, error) { return AtomicResult(AtomicRMW, AtomicAnd, ptrF32x, f32x4, i1x4) }, Type{},
			"atomic and takes integers, got *fp32[4]"},
		{"atomic kind 7", func() (Type, error) { return AtomicResult(AtomicRMW, 7, ptrF32x, f32x4, i1x4) }, Type{}, "bad atomic kind 7"},
		{"atomic add of i32 into fp32", func() (Type, error) { return AtomicResult(AtomicRMW, AtomicAdd, ptrF32x, i32x4, i1x4) }, Type{},
			"atomic_rmw on *fp32[4] with i32[4]"},
		{"atomic add with a scalar mask", func() (Type, error) { return AtomicResult(AtomicRMW, AtomicAdd, ptrF32x, f32x4, Scalar(I1)) }, Type{},
			"third operand i1, want i1[4]"},
		{"atomic cas with an fp32 value", func() (Type, error) { return AtomicResult(AtomicCAS, 0, ptrI32, Scalar(I32), Scalar(F32)) }, Type{},
			"third operand fp32, want i32"},
		{"atomic on a value", func() (Type, error) { return AtomicResult(AtomicCAS, 0, Scalar(I32), Scalar(I32), Scalar(I32)) }, Type{},
			"atomic_cas on i32 with i32"},
		{"load as an atomic", func() (Type, error) { return AtomicResult(Load, 0, ptrI32, Scalar(I32), Scalar(I32)) }, Type{},
			"load is not an atomic op"},
		{"atomic with two operands", func() (Type, error) { return AtomicResult(AtomicRMW, AtomicAdd, ptrI32, Scalar(I32)) }, Type{},
			"atomic_rmw takes 3 operands, got 2"},
	})
	for kind, ints := range map[int64]bool{AtomicAdd: false, AtomicMax: false, AtomicMin: false, AtomicXchg: false,
		AtomicAnd: true, AtomicOr: true, AtomicXor: true} {
		for _, d := range []DType{I1, I32, U64, F16, F32, F64} {
			if got, want := AtomicTakesDType(kind, d), !ints || d.IsInt(); got != want {
				t.Errorf("AtomicTakesDType(%s, %s) = %v, want %v", atomicNames[kind], d, got, want)
			}
		}
	}
	if AtomicTakesDType(7, I32) || AtomicTakesDType(AtomicAdd, Invalid) {
		t.Error("AtomicTakesDType accepts a bad kind or dtype")
	}
}

func TestDotRules(t *testing.T) {
	// The dtype table, as the kernel language states it: fp16/bf16/fp32 operands accumulate
	// in fp32 (fp16 ones also in fp16), int8 ones in int32; nothing else.
	acc := map[DType][]DType{I8: {I32}, F16: {F32, F16}, BF16: {F32}, F32: {F32}}
	all := []DType{I1, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64}
	for _, in := range all {
		def, ok := DotAccumulator(in)
		if want := acc[in]; ok != (want != nil) || (ok && def != want[0]) {
			t.Errorf("DotAccumulator(%s) = %s, %v; want %v", in, def, ok, want)
		}
		for _, c := range all {
			if got, want := DotAccumulates(in, c), slices.Contains(acc[in], c); got != want {
				t.Errorf("DotAccumulates(%s, %s) = %v, want %v", in, c, got, want)
			}
		}
	}
	a, b, c := Tile(F16, 16, 8), Tile(F16, 8, 32), Tile(F32, 16, 32)
	runTypeRules(t, []typeRule{
		{"fp16 into fp32", func() (Type, error) { return DotResult(a, b, c) }, c, ""},
		{"fp16 into fp16", func() (Type, error) { return DotResult(a, b, Tile(F16, 16, 32)) }, Tile(F16, 16, 32), ""},
		{"batched i8", func() (Type, error) { return DotResult(Tile(I8, 2, 16, 8), Tile(I8, 2, 8, 32), Tile(I32, 2, 16, 32)) }, Tile(I32, 2, 16, 32), ""},
		{"inner dims differ", func() (Type, error) { return DotResult(a, Tile(F16, 16, 32), c) }, Type{},
			"dot fp16[16,8] x fp16[16,32] + fp32[16,32]"},
		{"accumulator shape", func() (Type, error) { return DotResult(a, b, Tile(F32, 32, 16)) }, Type{},
			"dot fp16[16,8] x fp16[8,32] + fp32[32,16]"},
		{"batches differ", func() (Type, error) { return DotResult(Tile(F32, 2, 16, 8), Tile(F32, 3, 8, 32), Tile(F32, 2, 16, 32)) }, Type{},
			"dot fp32[2,16,8] x fp32[3,8,32] + fp32[2,16,32]"},
		{"vectors", func() (Type, error) { return DotResult(Tile(F32, 8), Tile(F32, 8), Scalar(F32)) }, Type{},
			"dot fp32[8] x fp32[8] + fp32"},
		{"operand dtypes differ", func() (Type, error) { return DotResult(a, Tile(BF16, 8, 32), c) }, Type{},
			"dot fp16[16,8] x bf16[8,32] + fp32[16,32]: dot takes fp16, bf16 or fp32 operands accumulating in fp32 (fp16 also in fp16), or i8 in i32"},
		{"fp64", func() (Type, error) { return DotResult(Tile(F64, 16, 16), Tile(F64, 16, 16), Tile(F64, 16, 16)) }, Type{},
			"dot fp64[16,16] x fp64[16,16] + fp64[16,16]: dot takes fp16, bf16 or fp32 operands accumulating in fp32 (fp16 also in fp16), or i8 in i32"},
		{"bf16 into bf16", func() (Type, error) { return DotResult(Tile(BF16, 16, 16), Tile(BF16, 16, 16), Tile(BF16, 16, 16)) }, Type{},
			"dot bf16[16,16] x bf16[16,16] + bf16[16,16]: dot takes fp16, bf16 or fp32 operands accumulating in fp32 (fp16 also in fp16), or i8 in i32"},
		{"pointer accumulator", func() (Type, error) { return DotResult(a, b, Type{Elem: F32, Ptr: true, Shape: []int{16, 32}}) }, Type{},
			"dot fp16[16,8] x fp16[8,32] + *fp32[16,32]"},
	})
}

func TestShapeAndLeafRules(t *testing.T) {
	x := Tile(F32, 4, 8)
	runTypeRules(t, []typeRule{
		{"program_id 2", func() (Type, error) { return GridQueryResult(2) }, Scalar(I32), ""},
		{"program_id 3", func() (Type, error) { return GridQueryResult(3) }, Type{}, "axis 3, want 0..2"},
		{"program_id -1", func() (Type, error) { return GridQueryResult(-1) }, Type{}, "axis -1, want 0..2"},
		{"arange 4..12", func() (Type, error) { return ArangeResult(4, 12) }, Tile(I32, 8), ""},
		{"empty arange", func() (Type, error) { return ArangeResult(4, 4) }, Type{}, "arange(4, 4) is empty"},

		{"splat", func() (Type, error) { return checked(CheckSplat(Scalar(F32), f32x4)) }, Type{}, ""},
		{"splat a pointer", func() (Type, error) { return checked(CheckSplat(ptrF32, ptrF32x)) }, Type{}, ""},
		{"splat a tile", func() (Type, error) { return checked(CheckSplat(f32x4, f32x4)) }, Type{}, "splat fp32[4] to fp32[4]"},
		{"splat to a scalar", func() (Type, error) { return checked(CheckSplat(Scalar(F32), Scalar(F32))) }, Type{}, "splat fp32 to fp32"},
		{"splat with a cast", func() (Type, error) { return checked(CheckSplat(Scalar(F32), i32x4)) }, Type{}, "splat fp32 to i32[4]"},

		{"broadcast rows", func() (Type, error) { return checked(CheckBroadcast(Tile(F32, 1, 8), x)) }, Type{}, ""},
		{"broadcast to another dim", func() (Type, error) { return checked(CheckBroadcast(Tile(I32, 4), Tile(I32, 8))) }, Type{},
			"broadcast i32[4] to i32[8]"},
		{"broadcast to another rank", func() (Type, error) { return checked(CheckBroadcast(Tile(F32, 8), x)) }, Type{},
			"broadcast fp32[8] to fp32[4,8]"},
		{"broadcast with a cast", func() (Type, error) { return checked(CheckBroadcast(Tile(F32, 1, 8), Tile(F16, 4, 8))) }, Type{},
			"broadcast fp32[1,8] to fp16[4,8]"},

		{"reshape", func() (Type, error) { return checked(CheckReshape(x, Tile(F32, 32))) }, Type{}, ""},
		{"reshape to fewer elements", func() (Type, error) { return checked(CheckReshape(x, Tile(F32, 16))) }, Type{},
			"reshape fp32[4,8] to fp32[16]"},
		{"reshape with a cast", func() (Type, error) { return checked(CheckReshape(x, Tile(I32, 32))) }, Type{},
			"reshape fp32[4,8] to i32[32]"},

		{"expand_dims 0", func() (Type, error) { return ExpandDimsResult(f32x4, 0) }, Tile(F32, 1, 4), ""},
		{"expand_dims 1", func() (Type, error) { return ExpandDimsResult(f32x4, 1) }, Tile(F32, 4, 1), ""},
		{"expand_dims of a scalar", func() (Type, error) { return ExpandDimsResult(ptrF32, 0) }, Type{Elem: F32, Ptr: true, Shape: []int{1}}, ""},
		{"expand_dims 2 of a vector", func() (Type, error) { return ExpandDimsResult(f32x4, 2) }, Type{},
			"expand_dims axis 2 out of range for fp32[4]"},
		{"expand_dims -1", func() (Type, error) { return ExpandDimsResult(f32x4, -1) }, Type{},
			"expand_dims axis -1 out of range for fp32[4]"},

		{"transpose", func() (Type, error) { return PermuteResult(x, []int{1, 0}) }, Tile(F32, 8, 4), ""},
		{"permute 3-D", func() (Type, error) { return PermuteResult(Tile(I8, 2, 3, 4), []int{2, 0, 1}) }, Tile(I8, 4, 2, 3), ""},
		{"repeated dim", func() (Type, error) { return PermuteResult(x, []int{0, 0}) }, Type{}, "permute order [0 0] does not fit fp32[4,8]"},
		{"short order", func() (Type, error) { return PermuteResult(x, []int{1}) }, Type{}, "permute order [1] does not fit fp32[4,8]"},
		{"dim out of range", func() (Type, error) { return PermuteResult(x, []int{0, 2}) }, Type{}, "permute order [0 2] does not fit fp32[4,8]"},

		{"i64 bounds", func() (Type, error) { return checked(CheckLoopBounds(Scalar(I64), Scalar(I64), Scalar(I64))) }, Type{}, ""},
		{"mixed bounds", func() (Type, error) { return checked(CheckLoopBounds(Scalar(I32), Scalar(I64), Scalar(I32))) }, Type{},
			"bounds i32, i64, i32 must be scalars of one integer dtype"},
		{"float bounds", func() (Type, error) { return checked(CheckLoopBounds(Scalar(F32), Scalar(F32), Scalar(F32))) }, Type{},
			"bounds fp32, fp32, fp32 must be scalars of one integer dtype"},
		{"tile bounds", func() (Type, error) { return checked(CheckLoopBounds(i32x4, i32x4, i32x4)) }, Type{},
			"bounds i32[4], i32[4], i32[4] must be scalars of one integer dtype"},
		{"pointer bounds", func() (Type, error) { return checked(CheckLoopBounds(PtrTo(I32), PtrTo(I32), PtrTo(I32))) }, Type{},
			"bounds *i32, *i32, *i32 must be scalars of one integer dtype"},
	})
}

func TestReduceRules(t *testing.T) {
	x, idx := Tile(F32, 4, 8), Tile(I32, 4, 8)
	cases := []struct {
		name       string
		kind, axis int
		keep       bool
		args       []Type
		want       []Type
		err        string
	}{
		{"sum over rows", ReduceSum, 1, false, []Type{x}, []Type{Tile(F32, 4)}, ""},
		{"max keeping dims", ReduceMax, 0, true, []Type{x}, []Type{Tile(F32, 1, 8)}, ""},
		{"sum of a vector", ReduceSum, 0, false, []Type{Tile(I64, 8)}, []Type{Scalar(I64)}, ""},
		{"argmax is i32", ReduceArgMax, 1, false, []Type{Tile(F16, 4, 8)}, []Type{Tile(I32, 4)}, ""},
		{"argmin keeping dims", ReduceArgMin, 0, true, []Type{Tile(F64, 4, 8)}, []Type{Tile(I32, 1, 8)}, ""},
		{"custom of two inputs", ReduceCustom, 0, false, []Type{x, idx}, []Type{Tile(F32, 8), Tile(I32, 8)}, ""},
		{"axis 2", ReduceSum, 2, false, []Type{x}, nil, "axis 2 out of range for fp32[4,8]"},
		{"axis of a scalar", ReduceSum, 0, false, []Type{Scalar(F32)}, nil, "axis 0 out of range for fp32"},
		{"kind 9", 9, 0, false, []Type{x}, nil, "unknown reduce kind 9"},
		{"sum of two inputs", ReduceSum, 0, false, []Type{x, x}, nil, "built-in reductions take one input, got 2"},
		{"custom of nothing", ReduceCustom, 0, false, nil, nil, "a custom reduction takes at least one input"},
		{"custom of two shapes", ReduceCustom, 0, false, []Type{x, Tile(I32, 8, 4)}, nil, "inputs must share one non-pointer shape"},
		{"sum of pointers", ReduceSum, 0, false, []Type{{Elem: F32, Ptr: true, Shape: []int{4}}}, nil, "inputs must share one non-pointer shape"},
	}
	for _, c := range cases {
		got, err := ReduceResult(c.kind, c.axis, c.keep, c.args...)
		switch {
		case c.err != "":
			if err == nil || err.Error() != c.err {
				t.Errorf("%s: %v, %v; want the refusal %q", c.name, got, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case len(got) != len(c.want):
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		default:
			for i := range got {
				if !got[i].Equal(c.want[i]) {
					t.Errorf("%s: result %d is %s, want %s", c.name, i, got[i], c.want[i])
				}
			}
		}
	}
}

// TestCheckInstr covers what CheckInstr adds to the type rules: the operand, result and
// region counts per op, derived results compared with the instruction's, the arguments and
// terminators of regions, and the position and op in the error.
func TestCheckInstr(t *testing.T) {
	f := &Func{Name: "k"}
	pos := Pos{File: "k.py", Line: 3, Col: 7}
	val := func(t Type) *Value { return f.NewValue(t, "") }
	instr := func(op Op, results []Type, args ...*Value) *Instr {
		in := &Instr{Op: op, Args: args, Pos: pos}
		for _, r := range results {
			in.Results = append(in.Results, val(r))
		}
		return in
	}
	// region makes a block with arguments of types args ending with term(values...).
	region := func(args []Type, term Op, values ...*Value) *Block {
		b := f.NewBlock(args...)
		b.Instrs = append(b.Instrs, &Instr{Op: term, Args: values})
		return b
	}
	i32, f32, i1 := Scalar(I32), Scalar(F32), Scalar(I1)
	n, x, c := val(i32), val(f32x4), val(i1)

	withRegion := func(in *Instr, rs ...*Block) *Instr { in.Regions = rs; return in }
	withInt := func(in *Instr, k int64) *Instr { in.Int = k; return in }
	withInts := func(in *Instr, k ...int) *Instr { in.Ints = k; return in }

	iterBody := region([]Type{i32, f32x4}, Yield, x)
	forOK := withRegion(instr(For, []Type{f32x4}, n, n, n, x), iterBody)
	cases := []struct {
		name string
		in   *Instr
		err  string // "" accepted; else the whole error, position and op included
	}{
		{"add", instr(Add, []Type{f32x4}, x, x), ""},
		{"for", forOK, ""},
		{"if", withRegion(instr(If, []Type{i32}, c), region(nil, Yield, n), region(nil, Yield, n)), ""},
		{"while", withRegion(instr(While, []Type{i32}, n), region([]Type{i32}, Condition, c), region([]Type{i32}, Yield, n)), ""},
		{"custom reduce", withRegion(withInts(instr(Reduce, []Type{f32}, x), ReduceCustom, 0), region([]Type{f32, f32}, Yield, val(f32))), ""},
		{"print of anything", instr(Print, nil, x, n, c), ""},

		{"nil", nil, "nil instruction"},
		{"unknown op", instr(Op(200), nil), "k.py:3:7: op?: unknown op"},
		{"invalid op", instr(OpInvalid, nil), "k.py:3:7: invalid: unknown op"},
		{"add of three", instr(Add, []Type{f32x4}, x, x, x), "k.py:3:7: add: has 3 operands, want [2]"},
		{"load of two", instr(Load, []Type{f32x4}, x, x), "k.py:3:7: load: has 2 operands, want [1 3]"},
		{"store with a result", instr(Store, []Type{f32x4}, x, x), "k.py:3:7: store: has 1 results, want none"},
		{"const of two", instr(Const, []Type{f32, f32}), "k.py:3:7: const: has 2 results, want 1"},
		{"barrier with an operand", instr(Barrier, nil, n), "k.py:3:7: barrier: has 1 operands, want [0]"},
		{"neg with a region", withRegion(instr(Neg, []Type{i32}, n), region(nil, Yield)), "k.py:3:7: neg: takes no regions"},
		{"for with two regions", withRegion(instr(For, nil, n, n, n), region([]Type{i32}, Yield), region([]Type{i32}, Yield)),
			"k.py:3:7: for: has 2 regions, want 1"},
		{"nil operand", instr(Add, []Type{f32x4}, x, nil), "k.py:3:7: add: operand 1 is nil"},
		{"nil result", &Instr{Op: Neg, Args: []*Value{n}, Results: []*Value{nil}, Pos: pos}, "k.py:3:7: neg: result 0 is nil"},
		{"pointer constant", instr(Const, []Type{ptrF32}), "k.py:3:7: const: pointer constants are not allowed"},
		{"arange without Ints", withInts(instr(Arange, []Type{i32x4}), 0), "k.py:3:7: arange: want Ints [start, end], got [0]"},
		{"arange of 8 into 4", withInts(instr(Arange, []Type{i32x4}), 0, 8), "k.py:3:7: arange: result has type i32[4], want i32[8]"},
		{"cmp into fp32", withInt(instr(Cmp, []Type{f32x4}, x, x), CmpLT), "k.py:3:7: cmp: result has type fp32[4], want i1[4]"},
		{"add into i32", instr(Add, []Type{i32x4}, x, x), "k.py:3:7: add: result has type i32[4], want fp32[4]"},
		{"rule refusal", instr(Exp, []Type{i32}, n), "k.py:3:7: exp: takes fp32 or fp64, got i32"},
		{"bitcast attribute", withInt(instr(Cast, []Type{Scalar(I64)}, n), 1), "k.py:3:7: cast: bitcast between different widths: i32 to i64"},
		{"program_id attribute", withInt(instr(ProgramID, []Type{i32}), 5), "k.py:3:7: program_id: axis 5, want 0..2"},

		{"for bounds", withRegion(instr(For, nil, n, c, n), region([]Type{i32}, Yield)),
			"k.py:3:7: for: bounds i32, i1, i32 must be scalars of one integer dtype"},
		{"for without bounds", withRegion(instr(For, nil, n, n), region([]Type{i32}, Yield)),
			"k.py:3:7: for: for takes lb, ub, step and the initial values"},
		{"for results", withRegion(instr(For, []Type{i32}, n, n, n, x), iterBody),
			"k.py:3:7: for: results 0 has type i32, want fp32[4]"},
		{"for body without iv", withRegion(instr(For, []Type{f32x4}, n, n, n, x), region([]Type{f32x4}, Yield, x)),
			"k.py:3:7: for: body arguments must be (iv, iter...)"},
		{"for body argument", withRegion(instr(For, []Type{f32x4}, n, n, n, x), region([]Type{i32, i32x4}, Yield, x)),
			"k.py:3:7: for: body arguments 0 has type i32[4], want fp32[4]"},
		{"for yield", withRegion(instr(For, []Type{f32x4}, n, n, n, x), region([]Type{i32, f32x4}, Yield, n)),
			"k.py:3:7: for: yield value 0 has type i32, want fp32[4]"},
		{"for yield count", withRegion(instr(For, []Type{f32x4}, n, n, n, x), region([]Type{i32, f32x4}, Yield)),
			"k.py:3:7: for: yield has 0 values, want 1"},
		{"if on i32", withRegion(instr(If, nil, n), region(nil, Yield), region(nil, Yield)),
			"k.py:3:7: if: condition must be an i1 scalar, got i32"},
		{"if region with arguments", withRegion(instr(If, nil, c), region([]Type{i32}, Yield), region(nil, Yield)),
			"k.py:3:7: if: if regions take no arguments"},
		{"if without terminator", withRegion(instr(If, nil, c), &Block{}, region(nil, Yield)),
			"k.py:3:7: if: region block has no terminator"},
		{"if ending with condition", withRegion(instr(If, nil, c), region(nil, Yield), region(nil, Condition, c)),
			"k.py:3:7: if: region ends with condition, want yield"},
		{"while condition on i32", withRegion(instr(While, []Type{i32}, n), region([]Type{i32}, Condition, n), region([]Type{i32}, Yield, n)),
			"k.py:3:7: while: condition takes one i1 scalar"},
		{"while region arguments", withRegion(instr(While, []Type{i32}, n), region([]Type{f32}, Condition, c), region([]Type{i32}, Yield, n)),
			"k.py:3:7: while: region arguments 0 has type fp32, want i32"},
		{"while results", withRegion(instr(While, nil, n), region([]Type{i32}, Condition, c), region([]Type{i32}, Yield, n)),
			"k.py:3:7: while: 0 results, want 1"},
		{"reduce without Ints", instr(Reduce, []Type{f32}, x), "k.py:3:7: reduce: reduce takes Ints [kind, keep_dims], got []"},
		{"reduce results", withInts(instr(Reduce, []Type{f32, f32}, x), ReduceSum, 0), "k.py:3:7: reduce: 1 inputs but 2 results"},
		{"reduce result type", withInts(instr(Reduce, []Type{Scalar(F16)}, x), ReduceSum, 0),
			"k.py:3:7: reduce: result 0 has type fp16, want fp32"},
		{"built-in reduce with a region", withRegion(withInts(instr(Reduce, []Type{f32}, x), ReduceMax, 0), region([]Type{f32, f32}, Yield, val(f32))),
			"k.py:3:7: reduce: built-in reductions take no region"},
		{"custom reduce without region", withInts(instr(Reduce, []Type{f32}, x), ReduceCustom, 0),
			"k.py:3:7: reduce: a custom reduction has one combine region"},
		{"combine arguments", withRegion(withInts(instr(Reduce, []Type{f32}, x), ReduceCustom, 0), region([]Type{f32, i32}, Yield, val(f32))),
			"k.py:3:7: reduce: combine arguments 1 has type i32, want fp32"},
		{"combine yield", withRegion(withInts(instr(Reduce, []Type{f32}, x), ReduceCustom, 0), region([]Type{f32, f32}, Yield, x)),
			"k.py:3:7: reduce: yield value 0 has type fp32[4], want fp32"},
	}
	for _, c := range cases {
		err := CheckInstr(c.in)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("%s: %v, want the refusal\n  %q", c.name, err, c.err)
		}
		if _, ok := err.(*VerifyError); err != nil && !ok {
			t.Errorf("%s: a %T, not a *VerifyError", c.name, err)
		}
	}
}
