package triton

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/widejit/widejit/triton/ir"
)

const errHeader = `import triton
import triton.language as tl


@triton.jit
def helper(x):
    return x + 1


def plain(x):
    return x


@triton.jit
def k(x_ptr, y_ptr, n, f, B: tl.constexpr):
`

// errHeaderLines is the number of lines before the kernel body (the body starts on line 16).
const errBodyLine = 16

func specializeBody(body string) error {
	lines := strings.Split(strings.Trim(body, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	src := errHeader + strings.Join(lines, "\n") + "\n"
	_, err := Specialize("k.py", src, "k", map[string]string{"x_ptr": "*fp32", "y_ptr": "*u32", "n": "i32", "f": "fp32"}, map[string]any{"B": 16})
	return err
}

func TestRejectedConstructs(t *testing.T) {
	cases := []struct {
		body string
		pos  string // "LINE:COL" with the body's first line as line 1
		msg  string
	}{
		{"for i in range(n):\n    break", "2:9", "break is not supported"},
		{"for i in range(n):\n    continue", "2:9", "continue is not supported"},
		{"for i in range(n):\n    return", "2:9", "return inside a loop"},
		{"if n > 0:\n    return", "2:9", "return inside an if on a runtime condition"},
		{"x = tl.arange(0, 12)", "1:9", "not a power of 2"},
		{"m = 8\nx = tl.arange(0, m)", "2:9", "annotate it with tl.constexpr"},
		{"x = tl.arange(0, B)\ny = x[0]", "2:11", "accept only None and `:`"},
		{"x = tl.arange(0, B)\ny = x[1:]", "2:11", "only bare `:` slices"},
		{"a = tl.arange(0, B)\nb = tl.arange(0, 8)\nc = a + b", "3:9", "shapes [16] and [8] cannot be broadcast"},
		{"acc = 0\nfor i in range(n):\n    acc = acc + 1.5", "2:5", "loop-carried variable acc changes type in the loop at line 17: i32 before the loop, fp32 at the end of the body"},
		{"if n > 0:\n    v = 1\nelse:\n    v = 2.0", "1:5", "variable v has different types in the branches of the if at line 16"},
		{"C: tl.constexpr = 1\nfor i in range(n):\n    C: tl.constexpr = 2", "2:5", "compile-time variable C (1) cannot be reassigned inside a loop"},
		{"x = tl.foo(1)", "1:12", "tl.foo is not supported by widejit"},
		{"x = tl.maximum(f, 0.0, propagate_nan=tl.PropagateNan.SOME)", "1:58", "tl.PropagateNan.SOME: want ALL or NONE"},
		{"x = tl.minimum(f, 0.0, propagate_nan=\"any\")", "1:9", `tl.minimum: propagate_nan="any": want tl.PropagateNan.ALL or NONE`},
		{"x = y", "1:9", `name "y" is not defined`},
		{"tl.static_assert(B == 8, \"B must be 8\")", "1:5", "static_assert failed: B must be 8"},
		{"x = f // 2.0", "1:9", "// is only defined on integer tensors"},
		{"x = f & 1", "1:9", "operator & needs integer operands"},
		{"p = tl.load(y_ptr)\nq = p + -1", "2:9", "unsigned u32 tensor with the negative scalar -1"},
		{"x = tl.load(x_ptr + tl.arange(0, B), mask=n)", "1:9", "mask must be a boolean (int1) tensor"},
		{"x = tl.load(x_ptr + tl.arange(0, B), mask=tl.arange(0, 32)[:, None] < n)", "1:9", "mask of shape [32 1] cannot be broadcast to the pointer shape [16]"},
		{"tl.store(x_ptr, tl.arange(0, B))", "1:5", "value has shape [16] but the pointer is a scalar"},
		{"x = tl.load(x_ptr + tl.arange(0, B), other=1.0)", "1:9", "other cannot be given without mask"},
		{"x = tl.load(x_ptr + tl.arange(0, B), boundary_check=(0,))", "1:9", "boundary_check is only for block pointers"},
		{"a = tl.zeros((16, 32), dtype=tl.float32)\nb = tl.zeros((16, 32), dtype=tl.float32)\nc = tl.dot(a, b)", "3:9", "inner dimensions differ"},
		{"a = tl.zeros((16, 16), dtype=tl.float16)\nb = tl.zeros((16, 16), dtype=tl.float32)\nc = tl.dot(a, b)", "3:9", "same dtype"},
		{"x = tl.arange(0, B)\nif x > 0:\n    pass", "2:8", "if condition must be a scalar"},
		{"x = plain(n)", "1:9", "plain is not decorated with @triton.jit"},
		{"x = tl.exp(tl.zeros((16,), dtype=tl.float16))", "1:9", "tl.exp expects fp32 or fp64"},
		{"x = helper(n, n)", "1:9", "helper takes at most 1 arguments"},
		{"x = tl.zeros((3,), dtype=tl.float32)", "1:9", "every dim must be a power of 2"},
		{"x = tl.reshape(tl.arange(0, B), (4, 8))", "1:9", "cannot reshape i32[16] (16 elements) to [4 8]"},
		{"x = tl.sum(tl.arange(0, B), axis=2)", "1:9", "axis 2 is out of range for rank 1"},
		{"x = tl.arange(0, B)\nx.foo = 1", "2:5", "assignment to an attribute"},
		{"x = 1 << 70", "1:9", "integer overflow"},
		{"x = n + 2**40", "1:9", "scalar 1099511627776 is out of range for i32"},
		{"x = n / 0 if B == 0 else B // 0", "1:30", "integer division by zero"},
		{"x = n < f < 3", "1:15", "chained comparisons"},
		{"x = lambda y: y", "1:9", "lambda"},
		{"def inner():\n    pass", "1:5", "nested"},
		{"a = tl.zeros((16, 16), dtype=tl.float16)\nacc = tl.zeros((16, 16), dtype=tl.float16)\nc = tl.dot(a, a, acc)", "3:9", "acc has type fp16[16,16] but the product has type fp32[16,16]"},
		{"bp = tl.make_block_ptr(x_ptr, (n, n), (n, 1), (0, 0), (B, B), (1, 0))\nq = bp + 1", "2:9", "on a block pointer; use tl.advance"},
		{"bp = tl.make_block_ptr(x_ptr, (n, n), (n, 1), (0, 0), (B, B), (1, 0))\nq = tl.load(bp, mask=n > 0)", "2:9", "mask and other are not allowed with a block pointer"},
		{"bp = tl.make_block_ptr(x_ptr, (n, n), (n, 1), (0, 0), (B, B), (1, 2))", "1:10", "order (1, 2) is not a permutation"},
		{"tl.atomic_and(x_ptr, 1)", "1:5", "tl.atomic_and needs an integer pointer"},
		{"s = (1, 2)[2]", "1:16", "tuple index 2 out of range"},
		{"x = tl.arange(0, B).foo", "1:25", `tensors have no attribute "foo"`},
		{"x = 3(4)", "1:9", "int is not callable"},
		{"x = tl.static_range(4)", "1:9", "only allowed as the iterable of a for loop"},
		{"x = (n > 0) and (n < 4) and (n != 2)", "1:9", "chained boolean operators on tensors"},
		{"x = f ** 2", "1:9", "** is not defined on tensors"},
		{"return n", "1:5", "a kernel cannot return a value"},
		{"x = tl.rand(n, tl.arange(0, B).to(tl.int64))", "1:9", "static_assert failed: widejit's Philox takes 32-bit offsets"},
		{"x = float('abc')", "1:9", `float("abc") is not supported`},
		{"x = tl.arange(0, B)\ny = x.to(tl.float8e5)", "2:17", "fp8 types are not supported"},
	}
	for _, c := range cases {
		err := specializeBody(c.body)
		if err == nil {
			t.Errorf("%q: no error, want %q", c.body, c.msg)
			continue
		}
		var line, col int
		if _, e := fmtSscanf(c.pos, &line, &col); e != nil {
			t.Fatal(e)
		}
		wantPos := fmt.Sprintf("k.py:%d:%d:", line+errBodyLine-1, col)
		msg := err.Error()
		if !strings.Contains(msg, c.msg) {
			t.Errorf("%q:\n got  %s\n want message containing %q", c.body, msg, c.msg)
		}
		if !strings.HasPrefix(msg, wantPos) {
			t.Errorf("%q:\n got  %s\n want position %s", c.body, msg, wantPos)
		}
		var se *Error
		if !errors.As(err, &se) {
			t.Errorf("%q: error of type %T, want *triton.Error", c.body, err)
		} else {
			if se.Syntax == nil && se.Consts != "B=16" {
				t.Errorf("%q: constexprs %q, want B=16", c.body, se.Consts)
			}
			if se.Internal {
				t.Errorf("%q: reported as an internal error: %v", c.body, err)
			}
		}
	}
}

func TestBindingErrors(t *testing.T) {
	src := errHeader + "    pass\n"
	base := map[string]string{"x_ptr": "*fp32", "y_ptr": "*u32", "n": "i32", "f": "fp32"}
	cases := []struct {
		sig    map[string]string
		consts map[string]any
		fn     string
		msg    string
	}{
		{map[string]string{"x_ptr": "*fp32"}, map[string]any{"B": 1}, "k", "no signature type or constexpr value for parameter(s) y_ptr, n, f"},
		{base, map[string]any{}, "k", "parameter(s) B"},
		{base, map[string]any{"B": 1, "C": 2}, "k", "kernel k has no parameter(s) C"},
		{map[string]string{"x_ptr": "*fp32", "y_ptr": "*u32", "n": "int", "f": "fp32"}, map[string]any{"B": 1}, "k", `bad signature type "int"`},
		{base, map[string]any{"B": 1, "n": 3}, "k", "both a signature type"},
		{base, map[string]any{"B": 1}, "nope", `no function "nope"`},
	}
	for _, c := range cases {
		_, err := Specialize("k.py", src, c.fn, c.sig, c.consts)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("got %v, want %q", err, c.msg)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "k.py:") {
			t.Errorf("error without file position: %v", err)
		}
	}
}

// tl.maximum/tl.minimum with propagate_nan=tl.PropagateNan.ALL mark their float Max/Min
// ir.PropagateNaN; NONE (and no argument) keep maxnum, and integers ignore the flag.
func TestPropagateNanMarksMinMax(t *testing.T) {
	src := errHeader + `    a = tl.maximum(f, 0.0, propagate_nan=tl.PropagateNan.ALL)
    b = tl.minimum(f, 1.0, propagate_nan=tl.PropagateNan.NONE)
    c = tl.maximum(f, 2.0)
    d = tl.maximum(n, 3, propagate_nan=tl.PropagateNan.ALL)
    tl.store(x_ptr, a + b + c + d)
`
	f, err := Specialize("k.py", src, "k", map[string]string{"x_ptr": "*fp32", "y_ptr": "*u32", "n": "i32", "f": "fp32"}, map[string]any{"B": 16})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range f.Body.Instrs {
		if in.Op == ir.Max || in.Op == ir.Min {
			got = append(got, fmt.Sprintf("%s %s %d", in.Op, in.Results[0].Type, in.Int))
		}
	}
	want := []string{"max fp32 1", "min fp32 0", "max fp32 0", "max i32 0"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("min/max instructions: %v, want %v", got, want)
	}
}
