package syntax

import (
	"strings"
	"testing"
)

// body wraps kernel-body lines in a jit function starting at line 3, column 5.
func body(lines ...string) string {
	return "@triton.jit\ndef k(x):\n    " + strings.Join(lines, "\n    ") + "\n"
}

func TestRejected(t *testing.T) {
	tests := []struct {
		name, src, want string // want is the full first error, FILE:LINE:COL: message
	}{
		{"nested def", body("def g():", "    pass"), "r.py:3:5: nested function definitions (def inside a function) are not supported"},
		{"lambda", body("f = lambda a: a"), "r.py:3:9: lambda expressions are not supported"},
		{"lambda arg", body("g(lambda: 1)"), "r.py:3:7: lambda expressions are not supported"},
		{"list comprehension", body("y = [i for i in x]"), "r.py:3:12: list comprehensions are not supported"},
		{"generator in call", body("y = sum(i for i in x)"), "r.py:3:15: generator expressions are not supported"},
		{"generator in parens", body("y = (i for i in x)"), "r.py:3:12: generator expressions are not supported"},
		{"dict display", body("y = {'a': 1}"), "r.py:3:9: dict and set displays ({...}) are not supported"},
		{"set display", body("y = {1, 2}"), "r.py:3:9: dict and set displays ({...}) are not supported"},
		{"try", body("try:", "    pass", "except E:", "    pass"), "r.py:3:5: try statements are not supported"},
		{"with", body("with a as b:", "    pass"), "r.py:3:5: with statements are not supported"},
		{"class", "class C:\n    pass\n", "r.py:1:1: class definitions are not supported"},
		{"decorated class", "@dataclass\nclass C:\n    pass\n", "r.py:2:1: class definitions are not supported"},
		{"global", body("global g"), "r.py:3:5: global statements are not supported"},
		{"nonlocal", body("nonlocal g"), "r.py:3:5: nonlocal statements are not supported"},
		{"star args def", "def k(*args):\n    pass\n", "r.py:1:7: *args parameters are not supported"},
		{"kwargs def", "def k(a, **kw):\n    pass\n", "r.py:1:10: **kwargs parameters are not supported"},
		{"bare star def", "def k(a, *, b):\n    pass\n", "r.py:1:10: keyword-only parameters (a bare '*') are not supported"},
		{"slash def", "def k(a, /, b):\n    pass\n", "r.py:1:10: positional-only parameters (a bare '/') are not supported"},
		{"star args call", body("f(*a)"), "r.py:3:7: *args in calls are not supported"},
		{"kwargs call", body("f(a, **k)"), "r.py:3:10: **kwargs in calls are not supported"},
		{"starred assign", body("a, *b = x"), "r.py:3:8: starred expressions (*x) are not supported"},
		{"starred return", body("return *a, b"), "r.py:3:12: starred expressions (*x) are not supported"},
		{"walrus in if", body("if (n := 10) > 5:", "    pass"), "r.py:3:11: assignment expressions (:=) are not supported"},
		{"walrus bare if", body("if n := 10:", "    pass"), "r.py:3:10: assignment expressions (:=) are not supported"},
		{"walrus stmt", body("n := 10"), "r.py:3:7: assignment expressions (:=) are not supported"},
		{"async def", "async def k():\n    pass\n", "r.py:1:1: async functions and statements are not supported"},
		{"await", body("y = await x"), "r.py:3:9: await is not supported"},
		{"yield", body("yield x"), "r.py:3:5: yield is not supported (kernels are not generators)"},
		{"yield value", body("y = yield x"), "r.py:3:9: yield is not supported (kernels are not generators)"},
		{"del", body("del x"), "r.py:3:5: del statements are not supported"},
		{"raise", body("raise ValueError()"), "r.py:3:5: raise statements are not supported; use tl.device_assert or tl.static_assert"},
		{"f-string", body("s = f'{x}'"), "r.py:3:9: f-strings are not supported in kernels"},
		{"nested decorator", body("@triton.jit", "def g():", "    pass"), "r.py:3:5: decorators are only allowed on module-level functions"},
		{"for else", body("for i in x:", "    pass", "else:", "    pass"), "r.py:5:5: for ... else is not supported"},
		{"while else", body("while x:", "    pass", "else:", "    pass"), "r.py:5:5: while ... else is not supported"},
		{"chained comparison", body("y = a < b < c"), "r.py:3:15: chained comparisons (a < b < c) are not supported; write (a < b) and (b < c)"},
		{"chained equality", body("y = a == b <= c"), "r.py:3:16: chained comparisons (a == b <= c) are not supported"},
		{"import in function", body("import math"), "r.py:3:5: import statements inside a function are not supported"},
		{"wildcard import", "from triton.language import *\n", "r.py:1:29: wildcard imports (from m import *) are not supported"},
		{"module if", "if X:\n    Y = 1\n", "r.py:1:1: module-level if statement is not supported in a kernel file"},
		{"module call", "print(1)\n", "r.py:1:1: module-level expression statements are not supported in a kernel file"},
		{"module annassign", "X: int = 1\n", "r.py:1:1: module-level annotated assignments are not supported"},
		{"assign to call", body("f() = 1"), "r.py:3:5: cannot assign to a function call"},
		{"assign to literal", body("1 = a"), "r.py:3:5: cannot assign to a literal"},
		{"augassign to tuple", body("a, b += 1"), "r.py:3:5: cannot use a tuple as the target of an augmented assignment"},
		{"annotate tuple", body("a, b: int = 1, 2"), "r.py:3:5: only a single name, attribute or subscript can be annotated, not a tuple"},
		{"for target call", body("for f() in x:", "    pass"), "r.py:3:9: cannot assign to a function call"},
		{"positional after keyword", body("f(a=1, b)"), "r.py:3:12: positional argument follows keyword argument"},
		{"repeated keyword", body("f(a=1, a=2)"), `r.py:3:12: keyword argument "a" repeated`},
		{"duplicate param", "def k(a, a):\n    pass\n", `r.py:1:10: duplicate parameter "a" in function k`},
		{"default order", "def k(a=1, b):\n    pass\n", `r.py:1:12: parameter "b" without a default follows a parameter with a default`},
		{"empty subscript", body("y = x[]"), "r.py:3:11: expected an index inside '[]'"},
		{"missing indent", body("if x:", "pass"), "r.py:4:5: expected an indented block after the if condition"},
		{"unexpected indent", body("a = 1", "    b = 2"), "r.py:4:9: unexpected indent"},
		{"stray else", body("else:", "    pass"), `r.py:3:5: unexpected "else" without a matching statement`},
		{"keyword as name", body("None = 1"), "r.py:3:5: cannot assign to a literal"},
		{"keyword in expr", body("y = if"), `r.py:3:9: expected an expression, found keyword "if"`},
		{"missing paren", body("y = f(a"), `r.py:3:10: "(" was never closed`},
		{"missing bracket", body("y = [1, (2,", "  3)"), `r.py:3:9: "[" was never closed`},
		{"missing colon", body("if x", "    pass"), `r.py:3:9: expected ":" after the if condition, found newline`},
		{"bad ifexp", body("y = a if b"), "r.py:3:15: expected 'else' in conditional expression, found newline"},
		{"trailing junk", body("y = a b"), `r.py:3:11: expected end of statement, found "b"`},
		{"mixed bytes", body("y = b'a' 'b'"), "r.py:3:14: cannot mix bytes and non-bytes string literals"},
		{"decorator then junk", "@triton.jit\nx = 1\n", `r.py:2:1: expected 'def' after decorators, found "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFile("r.py", []byte(tt.src))
			if err == nil {
				t.Fatalf("no error for:\n%s", tt.src)
			}
			el, ok := err.(ErrorList)
			if !ok {
				t.Fatalf("error is %T, want ErrorList", err)
			}
			if got := el[0].Error(); !strings.HasPrefix(got, tt.want) {
				t.Errorf("got  %s\nwant %s\nall errors:\n%v", got, tt.want, err)
			}
		})
	}
}

// TestErrorRecovery checks that independent errors are all reported, in order, and that the
// parser resynchronises after each one without inventing errors.
func TestErrorRecovery(t *testing.T) {
	src := `import triton


@triton.jit
def k(x):
    a = lambda: 1
    with open(x) as f:
        b = 2
        c = 3
    d = a < b < c
    ok = 1
    try:
        pass
    finally:
        pass
    e = [i for i in x]
    return ok


@triton.jit
def k2(*args):
    pass


def fine(y):
    return y
`
	f, err := ParseFile("e.py", []byte(src))
	el, _ := err.(ErrorList)
	want := []string{
		"e.py:6:9: lambda expressions are not supported",
		"e.py:7:5: with statements are not supported",
		"e.py:10:15: chained comparisons",
		"e.py:12:5: try statements are not supported",
		"e.py:14:5: unexpected \"finally\" without a matching statement",
		"e.py:16:12: list comprehensions are not supported",
		"e.py:21:8: *args parameters are not supported",
	}
	if len(el) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(el), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(el[i].Error(), w) {
			t.Errorf("error %d: got %s, want %s", i, el[i], w)
		}
	}
	// The statements around the errors survive: k keeps d, ok and return; fine is intact.
	if f == nil || f.Func("k") == nil || f.Func("fine") == nil {
		t.Fatalf("partial file lost functions")
	}
	if n := len(f.Func("k").Body); n != 3 {
		t.Errorf("k has %d statements after recovery, want 3 (d, ok, return)", n)
	}
	if !strings.Contains(err.Error(), "\n") {
		t.Errorf("ErrorList.Error should list all errors, got %q", err.Error())
	}
}

func TestErrorListText(t *testing.T) {
	var l ErrorList
	for i := 12; i >= 1; i-- {
		l.Add(Pos{"f.py", i, 1}, "bad")
	}
	l.Add(Pos{"f.py", 1, 1}, "bad") // exact duplicate is dropped by Sort
	l.Sort()
	if len(l) != 12 || l[0].Pos.Line != 1 || l[11].Pos.Line != 12 {
		t.Fatalf("sorted list: %v", []*Error(l))
	}
	text := l.Error()
	if !strings.HasPrefix(text, "f.py:1:1: bad\nf.py:2:1: bad\n") || !strings.HasSuffix(text, "(and 2 more errors)") {
		t.Errorf("text:\n%s", text)
	}
	if (ErrorList{}).Err() != nil {
		t.Error("empty list Err() is not nil")
	}
}
