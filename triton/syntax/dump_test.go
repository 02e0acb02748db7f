package syntax

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// dumpTree prints a File in the canonical form of testdata/astdump/astdump.py, which prints
// CPython's own parse; comparing the two checks structure, precedence and every position
// against an independent parser.
func dumpTree(f *File) string {
	d := &dumper{}
	d.line(0, "File")
	if f.Doc != "" {
		d.line(1, "Doc "+jsonQuote(f.Doc))
	}
	for _, s := range f.Stmts {
		d.stmt(s, 1)
	}
	return d.b.String()
}

type dumper struct{ b strings.Builder }

func (d *dumper) line(depth int, text string) {
	d.b.WriteString(strings.Repeat("  ", depth))
	d.b.WriteString(text)
	d.b.WriteByte('\n')
}

func span(n Node) string {
	return fmt.Sprintf("%d:%d-%d:%d", n.Pos().Line, n.Pos().Col, n.End().Line, n.End().Col)
}

func jsonQuote(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func (d *dumper) stmts(label string, body []Stmt, depth int) {
	d.line(depth, label)
	for _, s := range body {
		d.stmt(s, depth+1)
	}
}

func (d *dumper) stmt(s Stmt, depth int) {
	sp := span(s)
	switch s := s.(type) {
	case *Import:
		if s.IsFrom {
			d.line(depth, fmt.Sprintf("ImportFrom %s %s %d", sp, s.Module, s.Level))
		} else {
			d.line(depth, "Import "+sp)
		}
		for _, a := range s.Names {
			d.line(depth+1, fmt.Sprintf("Alias %s %s %s", span(a), a.Name, a.AsName))
		}
	case *FuncDef:
		d.line(depth, fmt.Sprintf("FuncDef %s %s", sp, s.Name))
		for _, dec := range s.Decorators {
			d.line(depth+1, "Decorator")
			d.expr(dec, depth+2)
		}
		for _, p := range s.Params {
			d.line(depth+1, fmt.Sprintf("Param %s %s", span(p), p.Name))
			if p.Annotation != nil {
				d.line(depth+2, "Annotation")
				d.expr(p.Annotation, depth+3)
			}
			if p.Default != nil {
				d.line(depth+2, "Default")
				d.expr(p.Default, depth+3)
			}
		}
		if s.Returns != nil {
			d.line(depth+1, "Returns")
			d.expr(s.Returns, depth+2)
		}
		if s.Doc != "" {
			d.line(depth+1, "Doc "+jsonQuote(s.Doc))
		}
		d.stmts("Body", s.Body, depth+1)
	case *Assign:
		d.line(depth, "Assign "+sp)
		for _, t := range s.Targets {
			d.expr(t, depth+1)
		}
		d.expr(s.Value, depth+1)
	case *AugAssign:
		d.line(depth, fmt.Sprintf("AugAssign %s %s", sp, s.Op))
		d.expr(s.Target, depth+1)
		d.expr(s.Value, depth+1)
	case *AnnAssign:
		d.line(depth, "AnnAssign "+sp)
		d.expr(s.Target, depth+1)
		d.expr(s.Annotation, depth+1)
		if s.Value != nil {
			d.expr(s.Value, depth+1)
		}
	case *ExprStmt:
		d.line(depth, "ExprStmt "+sp)
		d.expr(s.X, depth+1)
	case *Return:
		d.line(depth, "Return "+sp)
		if s.Value != nil {
			d.expr(s.Value, depth+1)
		}
	case *If:
		d.line(depth, "If "+sp)
		d.expr(s.Cond, depth+1)
		d.stmts("Body", s.Body, depth+1)
		if len(s.Else) > 0 {
			d.stmts("Else", s.Else, depth+1)
		}
	case *For:
		d.line(depth, "For "+sp)
		d.expr(s.Target, depth+1)
		d.expr(s.Iter, depth+1)
		d.stmts("Body", s.Body, depth+1)
	case *While:
		d.line(depth, "While "+sp)
		d.expr(s.Cond, depth+1)
		d.stmts("Body", s.Body, depth+1)
	case *Pass:
		d.line(depth, "Pass "+sp)
	case *Break:
		d.line(depth, "Break "+sp)
	case *Continue:
		d.line(depth, "Continue "+sp)
	case *Assert:
		d.line(depth, "Assert "+sp)
		d.expr(s.Cond, depth+1)
		if s.Msg != nil {
			d.expr(s.Msg, depth+1)
		}
	default:
		d.line(depth, fmt.Sprintf("?%T", s))
	}
}

func constText(c *Constant) string {
	switch c.Kind {
	case ConstNone:
		return "None"
	case ConstEllipsis:
		return "Ellipsis"
	case ConstBool:
		if c.Bool {
			return "bool True"
		}
		return "bool False"
	case ConstInt:
		return "int " + c.Int.String()
	case ConstFloat:
		return fmt.Sprintf("float %.17g", c.Float)
	case ConstBytes:
		rs := make([]rune, len(c.Str))
		for i := 0; i < len(c.Str); i++ {
			rs[i] = rune(c.Str[i]) // latin-1, as the Python side decodes bytes
		}
		return "bytes " + jsonQuote(string(rs))
	}
	return "str " + jsonQuote(c.Str)
}

func (d *dumper) expr(x Expr, depth int) {
	sp := span(x)
	switch x := x.(type) {
	case *Name:
		d.line(depth, fmt.Sprintf("Name %s %s", sp, x.ID))
	case *Constant:
		d.line(depth, fmt.Sprintf("Constant %s %s", sp, constText(x)))
	case *Attribute:
		d.line(depth, fmt.Sprintf("Attribute %s %s", sp, x.Name))
		d.expr(x.X, depth+1)
	case *Call:
		d.line(depth, "Call "+sp)
		d.expr(x.Func, depth+1)
		for _, a := range x.Args {
			d.expr(a, depth+1)
		}
		for _, k := range x.Keywords {
			d.line(depth+1, fmt.Sprintf("Keyword %s %s", span(k), k.Name))
			d.expr(k.Value, depth+2)
		}
	case *Subscript:
		d.line(depth, "Subscript "+sp)
		d.expr(x.X, depth+1)
		for _, ix := range x.Index {
			d.expr(ix, depth+1)
		}
	case *Slice:
		d.line(depth, "Slice "+sp)
		for _, part := range []Expr{x.Lo, x.Hi, x.Step} {
			if part == nil {
				d.line(depth+1, "-")
			} else {
				d.expr(part, depth+1)
			}
		}
	case *BinOp:
		d.line(depth, fmt.Sprintf("BinOp %s %s", sp, x.Op))
		d.expr(x.X, depth+1)
		d.expr(x.Y, depth+1)
	case *UnaryOp:
		d.line(depth, fmt.Sprintf("UnaryOp %s %s", sp, x.Op))
		d.expr(x.X, depth+1)
	case *BoolOp:
		d.line(depth, fmt.Sprintf("BoolOp %s %s", sp, x.Op))
		for _, v := range x.Values {
			d.expr(v, depth+1)
		}
	case *Compare:
		ops := make([]string, len(x.Ops))
		for i, o := range x.Ops {
			ops[i] = o.String()
		}
		d.line(depth, fmt.Sprintf("Compare %s %s", sp, strings.Join(ops, ",")))
		for _, o := range x.Operands {
			d.expr(o, depth+1)
		}
	case *IfExp:
		d.line(depth, "IfExp "+sp)
		d.expr(x.Cond, depth+1)
		d.expr(x.Then, depth+1)
		d.expr(x.Else, depth+1)
	case *Tuple:
		d.line(depth, "Tuple "+sp)
		for _, e := range x.Elts {
			d.expr(e, depth+1)
		}
	case *List:
		d.line(depth, "List "+sp)
		for _, e := range x.Elts {
			d.expr(e, depth+1)
		}
	default:
		d.line(depth, fmt.Sprintf("?%T", x))
	}
}
