package triton

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/widejit/widejit/triton/ir"
	"github.com/widejit/widejit/triton/syntax"
)

// value is what the abstract interpreter computes for an expression: a compile-time Python
// value (cInt, cFloat, cBool, cStr, cNone, cTuple, cDType, cModule, cBuiltin, cJitFn,
// cMethod, *blockPtr) or an IR value (*ir.Value: a scalar or a tile).
type value any

type (
	cInt     int64
	cFloat   float64
	cBool    bool
	cStr     string
	cNone    struct{}
	cTuple   []value
	cModule  string // "tl", "tl.math", "triton", "math", ...
	cBuiltin string // a qualified builtin: "tl.load", "min", "range", ...
	// cDType is a dtype (tl.float16), a pointer dtype (x_ptr.dtype) or a full type with a
	// shape (x.type).
	cDType struct{ t ir.Type }
	// cJitFn is a @triton.jit function of the kernel's file (or of the built-in prelude).
	cJitFn struct {
		def  *syntax.FuncDef
		unit *unit
	}
	// cMethod is a bound attribute such as x.to or tl.float16.is_floating.
	cMethod struct {
		recv value
		name string
	}
)

// blockPtr is a block pointer made by tl.make_block_ptr: a compile-time record of IR scalars.
// Offsets are i32 scalars, shape and strides i64 scalars (as Triton converts them).
type blockPtr struct {
	base       *ir.Value // scalar *E
	shape      []*ir.Value
	strides    []*ir.Value
	offsets    []*ir.Value
	blockShape []int
	order      []int
}

func isPyNumber(v value) bool {
	switch v.(type) {
	case cInt, cFloat, cBool:
		return true
	}
	return false
}

func isConst(v value) bool {
	_, ok := v.(*ir.Value)
	if ok {
		return false
	}
	if t, ok := v.(cTuple); ok {
		for _, e := range t {
			if !isConst(e) {
				return false
			}
		}
	}
	_, bp := v.(*blockPtr)
	return !bp
}

// typeName names a value's kind for error messages.
func typeName(v value) string {
	switch x := v.(type) {
	case cInt:
		return "int"
	case cFloat:
		return "float"
	case cBool:
		return "bool"
	case cStr:
		return "str"
	case cNone:
		return "None"
	case cTuple:
		return "tuple"
	case cDType:
		return "dtype"
	case cModule:
		return "module " + string(x)
	case cBuiltin:
		return "function " + string(x)
	case cJitFn:
		return "jit function " + x.def.Name
	case cMethod:
		return "method " + x.name
	case *blockPtr:
		return "block pointer"
	case *ir.Value:
		if x.Type.IsScalar() {
			return "scalar " + x.Type.String()
		}
		return "tensor " + x.Type.String()
	}
	return fmt.Sprintf("%T", v)
}

// constString renders a compile-time value as Python would print it (for dumps and messages).
func constString(v value) string {
	switch x := v.(type) {
	case cInt:
		return strconv.FormatInt(int64(x), 10)
	case cFloat:
		f := float64(x)
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEn") {
			s += ".0"
		}
		return s
	case cBool:
		if x {
			return "True"
		}
		return "False"
	case cStr:
		return strconv.Quote(string(x))
	case cNone:
		return "None"
	case cTuple:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = constString(e)
		}
		if len(x) == 1 {
			return "(" + parts[0] + ",)"
		}
		return "(" + strings.Join(parts, ", ") + ")"
	case cDType:
		return x.t.String()
	case cModule:
		return string(x)
	case cBuiltin:
		return string(x)
	case cJitFn:
		return x.def.Name
	}
	return typeName(v)
}

// fromGo converts a constexpr value given to Specialize into the interpreter's form.
func fromGo(x any) (value, bool) {
	switch v := x.(type) {
	case nil:
		return cNone{}, true
	case int:
		return cInt(v), true
	case int32:
		return cInt(v), true
	case int64:
		return cInt(v), true
	case int8:
		return cInt(v), true
	case int16:
		return cInt(v), true
	case uint8:
		return cInt(v), true
	case uint16:
		return cInt(v), true
	case uint32:
		return cInt(v), true
	case uint:
		if uint64(v) > math.MaxInt64 {
			return nil, false
		}
		return cInt(v), true
	case uint64:
		if v > math.MaxInt64 {
			return nil, false
		}
		return cInt(v), true
	case float64:
		return cFloat(v), true
	case float32:
		return cFloat(v), true
	case bool:
		return cBool(v), true
	case string:
		return cStr(v), true
	case ir.DType:
		return cDType{ir.Scalar(v)}, true
	case ir.Type:
		return cDType{v}, true
	case []any:
		t := make(cTuple, len(v))
		for i, e := range v {
			ev, ok := fromGo(e)
			if !ok {
				return nil, false
			}
			t[i] = ev
		}
		return t, true
	case []int:
		t := make(cTuple, len(v))
		for i, e := range v {
			t[i] = cInt(e)
		}
		return t, true
	case []int64:
		t := make(cTuple, len(v))
		for i, e := range v {
			t[i] = cInt(e)
		}
		return t, true
	}
	return nil, false
}

// constEqual is Python == between compile-time values.
func constEqual(a, b value) bool {
	if isPyNumber(a) && isPyNumber(b) {
		fa, ia, aInt := numParts(a)
		fb, ib, bInt := numParts(b)
		if aInt && bInt {
			return ia == ib
		}
		return fa == fb
	}
	switch x := a.(type) {
	case cStr:
		y, ok := b.(cStr)
		return ok && x == y
	case cNone:
		_, ok := b.(cNone)
		return ok
	case cDType:
		y, ok := b.(cDType)
		return ok && x.t.Equal(y.t)
	case cTuple:
		y, ok := b.(cTuple)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !constEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case cModule:
		y, ok := b.(cModule)
		return ok && x == y
	case cBuiltin:
		y, ok := b.(cBuiltin)
		return ok && x == y
	case cJitFn:
		y, ok := b.(cJitFn)
		return ok && x.def == y.def
	}
	return false
}

// numParts splits a Python number into its float value and, for int/bool, its int value.
func numParts(v value) (f float64, i int64, isInt bool) {
	switch x := v.(type) {
	case cInt:
		return float64(x), int64(x), true
	case cBool:
		if x {
			return 1, 1, true
		}
		return 0, 0, true
	case cFloat:
		return float64(x), 0, false
	}
	return 0, 0, false
}

// truthy is Python's bool() of a compile-time value.
func truthy(v value) (bool, bool) {
	switch x := v.(type) {
	case cInt:
		return x != 0, true
	case cFloat:
		return x != 0, true
	case cBool:
		return bool(x), true
	case cStr:
		return x != "", true
	case cNone:
		return false, true
	case cTuple:
		return len(x) > 0, true
	case cDType, cModule, cBuiltin, cJitFn:
		return true, true
	}
	return false, false
}
