package graph

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/widejit/widejit/graph/safetensors"
)

// DType is an element type as named in graph.json.
type DType string

// The dtypes of widejit.graph/v1.
const (
	Float32  DType = "float32"
	Float16  DType = "float16"
	BFloat16 DType = "bfloat16"
	Float64  DType = "float64"
	Int64    DType = "int64"
	Int32    DType = "int32"
	Int16    DType = "int16"
	Int8     DType = "int8"
	Uint8    DType = "uint8"
	Bool     DType = "bool"
)

var dtypeToST = map[DType]safetensors.DType{
	Float32: safetensors.F32, Float16: safetensors.F16, BFloat16: safetensors.BF16, Float64: safetensors.F64,
	Int64: safetensors.I64, Int32: safetensors.I32, Int16: safetensors.I16, Int8: safetensors.I8,
	Uint8: safetensors.U8, Bool: safetensors.BOOL,
}

// DTypes lists every dtype, in the order of the format document.
var DTypes = []DType{Float32, Float16, BFloat16, Float64, Int64, Int32, Int16, Int8, Uint8, Bool}

// Valid reports whether d is one of DTypes.
func (d DType) Valid() bool { _, ok := dtypeToST[d]; return ok }

// Safetensors is d's name in a safetensors header (F32, ...).
func (d DType) Safetensors() safetensors.DType { return dtypeToST[d] }

// Size is the byte size of one element.
func (d DType) Size() int { return dtypeToST[d].Size() }

// IsFloat reports whether d is a floating-point dtype.
func (d DType) IsFloat() bool { return d == Float32 || d == Float16 || d == BFloat16 || d == Float64 }

// IsInteger reports whether d is an integer dtype (bool excluded).
func (d DType) IsInteger() bool { return d.Valid() && !d.IsFloat() && d != Bool }

// FromSafetensors maps a safetensors dtype to a graph dtype.
func FromSafetensors(s safetensors.DType) (DType, bool) {
	for d, st := range dtypeToST {
		if st == s {
			return d, true
		}
	}
	return "", false
}

// Type is a tensor's per-model shape and its dtype.
type Type struct {
	Shape []int
	DType DType
}

// Rank is the number of dims.
func (t Type) Rank() int { return len(t.Shape) }

// Numel is the number of elements per model.
func (t Type) Numel() int { return numel(t.Shape) }

func (t Type) String() string { return string(t.DType) + shapeString(t.Shape) }

func shapeString(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.Itoa(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func numel(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// Input is a graph input.
type Input struct {
	Name string
	Type Type
	// PerModel: the tensor fed is [N, *Type.Shape]; otherwise one tensor of Type.Shape is
	// shared by all models.
	PerModel bool
	// batchDim is the "batch_dim" of the file: 0 when absent (inferred), -1 for null (no
	// batch dim), d+1 for dim d (batch.go).
	batchDim int
	// dynamicDims are the dims besides the batch whose size may change from run to run (a
	// sequence length), from the file's "dynamic_dims" (dynamic.go).
	dynamicDims []int
}

// Param is a parameter or buffer; its data is stacked [N, *Type.Shape].
type Param struct {
	Name string
	Type Type
}

// OperandKind says what a node input entry is.
type OperandKind int

const (
	// TensorOperand names an input, a param or a node.
	TensorOperand OperandKind = iota
	// ScalarOperand is a Python number (x * 0.5).
	ScalarOperand
	// NoneOperand is an optional tensor argument left out (JSON null).
	NoneOperand
	// ListOperand is a list of tensors (cat, stack).
	ListOperand
)

// Source says where a tensor operand's value comes from.
type Source int

const (
	FromNode Source = iota
	FromInput
	FromParam
)

func (s Source) String() string { return [...]string{"node", "input", "param"}[s] }

// Operand is one entry of a node's inputs (or one graph output).
type Operand struct {
	Kind   OperandKind
	Name   string  // TensorOperand: the input, param or node
	Source Source  // TensorOperand
	Type   Type    // TensorOperand: its per-model type
	Scalar float64 // ScalarOperand
	IsInt  bool    // ScalarOperand written as an integer (Python int)
	List   []Operand
}

func (o Operand) String() string {
	switch o.Kind {
	case TensorOperand:
		return o.Name
	case ScalarOperand:
		return strconv.FormatFloat(o.Scalar, 'g', -1, 64)
	case NoneOperand:
		return "null"
	}
	parts := make([]string, len(o.List))
	for i, e := range o.List {
		parts[i] = e.String()
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Node is one operation.
type Node struct {
	Name   string
	Op     string
	Index  int // position in the file's nodes array
	Inputs []Operand
	Params map[string]*Param // role -> param; absent optional roles are not in the map
	Attrs  Attrs
	// Outputs holds the output type, or the element types when Tuple.
	Outputs []Type
	Tuple   bool
}

// Output is the node's (first) output type.
func (n *Node) Output() Type { return n.Outputs[0] }

// Param returns the param bound to role, nil when the role is absent.
func (n *Node) Param(role string) *Param { return n.Params[role] }

// Init is the deterministic initialisation of an init graph.
type Init struct {
	Seed int64
}

// Graph is a loaded, validated graph with every type inferred.
type Graph struct {
	File        string // the graph file as given
	N           int
	Inputs      []*Input
	Params      []*Param
	Nodes       []*Node // topological order
	Outputs     []Operand
	WeightsPath string // absolute (in memory, Options.Weights: the name it stands for); "" when Init is set
	Init        *Init

	inputs map[string]*Input
	params map[string]*Param
	nodes  map[string]*Node
	// paramUse records, for each param, the first node and role that use it (for init).
	paramUse map[string]paramUse
	memLimit int64 // Options.MemoryLimit

	// For re-specialising to another batch size (batch.go): the file's bytes and options,
	// "dynamic_batch", the graph at the file's batch size (nil: this one) and its batch facts.
	source     []byte
	opts       Options
	fixedBatch bool
	base       *Graph
	batch      *batchMemo // shared by the model ranges of one graph (Models copies the Graph)

	// first and total place the graph's N models among the total of the file when the graph
	// is a model range (Models); total is 0 otherwise. jsonSum is graph.json's SHA-256.
	first, total int
	jsonSum      [32]byte
}

type paramUse struct {
	node *Node
	role string
}

// Node returns the node named name, or nil.
func (g *Graph) Node(name string) *Node { return g.nodes[name] }

// Input returns the graph input named name, or nil.
func (g *Graph) Input(name string) *Input { return g.inputs[name] }

// Param returns the param named name, or nil.
func (g *Graph) Param(name string) *Param { return g.params[name] }

// Lookup returns a tensor operand for any input, param or tensor-valued node name.
func (g *Graph) Lookup(name string) (Operand, bool) {
	if in := g.inputs[name]; in != nil {
		return Operand{Kind: TensorOperand, Name: name, Source: FromInput, Type: in.Type}, true
	}
	if p := g.params[name]; p != nil {
		return Operand{Kind: TensorOperand, Name: name, Source: FromParam, Type: p.Type}, true
	}
	if n := g.nodes[name]; n != nil && !n.Tuple {
		return Operand{Kind: TensorOperand, Name: name, Source: FromNode, Type: n.Output()}, true
	}
	return Operand{}, false
}

// InputTensorShape is the shape of the tensor fed for in: [N, ...] or the shared shape.
func (g *Graph) InputTensorShape(in *Input) []int {
	if in.PerModel {
		return append([]int{g.N}, in.Type.Shape...)
	}
	return append([]int(nil), in.Type.Shape...)
}

// Attrs holds a node's normalised attributes. Values are int, float64, bool, string, []int or
// nil (null).
type Attrs map[string]any

func (a Attrs) get(name string) any {
	v, ok := a[name]
	if !ok {
		panic(fmt.Sprintf("graph: attribute %q does not exist for this op (have %s)", name, strings.Join(a.Names(), ", ")))
	}
	return v
}

// Names lists the attribute names, sorted.
func (a Attrs) Names() []string {
	names := make([]string, 0, len(a))
	for k := range a {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Has reports whether the op has attribute name.
func (a Attrs) Has(name string) bool { _, ok := a[name]; return ok }

// IsNull reports whether attribute name is null.
func (a Attrs) IsNull(name string) bool { return a.get(name) == nil }

// Int returns an int attribute.
func (a Attrs) Int(name string) int {
	v, ok := a.get(name).(int)
	if !ok {
		panic(fmt.Sprintf("graph: attribute %q is %T, not int", name, a[name]))
	}
	return v
}

// Float returns a float attribute (an int attribute converts).
func (a Attrs) Float(name string) float64 {
	switch v := a.get(name).(type) {
	case float64:
		return v
	case int:
		return float64(v)
	}
	panic(fmt.Sprintf("graph: attribute %q is %T, not float", name, a[name]))
}

// Bool returns a bool attribute.
func (a Attrs) Bool(name string) bool {
	v, ok := a.get(name).(bool)
	if !ok {
		panic(fmt.Sprintf("graph: attribute %q is %T, not bool", name, a[name]))
	}
	return v
}

// String returns a string attribute.
func (a Attrs) String(name string) string {
	v, ok := a.get(name).(string)
	if !ok {
		panic(fmt.Sprintf("graph: attribute %q is %T, not string", name, a[name]))
	}
	return v
}

// Ints returns an int-list attribute (a copy).
func (a Attrs) Ints(name string) []int {
	v, ok := a.get(name).([]int)
	if !ok {
		panic(fmt.Sprintf("graph: attribute %q is %T, not []int", name, a[name]))
	}
	return append([]int(nil), v...)
}

// Format renders the attributes as name=value pairs, sorted, for tables and messages.
func (a Attrs) Format() string {
	parts := make([]string, 0, len(a))
	for _, k := range a.Names() {
		var s string
		switch v := a[k].(type) {
		case nil:
			s = "null"
		case []int:
			s = shapeString(v)
		case string:
			s = strconv.Quote(v)
		case float64:
			s = strconv.FormatFloat(v, 'g', -1, 64)
		default:
			s = fmt.Sprint(v)
		}
		parts = append(parts, k+"="+s)
	}
	return strings.Join(parts, " ")
}
