package ir

import (
	"errors"
	"fmt"
	"slices"
)

// This file is the one statement of the IR's type rules: which operand types each op takes
// and which result type it yields. Verify applies them to every instruction (CheckInstr), the
// backends run only verified IR instead of re-deriving them, and the front end asks the
// dtype-level questions (TakesDType, DotAccumulator, ...) before it emits an op.
//
// A rule whose result follows from its operands is a XxxResult function that derives it; a
// rule whose result the producer chooses (a cast's target, a broadcast's shape) is a CheckXxx
// function of the operand and the chosen result. Their errors say what is wrong without the
// position; CheckInstr adds the instruction's position and op.

// opSig is the shape of an op's signature: the operand counts it takes (nil: any), its result
// count (-1: any) and its region count.
type opSig struct {
	args    []int
	results int
	regions int
}

var (
	sigLeaf    = opSig{args: []int{0}, results: 1}
	sigUnary   = opSig{args: []int{1}, results: 1}
	sigBinary  = opSig{args: []int{2}, results: 1}
	sigTernary = opSig{args: []int{3}, results: 1}
)

var opSigs = [numOps]opSig{
	Const: sigLeaf, ProgramID: sigLeaf, NumPrograms: sigLeaf, Arange: sigLeaf,
	Splat: sigUnary, Broadcast: sigUnary, ExpandDims: sigUnary, Reshape: sigUnary, Permute: sigUnary,
	Add: sigBinary, Sub: sigBinary, Mul: sigBinary, Div: sigBinary, Rem: sigBinary, Min: sigBinary, Max: sigBinary,
	And: sigBinary, Or: sigBinary, Xor: sigBinary, Shl: sigBinary, Shr: sigBinary, MulHi: sigBinary,
	Neg: sigUnary, Not: sigUnary, Abs: sigUnary,
	Exp: sigUnary, Exp2: sigUnary, Log: sigUnary, Log2: sigUnary, Sqrt: sigUnary, Rsqrt: sigUnary,
	Sin: sigUnary, Cos: sigUnary, Erf: sigUnary, Floor: sigUnary, Ceil: sigUnary, FMA: sigTernary,
	Cmp: sigBinary, Select: sigTernary, Cast: sigUnary, PtrAdd: sigBinary,
	Load:      {args: []int{1, 3}, results: 1},
	Store:     {args: []int{2, 3}, results: 0},
	AtomicRMW: sigTernary, AtomicCAS: sigTernary, Dot: sigTernary,
	Reduce:  {results: -1, regions: -1}, // checked by ReduceResult: one result per input, a region for custom reductions
	Print:   {results: 0},
	Barrier: {args: []int{0}, results: 0},
	Assert:  {args: []int{1}, results: 0},
	For:     {results: -1, regions: 1},
	If:      {args: []int{1}, results: -1, regions: 2},
	While:   {results: -1, regions: 2},
	// Yield and Condition are checked with the op that owns their region.
	Yield:     {results: 0},
	Condition: {args: []int{1}, results: 0},
}

// TakesDType reports whether the element-wise op o (Add..FMA) applies to values of dtype d:
// the bitwise ops, shifts, MulHi and Not take integers (i1 included), the transcendental
// and rounding functions and FMA take fp32 and fp64, the rest any dtype.
func (o Op) TakesDType(d DType) bool {
	switch {
	case !o.IsElementwise() || d == Invalid || int(d) >= len(dtypeNames):
		return false
	case o.takesIntsOnly():
		return d.IsInt()
	case o.IsUnaryMath() || o == FMA:
		return d == F32 || d == F64
	}
	return true
}

func (o Op) takesIntsOnly() bool { return (o >= And && o <= MulHi) || o == Not }

// ElementwiseResult is the type of the element-wise op o on operands of types args: all
// equal, not pointers, of a dtype o takes (TakesDType); the result has that type.
func ElementwiseResult(o Op, args ...Type) (Type, error) {
	if !o.IsElementwise() {
		return Type{}, fmt.Errorf("%s is not an element-wise op", o)
	}
	if n := opSigs[o].args[0]; len(args) != n {
		return Type{}, fmt.Errorf("has %d operands, want %d", len(args), n)
	}
	t := args[0]
	for i, a := range args[1:] {
		if !a.Equal(t) {
			return Type{}, fmt.Errorf("operand %d has type %s, operand 0 %s", i+1, a, t)
		}
	}
	switch {
	case t.Ptr:
		return Type{}, errors.New("does not take pointers")
	case t.Elem == Invalid || int(t.Elem) >= len(dtypeNames):
		return Type{}, fmt.Errorf("invalid element type %s", t.Elem)
	case o.takesIntsOnly() && !o.TakesDType(t.Elem):
		return Type{}, fmt.Errorf("takes integers, got %s", t)
	case !o.TakesDType(t.Elem):
		return Type{}, fmt.Errorf("takes fp32 or fp64, got %s", t)
	}
	return t, nil
}

// CmpResult is the type of a comparison with predicate pred (CmpEQ..CmpGE) of two operands
// of one type (pointers included): i1 of their shape.
func CmpResult(pred int64, a, b Type) (Type, error) {
	if pred < CmpEQ || pred > CmpGE {
		return Type{}, fmt.Errorf("bad predicate %d", pred)
	}
	if !a.Equal(b) {
		return Type{}, fmt.Errorf("compares %s with %s: operand types differ", a, b)
	}
	return Tile(I1, a.Shape...), nil
}

// SelectResult is the type of select(cond, a, b): a and b of one type T, cond i1 of T's
// shape; the result is T.
func SelectResult(cond, a, b Type) (Type, error) {
	if !a.Equal(b) {
		return Type{}, fmt.Errorf("selects between %s and %s: operand types differ", a, b)
	}
	if want := Tile(I1, a.Shape...); !cond.Equal(want) {
		return Type{}, fmt.Errorf("condition has type %s, want %s", cond, want)
	}
	return a, nil
}

// CheckCast is the rule of a cast from x to r: the shape is kept; pointers convert only to
// and from i64 (never by bitcast); a bitcast keeps the width.
func CheckCast(x, r Type, bitcast bool) error {
	if !slices.Equal(x.Shape, r.Shape) {
		return fmt.Errorf("cast changes the shape: %s to %s", x, r)
	}
	if x.Ptr || r.Ptr {
		if bitcast || (x.Ptr && r.Ptr) || (x.Ptr && r.Elem != I64) || (r.Ptr && x.Elem != I64) {
			return fmt.Errorf("pointer casts go to or from i64 only: %s to %s", x, r)
		}
		return nil
	}
	if bitcast && x.Elem.Bits() != r.Elem.Bits() {
		return fmt.Errorf("bitcast between different widths: %s to %s", x, r)
	}
	return nil
}

// PtrAddResult is the type of ptr_add(p, off): p a pointer (tile), off i32 or i64 of p's
// shape; the result is p's type.
func PtrAddResult(p, off Type) (Type, error) {
	if !p.Ptr {
		return Type{}, fmt.Errorf("ptr_add on %s, not a pointer", p)
	}
	if off.Ptr || (off.Elem != I32 && off.Elem != I64) || !slices.Equal(off.Shape, p.Shape) {
		return Type{}, fmt.Errorf("ptr_add offset %s: want i32 or i64 of the shape of %s", off, p)
	}
	return p, nil
}

// maskType is the type of a mask for the pointer (tile) p: i1 of p's shape.
func maskType(p Type) Type { return Tile(I1, p.Shape...) }

// LoadResult is the type of load(p) or load(p, mask, other): the pointee of p with p's
// shape; mask is i1 of that shape and other has the result's type.
func LoadResult(args ...Type) (Type, error) {
	if len(args) != 1 && len(args) != 3 {
		return Type{}, fmt.Errorf("load takes (ptr) or (ptr, mask, other), got %d operands", len(args))
	}
	p := args[0]
	if !p.Ptr {
		return Type{}, fmt.Errorf("load from %s, not a pointer", p)
	}
	r := Type{Elem: p.Elem, Shape: p.Shape}
	if len(args) == 3 && (!args[1].Equal(maskType(p)) || !args[2].Equal(r)) {
		return Type{}, fmt.Errorf("load mask %s / other %s do not match %s", args[1], args[2], r)
	}
	return r, nil
}

// CheckStore is the rule of store(p, v) and store(p, v, mask): v has p's pointee and shape,
// mask is i1 of that shape.
func CheckStore(args ...Type) error {
	if len(args) != 2 && len(args) != 3 {
		return fmt.Errorf("store takes (ptr, value) or (ptr, value, mask), got %d operands", len(args))
	}
	p, x := args[0], args[1]
	if !p.Ptr || x.Ptr || x.Elem != p.Elem || !slices.Equal(x.Shape, p.Shape) {
		return fmt.Errorf("store %s into %s", x, p)
	}
	if len(args) == 3 && !args[2].Equal(maskType(p)) {
		return fmt.Errorf("store mask %s does not match %s", args[2], p)
	}
	return nil
}

// AtomicTakesDType reports whether an atomic read-modify-write of kind (AtomicAdd..
// AtomicXchg) applies to dtype d: the bitwise kinds take integers, the others any dtype.
func AtomicTakesDType(kind int64, d DType) bool {
	switch kind {
	case AtomicAnd, AtomicOr, AtomicXor:
		return d.IsInt()
	case AtomicAdd, AtomicMax, AtomicMin, AtomicXchg:
		return d != Invalid && int(d) < len(dtypeNames)
	}
	return false
}

// AtomicResult is the type of atomic_rmw(p, v, mask) with kind (op AtomicRMW) or of
// atomic_cas(p, cmp, v) (op AtomicCAS, kind unused): the values have p's pointee and shape,
// mask is i1 of that shape; the result (the old values) has the values' type.
func AtomicResult(op Op, kind int64, args ...Type) (Type, error) {
	if op != AtomicRMW && op != AtomicCAS {
		return Type{}, fmt.Errorf("%s is not an atomic op", op)
	}
	if len(args) != 3 {
		return Type{}, fmt.Errorf("%s takes 3 operands, got %d", op, len(args))
	}
	p := args[0]
	val := Type{Elem: p.Elem, Shape: p.Shape}
	if !p.Ptr || !args[1].Equal(val) {
		return Type{}, fmt.Errorf("%s on %s with %s", op, p, args[1])
	}
	third := val
	if op == AtomicRMW {
		third = maskType(p)
		if kind < AtomicAdd || kind > AtomicXchg {
			return Type{}, fmt.Errorf("bad atomic kind %d", kind)
		}
		if !AtomicTakesDType(kind, p.Elem) {
			return Type{}, fmt.Errorf("atomic %s takes integers, got %s", atomicNames[kind], p)
		}
	}
	if !args[2].Equal(third) {
		return Type{}, fmt.Errorf("third operand %s, want %s", args[2], third)
	}
	return val, nil
}

// DotAccumulator is the accumulator dtype a dot of in-typed operands uses by default (fp32
// for fp16, bf16 and fp32; i32 for i8); false when dot does not take in.
func DotAccumulator(in DType) (DType, bool) {
	switch in {
	case I8:
		return I32, true
	case F16, BF16, F32:
		return F32, true
	}
	return Invalid, false
}

// DotAccumulates reports whether a dot of in-typed operands may accumulate in acc: the
// default accumulator, or fp16 for fp16 operands.
func DotAccumulates(in, acc DType) bool {
	def, ok := DotAccumulator(in)
	return ok && (acc == def || (in == F16 && acc == F16))
}

// DotResult is the type of dot(a, b, acc): a [M,K] and b [K,N] of one dtype (or batched
// [B,M,K] x [B,K,N]), acc [M,N] (or [B,M,N]) of a dtype they accumulate in
// (DotAccumulates); the result has acc's type.
func DotResult(a, b, acc Type) (Type, error) {
	bad := fmt.Errorf("dot %s x %s + %s", a, b, acc)
	n := a.Rank()
	if b.Rank() != n || acc.Rank() != n || (n != 2 && n != 3) || a.Ptr || b.Ptr || acc.Ptr {
		return Type{}, bad
	}
	if a.Shape[n-1] != b.Shape[n-2] || acc.Shape[n-2] != a.Shape[n-2] || acc.Shape[n-1] != b.Shape[n-1] {
		return Type{}, bad
	}
	if n == 3 && (a.Shape[0] != b.Shape[0] || a.Shape[0] != acc.Shape[0]) {
		return Type{}, bad
	}
	if a.Elem != b.Elem || !DotAccumulates(a.Elem, acc.Elem) {
		return Type{}, fmt.Errorf("%w: dot takes fp16, bf16 or fp32 operands accumulating in fp32 (fp16 also in fp16), or i8 in i32", bad)
	}
	return acc, nil
}

// ReduceResult is the types of a reduction of kind (ReduceSum..ReduceCustom) over axis of
// the inputs args (one for the built-in kinds, all of one non-pointer shape): each input's
// type without axis (or with a 1 there under keepDims), i32 for ReduceArgMax/ArgMin.
func ReduceResult(kind int, axis int, keepDims bool, args ...Type) ([]Type, error) {
	switch kind {
	case ReduceSum, ReduceMax, ReduceMin, ReduceArgMax, ReduceArgMin:
		if len(args) != 1 {
			return nil, fmt.Errorf("built-in reductions take one input, got %d", len(args))
		}
	case ReduceCustom:
		if len(args) == 0 {
			return nil, errors.New("a custom reduction takes at least one input")
		}
	default:
		return nil, fmt.Errorf("unknown reduce kind %d", kind)
	}
	s := args[0].Shape
	if axis < 0 || axis >= len(s) {
		return nil, fmt.Errorf("axis %d out of range for %s", axis, args[0])
	}
	shape := append([]int(nil), s[:axis]...)
	if keepDims {
		shape = append(shape, 1)
	}
	shape = append(shape, s[axis+1:]...)
	out := make([]Type, len(args))
	for i, a := range args {
		if !slices.Equal(a.Shape, s) || a.Ptr {
			return nil, errors.New("inputs must share one non-pointer shape")
		}
		out[i] = a.WithShape(shape)
		if kind == ReduceArgMax || kind == ReduceArgMin {
			out[i].Elem = I32
		}
	}
	return out, nil
}

// GridQueryResult is the type of program_id(axis) and num_programs(axis): i32, axis 0..2.
func GridQueryResult(axis int64) (Type, error) {
	if axis < 0 || axis > 2 {
		return Type{}, fmt.Errorf("axis %d, want 0..2", axis)
	}
	return Scalar(I32), nil
}

// ArangeResult is the type of arange(start, end): i32[end-start].
func ArangeResult(start, end int) (Type, error) {
	if end <= start {
		return Type{}, fmt.Errorf("arange(%d, %d) is empty", start, end)
	}
	return Tile(I32, end-start), nil
}

// CheckSplat is the rule of splat from x to r: x a scalar, r a tile of x's element type.
func CheckSplat(x, r Type) error {
	if !x.IsScalar() || r.IsScalar() || !x.Equal(r.ScalarType()) {
		return fmt.Errorf("splat %s to %s", x, r)
	}
	return nil
}

// CheckBroadcast is the rule of broadcast from x to r: one element type, one rank, each of
// r's dims equal to x's or x's is 1.
func CheckBroadcast(x, r Type) error {
	if x.Rank() != r.Rank() || !x.ScalarType().Equal(r.ScalarType()) {
		return fmt.Errorf("broadcast %s to %s", x, r)
	}
	for i := range x.Shape {
		if x.Shape[i] != r.Shape[i] && x.Shape[i] != 1 {
			return fmt.Errorf("broadcast %s to %s", x, r)
		}
	}
	return nil
}

// CheckReshape is the rule of reshape from x to r: one element type, one element count.
func CheckReshape(x, r Type) error {
	if x.NumElems() != r.NumElems() || !x.ScalarType().Equal(r.ScalarType()) {
		return fmt.Errorf("reshape %s to %s", x, r)
	}
	return nil
}

// ExpandDimsResult is the type of expand_dims(x, axis): x with a 1 inserted at axis
// (0..rank).
func ExpandDimsResult(x Type, axis int) (Type, error) {
	if axis < 0 || axis > x.Rank() {
		return Type{}, fmt.Errorf("expand_dims axis %d out of range for %s", axis, x)
	}
	return x.WithShape(slices.Insert(slices.Clone(x.Shape), axis, 1)), nil
}

// PermuteResult is the type of permute(x, order): dim i of the result is dim order[i] of x;
// order is a permutation of 0..rank-1.
func PermuteResult(x Type, order []int) (Type, error) {
	bad := fmt.Errorf("permute order %v does not fit %s", order, x)
	if len(order) != x.Rank() {
		return Type{}, bad
	}
	shape := make([]int, len(order))
	seen := make([]bool, len(order))
	for i, d := range order {
		if d < 0 || d >= len(order) || seen[d] {
			return Type{}, bad
		}
		seen[d] = true
		shape[i] = x.Shape[d]
	}
	return x.WithShape(shape), nil
}

// CheckLoopBounds is the rule of a for loop's bounds: scalars of one integer dtype.
func CheckLoopBounds(lb, ub, step Type) error {
	if !lb.IsScalar() || lb.Ptr || !lb.Elem.IsInt() || !lb.Equal(ub) || !lb.Equal(step) {
		return fmt.Errorf("bounds %s, %s, %s must be scalars of one integer dtype", lb, ub, step)
	}
	return nil
}

// CheckInstr checks one instruction against its op's rules: operand, result and region
// counts, operand and result types, attributes, and the arguments and terminators of its
// regions (the instructions inside a region are checked on their own; Verify walks them).
// The error is a *VerifyError at the instruction.
func CheckInstr(in *Instr) error {
	if in == nil {
		return &VerifyError{Msg: "nil instruction"}
	}
	fail := func(format string, args ...any) error {
		return &VerifyError{Pos: in.Pos, Op: in.Op, Msg: fmt.Sprintf(format, args...)}
	}
	if in.Op == OpInvalid || in.Op >= numOps {
		return fail("unknown op")
	}
	sig := opSigs[in.Op]
	if sig.args != nil && !slices.Contains(sig.args, len(in.Args)) {
		return fail("has %d operands, want %v", len(in.Args), sig.args)
	}
	if sig.results >= 0 && len(in.Results) != sig.results {
		if sig.results == 0 {
			return fail("has %d results, want none", len(in.Results))
		}
		return fail("has %d results, want %d", len(in.Results), sig.results)
	}
	if sig.regions >= 0 && len(in.Regions) != sig.regions {
		if sig.regions == 0 {
			return fail("takes no regions")
		}
		return fail("has %d regions, want %d", len(in.Regions), sig.regions)
	}
	for i, a := range in.Args {
		if a == nil {
			return fail("operand %d is nil", i)
		}
	}
	for i, r := range in.Results {
		if r == nil {
			return fail("result %d is nil", i)
		}
	}
	args := types(in.Args)
	var r Type // the result of a one-result op
	if sig.results == 1 {
		r = in.Results[0].Type
	}
	// derived checks a derived result type against the instruction's result.
	derived := func(want Type, err error) error {
		if err != nil {
			return fail("%v", err)
		}
		if !r.Equal(want) {
			return fail("result has type %s, want %s", r, want)
		}
		return nil
	}
	checked := func(err error) error {
		if err != nil {
			return fail("%v", err)
		}
		return nil
	}
	switch op := in.Op; {
	case op.IsElementwise():
		return derived(ElementwiseResult(op, args...))
	case op == Const:
		if r.Ptr {
			return fail("pointer constants are not allowed")
		}
		return nil
	case op == ProgramID || op == NumPrograms:
		return derived(GridQueryResult(in.Int))
	case op == Arange:
		if len(in.Ints) != 2 {
			return fail("want Ints [start, end], got %v", in.Ints)
		}
		return derived(ArangeResult(in.Ints[0], in.Ints[1]))
	case op == Splat:
		return checked(CheckSplat(args[0], r))
	case op == Broadcast:
		return checked(CheckBroadcast(args[0], r))
	case op == ExpandDims:
		return derived(ExpandDimsResult(args[0], int(in.Int)))
	case op == Reshape:
		return checked(CheckReshape(args[0], r))
	case op == Permute:
		return derived(PermuteResult(args[0], in.Ints))
	case op == Cmp:
		return derived(CmpResult(in.Int, args[0], args[1]))
	case op == Select:
		return derived(SelectResult(args[0], args[1], args[2]))
	case op == Cast:
		return checked(CheckCast(args[0], r, in.Int == 1))
	case op == PtrAdd:
		return derived(PtrAddResult(args[0], args[1]))
	case op == Load:
		return derived(LoadResult(args...))
	case op == Store:
		return checked(CheckStore(args...))
	case op == AtomicRMW || op == AtomicCAS:
		return derived(AtomicResult(op, in.Int, args...))
	case op == Dot:
		return derived(DotResult(args[0], args[1], args[2]))
	case op == Reduce:
		return checkReduce(in, args, fail)
	case op == For:
		if len(args) < 3 {
			return fail("for takes lb, ub, step and the initial values")
		}
		if err := CheckLoopBounds(args[0], args[1], args[2]); err != nil {
			return fail("%v", err)
		}
		inits := args[3:]
		if err := sameTypes(types(in.Results), inits, "results"); err != nil {
			return fail("%v", err)
		}
		body := in.Regions[0]
		if body == nil || len(body.Args) != len(inits)+1 || body.Args[0] == nil || !body.Args[0].Type.Equal(args[0]) {
			return fail("body arguments must be (iv, iter...)")
		}
		if err := sameTypes(types(body.Args[1:]), inits, "body arguments"); err != nil {
			return fail("%v", err)
		}
		return checked(regionEnd(body, Yield, inits))
	case op == Assert:
		if args[0].Ptr || args[0].Elem != I1 {
			return fail("condition must be i1, got %s", args[0])
		}
		return nil
	case op == If:
		if !args[0].Equal(Scalar(I1)) {
			return fail("condition must be an i1 scalar, got %s", args[0])
		}
		want := types(in.Results)
		for _, b := range in.Regions {
			if b != nil && len(b.Args) != 0 {
				return fail("if regions take no arguments")
			}
			if err := regionEnd(b, Yield, want); err != nil {
				return fail("%v", err)
			}
		}
		return nil
	case op == While:
		if err := sameTypes(types(in.Results), args, "results"); err != nil {
			return fail("%v", err)
		}
		for _, b := range in.Regions {
			if b == nil {
				return fail("nil region")
			}
			if err := sameTypes(types(b.Args), args, "region arguments"); err != nil {
				return fail("%v", err)
			}
		}
		if err := regionEnd(in.Regions[0], Condition, nil); err != nil {
			return fail("%v", err)
		}
		return checked(regionEnd(in.Regions[1], Yield, args))
	}
	// Print, Barrier, Yield and Condition: their counts are their only rules (a terminator's
	// values are checked with the op owning its region).
	return nil
}

// checkReduce checks a Reduce: Ints [kind, keep_dims], results from ReduceResult, and a
// custom reduction's combine region (2k scalar arguments, yielding k scalars).
func checkReduce(in *Instr, args []Type, fail func(string, ...any) error) error {
	if len(in.Ints) != 2 {
		return fail("reduce takes Ints [kind, keep_dims], got %v", in.Ints)
	}
	kind := in.Ints[0]
	want, err := ReduceResult(kind, int(in.Int), in.Ints[1] == 1, args...)
	if err != nil {
		return fail("%v", err)
	}
	if len(in.Results) != len(want) {
		return fail("%d inputs but %d results", len(args), len(in.Results))
	}
	for i, r := range in.Results {
		if !r.Type.Equal(want[i]) {
			return fail("result %d has type %s, want %s", i, r.Type, want[i])
		}
	}
	if kind != ReduceCustom {
		if len(in.Regions) != 0 {
			return fail("built-in reductions take no region")
		}
		return nil
	}
	if len(in.Regions) != 1 || in.Regions[0] == nil {
		return fail("a custom reduction has one combine region")
	}
	scalars := make([]Type, len(args))
	for i, a := range args {
		scalars[i] = a.ScalarType()
	}
	comb := in.Regions[0]
	if err := sameTypes(types(comb.Args), append(slices.Clone(scalars), scalars...), "combine arguments"); err != nil {
		return fail("%v", err)
	}
	if err := regionEnd(comb, Yield, scalars); err != nil {
		return fail("%v", err)
	}
	return nil
}

// regionEnd checks that region block b ends with the terminator term, yielding values of the
// types want (Condition: one i1 scalar).
func regionEnd(b *Block, term Op, want []Type) error {
	if b == nil || len(b.Instrs) == 0 || b.Instrs[len(b.Instrs)-1] == nil {
		return errors.New("region block has no terminator")
	}
	t := b.Instrs[len(b.Instrs)-1]
	if t.Op != term {
		return fmt.Errorf("region ends with %s, want %s", t.Op, term)
	}
	for _, a := range t.Args {
		if a == nil {
			return fmt.Errorf("%s of a nil value", term)
		}
	}
	if term == Condition {
		if len(t.Args) != 1 || !t.Args[0].Type.Equal(Scalar(I1)) {
			return errors.New("condition takes one i1 scalar")
		}
		return nil
	}
	if len(t.Args) != len(want) {
		return fmt.Errorf("yield has %d values, want %d", len(t.Args), len(want))
	}
	for i, a := range t.Args {
		if !a.Type.Equal(want[i]) {
			return fmt.Errorf("yield value %d has type %s, want %s", i, a.Type, want[i])
		}
	}
	return nil
}

// sameTypes checks a list of types against the list it must equal, naming what it is.
func sameTypes(got, want []Type, what string) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d %s, want %d", len(got), what, len(want))
	}
	for i := range got {
		if !got[i].Equal(want[i]) {
			return fmt.Errorf("%s %d has type %s, want %s", what, i, got[i], want[i])
		}
	}
	return nil
}

// types lists the types of values (nil values, which CheckInstr and Verify reject first,
// give the zero Type).
func types(vs []*Value) []Type {
	out := make([]Type, len(vs))
	for i, x := range vs {
		if x != nil {
			out[i] = x.Type
		}
	}
	return out
}
