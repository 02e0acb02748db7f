package ptx

import (
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton"
)

// TestVectorizedKernelsAssemble assembles the kernels of the Align16 run cases, whose
// global accesses are vectorized, for every arch.
func TestVectorizedKernelsAssemble(t *testing.T) {
	ptxas := ptxasOrSkip(t)
	for _, rc := range runCases {
		if rc.align16 == nil {
			continue
		}
		for _, arch := range Archs {
			t.Run(rc.kc.name+"/"+arch, func(t *testing.T) {
				a, err := Target{Arch: arch}.Codegen(rc.kc.specialize(t), jit.Spec{NumWarps: rc.kc.warps, Align16: rc.align16})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := Assemble(ptxas, arch, string(a.Payload)); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestVectorWidthNeedsProof checks the analysis refuses vectors it cannot prove: a
// runtime stride, an unhinted bound in the mask, an unaligned pointer, an odd arange start.
func TestVectorWidthNeedsProof(t *testing.T) {
	src := `import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr, n, s, B: tl.constexpr, START: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(START, START + B)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs * s))
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
`
	sig := map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "s": "i32"}
	for _, c := range []struct {
		name    string
		start   int
		align16 []string
		want    []string // substrings that must appear
		not     []string // and must not
	}{
		{"no hints", 0, nil, nil, []string{".v2.", ".v4."}},
		{"all hints", 0, []string{"x_ptr", "y_ptr", "n"}, []string{"@%p1 ld.global.v4.f32", "st.global.v4.f32"}, nil},
		{"unaligned y", 0, []string{"x_ptr", "n"}, []string{"ld.global.v4.f32"}, []string{"st.global.v"}},
		{"bound unhinted", 0, []string{"x_ptr", "y_ptr"}, []string{"st.global.v4.f32"}, []string{"ld.global.v"}},
		{"odd start", 2, []string{"x_ptr", "y_ptr", "n"}, []string{"ld.global.v2.f32"}, []string{".v4."}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := triton.Specialize("k.py", src, "k", sig, map[string]any{"B": 512, "START": c.start})
			if err != nil {
				t.Fatal(err)
			}
			a, err := Target{Arch: "sm_90"}.Codegen(f, jit.Spec{NumWarps: 1, Align16: c.align16})
			if err != nil {
				t.Fatal(err)
			}
			text := string(a.Payload)
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("no %q in the PTX", w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(text, w) {
					t.Errorf("unexpected %q in the PTX", w)
				}
			}
		})
	}
}
