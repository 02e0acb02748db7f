package cpu

import (
	"github.com/widejit/widejit/internal/half"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton"
	"github.com/widejit/widejit/triton/ir"
)

// End-to-end tests: the shared tutorial kernels (triton/testdata/kernels) go through the front
// end (triton.Specialize), the CPU target (encode) and the device (decode, compile, launch),
// and are checked against straightforward Go references.

// tutorialKernels holds the tutorial-style kernels shared by the parser, specializer, CPU and
// PTX tests; this package's own kernels are in testdata/.
const tutorialKernels = "../../triton/testdata/kernels"

// loadKernel compiles fn from path (relative to this package's directory).
func loadKernel(t testing.TB, path, fn string, sig map[string]string, consts map[string]any) *Kernel {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return compileKernel(t, path, string(text), fn, sig, consts)
}

// compileKernel compiles kernel fn of source text (named file) for a 4-worker device.
func compileKernel(t testing.TB, file, text, fn string, sig map[string]string, consts map[string]any) *Kernel {
	t.Helper()
	c := jit.NewCompiler(jit.CompilerOptions{Version: "test"})
	k, err := c.Load(NewDevice(4), jit.Source{File: file, Text: text, Fn: fn}, jit.Spec{Sig: sig, Consts: consts})
	if err != nil {
		t.Fatalf("compile %s: %v", fn, err)
	}
	return k.(*Kernel)
}

func randF32(rng *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((rng.Float64()*2 - 1) * scale)
	}
	return v
}

func closeTo(t *testing.T, what string, got, want []float64, rel, abs float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); d > abs+rel*math.Abs(want[i]) || math.IsNaN(got[i]) {
			t.Fatalf("%s[%d] = %v, want %v (tolerance %g rel + %g abs)", what, i, got[i], want[i], rel, abs)
		}
	}
}

func f64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func TestKernelVectorAdd(t *testing.T) {
	for _, n := range []int{1, 127, 1000, 4096} {
		k := loadKernel(t, filepath.Join(tutorialKernels, "vector_add.py"), "add_kernel",
			map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
			map[string]any{"BLOCK_SIZE": int64(256)})
		rng := rand.New(rand.NewSource(int64(n)))
		x, y := randF32(rng, n, 10), randF32(rng, n, 10)
		out := f32Buf(t, make([]float32, n))
		if err := k.Launch(grid1((n+255)/256), []jit.Arg{buf(f32Buf(t, x)), buf(f32Buf(t, y)), buf(out), scalar(int64(n))}); err != nil {
			t.Fatal(err)
		}
		for i, g := range out.f32() {
			if g != x[i]+y[i] {
				t.Fatalf("n=%d: out[%d] = %v, want %v", n, i, g, x[i]+y[i])
			}
		}
	}
}

func TestKernelSoftmaxPersistentRows(t *testing.T) {
	const rows, cols, stride = 37, 781, 800
	k := loadKernel(t, filepath.Join(tutorialKernels, "softmax.py"), "softmax_kernel",
		map[string]string{"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32", "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
		map[string]any{"BLOCK_SIZE": int64(1024), "num_stages": int64(2)})
	rng := rand.New(rand.NewSource(2))
	in := randF32(rng, rows*stride, 5)
	out := f32Buf(t, make([]float32, rows*cols))
	// 4 persistent programs each stride over rows.
	args := []jit.Arg{buf(out), buf(f32Buf(t, in)), scalar(int64(stride)), scalar(int64(cols)), scalar(int64(rows)), scalar(int64(cols))}
	if err := k.Launch(grid1(4), args); err != nil {
		t.Fatal(err)
	}
	want := make([]float64, rows*cols)
	for r := range rows {
		m := math.Inf(-1)
		for c := range cols {
			m = math.Max(m, float64(in[r*stride+c]))
		}
		s := 0.0
		for c := range cols {
			s += math.Exp(float64(in[r*stride+c]) - m)
		}
		for c := range cols {
			want[r*cols+c] = math.Exp(float64(in[r*stride+c])-m) / s
		}
	}
	closeTo(t, "softmax", f64s(out.f32()), want, 1e-5, 1e-7)
}

func matmulRef(a, b []float32, m, n, k int, leaky bool) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			s := 0.0
			for p := range k {
				s += float64(a[i*k+p]) * float64(b[p*n+j])
			}
			if leaky && s < 0 {
				s *= 0.01
			}
			out[i*n+j] = s
		}
	}
	return out
}

var matmulSig = map[string]string{
	"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
	"stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32", "stride_cn": "i32",
}

func runMatmul(t testing.TB, k jit.Kernel, a, b, c *Buffer, m, n, kk, bm, bn int) error {
	grid := ((m + bm - 1) / bm) * ((n + bn - 1) / bn)
	return k.Launch(grid1(grid), []jit.Arg{buf(a), buf(b), buf(c),
		scalar(int64(m)), scalar(int64(n)), scalar(int64(kk)),
		scalar(int64(kk)), scalar(int64(1)), scalar(int64(n)), scalar(int64(1)), scalar(int64(n)), scalar(int64(1))})
}

func TestKernelMatmulGroupedWithTailsAndLeakyReLU(t *testing.T) {
	for _, s := range [][3]int{{64, 64, 64}, {100, 72, 50}, {33, 17, 129}} {
		m, n, kk := s[0], s[1], s[2]
		for _, act := range []string{"", "leaky_relu"} {
			k := loadKernel(t, filepath.Join(tutorialKernels, "matmul.py"), "matmul_kernel", matmulSig, map[string]any{
				"BLOCK_SIZE_M": int64(32), "BLOCK_SIZE_N": int64(32), "BLOCK_SIZE_K": int64(16), "GROUP_SIZE_M": int64(2), "ACTIVATION": act})
			rng := rand.New(rand.NewSource(int64(m * n * kk)))
			a, b := randF32(rng, m*kk, 1), randF32(rng, kk*n, 1)
			c := f32Buf(t, make([]float32, m*n))
			if err := runMatmul(t, k, f32Buf(t, a), f32Buf(t, b), c, m, n, kk, 32, 32); err != nil {
				t.Fatal(err)
			}
			closeTo(t, "matmul "+act, f64s(c.f32()), matmulRef(a, b, m, n, kk, act != ""), 1e-5, 1e-5)
		}
	}
}

func TestKernelLayerNormFP16(t *testing.T) {
	const rows, n, stride = 5, 1000, 1003
	k := loadKernel(t, filepath.Join(tutorialKernels, "layer_norm.py"), "_layer_norm_fwd_fused", map[string]string{
		"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32", "Rstd": "*fp32", "stride": "i32", "N": "i32", "eps": "fp32"},
		map[string]any{"BLOCK_SIZE": int64(256)})
	rng := rand.New(rand.NewSource(5))
	toF16Buffer := func(v []float32) *Buffer {
		b, _ := NewBuffer(ir.F16, len(v))
		for i, x := range v {
			b.u16()[i] = half.F32ToF16(x)
			v[i] = half.F16ToF32(b.u16()[i]) // the reference sees the fp16 values
		}
		return b
	}
	x, w, bias := randF32(rng, rows*stride, 3), randF32(rng, n, 1), randF32(rng, n, 1)
	xb, wb, bb := toF16Buffer(x), toF16Buffer(w), toF16Buffer(bias)
	yb, _ := NewBuffer(ir.F16, rows*stride)
	mean, rstd := f32Buf(t, make([]float32, rows)), f32Buf(t, make([]float32, rows))
	const eps = 1e-5
	err := k.Launch(grid1(rows), []jit.Arg{buf(xb), buf(yb), buf(wb), buf(bb), buf(mean), buf(rstd), scalar(int64(stride)), scalar(int64(n)), scalar(eps)})
	if err != nil {
		t.Fatal(err)
	}
	for r := range rows {
		mu, v := 0.0, 0.0
		for c := range n {
			mu += float64(x[r*stride+c])
		}
		mu /= n
		for c := range n {
			d := float64(x[r*stride+c]) - mu
			v += d * d
		}
		v /= n
		rs := 1 / math.Sqrt(v+eps)
		closeTo(t, "mean", []float64{float64(mean.f32()[r])}, []float64{mu}, 1e-5, 1e-6)
		closeTo(t, "rstd", []float64{float64(rstd.f32()[r])}, []float64{rs}, 1e-5, 0)
		got, want := make([]float64, n), make([]float64, n)
		for c := range n {
			got[c] = float64(half.F16ToF32(yb.u16()[r*stride+c]))
			want[c] = (float64(x[r*stride+c])-mu)*rs*float64(w[c]) + float64(bias[c])
		}
		// fp16 output: half an ulp of fp16 (2^-11 relative) plus fp32 rounding on the way.
		closeTo(t, "y", got, want, 1.0/1024, 1e-3)
		// Elements between rows (the stride padding) were never written.
		for c := n; c < stride && r < rows-1; c++ {
			if yb.u16()[r*stride+c] != 0 {
				t.Fatalf("padding y[%d,%d] written", r, c)
			}
		}
	}
}

// attentionSig is the fp32 signature of flash_attention.py's _attn_fwd. Its strides are
// named per tensor as the tutorial names them (K's last two dimensions "n, k", V's "k, n").
var attentionSig = func() map[string]string {
	sig := map[string]string{"Q": "*fp32", "K": "*fp32", "V": "*fp32", "sm_scale": "fp32", "M": "*fp32", "Out": "*fp32", "Z": "i32", "H": "i32"}
	for _, s := range strings.Fields("qz qh qm qk kz kh kn kk vz vh vk vn oz oh om on") {
		sig["stride_"+s] = "i32"
	}
	return sig
}()

// attentionArgs binds _attn_fwd's runtime parameters for contiguous [z, h, nctx, dim] tensors.
func attentionArgs(q, k, v, m, out *Buffer, scale float64, z, h, nctx, dim int) []jit.Arg {
	args := []jit.Arg{buf(q), buf(k), buf(v), scalar(scale), buf(m), buf(out)}
	for range 4 { // q, k, v, out: z, h, row, column strides
		args = append(args, scalar(int64(h*nctx*dim)), scalar(int64(nctx*dim)), scalar(int64(dim)), scalar(int64(1)))
	}
	return append(args, scalar(int64(z)), scalar(int64(h)))
}

func TestKernelAttentionCausalAndFull(t *testing.T) {
	const z, h, nctx, dim = 1, 3, 128, 32
	const heads = z * h
	for _, stage := range []int64{1, 3} {
		k := loadKernel(t, filepath.Join(tutorialKernels, "flash_attention.py"), "_attn_fwd", attentionSig,
			map[string]any{"N_CTX": int64(nctx), "HEAD_DIM": int64(dim), "BLOCK_M": int64(32), "BLOCK_N": int64(16), "STAGE": stage})
		rng := rand.New(rand.NewSource(stage))
		q, kk, v := randF32(rng, heads*nctx*dim, 1), randF32(rng, heads*nctx*dim, 1), randF32(rng, heads*nctx*dim, 1)
		out := f32Buf(t, make([]float32, heads*nctx*dim))
		lse := f32Buf(t, make([]float32, heads*nctx))
		const scale = 0.5
		err := k.Launch([3]int{nctx / 32, heads, 1}, attentionArgs(f32Buf(t, q), f32Buf(t, kk), f32Buf(t, v), lse, out, scale, z, h, nctx, dim))
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, heads*nctx*dim)
		wantLSE := make([]float64, heads*nctx)
		for h := range heads {
			base := h * nctx * dim
			for i := range nctx {
				s := make([]float64, nctx)
				m := math.Inf(-1)
				last := nctx
				if stage == 3 {
					last = i + 1
				}
				for j := range last {
					for d := range dim {
						s[j] += float64(q[base+i*dim+d]) * float64(kk[base+j*dim+d])
					}
					s[j] *= scale
					m = math.Max(m, s[j])
				}
				sum := 0.0
				for j := range last {
					s[j] = math.Exp(s[j] - m)
					sum += s[j]
				}
				// M holds the row's log-sum-exp of the scaled scores, in base 2.
				wantLSE[h*nctx+i] = (m + math.Log(sum)) / math.Ln2
				for d := range dim {
					acc := 0.0
					for j := range last {
						acc += s[j] * float64(v[base+j*dim+d])
					}
					want[base+i*dim+d] = acc / sum
				}
			}
		}
		closeTo(t, "attention stage "+string(rune('0'+stage)), f64s(out.f32()), want, 1e-4, 1e-5)
		closeTo(t, "attention log-sum-exp stage "+string(rune('0'+stage)), f64s(lse.f32()), wantLSE, 1e-5, 1e-5)
	}
}

func TestKernelOutOfBoundsNamesTheSourceLine(t *testing.T) {
	// Vector add launched over more programs than the output holds, with n larger than the
	// buffers: the tail mask does not protect, and the error names the load on line 24.
	k := loadKernel(t, filepath.Join(tutorialKernels, "vector_add.py"), "add_kernel",
		map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
		map[string]any{"BLOCK_SIZE": int64(64)})
	small := f32Buf(t, make([]float32, 100))
	err := k.Launch(grid1(2), []jit.Arg{buf(small), buf(small), buf(small), scalar(int64(128))})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"kernel add_kernel", filepath.Join(tutorialKernels, "vector_add.py") + ":24:", "program (1, 0, 0)", "load out of bounds", "element offset 100", "x_ptr"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// Specialize's output must survive the artifact round trip unchanged.
func TestSpecializedIRRoundTripsThroughTheArtifact(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(tutorialKernels, "flash_attention.py"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := triton.Specialize("flash_attention.py", string(text), "_attn_fwd", attentionSig,
		map[string]any{"N_CTX": int64(64), "HEAD_DIM": int64(16), "BLOCK_M": int64(16), "BLOCK_N": int64(16), "STAGE": int64(3)})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Target{}.Codegen(f, jit.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := ir.Decode(a.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if f.String() != g.String() {
		t.Fatal("decoded IR prints differently")
	}
}
