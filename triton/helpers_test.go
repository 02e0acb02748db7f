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
	// Triton compares the two branches, not the value before the if: a name retyped in both
	// branches is fine.
	src3 := strings.Replace(src, "def k(p, n):\n", "def k(p, n):\n    v = 0.5\n", 1)
	f3, err := Specialize("b.py", src3, "k", map[string]string{"p": "*i32", "n": "i32"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range f3.Body.Instrs {
		if in.Op == ir.If && (len(in.Results) != 1 || in.Results[0].Type.Elem != ir.I32) {
			t.Errorf("if results %v, want one i32", in.Results)
		}
	}
	src2 := strings.Replace(src, "tl.store(p, v)", "tl.store(p, only_then)", 1)
	_, err = Specialize("b.py", src2, "k", map[string]string{"p": "*i32", "n": "i32"}, nil)
	if err == nil || !strings.Contains(err.Error(), `b.py:12:17: name "only_then" is not defined`) {
		t.Fatalf("got %v, want only_then undefined after the if", err)
	}
}

func TestCarriedTuplesAndBlockPointers(t *testing.T) {
	src := `import triton
import triton.language as tl


@triton.jit
def k(p, n, BLOCK: tl.constexpr):
    pair = (tl.zeros((BLOCK,), dtype=tl.float32), 0)
    bp = tl.make_block_ptr(p, (n,), (1,), (0,), (BLOCK,), (0,))
    for i in range(0, n, BLOCK):
        x = tl.load(bp, boundary_check=(0,))
        pair = (pair[0] + x, pair[1] + 1)
        if i > 4:
            bp = tl.advance(bp, (BLOCK,))
    tl.store(p + tl.arange(0, BLOCK), pair[0] / pair[1])
`
	f, err := Specialize("t.py", src, "k", map[string]string{"p": "*fp32", "n": "i32"}, map[string]any{"BLOCK": 8})
	if err != nil {
		t.Fatal(err)
	}
	var loop *ir.Instr
	for _, in := range f.Body.Instrs {
		if in.Op == ir.For {
			loop = in
		}
	}
	if loop == nil {
		t.Fatalf("no loop:\n%s", f)
	}
	// Carried: the tuple's two values and the block pointer's one offset.
	want := []ir.Type{ir.Tile(ir.F32, 8), ir.Scalar(ir.I32), ir.Scalar(ir.I32)}
	if len(loop.Results) != len(want) {
		t.Fatalf("loop carries %d values, want %d:\n%s", len(loop.Results), len(want), f)
	}
	for i, r := range loop.Results {
		if !r.Type.Equal(want[i]) {
			t.Errorf("loop result %d has type %s, want %s", i, r.Type, want[i])
		}
	}
	if c := countOps(loop.Regions[0], nil); c[ir.If] != 1 {
		t.Errorf("%d ifs in the loop body, want 1 (advancing the block pointer)", c[ir.If])
	}
}
