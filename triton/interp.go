package triton

import (
	"fmt"
	"slices"

	"github.com/widejit/widejit/triton/ir"
	"github.com/widejit/widejit/triton/syntax"
)

// This file is the statement half of the abstract interpreter.

func (s *spec) at(n syntax.Node) {
	if !s.fr.unit.builtin {
		s.pos = toPos(n.Pos())
	}
}

// execBlock runs statements until one returns; it reports whether a return happened.
func (s *spec) execBlock(stmts []syntax.Stmt) bool {
	for _, st := range stmts {
		s.exec(st)
		if s.fr.returned {
			return true
		}
	}
	return false
}

// maxSteps bounds the statements one specialization may execute, so a runaway
// tl.static_range or helper recursion fails with a message instead of hanging.
const maxSteps = 1 << 18

func (s *spec) exec(st syntax.Stmt) {
	s.at(st)
	s.steps++
	if s.steps > maxSteps {
		s.fail("specialization executes more than %d statements (a runaway tl.static_range, unrolled tuple loop or helper recursion?)", maxSteps)
	}
	switch n := st.(type) {
	case *syntax.Pass:
	case *syntax.ExprStmt:
		if c, ok := n.X.(*syntax.Constant); ok && c.Kind == syntax.ConstStr {
			return // a string used as a comment
		}
		s.eval(n.X)
	case *syntax.Assign:
		v := s.eval(n.Value)
		for _, t := range n.Targets {
			s.assign(t, v, false)
		}
	case *syntax.AnnAssign:
		if n.Value == nil {
			s.fail("annotated name without a value")
		}
		v := s.eval(n.Value)
		if isConstexprAnnotation(n.Annotation) {
			if !isConst(v) {
				s.at(n.Value)
				s.fail("a tl.constexpr variable needs a compile-time value, got %s", typeName(v))
			}
			name, ok := n.Target.(*syntax.Name)
			if !ok {
				s.fail("a tl.constexpr annotation needs a plain name target")
			}
			s.fr.set(name.ID, v)
			return
		}
		s.assign(n.Target, v, false)
	case *syntax.AugAssign:
		name, ok := n.Target.(*syntax.Name)
		if !ok {
			s.fail("augmented assignment needs a plain name target")
		}
		old := s.lookup(name.ID, name)
		rhs := s.eval(n.Value)
		if !s.fr.unit.builtin {
			s.pos = toPos(n.OpPos)
		}
		s.assign(n.Target, s.binop(n.Op.String(), old, rhs), false)
	case *syntax.If:
		s.execIf(n)
	case *syntax.For:
		s.execFor(n)
	case *syntax.While:
		s.execWhile(n)
	case *syntax.Return:
		if s.fr.loops > 0 {
			s.fail("return inside a loop is not supported (Triton rejects it)")
		}
		if s.fr.dynIfs > 0 {
			s.fail("return inside an if on a runtime condition is not supported; assign a variable and return after the if")
		}
		var v value = cNone{}
		if n.Value != nil {
			v = s.eval(n.Value)
		}
		if _, none := v.(cNone); !none && s.depth == 0 {
			s.at(n)
			s.fail("a kernel cannot return a value")
		}
		s.fr.ret, s.fr.returned = v, true
	case *syntax.Break:
		s.fail("break is not supported (Triton rejects it); use a while loop with a condition")
	case *syntax.Continue:
		s.fail("continue is not supported (Triton rejects it); use an if around the rest of the body")
	case *syntax.Assert:
		c := s.eval(n.Cond)
		msg := ""
		if n.Msg != nil {
			m := s.eval(n.Msg)
			if str, ok := m.(cStr); ok {
				msg = string(str)
			} else {
				msg = constString(m)
			}
		}
		if b, ok := truthy(c); ok && isConst(c) {
			if !b {
				if msg != "" {
					msg = ": " + msg
				}
				s.fail("assertion failed%s", msg)
			}
			return
		}
		// A runtime condition is checked on the device, as tl.device_assert.
		s.at(n)
		s.deviceAssert(c, msg, nil)
	case *syntax.FuncDef:
		s.fail("nested function definitions are not supported")
	case *syntax.Import:
		s.fail("imports inside a function are not supported")
	default:
		s.fail("unsupported statement %T", st)
	}
}

// assign binds a target. Plain assignment turns Python numbers into IR scalars, as Triton
// does (only `x: tl.constexpr = ...` keeps a compile-time value); static_range loop variables
// and helper parameters bind compile-time values directly (keep=true).
func (s *spec) assign(target syntax.Expr, v value, keep bool) {
	s.at(target)
	switch t := target.(type) {
	case *syntax.Name:
		if !keep && isPyNumber(v) {
			v = s.toTensor(v)
		}
		if x, ok := v.(*ir.Value); ok && x.Name == "" && s.dry == 0 && !s.fr.unit.builtin {
			x.Name = t.ID
		}
		s.fr.set(t.ID, v)
	case *syntax.Tuple, *syntax.List:
		var elts []syntax.Expr
		if tt, ok := t.(*syntax.Tuple); ok {
			elts = tt.Elts
		} else {
			elts = t.(*syntax.List).Elts
		}
		tv, ok := v.(cTuple)
		if !ok {
			s.fail("cannot unpack %s into %d names", typeName(v), len(elts))
		}
		if len(tv) != len(elts) {
			s.fail("cannot unpack a tuple of %d values into %d names", len(tv), len(elts))
		}
		for i, e := range elts {
			s.assign(e, tv[i], keep)
		}
	case *syntax.Subscript:
		s.fail("assignment to a subscript is not supported (tensors are immutable)")
	case *syntax.Attribute:
		s.fail("assignment to an attribute is not supported")
	default:
		s.fail("cannot assign to %T", target)
	}
}

// ---------------------------------------------------------------------------------------------
// Loop-carried and branch-merged values: a value is flattened to the IR values it holds
// (tuples and block pointers contribute several) and rebuilt after the loop or if.

func flatten(v value, out []*ir.Value) []*ir.Value {
	switch x := v.(type) {
	case *ir.Value:
		out = append(out, x)
	case *blockPtr:
		// Only the offsets of a block pointer change (tl.advance); base, shape and strides
		// stay the values defined before the loop or if.
		out = append(out, x.offsets...)
	case cTuple:
		for _, e := range x {
			out = flatten(e, out)
		}
	}
	return out
}

// blockPtrFixed reports whether two block pointers share base, shape and strides.
func blockPtrFixed(a, b *blockPtr) bool {
	if a.base != b.base || len(a.shape) != len(b.shape) || !slices.Equal(a.blockShape, b.blockShape) {
		return false
	}
	for i := range a.shape {
		if a.shape[i] != b.shape[i] || a.strides[i] != b.strides[i] {
			return false
		}
	}
	return true
}

func rebuild(tmpl value, vals []*ir.Value, i *int) value {
	take := func() *ir.Value { v := vals[*i]; *i++; return v }
	switch x := tmpl.(type) {
	case *ir.Value:
		return take()
	case *blockPtr:
		n := &blockPtr{blockShape: x.blockShape, order: x.order, base: x.base, shape: x.shape, strides: x.strides}
		for range x.offsets {
			n.offsets = append(n.offsets, take())
		}
		return n
	case cTuple:
		t := make(cTuple, len(x))
		for k, e := range x {
			t[k] = rebuild(e, vals, i)
		}
		return t
	}
	return tmpl
}

// sameValue reports whether two values are the same binding (identical IR values, equal
// constants).
func sameValue(a, b value) bool {
	switch x := a.(type) {
	case *ir.Value:
		y, ok := b.(*ir.Value)
		return ok && x == y
	case *blockPtr:
		y, ok := b.(*blockPtr)
		if !ok || !blockPtrFixed(x, y) {
			return false
		}
		fa, fb := flatten(x, nil), flatten(y, nil)
		if len(fa) != len(fb) {
			return false
		}
		for i := range fa {
			if fa[i] != fb[i] {
				return false
			}
		}
		return true
	case cTuple:
		y, ok := b.(cTuple)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	if isConst(a) && isConst(b) {
		return constEqual(a, b)
	}
	return false
}

// sameStructure reports whether b can stand where a stood in a loop or if: the same kinds,
// the same constants, and IR values of equal types. It returns a description of the first
// difference.
func sameStructure(a, b value) (bool, string) {
	switch x := a.(type) {
	case *ir.Value:
		y, ok := b.(*ir.Value)
		if !ok {
			return false, fmt.Sprintf("%s and %s", x.Type, typeName(b))
		}
		if !x.Type.Equal(y.Type) {
			return false, fmt.Sprintf("%s and %s", x.Type, y.Type)
		}
		return true, ""
	case *blockPtr:
		y, ok := b.(*blockPtr)
		if !ok {
			return false, "a block pointer and " + typeName(b)
		}
		if !blockPtrFixed(x, y) {
			return false, "block pointers with different bases, shapes or strides (only tl.advance may change a block pointer here)"
		}
		fa, fb := flatten(x, nil), flatten(y, nil)
		for i := range fa {
			if !fa[i].Type.Equal(fb[i].Type) {
				return false, "block pointers of different types"
			}
		}
		return true, ""
	case cTuple:
		y, ok := b.(cTuple)
		if !ok || len(x) != len(y) {
			return false, "tuple and " + typeName(b)
		}
		for i := range x {
			if ok, d := sameStructure(x[i], y[i]); !ok {
				return false, d
			}
		}
		return true, ""
	}
	if !isConst(b) || !constEqual(a, b) {
		return false, fmt.Sprintf("compile-time %s and %s", constString(a), typeName(b))
	}
	return true, ""
}

func flatTypes(vs []*ir.Value) []ir.Type {
	ts := make([]ir.Type, len(vs))
	for i, v := range vs {
		ts[i] = v.Type
	}
	return ts
}

// ---------------------------------------------------------------------------------------------
// if

func (s *spec) execIf(n *syntax.If) {
	cond := s.eval(n.Cond)
	if isConst(cond) {
		b, ok := truthy(cond)
		if !ok {
			s.fail("if condition %s has no truth value", typeName(cond))
		}
		if b {
			s.execBlock(n.Body)
		} else {
			s.execBlock(n.Else)
		}
		return
	}
	c, ok := cond.(*ir.Value)
	if !ok {
		s.fail("if condition must be a scalar or a compile-time value, got %s", typeName(cond))
	}
	if !c.Type.IsScalar() {
		s.fail("if condition must be a scalar, got %s (use tl.where for element-wise choices)", c.Type)
	}
	c = s.toBool(c)
	s.at(n)
	ifPos := s.pos
	parent := s.blk
	before, order := s.fr.snapshot()

	s.enterRegion("if")
	s.fr.dynIfs++
	thenBlk := &ir.Block{}
	s.blk = thenBlk
	s.execBlock(n.Body)
	thenVars, thenOrder := s.fr.snapshot()
	s.fr.restore(before, order)
	elseBlk := &ir.Block{}
	s.blk = elseBlk
	s.execBlock(n.Else)
	elseVars, elseOrder := s.fr.snapshot()
	s.fr.dynIfs--
	s.regions--
	s.pos = ifPos

	// Names that differ after the branches become results of the If.
	var names []string
	seen := map[string]bool{}
	for _, list := range [][]string{thenOrder, elseOrder} {
		for _, name := range list {
			if seen[name] {
				continue
			}
			seen[name] = true
			tv, inThen := thenVars[name]
			ev, inElse := elseVars[name]
			if !inThen || !inElse {
				continue // defined in one branch only: not visible after the if
			}
			bv, inBefore := before[name]
			if inBefore && sameValue(tv, bv) && sameValue(ev, bv) {
				continue
			}
			if sameValue(tv, ev) {
				continue
			}
			names = append(names, name)
		}
	}
	// Constants that differ between the branches become IR values in their branch.
	var thenVals, elseVals []*ir.Value
	tmpls := make([]value, len(names))
	for i, name := range names {
		tv, ev := thenVars[name], elseVars[name]
		if ok, _ := sameStructure(tv, ev); !ok {
			s.blk = thenBlk
			tv = s.materialize(tv)
			s.blk = elseBlk
			ev = s.materialize(ev)
		}
		if ok, d := sameStructure(tv, ev); !ok {
			s.fail("variable %s has different types in the branches of the if at line %d: %s", name, ifPos.Line, d)
		}
		tmpls[i] = tv
		thenVals = flatten(tv, thenVals)
		elseVals = flatten(ev, elseVals)
	}
	s.blk = thenBlk
	s.emitInstr(ir.Yield, nil, thenVals...)
	s.blk = elseBlk
	s.emitInstr(ir.Yield, nil, elseVals...)
	s.blk = parent
	in := s.emitInstr(ir.If, flatTypes(thenVals), c)
	in.Regions = []*ir.Block{thenBlk, elseBlk}

	s.fr.restore(before, order)
	k := 0
	for i, name := range names {
		s.fr.set(name, rebuild(tmpls[i], in.Results, &k))
	}
	for _, name := range thenOrder {
		if _, ok := s.fr.vars[name]; !ok {
			if _, inElse := elseVars[name]; inElse {
				s.fr.set(name, thenVars[name]) // identical in both branches
			}
		}
	}
}

// ---------------------------------------------------------------------------------------------
// for and while

// carried dry-runs body (into a scratch block) and returns the names assigned in it that
// existed before, in first-assignment order; it leaves the frame as it was.
func (s *spec) carried(run func()) []string {
	before, order := s.fr.snapshot()
	parent := s.blk
	s.blk = &ir.Block{}
	s.dry++
	run()
	s.dry--
	after, _ := s.fr.snapshot()
	s.blk = parent
	s.fr.restore(before, order)
	var names []string
	for _, name := range order {
		if !sameValue(before[name], after[name]) {
			names = append(names, name)
		}
	}
	return names
}

// loopInits returns the flattened initial values of the loop-carried names, failing on
// compile-time values that the loop would change.
func (s *spec) loopInits(names []string) ([]value, []*ir.Value) {
	tmpls := make([]value, len(names))
	var inits []*ir.Value
	for i, name := range names {
		v := s.fr.vars[name]
		if _, isTuple := v.(cTuple); isTuple {
			v = s.materialize(v) // (acc, 0): the numbers inside become loop-carried scalars
		}
		if isConst(v) {
			s.fail("compile-time variable %s (%s) cannot be reassigned inside a loop", name, constString(v))
		}
		tmpls[i] = v
		inits = flatten(v, inits)
	}
	return tmpls, inits
}

// bindLoopArgs rebinds the carried names to the block arguments.
func (s *spec) bindLoopArgs(names []string, tmpls []value, args []*ir.Value) {
	k := 0
	for i, name := range names {
		s.fr.set(name, rebuild(tmpls[i], args, &k))
	}
}

// loopYields checks that each carried name kept its type and returns the flattened values.
func (s *spec) loopYields(names []string, tmpls []value, loopLine int) []*ir.Value {
	var out []*ir.Value
	for i, name := range names {
		v := s.fr.vars[name]
		if ok, _ := sameStructure(tmpls[i], v); !ok {
			v = s.materialize(v)
		}
		if ok, d := sameStructure(tmpls[i], v); !ok {
			if _, isIR := v.(*ir.Value); isIR {
				d = describe(v)
			}
			s.fail("loop-carried variable %s changes type in the loop at line %d: %s before the loop, %s at the end of the body; keep its dtype and shape (e.g. start from tl.zeros or cast with .to())", name, loopLine, describe(tmpls[i]), d)
		}
		out = flatten(v, out)
	}
	return out
}

func describe(v value) string {
	if x, ok := v.(*ir.Value); ok {
		return x.Type.String()
	}
	return typeName(v)
}

func (s *spec) execFor(n *syntax.For) {
	call, ok := n.Iter.(*syntax.Call)
	if !ok {
		it := s.eval(n.Iter)
		if t, ok := it.(cTuple); ok {
			for _, e := range t {
				s.at(n)
				s.assign(n.Target, e, true)
				if s.execBlock(n.Body) {
					return
				}
			}
			return
		}
		s.fail("for loops iterate over range(...), tl.range(...), tl.static_range(...) or a compile-time tuple, got %s", typeName(it))
	}
	fn := s.eval(call.Func)
	b, _ := fn.(cBuiltin)
	switch b {
	case "tl.static_range":
		args := s.bindArgs(string(b), call, []string{"arg1", "arg2", "step", "loop_unroll_factor"})
		lo, hi, step := s.rangeArgs(args, true)
		if (hi-lo)/step > 1<<16 {
			s.fail("tl.static_range with %d iterations is too long to unroll", (hi-lo)/step)
		}
		for i := lo; (step > 0 && i < hi) || (step < 0 && i > hi); i += step {
			s.at(n)
			s.assign(n.Target, cInt(i), true)
			if s.execBlock(n.Body) {
				return
			}
		}
		return
	case "range", "tl.range":
		// A real loop, below.
	default:
		it := s.eval(n.Iter)
		if t, ok := it.(cTuple); ok {
			for _, e := range t {
				s.assign(n.Target, e, true)
				if s.execBlock(n.Body) {
					return
				}
			}
			return
		}
		s.fail("for loops iterate over range(...), tl.range(...), tl.static_range(...) or a compile-time tuple")
	}
	target, ok := n.Target.(*syntax.Name)
	if !ok {
		s.fail("the loop variable of a range loop must be a plain name")
	}
	args := s.bindArgs(string(b), call, []string{"arg1", "arg2", "step", "num_stages", "loop_unroll_factor", "disallow_acc_multi_buffer", "flatten", "warp_specialize"})
	var lb, ub, st value
	switch {
	case args[0] == nil:
		s.fail("range needs at least one argument")
	case args[1] == nil:
		lb, ub = cInt(0), args[0]
	default:
		lb, ub = args[0], args[1]
	}
	st = args[2]
	if st == nil {
		st = cInt(1)
	}
	if sv, ok := st.(cInt); ok && sv == 0 {
		s.fail("range step must not be zero")
	}
	bounds := []value{lb, ub, st}
	ivType := ir.Invalid
	for i, v := range bounds {
		if !isPyNumber(v) {
			x, ok := v.(*ir.Value)
			if !ok || !x.Type.IsScalar() || x.Type.Ptr || !x.Type.Elem.IsInt() {
				s.fail("range bounds must be integer scalars, got %s", typeName(v))
			}
		} else if _, isInt := v.(cInt); !isInt {
			s.fail("range bounds must be integers, got %s", typeName(v))
		}
		d := elemType(v).Elem
		if i == 0 {
			ivType = d
		} else {
			ivType = integerPromote(ivType, d)
		}
	}
	if ivType == ir.I1 {
		ivType = ir.I32
	}
	s.at(n)
	loopPos := s.pos
	var bv [3]*ir.Value
	for i, v := range bounds {
		if x, ok := v.(*ir.Value); ok {
			bv[i] = s.cast(x, ivType)
		} else {
			if !fitsInt(int64(v.(cInt)), ivType) {
				s.fail("range bound %d does not fit %s", v.(cInt), ivType)
			}
			bv[i] = s.constant(ir.Scalar(ivType), v)
		}
	}

	body := func(iv *ir.Value) {
		s.at(n)
		s.enterRegion("for")
		s.fr.loops++
		s.fr.set(target.ID, iv)
		s.execBlock(n.Body)
		s.fr.loops--
		s.regions--
	}
	names := s.carried(func() { body(s.f.NewValue(ir.Scalar(ivType), target.ID)) })
	s.pos = loopPos
	tmpls, inits := s.loopInits(names)
	before, order := s.fr.snapshot()

	in := s.emitInstr(ir.For, nil, append([]*ir.Value{bv[0], bv[1], bv[2]}, inits...)...)
	parent := s.blk
	blk := s.f.NewBlock(append([]ir.Type{ir.Scalar(ivType)}, flatTypes(inits)...)...)
	blk.Args[0].Name = target.ID
	s.blk = blk
	s.bindLoopArgs(names, tmpls, blk.Args[1:])
	body(blk.Args[0])
	s.pos = loopPos
	yields := s.loopYields(names, tmpls, loopPos.Line)
	s.emitInstr(ir.Yield, nil, yields...)
	s.blk = parent
	in.Regions = []*ir.Block{blk}
	for _, t := range flatTypes(inits) {
		r := s.f.NewValue(t, "")
		r.Def = in
		in.Results = append(in.Results, r)
	}
	s.fr.restore(before, order)
	s.bindLoopArgs(names, tmpls, in.Results)
	nameValues(names, tmpls, blk.Args[1:], in.Results)
}

// nameValues copies source names onto block arguments and results, for readable dumps.
func nameValues(names []string, tmpls []value, lists ...[]*ir.Value) {
	for _, list := range lists {
		k := 0
		for i, name := range names {
			n := len(flatten(tmpls[i], nil))
			for j := 0; j < n && k < len(list); j++ {
				if n == 1 {
					list[k].Name = name
				}
				k++
			}
		}
	}
}

// enterRegion opens the body of a runtime if, for or while (s.pos is the statement), failing
// when the IR could not hold it (ir.MaxRegionDepth, the function body included).
func (s *spec) enterRegion(what string) {
	s.regions++
	if s.regions >= ir.MaxRegionDepth {
		s.fail("runtime if/for/while statements nested deeper than %d (this %s is level %d)", ir.MaxRegionDepth-1, what, s.regions)
	}
}

func (s *spec) execWhile(n *syntax.While) {
	loopPos := s.pos
	names := s.carried(func() {
		s.enterRegion("while")
		s.fr.loops++
		s.eval(n.Cond)
		s.execBlock(n.Body)
		s.fr.loops--
		s.regions--
	})
	s.pos = loopPos
	tmpls, inits := s.loopInits(names)
	before, order := s.fr.snapshot()
	in := s.emitInstr(ir.While, nil, inits...)
	parent := s.blk
	types := flatTypes(inits)

	condBlk := s.f.NewBlock(types...)
	s.blk = condBlk
	s.bindLoopArgs(names, tmpls, condBlk.Args)
	c := s.eval(n.Cond)
	s.at(n.Cond)
	cv := s.toTensor(c)
	if !cv.Type.IsScalar() {
		s.fail("while condition must be a scalar, got %s", cv.Type)
	}
	s.emitInstr(ir.Condition, nil, s.toBool(cv))

	bodyBlk := s.f.NewBlock(types...)
	s.blk = bodyBlk
	s.fr.restore(before, order)
	s.bindLoopArgs(names, tmpls, bodyBlk.Args)
	s.pos = loopPos
	s.enterRegion("while")
	s.fr.loops++
	s.execBlock(n.Body)
	s.fr.loops--
	s.regions--
	s.pos = loopPos
	yields := s.loopYields(names, tmpls, loopPos.Line)
	s.emitInstr(ir.Yield, nil, yields...)
	s.blk = parent
	in.Regions = []*ir.Block{condBlk, bodyBlk}
	for _, t := range types {
		r := s.f.NewValue(t, "")
		r.Def = in
		in.Results = append(in.Results, r)
	}
	s.fr.restore(before, order)
	s.bindLoopArgs(names, tmpls, in.Results)
	nameValues(names, tmpls, condBlk.Args, bodyBlk.Args, in.Results)
}

// materialize turns Python numbers (alone or inside tuples) into IR scalars of their literal
// dtypes, so that they can be merged or carried like the IR values they meet.
func (s *spec) materialize(v value) value {
	switch x := v.(type) {
	case cInt, cFloat, cBool:
		return s.toTensor(x)
	case cTuple:
		out := make(cTuple, len(x))
		for i, e := range x {
			out[i] = s.materialize(e)
		}
		return out
	}
	return v
}
