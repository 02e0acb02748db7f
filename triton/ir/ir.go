package ir

import (
	"fmt"
	"strings"
)

// DType is an element type. Pointers are not dtypes: a pointer is a Type with Ptr set.
type DType uint8

const (
	Invalid DType = iota
	I1
	I8
	I16
	I32
	I64
	U8
	U16
	U32
	U64
	F16
	BF16
	F32
	F64
)

var dtypeNames = [...]string{"invalid", "i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "fp16", "bf16", "fp32", "fp64"}

// String gives Triton's signature spelling (i32, fp16, ...).
func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("dtype(%d)", d)
}

// Bits is the value width; I1 is 1.
func (d DType) Bits() int {
	switch d {
	case I1:
		return 1
	case I8, U8:
		return 8
	case I16, U16, F16, BF16:
		return 16
	case I32, U32, F32:
		return 32
	case I64, U64, F64:
		return 64
	}
	return 0
}

// Size is the width in memory in bytes; I1 is stored as one byte.
func (d DType) Size() int {
	if d == I1 {
		return 1
	}
	return d.Bits() / 8
}

func (d DType) IsFloat() bool    { return d >= F16 && d <= F64 }
func (d DType) IsInt() bool      { return d >= I1 && d <= U64 }
func (d DType) IsSigned() bool   { return d >= I8 && d <= I64 }
func (d DType) IsUnsigned() bool { return d >= U8 && d <= U64 }

// ParseDType accepts Triton signature names (fp32, i32), tl names (float32, int32, tl.float32)
// and a few common aliases (f32, bool, int1).
func ParseDType(s string) (DType, bool) {
	s = strings.TrimPrefix(s, "tl.")
	switch s {
	case "i1", "int1", "bool":
		return I1, true
	case "i8", "int8":
		return I8, true
	case "i16", "int16":
		return I16, true
	case "i32", "int32":
		return I32, true
	case "i64", "int64":
		return I64, true
	case "u8", "uint8":
		return U8, true
	case "u16", "uint16":
		return U16, true
	case "u32", "uint32":
		return U32, true
	case "u64", "uint64":
		return U64, true
	case "fp16", "f16", "float16":
		return F16, true
	case "bf16", "bfloat16":
		return BF16, true
	case "fp32", "f32", "float32":
		return F32, true
	case "fp64", "f64", "float64":
		return F64, true
	}
	return Invalid, false
}

// Type is the type of an IR value: a scalar (Shape empty) or a tile with a static shape, of
// elements that are Elem or, with Ptr, pointers to Elem (64-bit addresses counting in
// elements of Elem).
type Type struct {
	Elem  DType
	Ptr   bool
	Shape []int
}

// Scalar and Tile build types.
func Scalar(d DType) Type                 { return Type{Elem: d} }
func PtrTo(d DType) Type                  { return Type{Elem: d, Ptr: true} }
func Tile(d DType, shape ...int) Type     { return Type{Elem: d, Shape: append([]int(nil), shape...)} }
func (t Type) IsScalar() bool             { return len(t.Shape) == 0 }
func (t Type) Rank() int                  { return len(t.Shape) }
func (t Type) WithShape(shape []int) Type { t.Shape = append([]int(nil), shape...); return t }
func (t Type) ScalarType() Type           { t.Shape = nil; return t }

// NumElems is the number of elements (1 for a scalar).
func (t Type) NumElems() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

func (t Type) Equal(u Type) bool {
	if t.Elem != u.Elem || t.Ptr != u.Ptr || len(t.Shape) != len(u.Shape) {
		return false
	}
	for i := range t.Shape {
		if t.Shape[i] != u.Shape[i] {
			return false
		}
	}
	return true
}

// String: fp32, *fp32, fp32[64,32], *fp16[128].
func (t Type) String() string {
	var b strings.Builder
	if t.Ptr {
		b.WriteByte('*')
	}
	b.WriteString(t.Elem.String())
	if len(t.Shape) > 0 {
		b.WriteByte('[')
		for i, d := range t.Shape {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprint(&b, d)
		}
		b.WriteByte(']')
	}
	return b.String()
}

// Pos is a source position in kernel text, 1-based.
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Value is an SSA value: the result of an instruction, or an argument of a function or block.
type Value struct {
	ID   int
	Type Type
	Def  *Instr // nil for function and block arguments
	Name string // source name, when the value was bound to one (for dumps only)
}

// Block is a straight-line list of instructions with arguments. A region block (loop body,
// if branch, reduce combiner) ends with a terminator: Yield, or Condition for a While's
// condition block. The function body has no terminator.
type Block struct {
	Args   []*Value
	Instrs []*Instr
}

// Instr is one operation. Operands, results, attributes and regions per op are listed with
// the Op constants.
type Instr struct {
	Op      Op
	Args    []*Value
	Results []*Value
	Regions []*Block

	Int   int64   // Const (integer), axis, predicate, reduce/atomic kind, flags
	Float float64 // Const (float)
	Ints  []int   // Arange [start,end], Permute order
	Str   string  // Print prefix

	Pos Pos
}

// Result is the single result of an instruction that has one.
func (in *Instr) Result() *Value { return in.Results[0] }

// Func is a specialized kernel: runtime parameters only (constexprs are folded in).
type Func struct {
	Name   string
	File   string
	Params []*Value       // in signature order; Name is the parameter name
	Consts []ConstBinding // the constexpr values in force, for dumps and error messages
	Body   *Block

	nextID int
}

// ConstBinding records one constexpr binding as text, e.g. {BLOCK, 1024}.
type ConstBinding struct{ Name, Value string }

// NewValue makes a fresh value of type t owned by f.
func (f *Func) NewValue(t Type, name string) *Value {
	f.nextID++
	return &Value{ID: f.nextID, Type: t, Name: name}
}

// NewParam appends a runtime parameter.
func (f *Func) NewParam(name string, t Type) *Value {
	v := f.NewValue(t, name)
	f.Params = append(f.Params, v)
	return v
}

// Emit appends an instruction with fresh results of the given types to b and returns it.
func (f *Func) Emit(b *Block, op Op, pos Pos, results []Type, args ...*Value) *Instr {
	in := &Instr{Op: op, Args: args, Pos: pos}
	for _, t := range results {
		v := f.NewValue(t, "")
		v.Def = in
		in.Results = append(in.Results, v)
	}
	b.Instrs = append(b.Instrs, in)
	return in
}

// NewBlock makes a region block with fresh arguments of the given types.
func (f *Func) NewBlock(args ...Type) *Block {
	b := &Block{}
	for _, t := range args {
		b.Args = append(b.Args, f.NewValue(t, ""))
	}
	return b
}

// ConstString is the constexprs in force as "A=1, B=fp16", for error messages.
func (f *Func) ConstString() string {
	parts := make([]string, len(f.Consts))
	for i, c := range f.Consts {
		parts[i] = c.Name + "=" + c.Value
	}
	return strings.Join(parts, ", ")
}
