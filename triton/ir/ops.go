package ir

// Op is an operation code. The specializer makes every implicit conversion explicit, so the
// backends never promote or broadcast: element-wise operands have exactly equal types (same
// dtype, same shape) unless an op says otherwise. "T" below is that common type. rules.go
// states the rules below as functions (one per op or family) and Verify applies them.
type Op uint8

const (
	OpInvalid Op = iota

	// Leaves.
	Const       // () -> T. A scalar, or a tile splat of one value. Int for integer/i1 dtypes, Float for floats.
	ProgramID   // () -> i32. Int = axis (0..2).
	NumPrograms // () -> i32. Int = axis.
	Arange      // () -> i32[end-start]. Ints = [start, end].

	// Shape ops. The result type carries the new shape.
	Splat      // (scalar s) -> tile of s's element type.
	Broadcast  // (x) -> same rank, each dim equal to x's or x's is 1.
	ExpandDims // (x) -> rank+1 with a 1 at axis Int.
	Reshape    // (x) -> same number of elements, row-major order kept.
	Permute    // (x) -> dims permuted: result dim i = x dim Ints[i].

	// Element-wise arithmetic on T -> T (ints and floats unless noted).
	Add
	Sub
	Mul
	Div // floats: IEEE division. ints: C division, truncating toward zero (division by zero: backend-defined, never a crash).
	Rem // floats: fmod (sign of the dividend). ints: C remainder (sign of the dividend).
	Min // floats: minnum (a NaN operand is ignored), or NaN-propagating when Int is PropagateNaN. ints: by signedness.
	Max // floats: maxnum, or NaN-propagating when Int is PropagateNaN (tl.maximum(..., propagate_nan=tl.PropagateNan.ALL)).
	And // ints and i1
	Or
	Xor
	Shl   // ints; shift count taken modulo the width is not promised: counts >= width are backend-defined
	Shr   // ints: arithmetic for signed, logical for unsigned
	MulHi // ints: the high half of the full-width product (unsigned for unsigned dtypes); used by Philox
	Neg   // (x) -> T
	Not   // (x) -> T. ints: bitwise complement; i1: logical not.
	Abs   // (x) -> T

	// Transcendental and rounding functions on fp32/fp64 (T -> T).
	Exp
	Exp2
	Log
	Log2
	Sqrt
	Rsqrt
	Sin
	Cos
	Erf
	Floor
	Ceil
	FMA // (a, b, c) -> a*b+c with one rounding.

	Cmp    // (a, b) -> i1 with a's shape. Int = predicate (CmpEQ...). Signedness from the dtype; float compares are ordered except CmpNE (unordered: NaN != x is true).
	Select // (cond i1, a T, b T) -> T. cond has T's shape.
	Cast   // (x) -> the result type (same shape). Int = 1 for a bitcast (equal widths). float->float rounds to nearest even; float->int truncates toward zero; int->int sign-/zero-extends by source signedness or wraps; int->float rounds to nearest; ->i1 is != 0; i1->int is 0/1. Pointer<->i64 casts are allowed (address arithmetic in bytes is not).

	// Memory. Pointers count in elements of their pointee.
	PtrAdd // (p *E[S], off int[S]) -> *E[S]; off is i32 or i64, sign-extended.
	Load   // (p *E[S]) or (p *E[S], mask i1[S], other E[S]) -> E[S]. Masked-off lanes are not touched and yield other. Int bit 0: volatile (a hint).
	Store  // (p *E[S], v E[S]) or (p, v, mask i1[S]) -> (). Masked-off lanes are untouched.

	AtomicRMW // (p *E[S], v E[S], mask i1[S]) -> E[S] old values; Int = atomic kind (AtomicAdd...). Masked lanes do nothing and yield 0.
	AtomicCAS // (p *E[S], cmp E[S], v E[S]) -> E[S] old values.

	// Dot: (a A[M,K], b A[K,N], acc C[M,N]) -> C[M,N], or batched with a leading dim B on all
	// three. A is fp16/bf16/fp32 with C fp32 (or fp16 when asked), or int8 with C i32. Int = Precision.
	Dot

	// Reduce: (x_1..x_k, all of shape S) -> k results of S without dim Int (axis), or with a 1
	// there when Ints[1] == 1 (keep_dims). Ints[0] is the kind:
	//   ReduceSum/Max/Min: k = 1, result dtype = x's.
	//   ReduceArgMax/ArgMin: k = 1, result i32 (the first index of the extreme; NaN as maxnum).
	//   ReduceCustom: Regions[0] is the combine function: 2k scalar args (accumulated a_1..a_k,
	//   then next b_1..b_k), ending with Yield of k scalars.
	// A reduction over all elements is a Reshape to 1-D followed by Reduce on axis 0. The order
	// of combination is unspecified (backends may use trees).
	Reduce

	Print   // (values...) -> (). Str = prefix. tl.device_print.
	Barrier // () -> (). tl.debug_barrier: no meaning on the CPU.

	// Structured control flow.
	// For: (lb, ub, step, init_1..init_k) -> k results. lb/ub/step are scalars of one int dtype.
	//   Regions[0]: args (iv, iter_1..iter_k), ends with Yield(next_1..next_k). Runs while iv < ub
	//   for step > 0 (iv > ub for step < 0), like Python's range.
	For
	// If: (cond i1 scalar) -> k results. Regions[0] then, Regions[1] else; each ends with Yield of k values.
	If
	// While: (init_1..init_k) -> k results. Regions[0] is the condition block: args iter_1..iter_k,
	//   ends with Condition(cond i1 scalar). Regions[1] is the body: args iter_1..iter_k, ends with
	//   Yield(next_1..next_k). The results are the iter values when the condition is false.
	While
	Yield     // (values...) terminator of a region block.
	Condition // (cond) terminator of a While condition block.

	// Assert: (cond i1, scalar or tile) -> (). Str = message. tl.device_assert: the run fails
	// where cond is false (the specializer folds a mask into cond). Last, so that the
	// numbers of the ops above, which encoded kernels hold, stay as they were.
	Assert

	numOps
)

// Cmp predicates (Instr.Int).
const (
	CmpEQ int64 = iota
	CmpNE
	CmpLT
	CmpLE
	CmpGT
	CmpGE
)

// Reduce kinds (Instr.Ints[0]); Instr.Ints[1] is 1 for keep_dims.
const (
	ReduceSum int = iota
	ReduceMax
	ReduceMin
	ReduceArgMax
	ReduceArgMin
	ReduceCustom
)

// Atomic kinds (Instr.Int for AtomicRMW).
const (
	AtomicAdd int64 = iota
	AtomicMax
	AtomicMin
	AtomicAnd
	AtomicOr
	AtomicXor
	AtomicXchg
)

// Dot precisions (Instr.Int for Dot).
const (
	PrecisionIEEE int64 = iota
	PrecisionTF32
	PrecisionTF32x3
)

var opNames = [...]string{
	OpInvalid: "invalid",
	Const:     "const", ProgramID: "program_id", NumPrograms: "num_programs", Arange: "arange",
	Splat: "splat", Broadcast: "broadcast", ExpandDims: "expand_dims", Reshape: "reshape", Permute: "permute",
	Add: "add", Sub: "sub", Mul: "mul", Div: "div", Rem: "rem", Min: "min", Max: "max",
	And: "and", Or: "or", Xor: "xor", Shl: "shl", Shr: "shr", MulHi: "mulhi", Neg: "neg", Not: "not", Abs: "abs",
	Exp: "exp", Exp2: "exp2", Log: "log", Log2: "log2", Sqrt: "sqrt", Rsqrt: "rsqrt", Sin: "sin", Cos: "cos",
	Erf: "erf", Floor: "floor", Ceil: "ceil", FMA: "fma",
	Cmp: "cmp", Select: "select", Cast: "cast",
	PtrAdd: "ptr_add", Load: "load", Store: "store", AtomicRMW: "atomic_rmw", AtomicCAS: "atomic_cas",
	Dot: "dot", Reduce: "reduce", Print: "print", Barrier: "barrier", Assert: "assert",
	For: "for", If: "if", While: "while", Yield: "yield", Condition: "condition",
}

func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return "op?"
}

// IsElementwise reports ops whose operands and result all share one type (Cmp and Select
// excepted, see their docs), so a backend can apply them lane by lane.
func (o Op) IsElementwise() bool {
	return o >= Add && o <= FMA
}

// IsUnaryMath reports the one-operand transcendental and rounding ops.
func (o Op) IsUnaryMath() bool { return o >= Exp && o <= Ceil }

var cmpNames = [...]string{"eq", "ne", "lt", "le", "gt", "ge"}
var reduceNames = [...]string{"sum", "max", "min", "argmax", "argmin", "custom"}
var atomicNames = [...]string{"add", "max", "min", "and", "or", "xor", "xchg"}

// PropagateNaN in the Int of a floating-point Min or Max makes it return NaN when either
// operand is NaN (torch.maximum/torch.minimum, PTX max.NaN) instead of ignoring it; the sign
// of the result for two equal zeros is backend-defined.
const PropagateNaN = 1
