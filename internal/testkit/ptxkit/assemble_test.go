package ptxkit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx"
)

const copyKernel = `import triton
import triton.language as tl


@triton.jit
def copy(src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs))
`

func TestKernelsDeduplicateAndAssemble(t *testing.T) {
	ptxas, err := ptx.FindPtxas(".")
	if err != nil {
		t.Skip(err.Error() + " (bash .ci/setup installs ptxas)")
	}
	s := NewKernels(jit.NewCompiler(jit.CompilerOptions{}))
	src := jit.Source{File: "copy.py", Text: copyKernel, Fn: "copy"}
	sig := map[string]string{"src": "*fp32", "dst": "*fp32"}
	for _, c := range []struct {
		name  string
		block int64
	}{{"a", 16}, {"b", 16}, {"c", 32}} {
		if err := s.Add(c.name, src, jit.Spec{Sig: sig, Consts: map[string]any{"BLOCK": c.block}}); err != nil {
			t.Fatal(err)
		}
	}
	if s.Len() != 2 {
		t.Fatalf("%d distinct kernels, want 2 (a and b are one kernel)", s.Len())
	}
	s.AssembleAll(t, ptxas)

	// A kernel the backend refuses is reported by name.
	bad := NewKernels(jit.NewCompiler(jit.CompilerOptions{}))
	if err := bad.Add("huge", src, jit.Spec{Sig: sig, Consts: map[string]any{"BLOCK": int64(1 << 18)}, NumWarps: 1}); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{T: t}
	bad.AssembleAll(rec, ptxas)
	if len(rec.errs) == 0 || !strings.HasPrefix(rec.errs[0], "huge (") {
		t.Errorf("errors %q, want ones naming the kernel huge", rec.errs)
	}
}

// recorder collects Errorf calls instead of failing the test.
type recorder struct {
	*testing.T
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Helper() {}
