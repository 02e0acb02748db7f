package triton

import (
	"strings"
	"testing"

	"github.com/widejit/widejit/triton/ir"
)

const helperKernel = `import triton
import triton.language as tl


@triton.jit
def masked_load(ptr, offs, mask=None, PAD: tl.constexpr = 0.0):
    if mask is None:
        return tl.load(ptr + offs)
    return tl.load(ptr + offs, mask=mask, other=PAD)


@triton.jit
def scale_pair(a, b, FACTOR: tl.constexpr):
    if FACTOR == 1:
        return a, b
    return a * FACTOR, b * FACTOR


@triton.jit
def recurse(x, DEPTH: tl.constexpr):
    if DEPTH == 0:
        return x
    return recurse(x + 1, DEPTH - 1)


@triton.jit
def helpers(p, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = masked_load(p, offs)
    b = masked_load(p, offs, mask=offs < n, PAD=-1.0)
    a, b = scale_pair(a, b, FACTOR=1)
    c, d = scale_pair(a, b, 2)
    e = recurse(c, 3)
    if n > 4:
        both = e + d
    else:
        both = e - d
    i = 0
    j = n
    while i < j:
        i += 1
        j -= 1
    for k in range(0, n):
        for m in range(k, n, 2):
            both += m
    tl.store(p + offs, both + i + j)
`

func TestHelpersAndControlFlow(t *testing.T) {
	f, err := Specialize("h.py", helperKernel, "helpers", map[string]string{"p": "*fp32", "n": "i32"}, map[string]any{"BLOCK": 8})
	if err != nil {
		t.Fatal(err)
	}
	c := countOps(f.Body, nil)
	// Two loads (one masked); scale_pair with FACTOR=1 emits no mul, with 2 emits two;
	// recurse adds 1 three times; one dynamic if; one while with two carried values;
	// two nested fors, each carrying `both`.
	if c[ir.Load] != 2 || c[ir.If] != 1 || c[ir.While] != 1 || c[ir.For] != 2 {
		t.Errorf("load=%d if=%d while=%d for=%d, want 2, 1, 1, 2\n%s", c[ir.Load], c[ir.If], c[ir.While], c[ir.For], f)
	}
	var masked int
	for _, in := range f.Body.Instrs {
		if in.Op == ir.Load && len(in.Args) == 3 {
			masked++
			if cst := in.Args[2].Def; cst == nil || cst.Op != ir.Const || cst.Float != -1 {
				t.Errorf("masked load's other is not the constant -1.0 passed as PAD")
			}
		}
		if in.Op == ir.While && len(in.Results) != 2 {
			t.Errorf("while carries %d values, want 2 (i and j)", len(in.Results))
		}
		if in.Op == ir.If && (len(in.Results) != 1 || !in.Results[0].Type.Equal(ir.Tile(ir.F32, 8))) {
			t.Errorf("if results %v, want one fp32[8]", in.Results)
		}
	}
	if masked != 1 {
		t.Errorf("%d masked loads, want 1", masked)
	}
	if !strings.Contains(f.String(), "for") {
		t.Error("no loop in the dump")
	}
}

func TestRecursionLimit(t *testing.T) {
	src := strings.Replace(helperKernel, "e = recurse(c, 3)", "e = recurse(c, 100)", 1)
	_, err := Specialize("h.py", src, "helpers", map[string]string{"p": "*fp32", "n": "i32"}, map[string]any{"BLOCK": 8})
	if err == nil || !strings.Contains(err.Error(), "nested deeper than 64") {
		t.Fatalf("got %v, want a recursion-depth error", err)
	}
}

// TestDefinedInBothBranches: Triton allows a name first defined in both branches of a
// runtime if; it becomes an If result.
func TestDefinedInBothBranches(t *testing.T) {
	src := `import triton
import triton.language as tl


@triton.jit
def k(p, n):
    if n > 0:
        v = n * 2
        only_then = 1
    else:
        v = n * 3
    tl.store(p, v)
`
	f, err := Specialize("b.py", src, "k", map[string]string{"p": "*i32", "n": "i32"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := countOps(f.Body, nil)
	if c[ir.If] != 1 {
		t.Fatalf("%d ifs", c[ir.If])
	}
	src2 := strings.Replace(src, "tl.store(p, v)", "tl.store(p, only_then)", 1)
	_, err = Specialize("b.py", src2, "k", map[string]string{"p": "*i32", "n": "i32"}, nil)
	if err == nil || !strings.Contains(err.Error(), `b.py:12:17: name "only_then" is not defined`) {
		t.Fatalf("got %v, want only_then undefined after the if", err)
	}
}
