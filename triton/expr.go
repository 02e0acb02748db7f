package triton

import (
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/widejit/widejit/triton/ir"
	"github.com/widejit/widejit/triton/syntax"
)

// This file is the expression half of the abstract interpreter.

func (s *spec) eval(e syntax.Expr) value {
	s.at(e)
	switch n := e.(type) {
	case *syntax.Name:
		return s.lookup(n.ID, n)
	case *syntax.Constant:
		switch n.Kind {
		case syntax.ConstInt:
			v, ok := n.Int64()
			if !ok {
				s.fail("integer literal %s does not fit in 64 bits", n.Raw)
			}
			return cInt(v)
		case syntax.ConstFloat:
			return cFloat(n.Float)
		case syntax.ConstStr:
			return cStr(n.Str)
		case syntax.ConstBool:
			return cBool(n.Bool)
		case syntax.ConstNone:
			return cNone{}
		}
		s.fail("unsupported literal %s", n.Raw)
	case *syntax.Tuple:
		return s.evalList(n.Elts)
	case *syntax.List:
		return s.evalList(n.Elts)
	case *syntax.Attribute:
		x := s.eval(n.X)
		if !s.fr.unit.builtin {
			s.pos = toPos(n.NamePos)
		}
		return s.getattr(x, n.Name)
	case *syntax.Call:
		return s.evalCall(n)
	case *syntax.BinOp:
		a := s.eval(n.X)
		b := s.eval(n.Y)
		s.at(n)
		return s.binop(n.Op.String(), a, b)
	case *syntax.UnaryOp:
		x := s.eval(n.X)
		s.at(n)
		return s.unop(n.Op.String(), x)
	case *syntax.BoolOp:
		return s.evalBoolOp(n)
	case *syntax.Compare:
		if len(n.Ops) != 1 {
			s.fail("chained comparisons are not supported; split them with `and`")
		}
		a := s.eval(n.Operands[0])
		b := s.eval(n.Operands[1])
		s.at(n)
		return s.cmpop(n.Ops[0], a, b)
	case *syntax.IfExp:
		c := s.eval(n.Cond)
		if isConst(c) {
			b, ok := truthy(c)
			if !ok {
				s.fail("condition %s has no truth value", typeName(c))
			}
			if b {
				return s.eval(n.Then)
			}
			return s.eval(n.Else)
		}
		a := s.eval(n.Then)
		b := s.eval(n.Else)
		s.at(n)
		cv := s.toTensor(c)
		if !cv.Type.IsScalar() {
			s.fail("a conditional expression needs a scalar condition, got %s; use tl.where", cv.Type)
		}
		at, bt := elemType(a), elemType(b)
		if !isPyNumber(a) && !isPyNumber(b) && !at.Equal(bt) || !slices.Equal(shapeOf(a), shapeOf(b)) {
			s.fail("both arms of a conditional expression on a runtime condition must have one type, got %s and %s", describe(a), describe(b))
		}
		return s.where(cv, a, b)
	case *syntax.Subscript:
		return s.evalSubscript(n)
	case *syntax.Slice:
		s.fail("a slice is only allowed inside a subscript")
	case *syntax.Starred:
		s.fail("starred expressions are not supported")
	}
	s.fail("unsupported expression %T", e)
	return nil
}

func (s *spec) evalList(elts []syntax.Expr) value {
	t := make(cTuple, len(elts))
	for i, e := range elts {
		t[i] = s.eval(e)
	}
	return t
}

// lookup resolves a name: locals, then the unit's module constants and imports, then builtins.
func (s *spec) lookup(name string, at syntax.Node) value {
	if v, ok := s.fr.vars[name]; ok {
		return v
	}
	if v, ok := s.global(s.fr.unit, name); ok {
		return v
	}
	if b, ok := pyBuiltins[name]; ok {
		return b
	}
	s.at(at)
	s.fail("name %q is not defined", name)
	return nil
}

var pyBuiltins = map[string]value{
	"min": cBuiltin("min"), "max": cBuiltin("max"), "range": cBuiltin("range"), "len": cBuiltin("len"),
	"int": cBuiltin("int"), "float": cBuiltin("float"), "bool": cBuiltin("bool"), "isinstance": cBuiltin("isinstance"),
	"getattr": cBuiltin("getattr"), "abs": cBuiltin("abs"), "print": cBuiltin("tl.device_print"),
	"tuple": cBuiltin("tuple"), "str": cBuiltin("str"), "hasattr": cBuiltin("hasattr"),
}

// global resolves a module-level name of u: a jit function, an import, or a module constant
// (evaluated once per specialization, lazily).
func (s *spec) global(u *unit, name string) (value, bool) {
	if fn, ok := u.funcs[name]; ok {
		if !u.jit[name] {
			return cNonJit(name), true
		}
		return cJitFn{def: fn, unit: u}, true
	}
	if m, ok := u.imports[name]; ok {
		if mm, ok := m.(moduleMember); ok {
			return s.getattr(mm.mod, mm.name), true
		}
		return m, true
	}
	if g := s.globals[u]; g != nil {
		if v, ok := g[name]; ok {
			return v, true
		}
	}
	a, ok := u.consts[name]
	if !ok {
		return nil, false
	}
	key := name
	if s.inGlob == nil {
		s.inGlob = map[string]bool{}
	}
	if s.inGlob[key] {
		s.fail("module constant %s refers to itself", name)
	}
	s.inGlob[key] = true
	saved, savedBlk, savedPos := s.fr, s.blk, s.pos
	s.fr = &frame{vars: map[string]value{}, unit: u}
	s.blk = &ir.Block{} // module constants must not emit IR; a scratch block catches mistakes
	v := s.eval(a.Value)
	if !isConst(v) {
		s.fail("module-level %s must be a compile-time value, got %s", name, typeName(v))
	}
	s.fr, s.blk, s.pos = saved, savedBlk, savedPos
	delete(s.inGlob, key)
	if s.globals[u] == nil {
		s.globals[u] = map[string]value{}
	}
	s.globals[u][name] = v
	return v, true
}

// cNonJit is a module-level function without @triton.jit: calling it is an error.
type cNonJit string

// ---------------------------------------------------------------------------------------------
// Operators

func (s *spec) binop(op string, a, b value) value {
	if isConst(a) && isConst(b) {
		return s.constBinop(op, a, b)
	}
	if _, ok := a.(*blockPtr); ok {
		s.fail("operator %s on a block pointer; use tl.advance", op)
	}
	if _, ok := b.(*blockPtr); ok {
		s.fail("operator %s on a block pointer; use tl.advance", op)
	}
	for _, v := range []value{a, b} {
		if isConst(v) && !isPyNumber(v) {
			s.fail("operator %s between %s and %s", op, typeName(a), typeName(b))
		}
	}
	return s.arith(op, a, b)
}

func (s *spec) unop(op string, x value) value {
	if isConst(x) {
		switch v := x.(type) {
		case cInt:
			switch op {
			case "-":
				if v == math.MinInt64 {
					s.fail("integer overflow in -%d", v)
				}
				return -v
			case "+":
				return v
			case "~":
				return ^v
			}
		case cFloat:
			switch op {
			case "-":
				return -v
			case "+":
				return v
			}
		case cBool:
			switch op {
			case "-", "+", "~":
				i := cInt(0)
				if v {
					i = 1
				}
				return s.unop(op, i)
			}
		}
		if op == "not" {
			b, ok := truthy(x)
			if !ok {
				s.fail("not on %s", typeName(x))
			}
			return cBool(!b)
		}
		s.fail("unary %s on %s", op, typeName(x))
	}
	v, ok := x.(*ir.Value)
	if !ok {
		s.fail("unary %s on %s", op, typeName(x))
	}
	return s.unary(op, v)
}

// constBinop is Python arithmetic on compile-time values (ints are 64-bit: overflow is an
// error rather than a silent wrap).
func (s *spec) constBinop(op string, a, b value) value {
	if ta, ok := a.(cTuple); ok {
		switch tb := b.(type) {
		case cTuple:
			if op == "+" {
				return append(append(cTuple{}, ta...), tb...)
			}
		case cInt:
			if op == "*" && tb >= 0 && int(tb)*len(ta) <= 1<<16 {
				out := cTuple{}
				for i := 0; i < int(tb); i++ {
					out = append(out, ta...)
				}
				return out
			}
		}
		s.fail("operator %s between %s and %s", op, typeName(a), typeName(b))
	}
	if sa, ok := a.(cStr); ok {
		if sb, ok := b.(cStr); ok && op == "+" {
			return sa + sb
		}
		s.fail("operator %s between %s and %s", op, typeName(a), typeName(b))
	}
	if !isPyNumber(a) || !isPyNumber(b) {
		s.fail("operator %s between %s and %s", op, typeName(a), typeName(b))
	}
	fa, ia, aInt := numParts(a)
	fb, ib, bInt := numParts(b)
	_, aBool := a.(cBool)
	_, bBool := b.(cBool)
	if aInt && bInt {
		switch op {
		case "+":
			r := ia + ib
			if (r > ia) != (ib > 0) {
				s.fail("integer overflow in %d + %d", ia, ib)
			}
			return cInt(r)
		case "-":
			r := ia - ib
			if (r < ia) != (ib > 0) {
				s.fail("integer overflow in %d - %d", ia, ib)
			}
			return cInt(r)
		case "*":
			hi, lo := bits.Mul64(uint64(absI(ia)), uint64(absI(ib)))
			if hi != 0 || lo > math.MaxInt64 {
				s.fail("integer overflow in %d * %d", ia, ib)
			}
			return cInt(ia * ib)
		case "//", "%":
			if ib == 0 {
				s.fail("integer division by zero")
			}
			q, r := ia/ib, ia%ib
			if r != 0 && (r < 0) != (ib < 0) {
				q--
				r += ib
			}
			if op == "//" {
				return cInt(q)
			}
			return cInt(r)
		case "/":
			if ib == 0 {
				s.fail("division by zero")
			}
			return cFloat(float64(ia) / float64(ib))
		case "**":
			if ib < 0 {
				return cFloat(math.Pow(float64(ia), float64(ib)))
			}
			// Exponentiation by squaring, failing on overflow.
			mul := func(x, y int64) int64 {
				hi, lo := bits.Mul64(uint64(absI(x)), uint64(absI(y)))
				if hi != 0 || lo > math.MaxInt64 {
					s.fail("integer overflow in %d ** %d", ia, ib)
				}
				return x * y
			}
			r, base, e := int64(1), ia, ib
			for e > 0 {
				if e&1 == 1 {
					r = mul(r, base)
				}
				e >>= 1
				if e > 0 {
					base = mul(base, base)
				}
			}
			return cInt(r)
		case "<<":
			if ib < 0 {
				s.fail("negative shift count")
			}
			if ib >= 63 || (ia != 0 && bits.Len64(uint64(absI(ia)))+int(ib) > 63) {
				s.fail("integer overflow in %d << %d", ia, ib)
			}
			return cInt(ia << ib)
		case ">>":
			if ib < 0 {
				s.fail("negative shift count")
			}
			if ib > 63 {
				ib = 63
			}
			return cInt(ia >> ib)
		case "&", "|", "^":
			var r int64
			switch op {
			case "&":
				r = ia & ib
			case "|":
				r = ia | ib
			default:
				r = ia ^ ib
			}
			if aBool && bBool {
				return cBool(r != 0)
			}
			return cInt(r)
		}
		s.fail("operator %s on ints", op)
	}
	switch op {
	case "+":
		return cFloat(fa + fb)
	case "-":
		return cFloat(fa - fb)
	case "*":
		return cFloat(fa * fb)
	case "/":
		if fb == 0 {
			s.fail("float division by zero")
		}
		return cFloat(fa / fb)
	case "//":
		if fb == 0 {
			s.fail("float division by zero")
		}
		return cFloat(math.Floor(fa / fb))
	case "%":
		if fb == 0 {
			s.fail("float modulo by zero")
		}
		r := math.Mod(fa, fb)
		if r != 0 && (r < 0) != (fb < 0) {
			r += fb
		}
		return cFloat(r)
	case "**":
		return cFloat(math.Pow(fa, fb))
	}
	s.fail("operator %s on floats", op)
	return nil
}

func absI(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func (s *spec) cmpop(op syntax.CmpOp, a, b value) value {
	switch op {
	case syntax.CmpIs, syntax.CmpIsNot:
		// Identity: a tensor or block pointer is only itself (so `mask is None` is False
		// for a tensor mask, as in Triton).
		var eq bool
		switch {
		case isConst(a) && isConst(b):
			eq = constEqual(a, b)
			if _, an := a.(cNone); an {
				_, bn := b.(cNone)
				eq = bn
			}
		default:
			x, xok := a.(*ir.Value)
			y, yok := b.(*ir.Value)
			eq = xok && yok && x == y
			if pa, ok := a.(*blockPtr); ok {
				pb, ok := b.(*blockPtr)
				eq = ok && pa == pb
			}
		}
		return cBool(eq == (op == syntax.CmpIs))
	case syntax.CmpIn, syntax.CmpNotIn:
		t, ok := b.(cTuple)
		if !ok || !isConst(a) {
			s.fail("`%s` needs a compile-time value and a tuple", op)
		}
		found := false
		for _, e := range t {
			if constEqual(a, e) {
				found = true
			}
		}
		return cBool(found == (op == syntax.CmpIn))
	}
	if isConst(a) && isConst(b) {
		if isPyNumber(a) && isPyNumber(b) {
			fa, ia, aInt := numParts(a)
			fb, ib, bInt := numParts(b)
			var c int
			if aInt && bInt {
				c = cmp3(ia, ib)
			} else {
				if fa != fa || fb != fb {
					return cBool(op == syntax.CmpNotEq)
				}
				c = cmp3(fa, fb)
			}
			switch op {
			case syntax.CmpEq:
				return cBool(c == 0)
			case syntax.CmpNotEq:
				return cBool(c != 0)
			case syntax.CmpLt:
				return cBool(c < 0)
			case syntax.CmpLtE:
				return cBool(c <= 0)
			case syntax.CmpGt:
				return cBool(c > 0)
			case syntax.CmpGtE:
				return cBool(c >= 0)
			}
		}
		switch op {
		case syntax.CmpEq:
			return cBool(constEqual(a, b))
		case syntax.CmpNotEq:
			return cBool(!constEqual(a, b))
		}
		if sa, ok := a.(cStr); ok {
			if sb, ok := b.(cStr); ok {
				c := strings.Compare(string(sa), string(sb))
				switch op {
				case syntax.CmpLt:
					return cBool(c < 0)
				case syntax.CmpLtE:
					return cBool(c <= 0)
				case syntax.CmpGt:
					return cBool(c > 0)
				case syntax.CmpGtE:
					return cBool(c >= 0)
				}
			}
		}
		s.fail("comparison %s between %s and %s", op, typeName(a), typeName(b))
	}
	for _, v := range []value{a, b} {
		if _, ok := v.(*ir.Value); !ok && !isPyNumber(v) {
			s.fail("comparison %s between %s and %s", op, typeName(a), typeName(b))
		}
	}
	return s.compare(op.String(), a, b)
}

func cmp3[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// evalBoolOp: on compile-time values `and`/`or` short-circuit and return an operand as Python
// does; with a tensor operand they become element-wise logical ops on i1 (two operands only,
// as in Triton).
func (s *spec) evalBoolOp(n *syntax.BoolOp) value {
	v := s.eval(n.Values[0])
	for _, e := range n.Values[1:] {
		if isConst(v) {
			b, ok := truthy(v)
			if !ok {
				s.fail("%s on %s", n.Op, typeName(v))
			}
			if (n.Op == syntax.BoolAnd) != b {
				return v
			}
			v = s.eval(e)
			continue
		}
		if len(n.Values) > 2 {
			s.at(n)
			s.fail("chained boolean operators on tensors (A %s B %s C) are not supported; use parentheses", n.Op, n.Op)
		}
		w := s.eval(e)
		s.at(n)
		x := s.toBool(s.toTensor(v))
		y := s.toBool(s.toTensor(w))
		if n.Op == syntax.BoolAnd {
			v = s.arith("&", x, y)
		} else {
			v = s.arith("|", x, y)
		}
	}
	return v
}

// evalSubscript: tensors take only None (a new size-1 dim) and bare `:`; compile-time tuples
// take constant int indexes (x.shape[0]).
func (s *spec) evalSubscript(n *syntax.Subscript) value {
	x := s.eval(n.X)
	if t, ok := x.(cTuple); ok {
		if len(n.Index) != 1 {
			s.fail("a tuple takes one index")
		}
		iv := s.eval(n.Index[0])
		i, ok := iv.(cInt)
		if !ok {
			s.fail("tuple index must be a compile-time int, got %s", typeName(iv))
		}
		if i < 0 {
			i += cInt(len(t))
		}
		if i < 0 || int(i) >= len(t) {
			s.fail("tuple index %d out of range (length %d)", i, len(t))
		}
		return t[i]
	}
	v, ok := x.(*ir.Value)
	if !ok {
		s.fail("cannot subscript %s", typeName(x))
	}
	src := 0
	var idx []syntax.Expr = n.Index
	if len(idx) == 1 {
		if tup, ok := idx[0].(*syntax.Tuple); ok {
			idx = tup.Elts
		}
	}
	// Each None becomes an ExpandDims at its output position; `:` keeps a source dim.
	var out = v
	for pos, e := range idx {
		s.at(e)
		if sl, ok := e.(*syntax.Slice); ok {
			if sl.Lo != nil || sl.Hi != nil || sl.Step != nil {
				s.fail("only bare `:` slices are supported in tensor subscripts")
			}
			if src >= len(v.Type.Shape) {
				s.fail("too many indices for a tensor of shape %v", fmtShape(v.Type.Shape))
			}
			src++
			continue
		}
		if c, ok := e.(*syntax.Constant); ok && c.Kind == syntax.ConstNone {
			out = s.expandDims(out, pos)
			continue
		}
		s.fail("tensor subscripts accept only None and `:` (widejit and Triton have no element indexing)")
	}
	return out
}

// expandDims inserts a size-1 dim at axis.
func (s *spec) expandDims(x *ir.Value, axis int) *ir.Value {
	shape := append([]int(nil), x.Type.Shape[:axis]...)
	shape = append(shape, 1)
	shape = append(shape, x.Type.Shape[axis:]...)
	in := s.emitInstr(ir.ExpandDims, []ir.Type{x.Type.WithShape(shape)}, x)
	in.Int = int64(axis)
	return in.Result()
}
