package ir

import (
	"fmt"
	"slices"
)

// VerifyError is the first rule a Func breaks, at the offending instruction.
type VerifyError struct {
	Pos Pos
	Op  Op
	Msg string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Pos, e.Op, e.Msg)
}

// Verify checks f against the rules of ops.go: operand and result types per op, region
// arguments and terminators, Yield/result agreement, and SSA scoping (every operand is
// defined once, before its use, in the same block or an enclosing one).
func Verify(f *Func) error {
	v := &verifier{defined: map[*Value]bool{}}
	for _, p := range f.Params {
		if err := v.define(p, nil); err != nil {
			return err
		}
	}
	if f.Body == nil {
		return &VerifyError{Msg: "function has no body"}
	}
	if len(f.Body.Args) > 0 {
		return &VerifyError{Msg: "the function body takes no block arguments"}
	}
	return v.block(f.Body, false)
}

type verifier struct {
	defined map[*Value]bool
	ever    map[*Value]bool
}

func (v *verifier) define(x *Value, in *Instr) error {
	if v.ever == nil {
		v.ever = map[*Value]bool{}
	}
	if x == nil {
		return v.fail(in, "nil value")
	}
	if v.ever[x] {
		return v.fail(in, "value %s is defined twice", valueName(x))
	}
	if err := checkType(x.Type); err != "" {
		return v.fail(in, "value %s: %s", valueName(x), err)
	}
	v.ever[x] = true
	v.defined[x] = true
	return nil
}

func checkType(t Type) string {
	if t.Elem == Invalid || int(t.Elem) >= len(dtypeNames) {
		return "invalid element type"
	}
	for _, d := range t.Shape {
		if d <= 0 {
			return fmt.Sprintf("bad shape %v", t.Shape)
		}
	}
	return ""
}

func (v *verifier) fail(in *Instr, format string, args ...any) error {
	e := &VerifyError{Msg: fmt.Sprintf(format, args...)}
	if in != nil {
		e.Pos, e.Op = in.Pos, in.Op
	}
	return e
}

// block checks a block; region blocks must end with a terminator, the body must not.
func (v *verifier) block(b *Block, region bool) error {
	var local []*Value
	defer func() {
		for _, x := range local {
			delete(v.defined, x)
		}
	}()
	for _, a := range b.Args {
		if err := v.define(a, nil); err != nil {
			return err
		}
		local = append(local, a)
	}
	for i, in := range b.Instrs {
		last := i == len(b.Instrs)-1
		if in.Op == Yield || in.Op == Condition {
			if !region || !last {
				return v.fail(in, "a terminator must be the last instruction of a region block")
			}
		}
		for _, a := range in.Args {
			if a == nil || !v.defined[a] {
				return v.fail(in, "operand %s is not defined before its use (or not in scope)", valueName(a))
			}
		}
		if err := v.instr(in); err != nil {
			return err
		}
		for _, r := range in.Results {
			if err := v.define(r, in); err != nil {
				return err
			}
			local = append(local, r)
		}
	}
	if region {
		if len(b.Instrs) == 0 {
			return &VerifyError{Msg: "region block has no terminator"}
		}
		if t := b.Instrs[len(b.Instrs)-1].Op; t != Yield && t != Condition {
			return v.fail(b.Instrs[len(b.Instrs)-1], "region block does not end with yield or condition")
		}
	}
	return nil
}

func (v *verifier) regionYield(in *Instr, r *Block, want []Type, term Op) error {
	if err := v.block(r, true); err != nil {
		return err
	}
	t := r.Instrs[len(r.Instrs)-1]
	if t.Op != term {
		return v.fail(in, "region ends with %s, want %s", t.Op, term)
	}
	if term == Condition {
		if len(t.Args) != 1 || !t.Args[0].Type.Equal(Scalar(I1)) {
			return v.fail(in, "condition takes one i1 scalar")
		}
		return nil
	}
	if len(t.Args) != len(want) {
		return v.fail(in, "yield has %d values, want %d", len(t.Args), len(want))
	}
	for i, a := range t.Args {
		if !a.Type.Equal(want[i]) {
			return v.fail(in, "yield value %d has type %s, want %s", i, a.Type, want[i])
		}
	}
	return nil
}

func types(vs []*Value) []Type {
	out := make([]Type, len(vs))
	for i, x := range vs {
		out[i] = x.Type
	}
	return out
}

func (v *verifier) instr(in *Instr) error {
	nargs := func(n ...int) error {
		for _, k := range n {
			if len(in.Args) == k {
				return nil
			}
		}
		return v.fail(in, "has %d operands, want %v", len(in.Args), n)
	}
	one := func() error {
		if len(in.Results) != 1 {
			return v.fail(in, "has %d results, want 1", len(in.Results))
		}
		return nil
	}
	none := func() error {
		if len(in.Results) != 0 {
			return v.fail(in, "has %d results, want none", len(in.Results))
		}
		return nil
	}
	noRegions := func() error {
		if len(in.Regions) != 0 {
			return v.fail(in, "takes no regions")
		}
		return nil
	}
	if in.Op != Reduce && in.Op != For && in.Op != If && in.Op != While {
		if err := noRegions(); err != nil {
			return err
		}
	}
	switch in.Op {
	case Const:
		if err := firstErr(nargs(0), one()); err != nil {
			return err
		}
		if in.Result().Type.Ptr {
			return v.fail(in, "pointer constants are not allowed")
		}
	case ProgramID, NumPrograms:
		if err := firstErr(nargs(0), one()); err != nil {
			return err
		}
		if !in.Result().Type.Equal(Scalar(I32)) || in.Int < 0 || in.Int > 2 {
			return v.fail(in, "want an i32 scalar and axis 0..2")
		}
	case Arange:
		if err := firstErr(nargs(0), one()); err != nil {
			return err
		}
		if len(in.Ints) != 2 || !in.Result().Type.Equal(Tile(I32, in.Ints[1]-in.Ints[0])) {
			return v.fail(in, "want Ints [start, end] and an i32[end-start] result")
		}
	case Splat:
		if err := firstErr(nargs(1), one()); err != nil {
			return err
		}
		x, r := in.Args[0].Type, in.Result().Type
		if !x.IsScalar() || r.IsScalar() || !x.Equal(r.ScalarType()) {
			return v.fail(in, "splat %s to %s", x, r)
		}
	case Broadcast:
		if err := firstErr(nargs(1), one()); err != nil {
			return err
		}
		x, r := in.Args[0].Type, in.Result().Type
		if x.Rank() != r.Rank() || !x.ScalarType().Equal(r.ScalarType()) {
			return v.fail(in, "broadcast %s to %s", x, r)
		}
		for i := range x.Shape {
			if x.Shape[i] != r.Shape[i] && x.Shape[i] != 1 {
				return v.fail(in, "broadcast %s to %s", x, r)
			}
		}
	case ExpandDims:
		if err := firstErr(nargs(1), one()); err != nil {
			return err
		}
		x, r := in.Args[0].Type, in.Result().Type
		ax := int(in.Int)
		if ax < 0 || ax > x.Rank() || r.Rank() != x.Rank()+1 || !x.ScalarType().Equal(r.ScalarType()) {
			return v.fail(in, "expand_dims %d of %s to %s", ax, x, r)
		}
		for i, j := 0, 0; i < r.Rank(); i++ {
			if i == ax {
				if r.Shape[i] != 1 {
					return v.fail(in, "expand_dims %d of %s to %s", ax, x, r)
				}
				continue
			}
			if r.Shape[i] != x.Shape[j] {
				return v.fail(in, "expand_dims %d of %s to %s", ax, x, r)
			}
			j++
		}
	case Reshape:
		if err := firstErr(nargs(1), one()); err != nil {
			return err
		}
		x, r := in.Args[0].Type, in.Result().Type
		if x.NumElems() != r.NumElems() || !x.ScalarType().Equal(r.ScalarType()) {
			return v.fail(in, "reshape %s to %s", x, r)
		}
	case Permute:
		if err := firstErr(nargs(1), one()); err != nil {
			return err
		}
		x, r := in.Args[0].Type, in.Result().Type
		if len(in.Ints) != x.Rank() || r.Rank() != x.Rank() || !x.ScalarType().Equal(r.ScalarType()) {
			return v.fail(in, "permute %v of %s to %s", in.Ints, x, r)
		}
		seen := make([]bool, x.Rank())
		for i, d := range in.Ints {
			if d < 0 || d >= x.Rank() || seen[d] || r.Shape[i] != x.Shape[d] {
				return v.fail(in, "permute %v of %s to %s", in.Ints, x, r)
			}
			seen[d] = true
		}
	case Add, Sub, Mul, Div, Rem, Min, Max, And, Or, Xor, Shl, Shr, MulHi:
		if err := firstErr(nargs(2), one()); err != nil {
			return err
		}
		return v.sameTypes(in, in.Op >= And)
	case Neg, Not, Abs:
		if err := firstErr(nargs(1), one()); err != nil {
			return err
		}
		return v.sameTypes(in, in.Op == Not)
	case Exp, Exp2, Log, Log2, Sqrt, Rsqrt, Sin, Cos, Erf, Floor, Ceil, FMA:
		n := 1
		if in.Op == FMA {
			n = 3
		}
		if err := firstErr(nargs(n), one()); err != nil {
			return err
		}
		if err := v.sameTypes(in, false); err != nil {
			return err
		}
		if e := in.Result().Type.Elem; e != F32 && e != F64 {
			return v.fail(in, "takes fp32 or fp64, got %s", in.Result().Type)
		}
	case Cmp:
		if err := firstErr(nargs(2), one()); err != nil {
			return err
		}
		a, b, r := in.Args[0].Type, in.Args[1].Type, in.Result().Type
		if !a.Equal(b) || !r.Equal(Tile(I1, a.Shape...)) || in.Int < CmpEQ || in.Int > CmpGE {
			return v.fail(in, "cmp %s, %s -> %s", a, b, r)
		}
	case Select:
		if err := firstErr(nargs(3), one()); err != nil {
			return err
		}
		c, a, b, r := in.Args[0].Type, in.Args[1].Type, in.Args[2].Type, in.Result().Type
		if !c.Equal(Tile(I1, r.Shape...)) || !a.Equal(r) || !b.Equal(r) {
			return v.fail(in, "select %s, %s, %s -> %s", c, a, b, r)
		}
	case Cast:
		if err := firstErr(nargs(1), one()); err != nil {
			return err
		}
		x, r := in.Args[0].Type, in.Result().Type
		if !slices.Equal(x.Shape, r.Shape) {
			return v.fail(in, "cast changes the shape: %s to %s", x, r)
		}
		if x.Ptr || r.Ptr {
			if in.Int == 1 || (x.Ptr && r.Ptr) || (x.Ptr && r.Elem != I64) || (r.Ptr && x.Elem != I64) {
				return v.fail(in, "pointer casts go to or from i64 only: %s to %s", x, r)
			}
		} else if in.Int == 1 && x.Elem.Bits() != r.Elem.Bits() {
			return v.fail(in, "bitcast between different widths: %s to %s", x, r)
		}
	case PtrAdd:
		if err := firstErr(nargs(2), one()); err != nil {
			return err
		}
		p, o, r := in.Args[0].Type, in.Args[1].Type, in.Result().Type
		if !p.Ptr || !r.Equal(p) || o.Ptr || (o.Elem != I32 && o.Elem != I64) || !slices.Equal(o.Shape, p.Shape) {
			return v.fail(in, "ptr_add %s, %s -> %s", p, o, r)
		}
	case Load:
		if err := firstErr(nargs(1, 3), one()); err != nil {
			return err
		}
		p, r := in.Args[0].Type, in.Result().Type
		if !p.Ptr || r.Ptr || r.Elem != p.Elem || !slices.Equal(r.Shape, p.Shape) {
			return v.fail(in, "load %s -> %s", p, r)
		}
		if len(in.Args) == 3 {
			if !in.Args[1].Type.Equal(Tile(I1, p.Shape...)) || !in.Args[2].Type.Equal(r) {
				return v.fail(in, "load mask %s / other %s do not match %s", in.Args[1].Type, in.Args[2].Type, r)
			}
		}
	case Store:
		if err := firstErr(nargs(2, 3), none()); err != nil {
			return err
		}
		p, x := in.Args[0].Type, in.Args[1].Type
		if !p.Ptr || x.Ptr || x.Elem != p.Elem || !slices.Equal(x.Shape, p.Shape) {
			return v.fail(in, "store %s into %s", x, p)
		}
		if len(in.Args) == 3 && !in.Args[2].Type.Equal(Tile(I1, p.Shape...)) {
			return v.fail(in, "store mask %s does not match %s", in.Args[2].Type, p)
		}
	case AtomicRMW, AtomicCAS:
		if err := firstErr(nargs(3), one()); err != nil {
			return err
		}
		p, r := in.Args[0].Type, in.Result().Type
		val := Type{Elem: p.Elem, Shape: p.Shape}
		if !p.Ptr || !r.Equal(val) || !in.Args[1].Type.Equal(val) {
			return v.fail(in, "%s on %s with %s -> %s", in.Op, p, in.Args[1].Type, r)
		}
		third := val
		if in.Op == AtomicRMW {
			third = Tile(I1, p.Shape...)
			if in.Int < AtomicAdd || in.Int > AtomicXchg {
				return v.fail(in, "bad atomic kind %d", in.Int)
			}
		}
		if !in.Args[2].Type.Equal(third) {
			return v.fail(in, "third operand %s, want %s", in.Args[2].Type, third)
		}
	case Dot:
		if err := firstErr(nargs(3), one()); err != nil {
			return err
		}
		return v.dot(in)
	case Reduce:
		return v.reduce(in)
	case Print:
		return none()
	case Barrier:
		return firstErr(nargs(0), none())
	case For:
		if len(in.Args) < 3 {
			return v.fail(in, "for takes lb, ub, step and the initial values")
		}
		lb, ub, st := in.Args[0].Type, in.Args[1].Type, in.Args[2].Type
		if !lb.IsScalar() || lb.Ptr || !lb.Elem.IsInt() || !lb.Equal(ub) || !lb.Equal(st) {
			return v.fail(in, "bounds %s, %s, %s must be scalars of one integer dtype", lb, ub, st)
		}
		inits := types(in.Args[3:])
		if len(in.Regions) != 1 {
			return v.fail(in, "for has one region")
		}
		r := in.Regions[0]
		if len(r.Args) != len(inits)+1 || !r.Args[0].Type.Equal(lb) {
			return v.fail(in, "body arguments must be (iv, iter...)")
		}
		for i, t := range inits {
			if !r.Args[i+1].Type.Equal(t) {
				return v.fail(in, "body argument %d has type %s, init %s", i+1, r.Args[i+1].Type, t)
			}
		}
		if err := v.sameList(in, types(in.Results), inits, "results"); err != nil {
			return err
		}
		return v.regionYield(in, r, inits, Yield)
	case If:
		if err := nargs(1); err != nil {
			return err
		}
		if !in.Args[0].Type.Equal(Scalar(I1)) {
			return v.fail(in, "condition must be an i1 scalar, got %s", in.Args[0].Type)
		}
		if len(in.Regions) != 2 {
			return v.fail(in, "if has two regions")
		}
		want := types(in.Results)
		for _, r := range in.Regions {
			if len(r.Args) != 0 {
				return v.fail(in, "if regions take no arguments")
			}
			if err := v.regionYield(in, r, want, Yield); err != nil {
				return err
			}
		}
	case While:
		inits := types(in.Args)
		if len(in.Regions) != 2 {
			return v.fail(in, "while has two regions")
		}
		for _, r := range in.Regions {
			if err := v.sameList(in, types(r.Args), inits, "region arguments"); err != nil {
				return err
			}
		}
		if err := v.sameList(in, types(in.Results), inits, "results"); err != nil {
			return err
		}
		if err := v.regionYield(in, in.Regions[0], nil, Condition); err != nil {
			return err
		}
		return v.regionYield(in, in.Regions[1], inits, Yield)
	case Yield, Condition:
		return none()
	default:
		return v.fail(in, "unknown op")
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func (v *verifier) sameList(in *Instr, got, want []Type, what string) error {
	if len(got) != len(want) {
		return v.fail(in, "%d %s, want %d", len(got), what, len(want))
	}
	for i := range got {
		if !got[i].Equal(want[i]) {
			return v.fail(in, "%s %d has type %s, want %s", what, i, got[i], want[i])
		}
	}
	return nil
}

// sameTypes checks an element-wise op: all operands and the result share one non-pointer
// type; intOnly ops take integers (and i1).
func (v *verifier) sameTypes(in *Instr, intOnly bool) error {
	r := in.Result().Type
	for _, a := range in.Args {
		if !a.Type.Equal(r) {
			return v.fail(in, "operand %s has type %s, result %s", valueName(a), a.Type, r)
		}
	}
	if r.Ptr {
		return v.fail(in, "does not take pointers")
	}
	if intOnly && !r.Elem.IsInt() {
		return v.fail(in, "takes integers, got %s", r)
	}
	return nil
}

func (v *verifier) dot(in *Instr) error {
	a, b, c, r := in.Args[0].Type, in.Args[1].Type, in.Args[2].Type, in.Result().Type
	bad := func() error { return v.fail(in, "dot %s x %s + %s -> %s", a, b, c, r) }
	if a.Rank() != b.Rank() || a.Rank() != r.Rank() || (a.Rank() != 2 && a.Rank() != 3) || !c.Equal(r) {
		return bad()
	}
	n := a.Rank()
	if a.Shape[n-1] != b.Shape[n-2] || r.Shape[n-2] != a.Shape[n-2] || r.Shape[n-1] != b.Shape[n-1] {
		return bad()
	}
	if n == 3 && (a.Shape[0] != b.Shape[0] || a.Shape[0] != r.Shape[0]) {
		return bad()
	}
	if a.Ptr || a.Elem != b.Elem {
		return bad()
	}
	switch a.Elem {
	case I8:
		if r.Elem != I32 {
			return bad()
		}
	case F16:
		if r.Elem != F32 && r.Elem != F16 {
			return bad()
		}
	case BF16, F32:
		if r.Elem != F32 {
			return bad()
		}
	default:
		return bad()
	}
	return nil
}

func (v *verifier) reduce(in *Instr) error {
	if len(in.Args) == 0 || len(in.Ints) != 2 {
		return v.fail(in, "reduce takes inputs and Ints [kind, keep_dims]")
	}
	kind, keep := in.Ints[0], in.Ints[1] == 1
	s := in.Args[0].Type.Shape
	ax := int(in.Int)
	if ax < 0 || ax >= len(s) {
		return v.fail(in, "axis %d out of range for %s", ax, in.Args[0].Type)
	}
	want := append([]int(nil), s[:ax]...)
	if keep {
		want = append(want, 1)
	}
	want = append(want, s[ax+1:]...)
	if len(in.Results) != len(in.Args) {
		return v.fail(in, "%d inputs but %d results", len(in.Args), len(in.Results))
	}
	for i, a := range in.Args {
		if !slices.Equal(a.Type.Shape, s) || a.Type.Ptr {
			return v.fail(in, "inputs must share one non-pointer shape")
		}
		rt := in.Results[i].Type
		wantT := a.Type.WithShape(want)
		if kind == ReduceArgMax || kind == ReduceArgMin {
			wantT.Elem = I32
		}
		if !rt.Equal(wantT) {
			return v.fail(in, "result %d has type %s, want %s", i, rt, wantT)
		}
	}
	switch kind {
	case ReduceSum, ReduceMax, ReduceMin, ReduceArgMax, ReduceArgMin:
		if len(in.Args) != 1 || len(in.Regions) != 0 {
			return v.fail(in, "built-in reductions take one input and no region")
		}
	case ReduceCustom:
		if len(in.Regions) != 1 {
			return v.fail(in, "a custom reduction has one combine region")
		}
		k := len(in.Args)
		r := in.Regions[0]
		var scalars []Type
		for _, a := range in.Args {
			scalars = append(scalars, a.Type.ScalarType())
		}
		if err := v.sameList(in, types(r.Args), append(append([]Type(nil), scalars...), scalars...), "combine arguments"); err != nil {
			return err
		}
		_ = k
		return v.regionYield(in, r, scalars, Yield)
	default:
		return v.fail(in, "unknown reduce kind %d", kind)
	}
	return nil
}
