package cuda

import (
	"encoding/binary"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/widejit/widejit/internal/half"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

func TestMissingLibraryGivesClearError(t *testing.T) {
	_, err := loadFrom([]string{"libwidejit-no-such-cuda.so.1"})
	if err == nil {
		t.Fatal("loading a library that does not exist succeeded")
	}
	if !strings.Contains(err.Error(), "cuda: libwidejit-no-such-cuda.so.1 not found (no NVIDIA driver)") {
		t.Fatalf("error %q does not say which library is missing and why", err)
	}
}

func TestHalfArgumentEncoding(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want uint16
	}{{1, 0x3C00}, {-2, 0xC000}, {65504, 0x7BFF}, {1e6, 0x7C00}, {0.1, 0x2E66}, {5.9604645e-8, 0x0001}, {1e-8, 0}, {float32(math.Inf(-1)), 0xFC00}} {
		if got := half.F32ToF16(c.f); got != c.want {
			t.Errorf("half.F32ToF16(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	for _, c := range []struct {
		f    float32
		want uint16
	}{{1, 0x3F80}, {0.1, 0x3DCD}, {-3.5, 0xC060}} {
		if got := half.F32ToBF16(c.f); got != c.want {
			t.Errorf("half.F32ToBF16(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

func TestPackArgChecksTypes(t *testing.T) {
	if v, err := packArg(ir.Scalar(ir.I32), jit.Arg{Scalar: int64(-1)}); err != nil || v != 0xFFFFFFFF {
		t.Errorf("i32 -1: %#x, %v", v, err)
	}
	if _, err := packArg(ir.Scalar(ir.I32), jit.Arg{Scalar: int64(1 << 40)}); err == nil || !strings.Contains(err.Error(), "does not fit in i32") {
		t.Errorf("i32 overflow: %v", err)
	}
	if v, err := packArg(ir.Scalar(ir.F32), jit.Arg{Scalar: 2.5}); err != nil || v != uint64(math.Float32bits(2.5)) {
		t.Errorf("fp32 2.5: %#x, %v", v, err)
	}
	if _, err := packArg(ir.PtrTo(ir.F32), jit.Arg{Scalar: int64(3)}); err == nil || !strings.Contains(err.Error(), "needs a buffer") {
		t.Errorf("pointer without buffer: %v", err)
	}
	b := &Buffer{ptr: 0x1000, dt: ir.F32, n: 10}
	if v, err := packArg(ir.PtrTo(ir.F32), jit.Arg{Buf: b, Offset: 3}); err != nil || v != 0x100C {
		t.Errorf("pointer + 3 elements: %#x, %v", v, err)
	}
	if _, err := packArg(ir.PtrTo(ir.F16), jit.Arg{Buf: b}); err == nil || !strings.Contains(err.Error(), "holds fp32") {
		t.Errorf("dtype mismatch: %v", err)
	}
}

// openOrSkip opens GPU 0 or skips, saying why (no driver, no device).
func openOrSkip(t *testing.T) *Device {
	t.Helper()
	d, err := Open(0)
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestDeviceQueryAndMemory(t *testing.T) {
	d := openOrSkip(t)
	info := d.Info()
	if info.Kind != "cuda" || info.Name == "" || info.ComputeCapability == "" || info.MemoryBytes <= 0 || info.Cores <= 0 {
		t.Fatalf("incomplete device info %+v", info)
	}
	buf, err := d.Alloc(ir.F32, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(buf)
	src := make([]byte, 4000)
	for i := range 1000 {
		binary.LittleEndian.PutUint32(src[4*i:], math.Float32bits(float32(i)*0.5))
	}
	if err := d.Upload(buf, src); err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 4000)
	if err := d.Download(buf, dst); err != nil {
		t.Fatal(err)
	}
	if string(dst) != string(src) {
		t.Fatal("download differs from upload")
	}
	if err := d.Upload(buf, src[:10]); err == nil {
		t.Fatal("short upload accepted")
	}
}

func TestJITErrorLogIsReported(t *testing.T) {
	d := openOrSkip(t)
	_, err := d.Load(&jit.Artifact{Kind: "ptx", Name: "bad", Payload: []byte(".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry bad() { bogus.instr; }\n"),
		Meta: map[string]string{"threads": "128"}})
	if err == nil || !strings.Contains(err.Error(), "JIT error log") {
		t.Fatalf("bad PTX: error %v, want the JIT log", err)
	}
}

func TestVectorAddOnGPU(t *testing.T) {
	d := openOrSkip(t)
	text, err := os.ReadFile("../../triton/testdata/kernels/vector_add.py")
	if err != nil {
		t.Fatal(err)
	}
	c := jit.NewCompiler(jit.CompilerOptions{})
	k, err := c.Load(d, jit.Source{File: "vector_add.py", Text: string(text), Fn: "add_kernel"}, jit.Spec{
		Sig: map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}, Consts: map[string]any{"BLOCK_SIZE": int64(256)}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	bufs := make([]jit.Buffer, 3)
	host := make([][]byte, 3)
	for i := range bufs {
		if bufs[i], err = d.Alloc(ir.F32, n); err != nil {
			t.Fatal(err)
		}
		defer d.Free(bufs[i])
		host[i] = make([]byte, 4*n)
	}
	for i := range n {
		binary.LittleEndian.PutUint32(host[0][4*i:], math.Float32bits(float32(i)))
		binary.LittleEndian.PutUint32(host[1][4*i:], math.Float32bits(float32(2*i)+0.25))
	}
	for i := range 2 {
		if err := d.Upload(bufs[i], host[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.Launch([3]int{(n + 255) / 256, 1, 1}, []jit.Arg{{Buf: bufs[0]}, {Buf: bufs[1]}, {Buf: bufs[2]}, {Scalar: int64(n)}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := d.Download(bufs[2], host[2]); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		got := math.Float32frombits(binary.LittleEndian.Uint32(host[2][4*i:]))
		if want := float32(3*i) + 0.25; got != want {
			t.Fatalf("out[%d] = %v, want %v", i, got, want)
		}
	}
}

// tf32DotKernel multiplies two 16x16 fp32 tiles at TF32 precision (mma.sync m16n8k8 .tf32).
const tf32DotKernel = `import triton
import triton.language as tl

@triton.jit
def tf32_dot(a_ptr, b_ptr, c_ptr):
    r = tl.arange(0, 16)
    offs = r[:, None] * 16 + r[None, :]
    c = tl.dot(tl.load(a_ptr + offs), tl.load(b_ptr + offs), input_precision="tf32")
    tl.store(c_ptr + offs, c)
`

// The PTX backend hands fp32 operands to mma.sync .tf32 as they are, and widejit documents
// (README, --float32-matmul-precision) that the tensor cores then truncate them to 10
// mantissa bits, as Triton's TF32 dots do. This checks it on the hardware: a = 1 + 0.75*2^-10,
// b = 1, K = 16: truncation gives exactly 16, round-to-nearest 16 * (1 + 2^-10), IEEE fp32
// 16 * (1 + 0.75*2^-10).
func TestTF32DotTruncatesOnGPU(t *testing.T) {
	d := openOrSkip(t)
	k, err := jit.NewCompiler(jit.CompilerOptions{}).Load(d, jit.Source{File: "tf32_dot.py", Text: tf32DotKernel, Fn: "tf32_dot"},
		jit.Spec{Sig: map[string]string{"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 16 * 16
	host := [3][]byte{make([]byte, 4*n), make([]byte, 4*n), make([]byte, 4*n)}
	for i := range n {
		binary.LittleEndian.PutUint32(host[0][4*i:], math.Float32bits(1+0.75/1024))
		binary.LittleEndian.PutUint32(host[1][4*i:], math.Float32bits(1))
	}
	var bufs [3]jit.Buffer
	for i := range bufs {
		if bufs[i], err = d.Alloc(ir.F32, n); err != nil {
			t.Fatal(err)
		}
		defer d.Free(bufs[i])
		if err := d.Upload(bufs[i], host[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.Launch([3]int{1, 1, 1}, []jit.Arg{{Buf: bufs[0]}, {Buf: bufs[1]}, {Buf: bufs[2]}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := d.Download(bufs[2], host[2]); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(host[2][4*i:])); got != 16 {
			t.Fatalf("c[%d] = %v, want 16 (truncated operands; %v if rounded to nearest, %v in IEEE fp32): the documented precision of high is wrong",
				i, got, 16*(1+1.0/1024), 16*(1+0.75/1024))
		}
	}
}
