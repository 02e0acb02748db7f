package triton

import (
	"slices"
	"testing"

	"github.com/widejit/widejit/triton/ir"
)

// TestComputationType checks the promotion table of Triton's computation_type_impl (and of
// kernel-language.md) entry by entry.
func TestComputationType(t *testing.T) {
	cases := []struct {
		a      ir.DType
		aWeak  bool
		b      ir.DType
		bWeak  bool
		divMod bool
		want   ir.DType
	}{
		{ir.F16, false, ir.F32, false, false, ir.F32},
		{ir.F16, false, ir.F16, false, false, ir.F16},
		{ir.F16, false, ir.F16, false, true, ir.F32}, // / and % with fp16 compute in fp32
		{ir.BF16, false, ir.BF16, false, false, ir.BF16},
		{ir.BF16, false, ir.BF16, false, true, ir.F32},
		{ir.BF16, false, ir.F16, false, false, ir.F16},
		{ir.BF16, false, ir.I32, false, false, ir.F32},
		{ir.F16, false, ir.I64, false, false, ir.F16},
		{ir.F64, false, ir.F16, false, false, ir.F64},
		{ir.F32, false, ir.F64, false, false, ir.F64},
		{ir.I32, false, ir.I64, false, false, ir.I64},
		{ir.I8, false, ir.U8, false, false, ir.U8},   // mixed signedness: unsigned if at least as wide
		{ir.I16, false, ir.U8, false, false, ir.I16}, // else the signed type
		{ir.I8, false, ir.U16, false, false, ir.U16},
		{ir.U32, false, ir.I64, false, false, ir.I64},
		{ir.U64, false, ir.I64, false, false, ir.U64},
		{ir.I1, false, ir.I8, false, false, ir.I8},
		{ir.I1, false, ir.I1, false, false, ir.I1},
		// Weak Python scalars (literal dtypes: int -> i32, float -> fp32, bool -> i1).
		{ir.F16, false, ir.F32, true, false, ir.F16}, // fp16_tile * 0.5 stays fp16
		{ir.BF16, false, ir.F32, true, false, ir.BF16},
		{ir.F16, false, ir.I32, true, true, ir.F32}, // fp16_tile / 2 computes in fp32
		{ir.I8, false, ir.I32, true, false, ir.I8},
		{ir.U8, false, ir.I32, true, false, ir.U8},
		{ir.I32, false, ir.F32, true, false, ir.F32}, // a float scalar is a higher kind
		{ir.I64, false, ir.F32, true, false, ir.F32},
		{ir.F16, false, ir.F64, true, false, ir.F16}, // same kind: the tensor's dtype, even for fp64 literals
		{ir.I1, false, ir.I32, true, false, ir.I32},  // an int scalar is a higher kind than bool
		{ir.I32, true, ir.I1, false, false, ir.I32},
		{ir.F32, false, ir.I1, true, false, ir.F32},
	}
	for _, c := range cases {
		got, msg := computationType(c.a, c.aWeak, c.b, c.bWeak, c.divMod)
		if msg != "" || got != c.want {
			t.Errorf("computationType(%s weak=%v, %s weak=%v, divMod=%v) = %s %q, want %s", c.a, c.aWeak, c.b, c.bWeak, c.divMod, got, msg, c.want)
		}
	}
	if _, msg := computationType(ir.I32, false, ir.U32, false, true); msg == "" {
		t.Error("i32 / u32 must be rejected (different signedness)")
	}
}

func TestLiteralDType(t *testing.T) {
	cases := []struct {
		v    value
		want ir.DType
	}{
		{cInt(0), ir.I32}, {cInt(-1 << 31), ir.I32}, {cInt(1<<31 - 1), ir.I32}, {cInt(1 << 31), ir.U32},
		{cInt(1<<32 - 1), ir.U32}, {cInt(1 << 32), ir.I64}, {cInt(-1<<31 - 1), ir.I64},
		{cFloat(0.5), ir.F32}, {cFloat(0), ir.F32}, {cFloat(1e-40), ir.F64}, {cFloat(1e300), ir.F64},
		{cFloat(3.4e38), ir.F32}, {cBool(true), ir.I1},
	}
	for _, c := range cases {
		if got := literalDType(c.v); got != c.want {
			t.Errorf("literalDType(%v) = %s, want %s", c.v, got, c.want)
		}
	}
}

func TestBroadcastShapes(t *testing.T) {
	cases := []struct {
		a, b, want []int
		ok         bool
	}{
		{[]int{4, 1}, []int{1, 8}, []int{4, 8}, true},
		{[]int{8}, []int{4, 8}, []int{4, 8}, true},
		{nil, []int{4, 8}, []int{4, 8}, true},
		{[]int{2, 1, 8}, []int{4, 1}, []int{2, 4, 8}, true},
		{[]int{4}, []int{8}, nil, false},
		{[]int{4, 2}, []int{4}, nil, false},
	}
	for _, c := range cases {
		got, ok := broadcastShapes(c.a, c.b)
		if ok != c.ok || (ok && !slices.Equal(got, c.want)) {
			t.Errorf("broadcastShapes(%v, %v) = %v %v, want %v %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
}

// typeKernel asserts result dtypes of the language rules at compile time; a failing rule
// fails specialization with the line of the broken static_assert.
const typeKernel = `import triton
import triton.language as tl


@triton.jit
def types(h_ptr, b_ptr, f_ptr, i_ptr, c_ptr, u_ptr, n):
    offs = tl.arange(0, 16)
    h = tl.load(h_ptr + offs)
    b = tl.load(b_ptr + offs)
    f = tl.load(f_ptr + offs)
    i = tl.load(i_ptr + offs)
    c = tl.load(c_ptr + offs)
    u = tl.load(u_ptr + offs)
    tl.static_assert((h * 0.5).dtype == tl.float16)
    tl.static_assert((h + 1).dtype == tl.float16)
    tl.static_assert((h / 2).dtype == tl.float32)
    tl.static_assert((h / h).dtype == tl.float32)
    tl.static_assert((h % h).dtype == tl.float32)
    tl.static_assert((b * b).dtype == tl.bfloat16)
    tl.static_assert((b + h).dtype == tl.float16)
    tl.static_assert((h + f).dtype == tl.float32)
    tl.static_assert((i / i).dtype == tl.float32)
    tl.static_assert((i // 2).dtype == tl.int32)
    tl.static_assert((i * 1.5).dtype == tl.float32)
    tl.static_assert((c + 1).dtype == tl.int8)
    tl.static_assert((c + i).dtype == tl.int32)
    tl.static_assert((u + 1).dtype == tl.uint32)
    tl.static_assert((u + c).dtype == tl.uint32)
    tl.static_assert((n.to(tl.int64) + 2**40).dtype == tl.int64)
    tl.static_assert((i < 3).dtype == tl.int1)
    tl.static_assert((offs[:, None] + offs[None, :]).shape == (16, 16))
    tl.static_assert(tl.sum(c, axis=0).dtype == tl.int32)
    tl.static_assert(tl.sum(b, axis=0).dtype == tl.float32)
    tl.static_assert(tl.sum(h, axis=0).dtype == tl.float16)
    tl.static_assert(tl.max(h, axis=0).dtype == tl.float32)
    tl.static_assert(tl.max(c, axis=0).dtype == tl.int32)
    tl.static_assert(tl.argmax(h, axis=0).dtype == tl.int32)
    tl.static_assert(tl.sum(offs < 3, axis=0).dtype == tl.uint32)
    tl.static_assert(h.to(tl.float32).dtype == tl.float32)
    tl.static_assert(i.to(tl.float32, bitcast=True).dtype == tl.float32)
    tl.static_assert(tl.where(i > 0, 1.0, 0).dtype == tl.float32)
    tl.static_assert(tl.where(i > 0, h, 0).dtype == tl.float16)
    tl.static_assert(tl.maximum(h, 0.0).dtype == tl.float32)
    tl.static_assert(tl.minimum(h, h).dtype == tl.float16)
    tl.static_assert(tl.maximum(b, b).dtype == tl.float32)
    tl.static_assert(max(c, 1).dtype == tl.int32)
    tl.static_assert(tl.clamp(h, 0.0, 1.0).dtype == tl.float32)
    tl.static_assert(not isinstance(tl.maximum(1, 2), tl.constexpr) and max(1, 2) == 2)
    tl.static_assert(h_ptr.dtype.element_ty == tl.float16)
    tl.static_assert(h_ptr.type.element_ty == tl.float16)
    tl.static_assert((h_ptr + offs).dtype.element_ty == tl.float16)
    tl.static_assert(h.dtype.is_floating() and not i.dtype.is_floating())
    tl.static_assert(u.dtype.is_int_unsigned() and i.dtype.is_int_signed())
    tl.static_assert(tl.dot(tl.reshape(h, (4, 4)), tl.reshape(h, (4, 4))).dtype == tl.float32)
    tl.static_assert(tl.dot(tl.reshape(c, (4, 4)), tl.reshape(c, (4, 4))).dtype == tl.int32)
    tl.static_assert(tl.trans(tl.reshape(h, (2, 8))).shape == (8, 2))
    tl.static_assert(tl.dot(tl.reshape(h, (2, 2, 4)), tl.reshape(h, (2, 4, 2))).shape == (2, 2, 2))
    tl.static_assert(tl.permute(tl.reshape(h, (2, 4, 2)), (2, 0, 1)).shape == (2, 2, 4))
    tl.static_assert(tl.expand_dims(h, (0, 2)).shape == (1, 16, 1))
    tl.static_assert(tl.broadcast_to(h[None, :], (4, 16)).shape == (4, 16))
    tl.static_assert(tl.sum(tl.reshape(h, (4, 4)), keep_dims=True).shape == (1, 1))
    tl.static_assert(tl.sum(tl.reshape(h, (4, 4)), axis=-1, keep_dims=True).shape == (4, 1))
    tl.static_assert(tl.cdiv(10, 4) == 3 and -7 // 2 == -4 and -7 % 2 == 1 and 7 / 2 == 3.5)
    tl.static_assert(min(3, 5) == 3 and max(3, 5.5) == 5.5 and len((1, 2, 3)) == 3)
    tl.static_assert(float("inf") > 1e308 and int(3.9) == 3 and isinstance(3, int))
    tl.static_assert(getattr(tl, "float16") == tl.float16 and not isinstance(h, tl.constexpr))
    tl.static_assert(triton.next_power_of_2(100) == 128 and (1, 2) + (3,) == (1, 2, 3))
    tl.static_assert((True and 3) == 3 and (0 or "x") == "x" and None is None)
`

func TestTypeRulesInKernel(t *testing.T) {
	_, err := Specialize("types.py", typeKernel, "types", map[string]string{
		"h_ptr": "*fp16", "b_ptr": "*bf16", "f_ptr": "*fp32", "i_ptr": "*i32", "c_ptr": "*i8", "u_ptr": "*u32", "n": "i32",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
}
