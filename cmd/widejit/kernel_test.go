package main

import (
	"bytes"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/widejit/widejit/internal/half"

	"github.com/widejit/widejit/graph/safetensors"
)

// The tutorial-style kernels shared by the parser, specializer and backend tests.
const kernelDir = "../../triton/testdata/kernels"

func kernelCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no user config file
	code := execute(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// writeInputs writes fp32 tensors (and fp16 ones for names in fp16) to a safetensors file.
func writeInputs(t *testing.T, tensors map[string][]float32, fp16 map[string]bool) string {
	t.Helper()
	var list []*safetensors.Tensor
	for name, v := range tensors {
		if fp16[name] {
			data := make([]byte, 2*len(v))
			for i, x := range v {
				h := half.F32ToF16(x)
				data[2*i], data[2*i+1] = byte(h), byte(h>>8)
			}
			list = append(list, &safetensors.Tensor{Name: name, DType: safetensors.F16, Shape: []int{len(v)}, Data: data})
			continue
		}
		list = append(list, safetensors.FromFloat32s(name, []int{len(v)}, v))
	}
	path := filepath.Join(t.TempDir(), "in.safetensors")
	if err := safetensors.Write(path, list, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

func readOutput(t *testing.T, path, name string) []float64 {
	t.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tt, err := f.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	if tt.DType == safetensors.F16 {
		out := make([]float64, tt.Numel())
		for i := range out {
			out[i] = float64(half.F16ToF32(uint16(tt.Data[2*i]) | uint16(tt.Data[2*i+1])<<8))
		}
		return out
	}
	v, err := tt.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func near(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	for i := range want {
		if math.Abs(got[i]-want[i]) > tol*(1+math.Abs(want[i])) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func rnd(seed int64, n int) []float32 {
	r := rand.New(rand.NewSource(seed))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.Float64()*2 - 1)
	}
	return v
}

func TestKernelRunVectorAdd(t *testing.T) {
	x, y := rnd(1, 1000), rnd(2, 1000)
	in := writeInputs(t, map[string][]float32{"x_ptr": x, "y_ptr": y, "output_ptr": make([]float32, 1000)}, nil)
	out := filepath.Join(t.TempDir(), "out.safetensors")
	code, _, stderr := kernelCLI(t, "kernel", "run", filepath.Join(kernelDir, "vector_add.py"), "--fn", "add_kernel",
		"--grid", "8", "--const", "BLOCK_SIZE=128", "--arg", "n_elements=1000", "--inputs", in, "--out", out, "--device", "cpu")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := readOutput(t, out, "output_ptr")
	for i := range x {
		if got[i] != float64(x[i]+y[i]) {
			t.Fatalf("out[%d] = %v, want %v", i, got[i], x[i]+y[i])
		}
	}
	// Inputs are written back too (every bound tensor), unchanged.
	near(t, "x", readOutput(t, out, "x_ptr"), readOutput(t, in, "x_ptr"), 0)
}

func TestKernelRunSoftmaxMatmulLayerNormAttention(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.safetensors")
	run := func(file, fn, grid string, in string, flags ...string) {
		t.Helper()
		args := append([]string{"kernel", "run", filepath.Join(kernelDir, file), "--fn", fn, "--grid", grid, "--inputs", in, "--out", out}, flags...)
		if code, _, stderr := kernelCLI(t, args...); code != 0 {
			t.Fatalf("%s: exit %d: %s", fn, code, stderr)
		}
	}

	// softmax: 10 rows of 300, two persistent programs.
	sx := rnd(3, 3000)
	run("softmax.py", "softmax_kernel", "2", writeInputs(t, map[string][]float32{"input_ptr": sx, "output_ptr": make([]float32, 3000)}, nil),
		"--const", "BLOCK_SIZE=512", "--const", "num_stages=2", "--arg", "input_row_stride=300", "--arg", "output_row_stride=300", "--arg", "n_rows=10", "--arg", "n_cols=300")
	sm := readOutput(t, out, "output_ptr")
	want := make([]float64, 3000)
	for r := range 10 {
		m, s := math.Inf(-1), 0.0
		for c := range 300 {
			m = math.Max(m, float64(sx[r*300+c]))
		}
		for c := range 300 {
			s += math.Exp(float64(sx[r*300+c]) - m)
		}
		for c := range 300 {
			want[r*300+c] = math.Exp(float64(sx[r*300+c])-m) / s
		}
	}
	near(t, "softmax", sm, want, 1e-5)

	// matmul 40x24x30 with leaky ReLU.
	a, b := rnd(4, 40*30), rnd(5, 30*24)
	run("matmul.py", "matmul_kernel", "6", writeInputs(t, map[string][]float32{"a_ptr": a, "b_ptr": b, "c_ptr": make([]float32, 40*24)}, nil),
		"--const", "BLOCK_SIZE_M=16", "--const", "BLOCK_SIZE_N=16", "--const", "BLOCK_SIZE_K=16", "--const", "GROUP_SIZE_M=2", "--const", "ACTIVATION=leaky_relu",
		"--arg", "M=40", "--arg", "N=24", "--arg", "K=30", "--arg", "stride_am=30", "--arg", "stride_ak=1",
		"--arg", "stride_bk=24", "--arg", "stride_bn=1", "--arg", "stride_cm=24", "--arg", "stride_cn=1")
	mm := readOutput(t, out, "c_ptr")
	for i := range 40 {
		for j := range 24 {
			s := 0.0
			for p := range 30 {
				s += float64(a[i*30+p]) * float64(b[p*24+j])
			}
			if s < 0 {
				s *= 0.01
			}
			want[i*24+j] = s
		}
	}
	near(t, "matmul", mm, want[:40*24], 1e-5)

	// layer norm with fp16 I/O: 3 rows of 200; check the fp32 means.
	lx := rnd(6, 600)
	run("layer_norm.py", "_layer_norm_fwd_fused", "3", writeInputs(t, map[string][]float32{
		"X": lx, "Y": make([]float32, 600), "W": rnd(7, 200), "B": rnd(8, 200), "Mean": make([]float32, 3), "Rstd": make([]float32, 3)},
		map[string]bool{"X": true, "Y": true, "W": true, "B": true}),
		"--const", "BLOCK_SIZE=64", "--arg", "stride=200", "--arg", "N=200", "--arg", "eps=1e-5")
	means := readOutput(t, out, "Mean")
	xh := readOutput(t, out, "X")
	for r := range 3 {
		s := 0.0
		for c := range 200 {
			s += xh[r*200+c]
		}
		near(t, "mean", means[r:r+1], []float64{s / 200}, 1e-5)
	}

	// attention, non-causal, one head of 32x16.
	q, k, v := rnd(9, 512), rnd(10, 512), rnd(11, 512)
	flags := []string{"--const", "N_CTX=32", "--const", "HEAD_DIM=16", "--const", "BLOCK_M=16", "--const", "BLOCK_N=16", "--const", "STAGE=1",
		"--arg", "sm_scale=0.25", "--arg", "Z=1", "--arg", "H=1"}
	// Contiguous [Z, H, N_CTX, HEAD_DIM] tensors; each tensor's strides are named z, h, row,
	// column in the tutorial's letters.
	for _, names := range []string{"qz qh qm qk", "kz kh kn kk", "vz vh vk vn", "oz oh om on"} {
		for i, s := range strings.Fields(names) {
			flags = append(flags, "--arg", "stride_"+s+"="+strconv.Itoa([]int{512, 512, 16, 1}[i]))
		}
	}
	run("flash_attention.py", "_attn_fwd", "2,1",
		writeInputs(t, map[string][]float32{"Q": q, "K": k, "V": v, "M": make([]float32, 32), "Out": make([]float32, 512)}, nil), flags...)
	at := readOutput(t, out, "Out")
	lse := readOutput(t, out, "M")
	for i := range 32 {
		sc := make([]float64, 32)
		m, sum := math.Inf(-1), 0.0
		for j := range 32 {
			for d := range 16 {
				sc[j] += float64(q[i*16+d]) * float64(k[j*16+d]) * 0.25
			}
			m = math.Max(m, sc[j])
		}
		for j := range 32 {
			sc[j] = math.Exp(sc[j] - m)
			sum += sc[j]
		}
		for d := range 16 {
			o := 0.0
			for j := range 32 {
				o += sc[j] * float64(v[j*16+d])
			}
			near(t, "attention", at[i*16+d:i*16+d+1], []float64{o / sum}, 1e-4)
		}
		// M: the row's log-sum-exp of the scaled scores, in base 2.
		near(t, "attention log-sum-exp", lse[i:i+1], []float64{(m + math.Log(sum)) / math.Ln2}, 1e-5)
	}
}

func TestKernelRunErrors(t *testing.T) {
	in := writeInputs(t, map[string][]float32{"x_ptr": make([]float32, 8), "y_ptr": make([]float32, 8)}, nil)
	out := filepath.Join(t.TempDir(), "out.safetensors")
	file := filepath.Join(kernelDir, "vector_add.py")
	cases := []struct {
		code int
		want string
		args []string
	}{
		{1, "parameter output_ptr is not bound", []string{"--arg", "n_elements=8"}},
		{2, "--grid", []string{"--grid", "0"}},
		{2, "no such parameter", []string{"--arg", "n_elements=8", "--arg", "bogus=1"}},
		{2, "is a constexpr", []string{"--arg", "n_elements=8", "--arg", "BLOCK_SIZE=8"}},
		{1, "no function \"nope\"", []string{"--fn", "nope"}},
		{2, "--device", []string{"--device", "tpu"}},
	}
	for _, c := range cases {
		args := append([]string{"kernel", "run", file, "--fn", "add_kernel", "--grid", "1", "--const", "BLOCK_SIZE=8", "--inputs", in, "--out", out}, c.args...)
		code, _, stderr := kernelCLI(t, args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

func TestKernelIR(t *testing.T) {
	code, stdout, stderr := kernelCLI(t, "kernel", "ir", filepath.Join(kernelDir, "vector_add.py"), "--fn", "add_kernel",
		"--sig", "x_ptr=*fp32,y_ptr=*fp32,output_ptr=*fp32,n_elements=i32", "--const", "BLOCK_SIZE=64")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"func @add_kernel(", "[BLOCK_SIZE=64]", "arange 0, 64 : i32[64]", "store "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("ir output lacks %q:\n%s", want, stdout)
		}
	}
	if code, _, stderr := kernelCLI(t, "kernel", "ir", filepath.Join(kernelDir, "vector_add.py"), "--fn", "add_kernel", "--sig", "x_ptr"); code != 2 || !strings.Contains(stderr, "NAME=TYPE") {
		t.Errorf("bad --sig: exit %d, %s", code, stderr)
	}
}

// TestKernelRunLaunchTimeout: `kernel run` honours the launch time limit from the flag, the
// WIDEJIT_LAUNCH_TIMEOUT environment and the config file (it had none): a kernel that
// loops forever stops with an error naming it and the limit (exit 1), --out is not written,
// and the inputs file is unchanged.
func TestKernelRunLaunchTimeout(t *testing.T) {
	in := writeInputs(t, map[string][]float32{"out_ptr": {0}}, nil)
	before := snapshot(t, in)
	out := filepath.Join(t.TempDir(), "out.safetensors")
	run := []string{"kernel", "run", "../../jit/cpu/testdata/hang.py", "--fn", "spin_kernel", "--grid", "1",
		"--arg", "n=1", "--inputs", in, "--out", out, "--device", "cpu"}
	for how, setup := range map[string]func() []string{
		"flag": func() []string { return []string{"--launch-timeout", "50ms"} },
		"env":  func() []string { t.Setenv("WIDEJIT_LAUNCH_TIMEOUT", "50ms"); return nil },
		"config": func() []string {
			return []string{"--config", writeConfig(t, "launch_timeout: 50ms\n")}
		},
	} {
		t.Run(how, func(t *testing.T) {
			code, _, stderr := kernelCLI(t, append(run, setup()...)...)
			if code != exitFailure || !strings.Contains(stderr, "spin_kernel") || !strings.Contains(stderr, "time limit of 50ms") {
				t.Errorf("exit %d: %s", code, stderr)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("--out was written: %v", err)
			}
		})
	}
	for p, data := range snapshot(t, in) {
		if !bytes.Equal(data, before[p]) {
			t.Errorf("%s changed", p)
		}
	}
	// a kernel that ends within the limit runs as before
	code, _, stderr := kernelCLI(t, "kernel", "run", "../../jit/cpu/testdata/hang.py", "--fn", "long_for_kernel", "--grid", "1",
		"--arg", "n=30", "--inputs", in, "--out", out, "--device", "cpu", "--launch-timeout", "1m")
	if got := readOutput(t, out, "out_ptr"); code != 0 || got[0] != 900 {
		t.Errorf("a kernel within the limit: exit %d, out %v, %s", code, got, stderr)
	}
}
