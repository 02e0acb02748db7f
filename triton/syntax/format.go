package syntax

import (
	"math"
	"strconv"
	"strings"
)

// Format prints a node as Python source: expressions on one line with only the parentheses
// precedence needs (tuples are always parenthesized), statements and files with four-space
// indentation and a trailing newline. Literals print as written (Constant.Raw). Parsing the
// output gives back an equivalent tree, so Format suits error messages and golden tests.
func Format(n Node) string {
	var f formatter
	switch n := n.(type) {
	case Expr:
		f.expr(n, precTest)
	case Stmt:
		f.stmt(n, 0)
	case *File:
		f.file(n)
	case *Param:
		f.param(n)
	case *Keyword:
		f.keyword(n)
	case *Alias:
		f.alias(n)
	case nil:
		return "<nil>"
	}
	return f.b.String()
}

// Operator precedence, loosest first, as in Python's grammar.
const (
	precTuple   = iota // a, b
	precTest           // x if c else y
	precOr             // or
	precAnd            // and
	precNot            // not x
	precCmp            // < == in is ...
	precBitOr          // |
	precBitXor         // ^
	precBitAnd         // &
	precShift          // << >>
	precArith          // + -
	precTerm           // * / // % @
	precFactor         // unary + - ~
	precPower          // **
	precPrimary        // calls, attributes, subscripts, atoms
)

func binaryPrec(op Operator) int {
	switch op {
	case OpBitOr:
		return precBitOr
	case OpBitXor:
		return precBitXor
	case OpBitAnd:
		return precBitAnd
	case OpLShift, OpRShift:
		return precShift
	case OpAdd, OpSub:
		return precArith
	case OpPow:
		return precPower
	}
	return precTerm
}

func exprPrec(x Expr) int {
	switch x := x.(type) {
	case *IfExp:
		return precTest
	case *BoolOp:
		if x.Op == BoolOr {
			return precOr
		}
		return precAnd
	case *UnaryOp:
		if x.Op == UNot {
			return precNot
		}
		return precFactor
	case *Compare:
		return precCmp
	case *BinOp:
		return binaryPrec(x.Op)
	case *Starred:
		return precBitOr
	}
	return precPrimary
}

type formatter struct{ b strings.Builder }

func (f *formatter) s(strs ...string) {
	for _, s := range strs {
		f.b.WriteString(s)
	}
}

// expr prints x, parenthesized when its precedence is below min.
func (f *formatter) expr(x Expr, min int) {
	if x == nil {
		f.s("<nil>")
		return
	}
	if exprPrec(x) < min {
		f.s("(")
		f.expr(x, precTuple)
		f.s(")")
		return
	}
	switch x := x.(type) {
	case *Name:
		f.s(x.ID)
	case *Constant:
		f.constant(x)
	case *Attribute:
		f.expr(x.X, precPrimary)
		if c, ok := x.X.(*Constant); ok && c.Kind == ConstInt {
			f.s(" ") // 1 .real, not the float 1.real
		}
		f.s(".", x.Name)
	case *Call:
		f.expr(x.Func, precPrimary)
		f.s("(")
		for i, a := range x.Args {
			if i > 0 {
				f.s(", ")
			}
			f.expr(a, precTest)
		}
		for i, k := range x.Keywords {
			if i > 0 || len(x.Args) > 0 {
				f.s(", ")
			}
			f.keyword(k)
		}
		f.s(")")
	case *Subscript:
		f.expr(x.X, precPrimary)
		f.s("[")
		for i, ix := range x.Index {
			if i > 0 {
				f.s(", ")
			}
			f.expr(ix, precTest)
		}
		f.s("]")
	case *Slice:
		if x.Lo != nil {
			f.expr(x.Lo, precTest)
		}
		f.s(":")
		if x.Hi != nil {
			f.expr(x.Hi, precTest)
		}
		if x.Step != nil {
			f.s(":")
			f.expr(x.Step, precTest)
		}
	case *BinOp:
		prec := binaryPrec(x.Op)
		if x.Op == OpPow { // right-associative; its left operand must be a primary
			f.expr(x.X, precPrimary)
			f.s(" ** ")
			f.expr(x.Y, precFactor)
			return
		}
		f.expr(x.X, prec)
		f.s(" ", x.Op.String(), " ")
		f.expr(x.Y, prec+1)
	case *UnaryOp:
		if x.Op == UNot {
			f.s("not ")
			f.expr(x.X, precNot)
			return
		}
		f.s(x.Op.String())
		f.expr(x.X, precFactor)
	case *BoolOp:
		prec := exprPrec(x)
		for i, v := range x.Values {
			if i > 0 {
				f.s(" ", x.Op.String(), " ")
			}
			f.expr(v, prec+1)
		}
	case *Compare:
		for i, o := range x.Operands {
			if i > 0 {
				f.s(" ", x.Ops[i-1].String(), " ")
			}
			f.expr(o, precCmp+1)
		}
	case *IfExp:
		f.expr(x.Then, precOr)
		f.s(" if ")
		f.expr(x.Cond, precOr)
		f.s(" else ")
		f.expr(x.Else, precTest)
	case *Tuple:
		f.s("(")
		f.exprs(x.Elts)
		if len(x.Elts) == 1 {
			f.s(",")
		}
		f.s(")")
	case *List:
		f.s("[")
		f.exprs(x.Elts)
		f.s("]")
	case *Starred:
		f.s("*")
		f.expr(x.X, precBitOr)
	}
}

func (f *formatter) exprs(xs []Expr) {
	for i, x := range xs {
		if i > 0 {
			f.s(", ")
		}
		f.expr(x, precTest)
	}
}

func (f *formatter) constant(c *Constant) {
	if c.Raw != "" {
		f.s(c.Raw)
		return
	}
	switch c.Kind {
	case ConstInt:
		if c.Int == nil {
			f.s("0")
		} else {
			f.s(c.Int.String())
		}
	case ConstFloat:
		f.s(formatFloat(c.Float))
	case ConstStr:
		f.s(strconv.Quote(c.Str))
	case ConstBytes:
		f.s("b", strconv.Quote(c.Str))
	case ConstBool:
		if c.Bool {
			f.s("True")
		} else {
			f.s("False")
		}
	case ConstNone:
		f.s("None")
	case ConstEllipsis:
		f.s("...")
	}
}

// formatFloat spells a float so that Python reads it back as a float.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "float('inf')"
	case math.IsInf(v, -1):
		return "float('-inf')"
	case math.IsNaN(v):
		return "float('nan')"
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

func (f *formatter) keyword(k *Keyword) {
	f.s(k.Name, "=")
	f.expr(k.Value, precTest)
}

func (f *formatter) alias(a *Alias) {
	f.s(a.Name)
	if a.AsName != "" {
		f.s(" as ", a.AsName)
	}
}

func (f *formatter) param(p *Param) {
	f.s(p.Name)
	if p.Annotation != nil {
		f.s(": ")
		f.expr(p.Annotation, precTest)
	}
	if p.Default != nil {
		if p.Annotation != nil {
			f.s(" = ")
		} else {
			f.s("=")
		}
		f.expr(p.Default, precTest)
	}
}

func (f *formatter) file(file *File) {
	if file.Doc != "" {
		f.s(strconv.Quote(file.Doc), "\n")
	}
	for i, st := range file.Stmts {
		if _, ok := st.(*FuncDef); ok && i > 0 {
			f.s("\n")
		}
		f.stmt(st, 0)
	}
}

func (f *formatter) indent(depth int) { f.s(strings.Repeat("    ", depth)) }

// topList prints an expression that may be an unparenthesized tuple (targets, values).
func (f *formatter) topList(x Expr) {
	if t, ok := x.(*Tuple); ok && len(t.Elts) > 0 {
		f.exprs(t.Elts)
		if len(t.Elts) == 1 {
			f.s(",")
		}
		return
	}
	f.expr(x, precTest)
}

func (f *formatter) block(body []Stmt, depth int) {
	f.s(":\n")
	if len(body) == 0 {
		f.indent(depth + 1)
		f.s("pass\n")
	}
	for _, st := range body {
		f.stmt(st, depth+1)
	}
}

func (f *formatter) stmt(st Stmt, depth int) {
	f.indent(depth)
	switch st := st.(type) {
	case *Import:
		if st.IsFrom {
			f.s("from ", strings.Repeat(".", st.Level), st.Module, " import ")
		} else {
			f.s("import ")
		}
		for i, a := range st.Names {
			if i > 0 {
				f.s(", ")
			}
			f.alias(a)
		}
	case *FuncDef:
		for _, d := range st.Decorators {
			f.s("@")
			f.expr(d, precTest)
			f.s("\n")
			f.indent(depth)
		}
		f.s("def ", st.Name, "(")
		for i, p := range st.Params {
			if i > 0 {
				f.s(", ")
			}
			f.param(p)
		}
		f.s(")")
		if st.Returns != nil {
			f.s(" -> ")
			f.expr(st.Returns, precTest)
		}
		f.s(":\n")
		if st.Doc != "" {
			f.indent(depth + 1)
			f.s(strconv.Quote(st.Doc), "\n")
		}
		for _, b := range st.Body {
			f.stmt(b, depth+1)
		}
		return
	case *Assign:
		for _, t := range st.Targets {
			f.topList(t)
			f.s(" = ")
		}
		f.topList(st.Value)
	case *AugAssign:
		f.expr(st.Target, precTest)
		f.s(" ", st.Op.String(), "= ")
		f.topList(st.Value)
	case *AnnAssign:
		f.expr(st.Target, precTest)
		f.s(": ")
		f.expr(st.Annotation, precTest)
		if st.Value != nil {
			f.s(" = ")
			f.topList(st.Value)
		}
	case *ExprStmt:
		f.topList(st.X)
	case *Return:
		f.s("return")
		if st.Value != nil {
			f.s(" ")
			f.topList(st.Value)
		}
	case *If:
		f.ifChain(st, depth, "if ")
		return
	case *For:
		f.s("for ")
		f.topList(st.Target)
		f.s(" in ")
		f.topList(st.Iter)
		f.block(st.Body, depth)
		return
	case *While:
		f.s("while ")
		f.expr(st.Cond, precTest)
		f.block(st.Body, depth)
		return
	case *Pass:
		f.s("pass")
	case *Break:
		f.s("break")
	case *Continue:
		f.s("continue")
	case *Assert:
		f.s("assert ")
		f.expr(st.Cond, precTest)
		if st.Msg != nil {
			f.s(", ")
			f.expr(st.Msg, precTest)
		}
	}
	f.s("\n")
}

func (f *formatter) ifChain(st *If, depth int, kw string) {
	f.s(kw)
	f.expr(st.Cond, precTest)
	f.block(st.Body, depth)
	if len(st.Else) == 0 {
		return
	}
	if nested, ok := st.Else[0].(*If); ok && len(st.Else) == 1 && nested.Elif {
		f.indent(depth)
		f.ifChain(nested, depth, "elif ")
		return
	}
	f.indent(depth)
	f.s("else")
	f.block(st.Else, depth)
}
