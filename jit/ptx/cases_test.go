package ptx

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton"
	"github.com/widejit/widejit/triton/ir"
)

// kernelCase is one kernel file specialized as its own package's tests specialize it.
type kernelCase struct {
	name, file, fn string
	sig            map[string]string
	consts         map[string]any
	warps          int
}

func stridesSig(prefix, dims string) map[string]string {
	m := map[string]string{}
	for _, d := range dims {
		m["stride_"+prefix+string(d)] = "i32"
	}
	return m
}

func mergeSig(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

var matmulSig32 = map[string]string{
	"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
	"stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32", "stride_cn": "i32",
}

func withElem(sig map[string]string, from, to string) map[string]string {
	out := map[string]string{}
	for k, v := range sig {
		if v == from {
			v = to
		}
		out[k] = v
	}
	return out
}

// languageCases are the kernel-language test kernels (the shared tutorial kernels in
// triton/testdata/kernels, triton/testdata) with the specializations the CPU, specializer and
// parser tests use, plus this package's own.
var languageCases = []kernelCase{
	{"cpu_vector_add", "../../triton/testdata/kernels/vector_add.py", "add_kernel",
		map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
		map[string]any{"BLOCK_SIZE": int64(256)}, 0},
	{"cpu_softmax", "../../triton/testdata/kernels/softmax.py", "softmax_kernel",
		map[string]string{"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32", "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
		map[string]any{"BLOCK_SIZE": int64(1024), "num_stages": int64(2)}, 0},
	{"cpu_matmul", "../../triton/testdata/kernels/matmul.py", "matmul_kernel", matmulSig32,
		map[string]any{"BLOCK_SIZE_M": int64(32), "BLOCK_SIZE_N": int64(32), "BLOCK_SIZE_K": int64(16), "GROUP_SIZE_M": int64(2), "ACTIVATION": "leaky_relu"}, 0},
	{"cpu_matmul_plain", "../../triton/testdata/kernels/matmul.py", "matmul_kernel", matmulSig32,
		map[string]any{"BLOCK_SIZE_M": int64(32), "BLOCK_SIZE_N": int64(32), "BLOCK_SIZE_K": int64(16), "GROUP_SIZE_M": int64(2), "ACTIVATION": ""}, 0},
	{"cpu_layernorm", "../../triton/testdata/kernels/layer_norm.py", "_layer_norm_fwd_fused",
		map[string]string{"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32", "Rstd": "*fp32", "stride": "i32", "N": "i32", "eps": "fp32"},
		map[string]any{"BLOCK_SIZE": int64(256)}, 0},
	{"cpu_attention_stage1", "../../triton/testdata/kernels/flash_attention.py", "_attn_fwd",
		mergeSig(map[string]string{"Q": "*fp32", "K": "*fp32", "V": "*fp32", "sm_scale": "fp32", "M": "*fp32", "Out": "*fp32", "Z": "i32", "H": "i32"},
			stridesSig("q", "zhmk"), stridesSig("k", "zhnk"), stridesSig("v", "zhkn"), stridesSig("o", "zhmn")),
		map[string]any{"N_CTX": int64(64), "HEAD_DIM": int64(16), "BLOCK_M": int64(32), "BLOCK_N": int64(16), "STAGE": int64(1)}, 0},
	{"cpu_attention_stage3", "../../triton/testdata/kernels/flash_attention.py", "_attn_fwd",
		mergeSig(map[string]string{"Q": "*fp32", "K": "*fp32", "V": "*fp32", "sm_scale": "fp32", "M": "*fp32", "Out": "*fp32", "Z": "i32", "H": "i32"},
			stridesSig("q", "zhmk"), stridesSig("k", "zhnk"), stridesSig("v", "zhkn"), stridesSig("o", "zhmn")),
		map[string]any{"N_CTX": int64(64), "HEAD_DIM": int64(16), "BLOCK_M": int64(32), "BLOCK_N": int64(16), "STAGE": int64(3)}, 0},
	{"triton_add", "../../triton/testdata/kernels/vector_add.py", "add_kernel",
		map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
		map[string]any{"BLOCK_SIZE": 16}, 0},
	{"triton_constructs_double", "../../triton/testdata/constructs.py", "constructs_kernel",
		map[string]string{"x_ptr": "*fp16", "out_ptr": "*fp32", "n": "i32", "flag": "i32"},
		map[string]any{"BLOCK": 16, "MODE": "double"}, 0},
	{"triton_constructs_other", "../../triton/testdata/constructs.py", "constructs_kernel",
		map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "flag": "i32"},
		map[string]any{"BLOCK": 8, "MODE": "other"}, 0},
	{"triton_blockptr", "../../triton/testdata/blockptr.py", "copy_tiles",
		map[string]string{"src": "*fp32", "dst": "*fp32", "M": "i32", "N": "i32", "stride_m": "i32"},
		map[string]any{"BLOCK_M": 4, "BLOCK_N": 8}, 0},
	{"triton_reduce", "../../triton/testdata/reduce.py", "reduce_kernel",
		map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32"},
		map[string]any{"BLOCK_M": 4, "BLOCK_N": 8}, 0},
	{"tutorial_matmul_fp16", "../../triton/testdata/kernels/matmul.py", "matmul_kernel", withElem(matmulSig32, "*fp32", "*fp16"),
		map[string]any{"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 4, "ACTIVATION": "leaky_relu"}, 0},
	{"tutorial_softmax", "../../triton/testdata/kernels/softmax.py", "softmax_kernel",
		map[string]string{"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32", "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
		map[string]any{"BLOCK_SIZE": 128, "num_stages": 2}, 0},
	{"tutorial_layer_norm", "../../triton/testdata/kernels/layer_norm.py", "_layer_norm_fwd_fused",
		map[string]string{"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32", "Rstd": "*fp32", "stride": "i32", "N": "i32", "eps": "fp32"},
		map[string]any{"BLOCK_SIZE": 256}, 0},
	{"tutorial_attention", "../../triton/testdata/kernels/flash_attention.py", "_attn_fwd",
		mergeSig(map[string]string{"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "M": "*fp32", "Out": "*fp16", "Z": "i32", "H": "i32"},
			stridesSig("q", "zhmk"), stridesSig("k", "zhnk"), stridesSig("v", "zhkn"), stridesSig("o", "zhmn")),
		map[string]any{"N_CTX": 128, "HEAD_DIM": 64, "BLOCK_M": 32, "BLOCK_N": 32, "STAGE": 3}, 0},
	{"syntax_vector_add", "../../triton/testdata/kernels/vector_add.py", "add_kernel",
		map[string]string{"x_ptr": "*fp16", "y_ptr": "*fp16", "output_ptr": "*fp16", "n_elements": "i32"},
		map[string]any{"BLOCK_SIZE": 1024}, 8},
	{"syntax_vector_add_wide", "../../triton/testdata/kernels/vector_add.py", "add_kernel",
		map[string]string{"x_ptr": "*fp16", "y_ptr": "*fp16", "output_ptr": "*fp16", "n_elements": "i32"},
		map[string]any{"BLOCK_SIZE": 2048}, 8},
	{"ptx_features", "testdata/features.py", "features",
		map[string]string{"x_ptr": "*fp32", "h_ptr": "*bf16", "i_ptr": "*i32", "b_ptr": "*i8", "out_ptr": "*fp32", "cnt_ptr": "*i32", "n": "i32", "seed": "i32"},
		map[string]any{"BLOCK": 64}, 2},
	bdotCase("ptx_bdot_f16", "*fp16", 2, 32, 16, 32, "ieee", 2),
	bdotCase("ptx_bdot_bf16", "*bf16", 2, 16, 32, 16, "ieee", 4),
	bdotCase("ptx_bdot_tf32", "*fp32", 2, 16, 8, 16, "tf32", 4), // 2 tiles for 4 warps
	bdotCase("ptx_bdot_k8", "*fp16", 1, 16, 8, 8, "ieee", 1),    // K < 16: FMA path
	bdotCase("ptx_bdot_ieee", "*fp32", 2, 16, 8, 16, "ieee", 4), // IEEE fp32: FMA path
	{"ptx_vecloop", "testdata/vecloop.py", "vecloop",
		map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
		map[string]any{"B": 512, "ITERS": 3}, 1},
	{"ptx_rowreduce", "testdata/rowreduce.py", "rowreduce",
		map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "idx_ptr": "*i32", "n": "i32"},
		map[string]any{"B": 512}, 4},
	{"ptx_layernorm_1024", "../../triton/testdata/kernels/layer_norm.py", "_layer_norm_fwd_fused",
		map[string]string{"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32", "Rstd": "*fp32", "stride": "i32", "N": "i32", "eps": "fp32"},
		map[string]any{"BLOCK_SIZE": int64(1024)}, 4},
	{"tutorial_matmul_bf16", "../../triton/testdata/kernels/matmul.py", "matmul_kernel", withElem(matmulSig32, "*fp32", "*bf16"),
		map[string]any{"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 2, "ACTIVATION": ""}, 8},
	{"ptx_kloop_f16", "testdata/kloop.py", "kloop", withElem(matmulSig32, "*fp32", "*fp16"),
		map[string]any{"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32, "ACC_FROM_C": false}, 4},
	{"ptx_kloop_bf16", "testdata/kloop.py", "kloop", withElem(matmulSig32, "*fp32", "*bf16"),
		map[string]any{"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32, "ACC_FROM_C": false}, 4},
	{"ptx_kloop_f16_m64", "testdata/kloop.py", "kloop", withElem(matmulSig32, "*fp32", "*fp16"),
		map[string]any{"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "ACC_FROM_C": false}, 4},
	{"ptx_kloop_bf16_w8", "testdata/kloop.py", "kloop", withElem(matmulSig32, "*fp32", "*bf16"),
		map[string]any{"BLOCK_M": 128, "BLOCK_N": 32, "BLOCK_K": 64, "ACC_FROM_C": false}, 8},
	{"ptx_kloop_t_f16", "testdata/kloop_t.py", "kloop_t", withElem(matmulSig32, "*fp32", "*fp16"),
		map[string]any{"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "ACC_FROM_C": false}, 4},
	{"ptx_kloop_t_f16_acc", "testdata/kloop_t.py", "kloop_t", withElem(matmulSig32, "*fp32", "*fp16"),
		map[string]any{"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "ACC_FROM_C": true}, 8},
	{"ptx_kloop_t_bf16", "testdata/kloop_t.py", "kloop_t", withElem(matmulSig32, "*fp32", "*bf16"),
		map[string]any{"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "ACC_FROM_C": false}, 8},
	{"ptx_kloop_t_tf32", "testdata/kloop_t.py", "kloop_t", matmulSig32,
		map[string]any{"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "ACC_FROM_C": false}, 8},
	{"ptx_kloop_f16_acc", "testdata/kloop.py", "kloop", withElem(matmulSig32, "*fp32", "*fp16"),
		map[string]any{"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32, "ACC_FROM_C": true}, 4},
	// The CPU backend's own test kernels (jit/cpu/testdata; its tutorial kernels are the shared
	// ones above).
	{"cpujit_masks", "../cpu/testdata/masks.py", "masks_kernel",
		map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "m": "i32", "lo": "i32"},
		map[string]any{"BLOCK": int64(16)}, 0},
	{"cpujit_gather", "../cpu/testdata/gather.py", "gather_kernel",
		map[string]string{"x_ptr": "*fp32", "idx_ptr": "*i32", "out_ptr": "*fp32", "stride": "i32"},
		map[string]any{"BLOCK": int64(8)}, 0},
}

// bdotCase is testdata/bdot.py: c[b] += a[b] @ b[b] with operands of type elem.
func bdotCase(name, elem string, batch, m, n, k int, prec string, warps int) kernelCase {
	return kernelCase{name, "testdata/bdot.py", "bdot",
		map[string]string{"a_ptr": elem, "b_ptr": elem, "c_ptr": "*fp32"},
		map[string]any{"BATCH": batch, "M": m, "N": n, "K": k, "PREC": prec}, warps}
}

// caseNamed finds a language case by name.
func caseNamed(name string) kernelCase {
	for _, c := range languageCases {
		if c.name == name {
			return c
		}
	}
	panic("no kernel case " + name)
}

func (c kernelCase) specialize(t testing.TB) *ir.Func {
	t.Helper()
	src, err := os.ReadFile(c.file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := triton.Specialize(filepath.Base(c.file), string(src), c.fn, c.sig, c.consts)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	return f
}

func (c kernelCase) codegen(t testing.TB, arch string) *jit.Artifact {
	t.Helper()
	a, err := Target{Arch: arch}.Codegen(c.specialize(t), jit.Spec{Sig: c.sig, Consts: c.consts, NumWarps: c.warps})
	if err != nil {
		t.Fatalf("%s (%s): %v", c.name, arch, err)
	}
	return a
}

func ptxasOrSkip(t *testing.T) string {
	t.Helper()
	p, err := FindPtxas(".")
	if err != nil {
		t.Skip(err.Error())
	}
	return p
}

func TestLanguageKernelsAssemble(t *testing.T) {
	ptxas := ptxasOrSkip(t)
	for _, c := range languageCases {
		for _, arch := range Archs {
			t.Run(c.name+"/"+arch, func(t *testing.T) {
				a := c.codegen(t, arch)
				rep, err := Assemble(ptxas, arch, string(a.Payload))
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: %d registers, %d bytes spilled, %s bytes shared", arch, rep.Registers, rep.SpillStores, a.Meta["shared_bytes"])
			})
		}
	}
}

func TestCodegenErrorsNamePositions(t *testing.T) {
	src := "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(p, B: tl.constexpr):\n    x = tl.load(p + tl.arange(0, B))\n    tl.device_print(\"x\", x)\n"
	f, err := triton.Specialize("k.py", src, "k", map[string]string{"p": "*fp32"}, map[string]any{"B": 16})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Target{Arch: "sm_90"}.Codegen(f, jit.Spec{})
	if err == nil || !strings.Contains(err.Error(), "k.py:7:") || !strings.Contains(err.Error(), "device_print") {
		t.Errorf("device_print: %v", err)
	}
	f, err = triton.Specialize("k.py", src, "k", map[string]string{"p": "*fp32"}, map[string]any{"B": 1 << 18})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Target{Arch: "sm_80"}.Codegen(f, jit.Spec{NumWarps: 1})
	if err == nil || !strings.Contains(err.Error(), "k.py:6:") || !strings.Contains(err.Error(), "elements per thread") {
		t.Errorf("huge tile: %v", err)
	}
	if _, err := (Target{Arch: "sm_70"}).Codegen(f, jit.Spec{}); err == nil || !strings.Contains(err.Error(), `unknown arch "sm_70"`) {
		t.Errorf("sm_70: %v", err)
	}
	if _, err := (Target{Arch: "sm_90"}).Codegen(f, jit.Spec{NumWarps: 3}); err == nil || !strings.Contains(err.Error(), "num_warps 3") {
		t.Errorf("3 warps: %v", err)
	}
}

// TestCodegenRefusesUnverifiedIR: Codegen applies triton/ir's type rules before generating
// anything, so IR that breaks one is refused with the rule's error, not miscompiled.
func TestCodegenRefusesUnverifiedIR(t *testing.T) {
	src := "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(p, q):\n    x = tl.load(p)\n    tl.store(q, x.to(tl.int32, bitcast=True))\n"
	f, err := triton.Specialize("k.py", src, "k", map[string]string{"p": "*fp32", "q": "*i32"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (Target{Arch: "sm_80"}).Codegen(f, jit.Spec{}); err != nil {
		t.Fatalf("valid kernel: %v", err)
	}
	i := slices.IndexFunc(f.Body.Instrs, func(in *ir.Instr) bool { return in.Op == ir.Cast })
	if i < 0 {
		t.Fatalf("no bitcast in\n%s", f)
	}
	f.Body.Instrs[i].Result().Type = ir.Scalar(ir.I64) // a bitcast from fp32 to i64, stored as i32
	_, err = Target{Arch: "sm_80"}.Codegen(f, jit.Spec{})
	if err == nil || !strings.Contains(err.Error(), "ptx: kernel k: k.py:7:") || !strings.Contains(err.Error(), "cast: bitcast between different widths: fp32 to i64") {
		t.Fatalf("err = %v", err)
	}
}

func TestArchForCapability(t *testing.T) {
	for cc, want := range map[string]string{"9.0": "sm_90a", "10.0": "sm_90", "12.0": "sm_90", "8.0": "sm_80", "8.9": "sm_80"} {
		if got, err := ArchForCapability(cc); err != nil || got != want {
			t.Errorf("%s: %s, %v; want %s", cc, got, err, want)
		}
	}
	for _, cc := range []string{"7.5", "9", "x.0"} {
		if _, err := ArchForCapability(cc); err == nil {
			t.Errorf("%s accepted", cc)
		}
	}
	// a CUDA 11 driver cannot JIT sm_90a's PTX ISA 8.0: a cc 9.0 device falls back to sm_90
	for _, c := range []struct {
		arch, cc string
		cuda     int
		want     string
	}{{"sm_90a", "9.0", 11080, "sm_90"}, {"sm_90a", "9.0", 12000, "sm_90a"}, {"sm_80", "8.0", 11080, "sm_80"}, {"sm_90", "10.0", 12080, "sm_90"}} {
		if got := FallbackArch(c.arch, c.cc, c.cuda); got != c.want {
			t.Errorf("FallbackArch(%s, %s, %d) = %s, want %s", c.arch, c.cc, c.cuda, got, c.want)
		}
	}
}

// Which devices may load which arch's PTX: sm_90a (arch-specific wgmma) on cc 9.0 only, and
// its PTX ISA 8.0 needs a CUDA 12 driver's JIT.
func TestCheckArch(t *testing.T) {
	for _, c := range []struct {
		arch, cc string
		cuda     int
		err      string // "" = may load
	}{
		{"sm_90a", "9.0", 12040, ""},
		{"sm_90a", "9.0", 12000, ""},
		{"sm_90", "9.0", 11080, ""},
		{"sm_80", "9.0", 11080, ""},
		{"sm_80", "8.6", 11080, ""},
		{"sm_90", "10.0", 12080, ""},
		{"sm_90a", "9.0", 11080, "arch sm_90a is PTX ISA 8.0, which needs a CUDA 12.0 driver or newer to load; this driver supports CUDA 11.8"},
		{"sm_90a", "8.9", 12040, "arch sm_90a (wgmma, Hopper only) needs a compute capability 9.0 device; this one is 8.9"},
		{"sm_90a", "10.0", 12080, "needs a compute capability 9.0 device; this one is 10.0"},
		{"sm_90", "8.0", 12040, "arch sm_90 needs compute capability 9.0 or newer; this device is 8.0"},
		{"sm_75", "9.0", 12040, `unknown arch "sm_75"`},
		{"sm_80", "nine", 12040, `bad compute capability "nine"`},
	} {
		err := CheckArch(c.arch, c.cc, c.cuda)
		if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s on cc %s, CUDA %d: %v, want %q", c.arch, c.cc, c.cuda, err, c.err)
		}
	}
	for arch, cc := range map[string]string{"sm_80": "8.0", "sm_90": "9.0", "sm_90a": "9.0"} {
		if got := GenericCapability(arch); got != cc {
			t.Errorf("GenericCapability(%s) = %s, want %s", arch, got, cc)
		}
	}
}

// BenchmarkCodegen measures IR -> PTX for the tutorial kernels (front end excluded).
func BenchmarkCodegen(b *testing.B) {
	for _, c := range languageCases {
		if !strings.HasPrefix(c.name, "tutorial_") {
			continue
		}
		f := c.specialize(b)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := (Target{Arch: "sm_90"}).Codegen(f, jit.Spec{NumWarps: c.warps}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
