package triton

import (
	"math"
	"strings"

	"github.com/widejit/widejit/triton/ir"
	"github.com/widejit/widejit/triton/syntax"
)

// callArgs are the evaluated arguments of a call.
type callArgs struct {
	pos []value
	kw  map[string]value
	kwN []string
}

func (s *spec) evalArgs(call *syntax.Call) callArgs {
	ca := callArgs{kw: map[string]value{}}
	for _, a := range call.Args {
		ca.pos = append(ca.pos, s.eval(a))
	}
	for _, k := range call.Keywords {
		if _, dup := ca.kw[k.Name]; dup {
			s.at(k)
			s.fail("keyword argument %s given twice", k.Name)
		}
		ca.kw[k.Name] = s.eval(k.Value)
		ca.kwN = append(ca.kwN, k.Name)
	}
	s.at(call)
	return ca
}

// bind maps arguments onto a builtin's parameter list; absent parameters are nil.
func (s *spec) bind(fn string, ca callArgs, params []string) []value {
	out := make([]value, len(params))
	if len(ca.pos) > len(params) {
		s.fail("%s takes at most %d arguments, got %d", fn, len(params), len(ca.pos))
	}
	copy(out, ca.pos)
	for _, k := range ca.kwN {
		i := indexOf(params, k)
		if i < 0 {
			s.fail("%s got an unexpected keyword argument %q (parameters: %s)", fn, k, strings.Join(params, ", "))
		}
		if out[i] != nil {
			s.fail("%s got multiple values for argument %q", fn, k)
		}
		out[i] = ca.kw[k]
	}
	return out
}

func indexOf(list []string, x string) int {
	for i, e := range list {
		if e == x {
			return i
		}
	}
	return -1
}

func (s *spec) bindArgs(fn string, call *syntax.Call, params []string) []value {
	return s.bind(fn, s.evalArgs(call), params)
}

func (s *spec) evalCall(n *syntax.Call) value {
	fn := s.eval(n.Func)
	ca := s.evalArgs(n)
	return s.call(fn, ca)
}

func (s *spec) call(fn value, ca callArgs) value {
	switch f := fn.(type) {
	case cBuiltin:
		return s.callBuiltin(string(f), ca)
	case cMethod:
		if d, ok := f.recv.(cDType); ok {
			if len(ca.pos) > 0 || len(ca.kw) > 0 {
				s.fail("dtype.%s takes no arguments", f.name)
			}
			return s.dtypeMethod(d.t, f.name)
		}
		ca.pos = append([]value{f.recv}, ca.pos...)
		if f.name == "to" {
			return s.callBuiltin("tl.cast", ca)
		}
		if f.name == "logical_and" || f.name == "logical_or" {
			a := s.bind(f.name, ca, []string{"input", "other"})
			x, y := s.toBool(s.toTensor(a[0])), s.toBool(s.toTensor(a[1]))
			if f.name == "logical_and" {
				return s.arith("&", x, y)
			}
			return s.arith("|", x, y)
		}
		return s.callBuiltin("tl."+f.name, ca)
	case cJitFn:
		return s.inline(f, ca)
	case cNonJit:
		s.fail("function %s is not decorated with @triton.jit", string(f))
	case cDType:
		s.fail("dtype %s is not callable", f.t)
	}
	s.fail("%s is not callable", typeName(fn))
	return nil
}

// inline runs a @triton.jit helper in a fresh frame: IR values pass as they are, everything
// else is a compile-time value (constexpr propagation).
func (s *spec) inline(f cJitFn, ca callArgs) value {
	def := f.def
	if s.depth > 64 {
		s.fail("calls nested deeper than 64 (recursive jit function %s?)", def.Name)
	}
	params := make([]string, len(def.Params))
	for i, p := range def.Params {
		params[i] = p.Name
	}
	args := s.bind(def.Name, ca, params)
	callPos := s.pos
	fr := &frame{vars: map[string]value{}, unit: f.unit}
	saved := s.fr
	for i, p := range def.Params {
		v := args[i]
		if v == nil {
			if p.Default == nil {
				s.fail("%s() missing argument %q", def.Name, p.Name)
			}
			s.fr = &frame{vars: map[string]value{}, unit: f.unit}
			v = s.evalConstExpr(p.Default)
			s.fr = saved
			s.pos = callPos
		}
		if p.Annotation != nil && isConstexprAnnotation(p.Annotation) && !isConst(v) {
			s.fail("argument %s of %s is tl.constexpr but got %s", p.Name, def.Name, typeName(v))
		}
		fr.set(p.Name, v)
	}
	s.fr = fr
	s.depth++
	s.execBlock(def.Body)
	s.depth--
	s.fr = saved
	s.pos = callPos
	if fr.ret == nil {
		return cNone{}
	}
	return fr.ret
}

// ---------------------------------------------------------------------------------------------
// Python builtins and tl functions

func (s *spec) callBuiltin(name string, ca callArgs) value {
	if h, ok := builtinTable[name]; ok {
		return h(s, ca)
	}
	if strings.HasPrefix(name, "tl.") {
		if v, ok := s.callPrelude(strings.TrimPrefix(name, "tl."), ca); ok {
			return v
		}
		s.fail("%s is not supported by widejit", name)
	}
	switch name {
	case "triton.jit":
		s.fail("triton.jit cannot be called inside a kernel")
	}
	s.fail("builtin %s is not supported in kernels", name)
	return nil
}

type builtinFn func(s *spec, ca callArgs) value

var builtinTable map[string]builtinFn

func init() {
	builtinTable = map[string]builtinFn{
		"min": func(s *spec, ca callArgs) value { return s.minmax(ca, "min") },
		"max": func(s *spec, ca callArgs) value { return s.minmax(ca, "max") },
		"len": func(s *spec, ca callArgs) value {
			a := s.bind("len", ca, []string{"obj"})
			switch x := a[0].(type) {
			case cTuple:
				return cInt(len(x))
			case cStr:
				return cInt(len(x))
			case *ir.Value:
				if len(x.Type.Shape) > 0 {
					return cInt(x.Type.Shape[0])
				}
			}
			s.fail("len() of %s", typeName(a[0]))
			return nil
		},
		"range": func(s *spec, ca callArgs) value {
			a := s.bind("range", ca, []string{"start", "stop", "step"})
			lo, hi, st := s.rangeArgs(a, true)
			if (hi-lo)/st > 1<<16 {
				s.fail("range() with %d elements is too long for a compile-time tuple", (hi-lo)/st)
			}
			var t cTuple
			for i := lo; (st > 0 && i < hi) || (st < 0 && i > hi); i += st {
				t = append(t, cInt(i))
			}
			return t
		},
		"int": func(s *spec, ca callArgs) value {
			a := s.bind("int", ca, []string{"x"})
			switch x := a[0].(type) {
			case cInt:
				return x
			case cBool:
				if x {
					return cInt(1)
				}
				return cInt(0)
			case cFloat:
				f := math.Trunc(float64(x))
				if math.IsNaN(f) || math.Abs(f) > 9.2e18 {
					s.fail("int(%v) does not fit in 64 bits", float64(x))
				}
				return cInt(int64(f))
			}
			s.fail("int() of %s (use x.to(tl.int32) for tensors)", typeName(a[0]))
			return nil
		},
		"float": func(s *spec, ca callArgs) value {
			a := s.bind("float", ca, []string{"x"})
			switch x := a[0].(type) {
			case cStr:
				switch strings.ToLower(strings.TrimSpace(string(x))) {
				case "inf", "+inf", "infinity":
					return cFloat(math.Inf(1))
				case "-inf", "-infinity":
					return cFloat(math.Inf(-1))
				case "nan", "+nan", "-nan":
					return cFloat(math.NaN())
				}
				s.fail("float(%q) is not supported", string(x))
			case cInt, cBool, cFloat:
				f, _, _ := numParts(x)
				return cFloat(f)
			}
			s.fail("float() of %s (use x.to(tl.float32) for tensors)", typeName(a[0]))
			return nil
		},
		"bool": func(s *spec, ca callArgs) value {
			a := s.bind("bool", ca, []string{"x"})
			b, ok := truthy(a[0])
			if !ok || !isConst(a[0]) {
				s.fail("bool() of %s", typeName(a[0]))
			}
			return cBool(b)
		},
		"abs": func(s *spec, ca callArgs) value {
			a := s.bind("abs", ca, []string{"x"})
			switch x := a[0].(type) {
			case cInt:
				return cInt(absI(int64(x)))
			case cFloat:
				return cFloat(math.Abs(float64(x)))
			case cBool:
				f, i, _ := numParts(x)
				_ = f
				return cInt(i)
			}
			return s.callBuiltin("tl.abs", ca)
		},
		"tuple": func(s *spec, ca callArgs) value {
			a := s.bind("tuple", ca, []string{"x"})
			if a[0] == nil {
				return cTuple{}
			}
			if t, ok := a[0].(cTuple); ok {
				return t
			}
			s.fail("tuple() of %s", typeName(a[0]))
			return nil
		},
		"str": func(s *spec, ca callArgs) value {
			a := s.bind("str", ca, []string{"x"})
			if !isConst(a[0]) {
				s.fail("str() of %s", typeName(a[0]))
			}
			if x, ok := a[0].(cStr); ok {
				return x
			}
			return cStr(constString(a[0]))
		},
		"isinstance": func(s *spec, ca callArgs) value {
			a := s.bind("isinstance", ca, []string{"obj", "classinfo"})
			classes := []value{a[1]}
			if t, ok := a[1].(cTuple); ok {
				classes = t
			}
			for _, c := range classes {
				if s.isInstance(a[0], c) {
					return cBool(true)
				}
			}
			return cBool(false)
		},
		"getattr": func(s *spec, ca callArgs) value {
			a := s.bind("getattr", ca, []string{"obj", "name", "default"})
			n, ok := a[1].(cStr)
			if !ok {
				s.fail("getattr needs a compile-time string name")
			}
			if a[2] != nil {
				if v, ok := s.tryGetattr(a[0], string(n)); ok {
					return v
				}
				return a[2]
			}
			return s.getattr(a[0], string(n))
		},
		"hasattr": func(s *spec, ca callArgs) value {
			a := s.bind("hasattr", ca, []string{"obj", "name"})
			n, ok := a[1].(cStr)
			if !ok {
				s.fail("hasattr needs a compile-time string name")
			}
			_, has := s.tryGetattr(a[0], string(n))
			return cBool(has)
		},
		"triton.next_power_of_2": func(s *spec, ca callArgs) value {
			a := s.bind("triton.next_power_of_2", ca, []string{"n"})
			n, ok := a[0].(cInt)
			if !ok || n < 0 || n > 1<<62 {
				s.fail("triton.next_power_of_2 needs a compile-time non-negative int")
			}
			p := cInt(1)
			for p < n {
				p <<= 1
			}
			return p
		},
	}
	for _, m := range []string{"log2", "log", "sqrt", "exp", "ceil", "floor", "isnan", "isinf"} {
		m := m
		builtinTable["math."+m] = func(s *spec, ca callArgs) value {
			a := s.bind("math."+m, ca, []string{"x"})
			if !isPyNumber(a[0]) {
				s.fail("math.%s works on compile-time numbers only; use tl.%s for tensors", m, m)
			}
			f, _, _ := numParts(a[0])
			switch m {
			case "log2":
				return cFloat(math.Log2(f))
			case "log":
				return cFloat(math.Log(f))
			case "sqrt":
				return cFloat(math.Sqrt(f))
			case "exp":
				return cFloat(math.Exp(f))
			case "ceil":
				return cInt(int64(math.Ceil(f)))
			case "floor":
				return cInt(int64(math.Floor(f)))
			case "isnan":
				return cBool(math.IsNaN(f))
			default:
				return cBool(math.IsInf(f, 0))
			}
		}
	}
	registerTL()
}

// tryGetattr is getattr that reports failure instead of raising.
func (s *spec) tryGetattr(x value, name string) (v value, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, isBail := r.(bailout); !isBail {
				panic(r)
			}
			v, ok = nil, false
		}
	}()
	return s.getattr(x, name), true
}

func (s *spec) isInstance(v value, class value) bool {
	b, ok := class.(cBuiltin)
	if !ok {
		s.fail("isinstance needs a class, got %s", typeName(class))
	}
	switch b {
	case "int":
		_, ok := v.(cInt)
		return ok
	case "float":
		_, ok := v.(cFloat)
		return ok
	case "bool":
		_, ok := v.(cBool)
		return ok
	case "str":
		_, ok := v.(cStr)
		return ok
	case "tuple":
		_, ok := v.(cTuple)
		return ok
	case "tl.tensor":
		_, ok := v.(*ir.Value)
		return ok
	case "tl.constexpr":
		return isConst(v)
	case "tl.dtype":
		_, ok := v.(cDType)
		return ok
	}
	s.fail("isinstance with class %s is not supported", string(b))
	return false
}

// rangeArgs reads compile-time (start, stop, step) in Python's range convention.
func (s *spec) rangeArgs(a []value, static bool) (lo, hi, step int64) {
	ints := make([]int64, 0, 3)
	for _, v := range a[:3] {
		if v == nil {
			continue
		}
		i, ok := v.(cInt)
		if !ok {
			s.fail("static range bounds must be compile-time ints, got %s", typeName(v))
		}
		ints = append(ints, int64(i))
	}
	switch len(ints) {
	case 1:
		return 0, ints[0], 1
	case 2:
		return ints[0], ints[1], 1
	case 3:
		if ints[2] == 0 {
			s.fail("range step must not be zero")
		}
		return ints[0], ints[1], ints[2]
	}
	s.fail("range needs 1 to 3 arguments")
	return
}

// minmax is Python's min/max: compile-time when every operand is, else tl.minimum/maximum.
func (s *spec) minmax(ca callArgs, which string) value {
	if len(ca.kw) > 0 {
		s.fail("%s() keyword arguments are not supported", which)
	}
	args := ca.pos
	if len(args) == 1 {
		if t, ok := args[0].(cTuple); ok {
			args = t
		}
	}
	if len(args) == 0 {
		s.fail("%s() needs at least one argument", which)
	}
	acc := args[0]
	for _, v := range args[1:] {
		if isPyNumber(acc) && isPyNumber(v) {
			lt := s.cmpop(syntax.CmpLt, v, acc).(cBool)
			if (which == "min") == bool(lt) {
				acc = v
			}
			continue
		}
		if which == "min" {
			acc = s.elementwiseMinMax("min", ir.Min, acc, v)
		} else {
			acc = s.elementwiseMinMax("max", ir.Max, acc, v)
		}
	}
	return acc
}
