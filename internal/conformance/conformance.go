package conformance

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/widejit/widejit"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/testkit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/device"
	"github.com/widejit/widejit/triton/ir"
)

// Run runs the suite on the registered backend called name; opts are its backend options.
// A backend that does not open here (no GPU) skips, with its reason.
func Run(t *testing.T, name string, opts map[string]string) {
	dev, err := device.Open(name, 0, device.Options{Threads: 2, Backend: opts})
	if err != nil {
		t.Skipf("backend %s does not open here: %v", name, err)
	}
	t.Cleanup(func() { dev.Close() })
	load := func(t *testing.T, path string, more ...widejit.Option) *widejit.Model {
		t.Helper()
		o := append([]widejit.Option{widejit.WithDevice(name), widejit.WithBackendOptions(opts), widejit.WithThreads(2), widejit.WithoutCache()}, more...)
		m, err := widejit.Load(path, o...)
		if err != nil {
			t.Fatalf("%s on %s: %v", path, name, err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	t.Run("kernels", func(t *testing.T) { Kernels(t, dev) })
	t.Run("fixtures", func(t *testing.T) {
		for _, dir := range fixtures(t) {
			t.Run(filepath.Base(dir), func(t *testing.T) {
				m := load(t, filepath.Join(dir, "graph.json"))
				got := run(t, m, filepath.Join(dir, "inputs.safetensors"))
				testkit.CheckOutputs(t, got, testkit.ReadTensors(t, filepath.Join(dir, "expected.safetensors")))
			})
		}
	})
	t.Run("dynamic batch", func(t *testing.T) {
		// an MLP is row-wise: the first b rows of each model's input give the first b rows
		// of PyTorch's output, at every b
		dir := filepath.Join(root(t), "examples", "mlp")
		m := load(t, filepath.Join(dir, "graph.json"))
		inputs, err := m.ReadInputs(filepath.Join(dir, "inputs.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		want := testkit.ReadTensors(t, filepath.Join(dir, "expected.safetensors"))
		for _, b := range []int{1, 5, m.Batch() - 3} {
			in := map[string]*widejit.Tensor{}
			for k, x := range inputs {
				in[k] = firstRows(t, x, b)
			}
			wantB := map[string]*safetensors.Tensor{}
			for k, x := range want {
				wantB[k] = firstRows(t, x, b)
			}
			testkit.CheckOutputs(t, runWith(t, m, in), wantB)
		}
		if bs := m.Batches(); len(bs) < 3 {
			t.Fatalf("batches compiled: %v, want a plan per batch size", bs)
		}
	})
	t.Run("model ranges", func(t *testing.T) {
		dir := filepath.Join(root(t), "examples", "mlp")
		want := testkit.ReadTensors(t, filepath.Join(dir, "expected.safetensors"))
		full := load(t, filepath.Join(dir, "graph.json"))
		lo, hi := 2, full.N()-1
		part := load(t, filepath.Join(dir, "graph.json"), widejit.WithModels(lo, hi))
		inputs, err := full.ReadInputs(filepath.Join(dir, "inputs.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		sub := map[string]*widejit.Tensor{}
		for _, spec := range part.Inputs() {
			sub[spec.Name] = inputs[spec.Name]
			if !spec.Shared {
				sub[spec.Name] = rows(t, inputs[spec.Name], lo, hi)
			}
		}
		got := runWith(t, part, sub)
		wantRows := map[string]*safetensors.Tensor{}
		for k := range got {
			wantRows[k] = rows(t, want[k], lo, hi)
		}
		testkit.CheckOutputs(t, got, wantRows)
	})
}

// root is the module's root directory, found from this file's.
func root(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// fixtures are the example directories with PyTorch's expected outputs.
func fixtures(t *testing.T) []string {
	dirs, err := filepath.Glob(filepath.Join(root(t), "examples", "*", "expected.safetensors"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no example fixtures: %v", err)
	}
	for i := range dirs {
		dirs[i] = filepath.Dir(dirs[i])
	}
	return dirs
}

func run(t *testing.T, m *widejit.Model, inputs string) map[string]*safetensors.Tensor {
	t.Helper()
	in, err := m.ReadInputs(inputs)
	if err != nil {
		t.Fatal(err)
	}
	return runWith(t, m, in)
}

func runWith(t *testing.T, m *widejit.Model, in map[string]*widejit.Tensor) map[string]*safetensors.Tensor {
	t.Helper()
	out, err := m.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// firstRows is rows [0, b) of dimension 1 of x, for every model.
func firstRows(t *testing.T, x *safetensors.Tensor, b int) *safetensors.Tensor {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	models, per := x.Shape[0], len(v)/x.Shape[0]
	row := per / x.Shape[1]
	out := make([]float32, 0, models*b*row)
	for i := 0; i < models; i++ {
		out = append(out, v[i*per:i*per+b*row]...)
	}
	shape := append([]int{models, b}, x.Shape[2:]...)
	return safetensors.FromFloat32s("", shape, out)
}

// rows is models [lo, hi) of x (dimension 0).
func rows(t *testing.T, x *safetensors.Tensor, lo, hi int) *safetensors.Tensor {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	per := len(v) / x.Shape[0]
	shape := append([]int{hi - lo}, x.Shape[1:]...)
	return safetensors.FromFloat32s("", shape, v[lo*per:hi*per])
}

// Kernels runs kernels of triton/testdata/kernels on dev and checks them against Go: the
// suite's kernel-language part, for a device that is not (or not yet) a registered backend.
func Kernels(t *testing.T, dev jit.Device) {
	dir := filepath.Join(root(t), "triton", "testdata", "kernels")
	comp := jit.NewCompiler(jit.CompilerOptions{Version: "conformance"})
	load := func(file, fn string, spec jit.Spec) jit.Kernel {
		t.Helper()
		text, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		k, err := comp.Load(dev, jit.Source{File: file, Text: string(text), Fn: fn}, spec)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	upload := func(v []float32) jit.Buffer {
		t.Helper()
		b, err := dev.Alloc(ir.F32, len(v))
		if err != nil {
			t.Fatal(err)
		}
		if err := dev.Upload(b, f32bytes(v)); err != nil {
			t.Fatal(err)
		}
		return b
	}
	download := func(b jit.Buffer) []float32 {
		t.Helper()
		if err := dev.Sync(); err != nil {
			t.Fatal(err)
		}
		raw := make([]byte, b.Len()*4)
		if err := dev.Download(b, raw); err != nil {
			t.Fatal(err)
		}
		out := make([]float32, b.Len())
		for i := range out {
			out[i] = math.Float32frombits(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24)
		}
		return out
	}
	check := func(what string, got, want []float32, tol float64) {
		t.Helper()
		for i := range want {
			if d := math.Abs(float64(got[i] - want[i])); d > tol*(1+math.Abs(float64(want[i]))) || math.IsNaN(float64(got[i])) {
				t.Fatalf("%s[%d] = %g, want %g", what, i, got[i], want[i])
			}
		}
	}

	// masked element-wise: 1000 elements in blocks of 128, the last one partial
	const n = 1000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i)*0.25, float32(n-i)*-0.5
	}
	add := load("vector_add.py", "add_kernel", jit.Spec{Sig: map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
		Consts: map[string]any{"BLOCK_SIZE": int64(128)}})
	bx, by, bo := upload(x), upload(y), upload(make([]float32, n+7))
	if err := add.Launch([3]int{(n + 127) / 128, 1, 1}, []jit.Arg{{Buf: bx}, {Buf: by}, {Buf: bo}, {Scalar: int64(n)}}); err != nil {
		t.Fatal(err)
	}
	sum := make([]float32, n+7) // the 7 past n stay 0: the mask kept the last program in
	for i := range x {
		sum[i] = x[i] + y[i]
	}
	check("add_kernel", download(bo), sum, 0)

	// a persistent row loop with max and sum reductions: 37 rows of 100 columns in blocks of
	// 128 on 8 programs
	const rowsN, cols = 37, 100
	in := make([]float32, rowsN*cols)
	for i := range in {
		in[i] = float32(math.Cos(float64(i))) * 3
	}
	soft := load("softmax.py", "softmax_kernel", jit.Spec{Sig: map[string]string{"output_ptr": "*fp32", "input_ptr": "*fp32",
		"input_row_stride": "i32", "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
		Consts: map[string]any{"BLOCK_SIZE": int64(128), "num_stages": int64(1)}})
	bi, bs := upload(in), upload(make([]float32, rowsN*cols))
	if err := soft.Launch([3]int{8, 1, 1}, []jit.Arg{{Buf: bs}, {Buf: bi}, {Scalar: int64(cols)}, {Scalar: int64(cols)}, {Scalar: int64(rowsN)}, {Scalar: int64(cols)}}); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, len(in))
	for r := 0; r < rowsN; r++ {
		row := in[r*cols : (r+1)*cols]
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, float64(v))
		}
		s := 0.0
		for _, v := range row {
			s += math.Exp(float64(v) - m)
		}
		for c, v := range row {
			want[r*cols+c] = float32(math.Exp(float64(v)-m) / s)
		}
	}
	check("softmax_kernel", download(bs), want, 1e-5)

	// tl.dot in a masked K loop, grouped tiles and an activation behind a static if: C =
	// leaky_relu(A @ B), 37 x 70 by 70 x 45 in 32 x 32 x 16 tiles (GPUs' default TF32 dots
	// round the inputs to 10 mantissa bits: the tolerance covers it)
	const mm, nn, kk = 37, 45, 70
	a, bm := make([]float32, mm*kk), make([]float32, kk*nn)
	for i := range a {
		a[i] = float32(math.Sin(float64(i) * 0.37))
	}
	for i := range bm {
		bm[i] = float32(math.Cos(float64(i) * 0.11))
	}
	mat := load("matmul.py", "matmul_kernel", jit.Spec{Sig: map[string]string{"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32",
		"M": "i32", "N": "i32", "K": "i32", "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32", "stride_cn": "i32"},
		Consts: map[string]any{"BLOCK_SIZE_M": int64(32), "BLOCK_SIZE_N": int64(32), "BLOCK_SIZE_K": int64(16), "GROUP_SIZE_M": int64(2), "ACTIVATION": "leaky_relu"}})
	ba, bb, bc := upload(a), upload(bm), upload(make([]float32, mm*nn))
	scalars := []int64{mm, nn, kk, kk, 1, nn, 1, nn, 1}
	args := []jit.Arg{{Buf: ba}, {Buf: bb}, {Buf: bc}}
	for _, v := range scalars {
		args = append(args, jit.Arg{Scalar: v})
	}
	if err := mat.Launch([3]int{2 * 2, 1, 1}, args); err != nil {
		t.Fatal(err)
	}
	prod := make([]float32, mm*nn)
	for i := 0; i < mm; i++ {
		for j := 0; j < nn; j++ {
			s := 0.0
			for k := 0; k < kk; k++ {
				s += float64(a[i*kk+k]) * float64(bm[k*nn+j])
			}
			if s < 0 {
				s *= 0.01
			}
			prod[i*nn+j] = float32(s)
		}
	}
	check("matmul_kernel", download(bc), prod, 1e-2)
	for _, b := range []jit.Buffer{bx, by, bo, bi, bs, ba, bb, bc} {
		dev.Free(b)
	}
}

func f32bytes(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, f := range v {
		u := math.Float32bits(f)
		out[4*i], out[4*i+1], out[4*i+2], out[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return out
}
