package triton

import (
	"math"
	"strings"

	"github.com/widejit/widejit/triton/ir"
)

// tlFunctions are the tl.* (and tl.math.*) names widejit implements; the value is the
// canonical builtin name. Anything else under tl is an error that names it.
var tlFunctions = map[string]string{}

func init() {
	for _, n := range []string{
		"program_id", "num_programs", "arange", "zeros", "zeros_like", "full", "load", "store", "dot",
		"sum", "max", "min", "argmax", "argmin", "reduce", "maximum", "minimum", "where", "abs", "exp",
		"exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "sin", "cos", "erf", "sigmoid", "fma", "clamp", "cdiv",
		"floor", "ceil", "cast", "reshape", "view", "trans", "permute", "expand_dims", "broadcast_to",
		"broadcast", "ravel", "make_block_ptr", "advance", "atomic_add", "atomic_max", "atomic_min",
		"atomic_and", "atomic_or", "atomic_xor", "atomic_xchg", "atomic_cas", "multiple_of",
		"max_contiguous", "max_constancy", "debug_barrier", "static_assert", "static_print",
		"device_print", "device_assert", "rand", "randn", "randint", "randint4x", "constexpr", "static_range",
		"range", "umulhi", "fdiv", "div_rn", "to_tensor", "softmax", "xor_sum", "assume",
		"pointer_type", "philox", "uint_to_uniform_float", "pair_uniform_to_normal", "rand4x", "randn4x",
	} {
		tlFunctions[n] = "tl." + n
	}
}

// dtypeNames maps tl dtype attribute names.
var tlDTypes = map[string]ir.DType{
	"int1": ir.I1, "int8": ir.I8, "int16": ir.I16, "int32": ir.I32, "int64": ir.I64,
	"uint8": ir.U8, "uint16": ir.U16, "uint32": ir.U32, "uint64": ir.U64,
	"float16": ir.F16, "bfloat16": ir.BF16, "float32": ir.F32, "float64": ir.F64,
}

// tensorMethods are the tl functions also callable as x.name(...).
var tensorMethods = map[string]bool{
	"to": true, "sum": true, "max": true, "min": true, "argmax": true, "argmin": true, "reduce": true,
	"reshape": true, "view": true, "trans": true, "permute": true, "expand_dims": true, "broadcast_to": true,
	"ravel": true, "abs": true, "exp": true, "exp2": true, "log": true, "log2": true, "sqrt": true,
	"rsqrt": true, "sin": true, "cos": true, "erf": true, "sigmoid": true, "floor": true, "ceil": true,
	"cdiv": true, "softmax": true, "fma": true, "xor_sum": true, "cast": true,
	"atomic_add": true, "atomic_max": true, "atomic_min": true, "atomic_and": true, "atomic_or": true,
	"atomic_xor": true, "atomic_xchg": true, "atomic_cas": true, "store": true, "load": true,
	"multiple_of": true, "max_contiguous": true, "max_constancy": true, "logical_and": true, "logical_or": true,
}

func (s *spec) getattr(x value, name string) value {
	switch v := x.(type) {
	case cModule:
		switch v {
		case "triton":
			switch name {
			case "language":
				return cModule("tl")
			case "jit":
				return cBuiltin("triton.jit")
			case "cdiv":
				return cBuiltin("tl.cdiv")
			case "next_power_of_2":
				return cBuiltin("triton.next_power_of_2")
			}
		case "tl", "tl.math":
			if d, ok := tlDTypes[name]; ok {
				return cDType{ir.Scalar(d)}
			}
			switch name {
			case "math", "extra", "libdevice":
				return cModule("tl.math")
			case "tensor", "dtype":
				return cBuiltin("tl." + name)
			case "PropagateNan":
				return cModule("tl.PropagateNan")
			case "float8e4nv", "float8e5", "float8e4b15", "float8e4b8", "float8e5b16":
				s.fail("tl.%s: fp8 types are not supported by widejit", name)
			}
			if v == "tl.math" {
				switch name {
				case "max":
					return cBuiltin("tl.maximum")
				case "min":
					return cBuiltin("tl.minimum")
				case "div_rn", "fdiv":
					return cBuiltin("tl.fdiv")
				case "pow", "tanh", "log1p", "expm1", "exp10", "trunc", "round", "rint", "nearbyint":
					s.fail("tl.math.%s is not supported by widejit", name)
				}
			}
			if f, ok := tlFunctions[name]; ok {
				return cBuiltin(f)
			}
			s.fail("tl.%s is not supported by widejit", name)
		case "tl.PropagateNan":
			switch name {
			case "ALL", "NONE":
				return cStr(strings.ToLower(name))
			}
			s.fail("tl.PropagateNan.%s: want ALL or NONE", name)
		case "math":
			switch name {
			case "pi":
				return cFloat(math.Pi)
			case "e":
				return cFloat(math.E)
			case "inf":
				return cFloat(math.Inf(1))
			case "nan":
				return cFloat(math.NaN())
			case "log2", "log", "sqrt", "exp", "ceil", "floor", "isnan", "isinf", "gcd":
				return cBuiltin("math." + name)
			}
			s.fail("math.%s is not supported in kernels", name)
		}
		s.fail("%s.%s is not supported", v, name)
	case *ir.Value:
		switch name {
		case "dtype":
			return cDType{v.Type.ScalarType()}
		case "type":
			return cDType{v.Type}
		case "shape":
			t := make(cTuple, len(v.Type.Shape))
			for i, d := range v.Type.Shape {
				t[i] = cInt(d)
			}
			return t
		case "numel":
			return cInt(v.Type.NumElems())
		case "T":
			return s.permute(v, []int{1, 0})
		}
		if tensorMethods[name] {
			return cMethod{recv: v, name: name}
		}
		s.fail("tensors have no attribute %q", name)
	case *blockPtr:
		s.fail("block pointers have no attribute %q (use tl.load, tl.store, tl.advance)", name)
	case cDType:
		t := v.t
		switch name {
		case "element_ty":
			if len(t.Shape) > 0 {
				return cDType{t.ScalarType()}
			}
			if t.Ptr {
				return cDType{ir.Scalar(t.Elem)}
			}
			s.fail("%s has no element_ty", t)
		case "scalar":
			return cDType{t.ScalarType()}
		case "shape":
			out := make(cTuple, len(t.Shape))
			for i, d := range t.Shape {
				out[i] = cInt(d)
			}
			return out
		case "primitive_bitwidth", "int_bitwidth":
			if t.Ptr {
				return cInt(64)
			}
			return cInt(t.Elem.Bits())
		case "fp_mantissa_width":
			return cInt(mantissa(t.Elem))
		case "name":
			return cStr(dtypeLongName(t))
		}
		return cMethod{recv: v, name: name}
	case cTuple:
		s.fail("tuples have no attribute %q", name)
	case cJitFn:
		s.fail("jit function %s has no attribute %q", v.def.Name, name)
	}
	s.fail("%s has no attribute %q", typeName(x), name)
	return nil
}

func dtypeLongName(t ir.Type) string {
	for n, d := range tlDTypes {
		if d == t.Elem {
			if t.Ptr {
				return "pointer<" + n + ">"
			}
			return n
		}
	}
	return t.String()
}

// dtypeMethod evaluates tl.dtype predicates (x.dtype.is_floating(), ...).
func (s *spec) dtypeMethod(t ir.Type, name string) value {
	scalar := !t.Ptr && len(t.Shape) == 0
	d := t.Elem
	switch name {
	case "is_floating", "is_standard_floating":
		return cBool(scalar && d.IsFloat())
	case "is_int":
		return cBool(scalar && d.IsInt())
	case "is_int_signed":
		return cBool(scalar && d.IsSigned())
	case "is_int_unsigned":
		return cBool(scalar && tritonUnsigned(d))
	case "is_bool", "is_int1":
		return cBool(scalar && d == ir.I1)
	case "is_ptr":
		return cBool(t.Ptr && len(t.Shape) == 0)
	case "is_block":
		return cBool(len(t.Shape) > 0)
	case "is_fp16":
		return cBool(scalar && d == ir.F16)
	case "is_bf16":
		return cBool(scalar && d == ir.BF16)
	case "is_fp32":
		return cBool(scalar && d == ir.F32)
	case "is_fp64":
		return cBool(scalar && d == ir.F64)
	case "is_fp8":
		return cBool(false)
	case "is_void":
		return cBool(false)
	case "is_int8", "is_int16", "is_int32", "is_int64", "is_uint8", "is_uint16", "is_uint32", "is_uint64":
		want := tlDTypes[name[3:]]
		return cBool(scalar && d == want)
	case "to_ir":
		s.fail("dtype.to_ir is not available in widejit")
	}
	s.fail("dtype has no method %q", name)
	return nil
}
