package triton

import (
	"strings"
	"testing"

	"github.com/widejit/widejit/triton/ir"
)

const assertKernel = `import triton
import triton.language as tl


@triton.jit
def checked(p, n, m, BLOCK: tl.constexpr, MODE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(p + offs)
    if MODE == "plain":
        tl.device_assert(x < n, "x below n")
    if MODE == "masked":
        tl.device_assert(x < n, "x below n", mask=offs < m)
    if MODE == "python":
        assert x >= 0, "x not negative"
    if MODE == "int":
        tl.device_assert(x)
    if MODE == "true":
        tl.device_assert(BLOCK > 0, "constexpr")
        tl.device_assert(True)
        tl.device_assert(x < n, "mask off", mask=False)
        tl.device_assert(tl.full((BLOCK,), 1, tl.int1), "constant tile")
        assert BLOCK == 8
    if MODE == "false":
        tl.device_assert(BLOCK < 0, "BLOCK is negative")
    tl.store(p + offs, x)
`

func specializeAssert(t *testing.T, mode string) (*ir.Func, error) {
	t.Helper()
	return Specialize("checked.py", assertKernel, "checked", map[string]string{"p": "*i32", "n": "i32", "m": "i32"},
		map[string]any{"BLOCK": 8, "MODE": mode})
}

func asserts(b *ir.Block) []*ir.Instr {
	var out []*ir.Instr
	for _, in := range b.Instrs {
		if in.Op == ir.Assert {
			out = append(out, in)
		}
		for _, r := range in.Regions {
			out = append(out, asserts(r)...)
		}
	}
	return out
}

// TestDeviceAssert checks what tl.device_assert and a runtime Python assert emit: one Assert
// on an i1 tile at the call's position carrying the message, the mask folded in as
// cond | ~mask, a non-boolean condition compared with 0, nothing for conditions true (or masks
// false) at compile time, and an error for a condition false at compile time.
func TestDeviceAssert(t *testing.T) {
	cases := []struct {
		mode, msg string
		line, col int
		top       ir.Op // the op defining the assert's condition
	}{
		{"plain", "x below n", 10, 9, ir.Cmp},
		{"masked", "x below n", 12, 9, ir.Or},
		{"python", "x not negative", 14, 9, ir.Cmp},
		{"int", "", 16, 9, ir.Cmp},
	}
	for _, c := range cases {
		f, err := specializeAssert(t, c.mode)
		if err != nil {
			t.Fatalf("%s: %v", c.mode, err)
		}
		as := asserts(f.Body)
		if len(as) != 1 {
			t.Fatalf("%s: %d asserts, want 1:\n%s", c.mode, len(as), f)
		}
		a := as[0]
		if a.Str != c.msg || a.Pos.Line != c.line || a.Pos.Col != c.col || a.Pos.File != "checked.py" {
			t.Errorf("%s: assert %q at %s, want %q at checked.py:%d:%d", c.mode, a.Str, a.Pos, c.msg, c.line, c.col)
		}
		if got := a.Args[0].Type; !got.Equal(ir.Tile(ir.I1, 8)) {
			t.Errorf("%s: condition %s, want i1[8]", c.mode, got)
		}
		if d := a.Args[0].Def; d == nil || d.Op != c.top {
			t.Errorf("%s: condition defined by %v, want %s:\n%s", c.mode, d, c.top, f)
		}
		if c.mode == "masked" {
			not := a.Args[0].Def.Args[1].Def
			if not == nil || not.Op != ir.Not || not.Args[0].Def.Op != ir.Cmp || not.Args[0].Def.Int != ir.CmpLT {
				t.Errorf("masked: the second operand of the or is not ~(offs < m):\n%s", f)
			}
		}
		if err := ir.Verify(f); err != nil {
			t.Errorf("%s: %v", c.mode, err)
		}
	}

	f, err := specializeAssert(t, "true")
	if err != nil {
		t.Fatal(err)
	}
	if as := asserts(f.Body); len(as) != 0 {
		t.Errorf("asserts that cannot fail were kept:\n%s", f)
	}

	_, err = specializeAssert(t, "false")
	if err == nil || !strings.Contains(err.Error(), "compile-time false condition: BLOCK is negative") || !strings.Contains(err.Error(), "checked.py:24:9") {
		t.Errorf("compile-time false assert: err = %v", err)
	}
}
