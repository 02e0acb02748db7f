package syntax

import (
	"fmt"
	"math/big"
)

// Pos is a source position. Line and Col are 1-based; Col counts bytes, so the first byte of a
// line is column 1 and a tab or a multi-byte character advances it by its byte length.
type Pos struct {
	File string
	Line int
	Col  int
}

// String is FILE:LINE:COL, the prefix of every error message in the front end.
func (p Pos) String() string {
	file := p.File
	if file == "" {
		file = "<input>"
	}
	return fmt.Sprintf("%s:%d:%d", file, p.Line, p.Col)
}

// IsValid reports whether p was set (Line 0 never occurs in a parsed file).
func (p Pos) IsValid() bool { return p.Line > 0 }

// Before reports whether p comes before q in the same file.
func (p Pos) Before(q Pos) bool {
	return p.Line < q.Line || (p.Line == q.Line && p.Col < q.Col)
}

// Span is the extent of a node: From is its first byte, To the position just after its last
// byte (exclusive, like Python's end_col_offset). Every node embeds a Span.
type Span struct {
	From, To Pos
}

// Pos is the position of the node's first byte.
func (s Span) Pos() Pos { return s.From }

// End is the position just after the node's last byte.
func (s Span) End() Pos { return s.To }

// Node is any AST node.
type Node interface {
	Pos() Pos
	End() Pos
}

// Expr is an expression node.
type Expr interface {
	Node
	exprNode()
}

// Stmt is a statement node.
type Stmt interface {
	Node
	stmtNode()
}

// ---------------------------------------------------------------------------------------------
// File level

// File is one parsed kernel source file.
type File struct {
	Span
	Path string
	// Doc is the module docstring, if any.
	Doc string
	// Imports are the module-level import statements in source order.
	Imports []*Import
	// Funcs are the module-level function definitions in source order, decorated or not.
	Funcs []*FuncDef
	// Constants are the module-level assignments (BLOCK = tl.constexpr(128), EPS = 1e-5, ...).
	Constants []*Assign
	// Stmts is every module-level statement in source order (the three lists above merged,
	// plus Pass statements).
	Stmts []Stmt
}

// Func returns the module-level function called name, or nil.
func (f *File) Func(name string) *FuncDef {
	for _, fn := range f.Funcs {
		if fn.Name == name {
			return fn
		}
	}
	return nil
}

// Import is `import a.b as c, d` (IsFrom false: Module is "", each Alias names a dotted module)
// or `from ..a.b import c as d` (IsFrom true: Module is "a.b", Level counts the leading dots).
type Import struct {
	Span
	IsFrom bool
	Module string
	Level  int
	Names  []*Alias
}

// Alias is one imported name: Name (dotted for plain imports) and its AsName ("" when absent).
type Alias struct {
	Span
	Name   string
	AsName string
}

// FuncDef is a module-level `def`; its span starts at `def` (decorators have their own). A
// leading docstring is moved out of Body into Doc (escapes decoded, indentation as written),
// so Body holds only real statements; it is never empty: `def f(): "doc"` gets a Pass.
type FuncDef struct {
	Span
	Name       string
	NamePos    Pos
	Decorators []Expr
	Params     []*Param
	Returns    Expr // the `-> T` annotation, or nil
	Body       []Stmt
	Doc        string
}

// Param is one parameter: `name`, `name: ann`, `name=default` or `name: ann = default`. As in
// Python's ast.arg, its span covers the name and annotation but not the default.
type Param struct {
	Span
	Name       string
	Annotation Expr // nil when absent
	Default    Expr // nil when absent
}

// ---------------------------------------------------------------------------------------------
// Statements

// Assign is `t1 = t2 = value`; each target is a Name, Attribute, Subscript, Tuple or List
// (tuple targets such as `a, b = ...` are Tuple exprs).
type Assign struct {
	Span
	Targets []Expr
	Value   Expr
}

// AugAssign is `target op= value`.
type AugAssign struct {
	Span
	Target Expr
	Op     Operator
	OpPos  Pos
	Value  Expr
}

// AnnAssign is `target: annotation = value`; Value is nil for a bare `target: annotation`.
type AnnAssign struct {
	Span
	Target     Expr
	Annotation Expr
	Value      Expr
}

// ExprStmt is an expression used as a statement (a call, or a string used as a comment).
type ExprStmt struct {
	Span
	X Expr
}

// Return is `return` (Value nil) or `return value` (`return a, b` has a Tuple value).
type Return struct {
	Span
	Value Expr
}

// If is `if Cond: Body else: Else`. An `elif` is an If that is the only statement of Else,
// with Elif set so printers can restore the source form.
type If struct {
	Span
	Cond Expr
	Body []Stmt
	Else []Stmt
	Elif bool // this If was written as `elif`
}

// For is `for Target in Iter: Body`. `for ... else` is rejected by the parser.
type For struct {
	Span
	Target Expr
	Iter   Expr
	Body   []Stmt
}

// While is `while Cond: Body`. `while ... else` is rejected by the parser.
type While struct {
	Span
	Cond Expr
	Body []Stmt
}

// Pass is `pass`.
type Pass struct{ Span }

// Break is `break`.
type Break struct{ Span }

// Continue is `continue`.
type Continue struct{ Span }

// Assert is `assert Cond` or `assert Cond, Msg` (Msg nil when absent).
type Assert struct {
	Span
	Cond Expr
	Msg  Expr
}

func (*Import) stmtNode()    {}
func (*FuncDef) stmtNode()   {}
func (*Assign) stmtNode()    {}
func (*AugAssign) stmtNode() {}
func (*AnnAssign) stmtNode() {}
func (*ExprStmt) stmtNode()  {}
func (*Return) stmtNode()    {}
func (*If) stmtNode()        {}
func (*For) stmtNode()       {}
func (*While) stmtNode()     {}
func (*Pass) stmtNode()      {}
func (*Break) stmtNode()     {}
func (*Continue) stmtNode()  {}
func (*Assert) stmtNode()    {}

// ---------------------------------------------------------------------------------------------
// Expressions

// Name is an identifier.
type Name struct {
	Span
	ID string
}

// ConstKind says which field of a Constant holds its value.
type ConstKind int

const (
	ConstInt      ConstKind = iota // Int
	ConstFloat                     // Float
	ConstStr                       // Str (escapes decoded; adjacent literals concatenated)
	ConstBytes                     // Str holds the bytes of a b"..." literal
	ConstBool                      // Bool (True / False)
	ConstNone                      // None
	ConstEllipsis                  // ...
)

var constKindNames = [...]string{"int", "float", "str", "bytes", "bool", "None", "Ellipsis"}

func (k ConstKind) String() string {
	if k >= 0 && int(k) < len(constKindNames) {
		return constKindNames[k]
	}
	return fmt.Sprintf("ConstKind(%d)", int(k))
}

// Constant is a literal. Ints are arbitrary precision as in Python; use Int64 for the common
// case. Raw is the source spelling (the parts of an implicitly concatenated string literal
// joined by single spaces); Format prints it, so errors quote literals as written.
type Constant struct {
	Span
	Kind  ConstKind
	Int   *big.Int // ConstInt
	Float float64  // ConstFloat
	Str   string   // ConstStr, ConstBytes
	Bool  bool     // ConstBool
	Raw   string
}

// Int64 returns an int constant's value and whether it is an int that fits in int64.
func (c *Constant) Int64() (int64, bool) {
	if c.Kind != ConstInt || c.Int == nil || !c.Int.IsInt64() {
		return 0, false
	}
	return c.Int.Int64(), true
}

// Attribute is `X.Name`.
type Attribute struct {
	Span
	X       Expr
	Name    string
	NamePos Pos
}

// Call is `Func(Args..., Keywords...)`. `*args` and `**kwargs` are rejected by the parser.
type Call struct {
	Span
	Func     Expr
	Args     []Expr
	Keywords []*Keyword
}

// Keyword is one `name=value` argument of a Call.
type Keyword struct {
	Span
	Name  string
	Value Expr
}

// Subscript is `X[i0, i1, ...]`: each index is an expression or a *Slice. `x[a]` has one
// index; `x[:, None]` has a Slice and a None Constant. A parenthesized tuple index `x[(a, b)]`
// stays a single Tuple index.
type Subscript struct {
	Span
	X     Expr
	Index []Expr
}

// Slice is `Lo:Hi:Step` inside a subscript; absent parts are nil (bare `:` has all three nil).
type Slice struct {
	Span
	Lo, Hi, Step Expr
}

// BinOp is `X Op Y`. OpPos is the operator's position.
type BinOp struct {
	Span
	Op    Operator
	OpPos Pos
	X, Y  Expr
}

// UnaryOp is `Op X` (`-x`, `+x`, `~x`, `not x`); the node starts at the operator.
type UnaryOp struct {
	Span
	Op UnaryOperator
	X  Expr
}

// BoolOp is `v0 and v1 and ...` or `v0 or v1 or ...` (len(Values) >= 2, one operator).
type BoolOp struct {
	Span
	Op     BoolOperator
	Values []Expr
}

// Compare is `Operands[0] Ops[0] Operands[1]`. The node mirrors Python's chained form, but the
// parser rejects chained comparisons (`a < b < c`), so a parsed Compare always has exactly one
// operator and two operands.
type Compare struct {
	Span
	Ops      []CmpOp
	OpPos    []Pos
	Operands []Expr
}

// IfExp is `Then if Cond else Else`.
type IfExp struct {
	Span
	Cond, Then, Else Expr
}

// Tuple is `a, b` or `(a, b)` or `()`; Paren records whether the source had parentheses.
type Tuple struct {
	Span
	Elts  []Expr
	Paren bool
}

// List is `[a, b]`.
type List struct {
	Span
	Elts []Expr
}

// Starred is `*X`. The parser builds it to report a precise error and never returns it in a
// successful parse.
type Starred struct {
	Span
	X Expr
}

func (*Name) exprNode()      {}
func (*Constant) exprNode()  {}
func (*Attribute) exprNode() {}
func (*Call) exprNode()      {}
func (*Subscript) exprNode() {}
func (*Slice) exprNode()     {}
func (*BinOp) exprNode()     {}
func (*UnaryOp) exprNode()   {}
func (*BoolOp) exprNode()    {}
func (*Compare) exprNode()   {}
func (*IfExp) exprNode()     {}
func (*Tuple) exprNode()     {}
func (*List) exprNode()      {}
func (*Starred) exprNode()   {}

// ---------------------------------------------------------------------------------------------
// Operators

// Operator is a binary arithmetic or bitwise operator (Python's ast.operator).
type Operator int

const (
	OpAdd      Operator = iota // +
	OpSub                      // -
	OpMult                     // *
	OpDiv                      // /
	OpFloorDiv                 // //
	OpMod                      // %
	OpPow                      // **
	OpLShift                   // <<
	OpRShift                   // >>
	OpBitAnd                   // &
	OpBitOr                    // |
	OpBitXor                   // ^
	OpMatMult                  // @
)

var operatorNames = [...]string{"+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "@"}

// String is the operator's Python spelling.
func (op Operator) String() string {
	if op >= 0 && int(op) < len(operatorNames) {
		return operatorNames[op]
	}
	return fmt.Sprintf("Operator(%d)", int(op))
}

// UnaryOperator is a prefix operator (Python's ast.unaryop).
type UnaryOperator int

const (
	UAdd    UnaryOperator = iota // +
	USub                         // -
	UInvert                      // ~
	UNot                         // not
)

var unaryNames = [...]string{"+", "-", "~", "not"}

// String is the operator's Python spelling.
func (op UnaryOperator) String() string {
	if op >= 0 && int(op) < len(unaryNames) {
		return unaryNames[op]
	}
	return fmt.Sprintf("UnaryOperator(%d)", int(op))
}

// BoolOperator is `and` or `or`.
type BoolOperator int

const (
	BoolAnd BoolOperator = iota // and
	BoolOr                      // or
)

// String is the operator's Python spelling.
func (op BoolOperator) String() string {
	switch op {
	case BoolAnd:
		return "and"
	case BoolOr:
		return "or"
	}
	return fmt.Sprintf("BoolOperator(%d)", int(op))
}

// CmpOp is a comparison operator (Python's ast.cmpop).
type CmpOp int

const (
	CmpEq    CmpOp = iota // ==
	CmpNotEq              // !=
	CmpLt                 // <
	CmpLtE                // <=
	CmpGt                 // >
	CmpGtE                // >=
	CmpIs                 // is
	CmpIsNot              // is not
	CmpIn                 // in
	CmpNotIn              // not in
)

var cmpNames = [...]string{"==", "!=", "<", "<=", ">", ">=", "is", "is not", "in", "not in"}

// String is the operator's Python spelling.
func (op CmpOp) String() string {
	if op >= 0 && int(op) < len(cmpNames) {
		return cmpNames[op]
	}
	return fmt.Sprintf("CmpOp(%d)", int(op))
}
