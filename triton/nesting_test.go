package triton

import (
	"fmt"
	"strings"
	"testing"

	"github.com/widejit/widejit/triton/ir"
)

// nestedKernel is a kernel with depth runtime statements of kind ("if", "for", "while")
// nested inside each other; statement i (from 1) is at line 5+i, column 5+4*(i-1).
func nestedKernel(kind string, depth int) string {
	var b strings.Builder
	b.WriteString("import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(p, n):\n")
	for i := range depth {
		ind := strings.Repeat("    ", i+1)
		switch kind {
		case "if":
			fmt.Fprintf(&b, "%sif n > %d:\n", ind, i)
		case "for":
			fmt.Fprintf(&b, "%sfor i%d in range(n):\n", ind, i)
		case "while":
			fmt.Fprintf(&b, "%swhile n > %d:\n", ind, i)
		}
	}
	fmt.Fprintf(&b, "%stl.store(p, 1.0)\n", strings.Repeat("    ", depth+1))
	return b.String()
}

// TestRegionDepthLimit: the IR holds ir.MaxRegionDepth nested blocks; a kernel that nests
// runtime statements deeper fails at the line and column of the first one too many (before,
// the CPU backend's decoder said "regions nested deeper than 64" with no position).
func TestRegionDepthLimit(t *testing.T) {
	sig := map[string]string{"p": "*fp32", "n": "i32"}
	for _, kind := range []string{"if", "for", "while"} {
		_, err := Specialize("deep.py", nestedKernel(kind, 80), "k", sig, nil)
		lvl := ir.MaxRegionDepth
		want := fmt.Sprintf("deep.py:%d:%d: runtime if/for/while statements nested deeper than %d", 5+lvl, 5+4*(lvl-1), ir.MaxRegionDepth-1)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: got %v, want %q...", kind, err, want)
		}
		if e, ok := err.(*Error); ok && e.Internal {
			t.Errorf("%s: reported as an internal error", kind)
		}
	}
	// The deepest accepted nesting survives the encoding every backend decodes.
	f, err := Specialize("deep.py", nestedKernel("if", ir.MaxRegionDepth-1), "k", sig, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ir.Decode(ir.Encode(f)); err != nil {
		t.Fatalf("decode of %d nested ifs: %v", ir.MaxRegionDepth-1, err)
	}
}
