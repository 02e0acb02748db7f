package syntax

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// sexpr prints an expression fully parenthesized in prefix form, so a test states the tree
// shape independently of Format's precedence rules.
func sexpr(x Expr) string {
	list := func(head string, xs ...Expr) string {
		parts := []string{head}
		for _, x := range xs {
			if x == nil {
				parts = append(parts, "_")
			} else {
				parts = append(parts, sexpr(x))
			}
		}
		return "(" + strings.Join(parts, " ") + ")"
	}
	switch x := x.(type) {
	case *Name:
		return x.ID
	case *Constant:
		return x.Raw
	case *Attribute:
		return list("."+x.Name, x.X)
	case *Call:
		args := append([]Expr{x.Func}, x.Args...)
		s := list("call", args...)
		for _, k := range x.Keywords {
			s = s[:len(s)-1] + " " + k.Name + "=" + sexpr(k.Value) + ")"
		}
		return s
	case *Subscript:
		return list("[]", append([]Expr{x.X}, x.Index...)...)
	case *Slice:
		return list(":", x.Lo, x.Hi, x.Step)
	case *BinOp:
		return list(x.Op.String(), x.X, x.Y)
	case *UnaryOp:
		return list("u"+x.Op.String(), x.X)
	case *BoolOp:
		return list(x.Op.String(), x.Values...)
	case *Compare:
		return list(x.Ops[0].String(), x.Operands...)
	case *IfExp:
		return list("if", x.Cond, x.Then, x.Else)
	case *Tuple:
		return list("tuple", x.Elts...)
	case *List:
		return list("list", x.Elts...)
	case *Starred:
		return list("*", x.X)
	}
	return fmt.Sprintf("?%T", x)
}

func TestPrecedence(t *testing.T) {
	tests := []struct{ src, want string }{
		{"a + b * c", "(+ a (* b c))"},
		{"a * b + c", "(+ (* a b) c)"},
		{"a - b - c", "(- (- a b) c)"},
		{"a / b // c % d @ e", "(@ (% (// (/ a b) c) d) e)"},
		{"a ** b ** c", "(** a (** b c))"},
		{"-x ** 2", "(u- (** x 2))"},
		{"-x ** -y", "(u- (** x (u- y)))"},
		{"(-x) ** 2", "(** (u- x) 2)"},
		{"2 ** -1", "(** 2 (u- 1))"},
		{"~a * -b", "(* (u~ a) (u- b))"},
		{"--a", "(u- (u- a))"},
		{"a << b + c", "(<< a (+ b c))"},
		{"a & b << c", "(& a (<< b c))"},
		{"a ^ b & c", "(^ a (& b c))"},
		{"a | b ^ c", "(| a (^ b c))"},
		{"a < b | c", "(< a (| b c))"},
		{"a & b == c", "(== (& a b) c)"},
		{"(a & b) == c", "(== (& a b) c)"},
		{"not a < b", "(unot (< a b))"},
		{"not not a", "(unot (unot a))"},
		{"a and not b", "(and a (unot b))"},
		{"a or b and c", "(or a (and b c))"},
		{"a and b or c and d", "(or (and a b) (and c d))"},
		{"a or b or c", "(or a b c)"},
		{"a if b else c", "(if b a c)"},
		{"a if b else c if d else e", "(if b a (if d c e))"},
		{"a or b if c or d else e", "(if (or c d) (or a b) e)"},
		{"a is not None", "(is not a None)"},
		{"a not in b", "(not in a b)"},
		{"x.y(z)[0].w", "(.w ([] (call (.y x) z) 0))"},
		{"f(a, b=1)(c)", "(call (call f a b=1) c)"},
		{"x[:, None]", "([] x (: _ _ _) None)"},
		{"x[a:b:c, ::2, 1:]", "([] x (: a b c) (: _ _ 2) (: 1 _ _))"},
		{"x[a, b,]", "([] x a b)"},
		{"x[(a, b)]", "([] x (tuple a b))"},
		{"a, b", "(tuple a b)"},
		{"a,", "(tuple a)"},
		{"()", "(tuple)"},
		{"(a)", "a"},
		{"(a,)", "(tuple a)"},
		{"[a, (b, c)]", "(list a (tuple b c))"},
		{"[]", "(list)"},
		{"-1.0e6", "(u- 1.0e6)"},
		{"1 .real", "(.real 1)"},
		{"a @ b", "(@ a b)"},
		{"f(x,)", "(call f x)"},
		{"'a' 'b'", "'a' 'b'"},
	}
	for _, tt := range tests {
		x, err := ParseExpr("t.py", []byte(tt.src))
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if got := sexpr(x); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.src, got, tt.want)
		}
	}
}

func TestFormatExpr(t *testing.T) {
	// Format prints minimal parentheses; each case must also reparse to the same tree.
	tests := []struct{ src, want string }{
		{"(a + b) * c", "(a + b) * c"},
		{"a + (b * c)", "a + b * c"},
		{"a - (b - c)", "a - (b - c)"},
		{"(a - b) - c", "a - b - c"},
		{"(a ** b) ** c", "(a ** b) ** c"},
		{"a ** (b ** c)", "a ** b ** c"},
		{"(-a) ** b", "(-a) ** b"},
		{"-(a ** b)", "-a ** b"},
		{"not (a and b)", "not (a and b)"},
		{"(not a) == b", "(not a) == b"},
		{"(a if b else c) if d else e", "(a if b else c) if d else e"},
		{"(a or b) and c", "(a or b) and c"},
		{"(a < b) < c", "(a < b) < c"},
		{"f(a, *[])", ""},
		{"x[::, None]", "x[:, None]"},
		{"x[1:2:3]", "x[1:2:3]"},
		{"(a,)", "(a,)"},
		{"a, b", "(a, b)"},
		{"t.to(tl.float16, bitcast=True)", "t.to(tl.float16, bitcast=True)"},
		{"0x_FF + 1.", "0x_FF + 1."},
		{"(a).b", "a.b"},
		{"(1).real", "1 .real"},
		{"-(-a)", "--a"},
		{"a if (b if c else d) else e", "a if (b if c else d) else e"},
	}
	for _, tt := range tests {
		x, err := ParseExpr("t.py", []byte(tt.src))
		if tt.want == "" {
			if err == nil {
				t.Errorf("%s: expected an error", tt.src)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		got := Format(x)
		if got != tt.want {
			t.Errorf("Format(%s) = %s, want %s", tt.src, got, tt.want)
		}
		y, err := ParseExpr("t.py", []byte(got))
		if err != nil || sexpr(y) != sexpr(x) {
			t.Errorf("%s: reparse of %s gives %v (err %v), want %s", tt.src, got, sexprOrNil(y), err, sexpr(x))
		}
	}
}

func sexprOrNil(x Expr) string {
	if x == nil {
		return "<nil>"
	}
	return sexpr(x)
}

var spanRE = regexp.MustCompile(` \d+:\d+-\d+:\d+`)

// TestFormatRoundTrip formats every test kernel and reparses it: the trees must agree up to
// positions.
func TestFormatRoundTrip(t *testing.T) {
	for _, path := range kernelFiles(t) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ParseFile(path, src)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		text := Format(f)
		g, err := ParseFile(path+".formatted", []byte(text))
		if err != nil {
			t.Fatalf("%s: formatted output does not parse: %v\n%s", path, err, text)
		}
		want := spanRE.ReplaceAllString(dumpTree(f), "")
		got := spanRE.ReplaceAllString(dumpTree(g), "")
		// The formatter prints literals as written but strings with Go quoting; compare the
		// decoded values, which dumpTree shows.
		if got != want {
			t.Errorf("%s: round trip differs:\n%s", path, firstDiff(got, want))
		}
	}
}

func TestFileAPI(t *testing.T) {
	src := `"""Doc."""
import triton
import triton.language as tl
from triton.language import math as tlmath, core
from .. import rel

BLOCK = 64
A, B = 1, 2


@triton.jit
def helper(x):
    return x


@triton.jit(do_not_specialize=["n"])
def kernel(p, n: int, BLOCK: tl.constexpr = 16) -> None:
    '''Kernel doc.'''
    tl.store(p, helper(n))
`
	f, err := ParseFile("k.py", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc != "Doc." || len(f.Imports) != 4 || len(f.Funcs) != 2 || len(f.Constants) != 2 || len(f.Stmts) != 8 {
		t.Fatalf("file: doc %q, %d imports, %d funcs, %d constants, %d stmts", f.Doc, len(f.Imports), len(f.Funcs), len(f.Constants), len(f.Stmts))
	}
	imp := f.Imports[2]
	if !imp.IsFrom || imp.Module != "triton.language" || imp.Level != 0 || len(imp.Names) != 2 ||
		imp.Names[0].Name != "math" || imp.Names[0].AsName != "tlmath" || imp.Names[1].AsName != "" {
		t.Errorf("from-import: %+v", imp)
	}
	if rel := f.Imports[3]; rel.Level != 2 || rel.Module != "" || rel.Names[0].Name != "rel" {
		t.Errorf("relative import: %+v", rel)
	}
	if f.Imports[1].Names[0].Name != "triton.language" || f.Imports[1].Names[0].AsName != "tl" {
		t.Errorf("import as: %+v", f.Imports[1].Names[0])
	}
	k := f.Func("kernel")
	if k == nil || f.Func("nope") != nil {
		t.Fatal("Func lookup failed")
	}
	if k.Doc != "Kernel doc." || len(k.Body) != 1 || len(k.Params) != 3 || len(k.Decorators) != 1 {
		t.Fatalf("kernel: doc %q body %d params %d decorators %d", k.Doc, len(k.Body), len(k.Params), len(k.Decorators))
	}
	if k.Pos() != (Pos{"k.py", 17, 1}) || k.NamePos != (Pos{"k.py", 17, 5}) {
		t.Errorf("kernel at %v, name at %v", k.Pos(), k.NamePos)
	}
	if got := Format(k.Decorators[0]); got != `triton.jit(do_not_specialize=["n"])` {
		t.Errorf("decorator %s", got)
	}
	p := k.Params[2]
	if p.Name != "BLOCK" || Format(p.Annotation) != "tl.constexpr" || Format(p.Default) != "16" {
		t.Errorf("param %s", Format(p))
	}
	if Format(k.Returns) != "None" {
		t.Errorf("returns %v", k.Returns)
	}
	if c := f.Constants[0]; Format(c.Targets[0]) != "BLOCK" || c.Value.(*Constant).Int.Int64() != 64 {
		t.Errorf("constant %s", Format(c))
	}
	// Inspect visits every call in source order.
	var calls []string
	Inspect(k, func(n Node) bool {
		if c, ok := n.(*Call); ok {
			calls = append(calls, Format(c.Func))
		}
		return true
	})
	if strings.Join(calls, ",") != "triton.jit,tl.store,helper" {
		t.Errorf("Inspect calls: %v", calls)
	}
}

func TestPositions(t *testing.T) {
	src := "def f(a):\n    x = a + foo(b)[1]\n    if x:\n        return (a,\n                b)\n"
	f, err := ParseFile("p.py", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	fn := f.Funcs[0]
	asg := fn.Body[0].(*Assign)
	bin := asg.Value.(*BinOp)
	sub := bin.Y.(*Subscript)
	call := sub.X.(*Call)
	ifs := fn.Body[1].(*If)
	ret := ifs.Body[0].(*Return)
	tup := ret.Value.(*Tuple)
	p := func(l, c int) Pos { return Pos{"p.py", l, c} }
	checks := []struct {
		what      string
		got, want Pos
	}{
		{"def", fn.Pos(), p(1, 1)}, {"def end", fn.End(), p(5, 19)},
		{"assign", asg.Pos(), p(2, 5)}, {"assign end", asg.End(), p(2, 22)},
		{"binop", bin.Pos(), p(2, 9)}, {"binop op", bin.OpPos, p(2, 11)},
		{"subscript", sub.Pos(), p(2, 13)}, {"subscript end", sub.End(), p(2, 22)},
		{"call", call.Pos(), p(2, 13)}, {"call end", call.End(), p(2, 19)},
		{"arg", call.Args[0].Pos(), p(2, 17)},
		{"if", ifs.Pos(), p(3, 5)}, {"if end", ifs.End(), p(5, 19)},
		{"return", ret.Pos(), p(4, 9)}, {"tuple", tup.Pos(), p(4, 16)}, {"tuple end", tup.End(), p(5, 19)},
		{"tuple elt", tup.Elts[1].Pos(), p(5, 17)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s at %v, want %v", c.what, c.got, c.want)
		}
	}
	if s := (Pos{"k.py", 3, 7}).String(); s != "k.py:3:7" {
		t.Errorf("Pos.String = %s", s)
	}
}
