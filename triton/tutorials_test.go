package triton

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/widejit/widejit/triton/ir"
)

// countOps counts instructions by op, regions included.
func countOps(b *ir.Block, counts map[ir.Op]int) map[ir.Op]int {
	if counts == nil {
		counts = map[ir.Op]int{}
	}
	for _, in := range b.Instrs {
		counts[in.Op]++
		for _, r := range in.Regions {
			countOps(r, counts)
		}
	}
	return counts
}

var strides = func(prefix string, dims string) map[string]string {
	m := map[string]string{}
	for _, d := range dims {
		m["stride_"+prefix+string(d)] = "i32"
	}
	return m
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// TestTutorialKernels specializes the tutorial-style kernels and checks the structure that
// their constexprs imply (static ifs taken or not, loops, dots).
func TestTutorialKernels(t *testing.T) {
	mm := kernelCase{"matmul", "testdata/kernels/matmul.py", "matmul_kernel",
		map[string]string{"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
			"stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32", "stride_cn": "i32"},
		map[string]any{"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 4, "ACTIVATION": "leaky_relu"}}
	c := countOps(specializeFile(t, mm).Body, nil)
	if c[ir.For] != 1 || c[ir.Dot] != 1 || c[ir.Select] != 1 {
		t.Errorf("matmul with leaky_relu: for=%d dot=%d select=%d, want 1, 1, 1", c[ir.For], c[ir.Dot], c[ir.Select])
	}
	mm.consts = map[string]any{"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 4, "ACTIVATION": ""}
	if c := countOps(specializeFile(t, mm).Body, nil); c[ir.Select] != 0 {
		t.Errorf("matmul without activation: %d selects, want 0 (the static if must not be compiled)", c[ir.Select])
	}

	sm := kernelCase{"softmax", "testdata/kernels/softmax.py", "softmax_kernel",
		map[string]string{"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32", "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
		map[string]any{"BLOCK_SIZE": 128, "num_stages": 2}}
	c = countOps(specializeFile(t, sm).Body, nil)
	if c[ir.For] != 1 || c[ir.Reduce] != 2 || c[ir.Exp] != 1 {
		t.Errorf("softmax: for=%d reduce=%d exp=%d, want 1, 2, 1", c[ir.For], c[ir.Reduce], c[ir.Exp])
	}

	ln := kernelCase{"layer_norm", "testdata/kernels/layer_norm.py", "_layer_norm_fwd_fused",
		map[string]string{"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32", "Rstd": "*fp32", "stride": "i32", "N": "i32", "eps": "fp32"},
		map[string]any{"BLOCK_SIZE": 256}}
	c = countOps(specializeFile(t, ln).Body, nil)
	if c[ir.For] != 3 || c[ir.Sqrt] != 1 {
		t.Errorf("layer norm: for=%d sqrt=%d, want 3 and 1", c[ir.For], c[ir.Sqrt])
	}

	fa := kernelCase{"attention", "testdata/kernels/flash_attention.py", "_attn_fwd",
		merge(map[string]string{"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "M": "*fp32", "Out": "*fp16", "Z": "i32", "H": "i32"},
			strides("q", "zhmk"), strides("k", "zhnk"), strides("v", "zhkn"), strides("o", "zhmn")),
		map[string]any{"N_CTX": 128, "HEAD_DIM": 64, "BLOCK_M": 32, "BLOCK_N": 32, "STAGE": 3}}
	c = countOps(specializeFile(t, fa).Body, nil)
	if c[ir.For] != 2 || c[ir.Dot] != 4 || c[ir.Exp2] != 4 {
		t.Errorf("causal attention: for=%d dot=%d exp2=%d, want 2, 4, 4 (two static stages)", c[ir.For], c[ir.Dot], c[ir.Exp2])
	}
	fa.consts["STAGE"] = 1
	c = countOps(specializeFile(t, fa).Body, nil)
	if c[ir.For] != 1 || c[ir.Dot] != 2 {
		t.Errorf("non-causal attention: for=%d dot=%d, want 1 and 2", c[ir.For], c[ir.Dot])
	}
}

func TestLongTail(t *testing.T) {
	src := `import triton
import triton.language as tl


@triton.jit
def tail(p, q, n, BLOCK: tl.constexpr):
    offs = tl.multiple_of(tl.arange(0, BLOCK), 16)
    offs = tl.max_contiguous(tl.max_constancy(offs, 1), BLOCK)
    mask = offs < n
    old = tl.atomic_add(p + offs, 1.0, mask=mask)
    tl.atomic_max(p + offs, old, sem="relaxed", scope="gpu")
    tl.atomic_xchg(q + offs, 3)
    tl.atomic_cas(q, 0, 1)
    tl.atomic_or(q + offs, offs, mask=mask)
    tl.static_print("BLOCK is", BLOCK, offs)
    tl.device_print("offs", offs)
    tl.debug_barrier()
    x = tl.load(p + offs, mask=mask, other=float("-inf"), volatile=True)
    y = tl.clamp(x, -1.0, 1.0) + tl.fma(x, x, x) + tl.sigmoid(x) + tl.abs(x) + tl.math.rsqrt(x)
    z = tl.full((BLOCK,), n, tl.int64) + tl.zeros_like(offs) + tl.cdiv(offs, 4)
    tl.store(p + offs, y + z + tl.xor_sum(offs, 0) + tl.softmax(x) + tl.floor(x) + tl.ceil(x) + tl.erf(x))
`
	var printed bytes.Buffer
	f, err := SpecializeWith(Options{StaticPrint: &printed}, "tail.py", src, "tail", map[string]string{"p": "*fp32", "q": "*i32", "n": "i32"}, map[string]any{"BLOCK": 16})
	if err != nil {
		t.Fatal(err)
	}
	if got := printed.String(); got != "BLOCK is 16 i32[16]\n" {
		t.Errorf("static_print wrote %q", got)
	}
	c := countOps(f.Body, nil)
	for op, n := range map[ir.Op]int{ir.AtomicRMW: 4, ir.AtomicCAS: 1, ir.Print: 1, ir.Barrier: 1, ir.FMA: 1, ir.Erf: 1, ir.Floor: 1, ir.Ceil: 1, ir.Rsqrt: 1} {
		if c[op] != n {
			t.Errorf("%s: %d, want %d", op, c[op], n)
		}
	}
	for _, in := range f.Body.Instrs {
		if in.Op == ir.Load && in.Int != 1 {
			t.Errorf("volatile load lost its flag")
		}
		if in.Op == ir.Print && in.Str != "offs" {
			t.Errorf("device_print prefix %q", in.Str)
		}
	}
	if !strings.Contains(f.String(), "atomic_rmw xchg") {
		t.Error("no atomic xchg in the dump")
	}
}

func TestSpecializeDeterministicAndCached(t *testing.T) {
	c := goldenCases[1]
	a := specializeFile(t, c).String()
	b := specializeFile(t, c).String()
	if a != b {
		t.Error("two specializations of one kernel print differently")
	}
}

// TestConcurrentSpecialize: lowering specializes many kernels in parallel; the parse cache and
// the prelude must be safe for that (run with -race).
func TestConcurrentSpecialize(t *testing.T) {
	want := make([]string, len(goldenCases))
	for i, c := range goldenCases {
		want[i] = specializeFile(t, c).String()
	}
	errs := make(chan string, 4*len(goldenCases))
	done := make(chan bool)
	for w := 0; w < 4; w++ {
		go func() {
			for i, c := range goldenCases {
				src, err := os.ReadFile(c.file)
				if err != nil {
					errs <- err.Error()
					continue
				}
				f, err := Specialize(c.file, string(src), c.fn, c.sig, c.consts)
				if err != nil {
					errs <- err.Error()
				} else if f.String() != want[i] {
					errs <- c.name + ": printed differently"
				}
			}
			done <- true
		}()
	}
	for w := 0; w < 4; w++ {
		<-done
	}
	close(errs)
	for name := range errs {
		t.Errorf("concurrent specialization: %s", name)
	}
}
