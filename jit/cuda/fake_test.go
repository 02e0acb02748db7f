package cuda

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cuda/internal/streamtest"
	"github.com/widejit/widejit/triton/ir"
)

// fakeDevice builds testdata/fakecuda.c into a libcuda.so.1 and opens it: the binding's
// calls, argument passing and error paths run for real, without a GPU.
func fakeDevice(t *testing.T) *Device {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc) to build the fake libcuda")
	}
	lib := filepath.Join(t.TempDir(), "libcuda.so.1")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", lib, "testdata/fakecuda.c").CombinedOutput(); err != nil {
		t.Fatalf("building the fake libcuda: %v\n%s", err, out)
	}
	drv, err := loadFrom([]string{lib})
	if err != nil {
		t.Fatal(err)
	}
	d, err := openWith(drv, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestBindingAgainstFakeDriver(t *testing.T) {
	d := fakeDevice(t)
	info := d.Info()
	if info.Name != "Fake GPU" || info.ComputeCapability != "9.0" || info.Cores != 132 || info.MemoryBytes != 80<<30 || info.DriverVersion != "13.0" {
		t.Fatalf("device info %+v", info)
	}
	if d.Target().Key() != "ptx8.0/sm_90a" {
		t.Fatalf("target %s, want ptx8.0/sm_90a (a cc 9.0 device under a CUDA 13 driver)", d.Target().Key())
	}

	// A real generated kernel, loaded and launched; the fake runs add_kernel's semantics on
	// the parameters exactly as the PTX ABI lays them out.
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
	const n = 300
	x, _ := d.Alloc(ir.F32, n)
	y, _ := d.Alloc(ir.F32, n)
	out, _ := d.Alloc(ir.F32, n+10)
	defer d.Free(x)
	defer d.Free(y)
	defer d.Free(out)
	hx, hy := make([]byte, 4*n), make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(hx[4*i:], math.Float32bits(float32(i)))
		binary.LittleEndian.PutUint32(hy[4*i:], math.Float32bits(0.5))
	}
	if err := d.Upload(x, hx); err != nil {
		t.Fatal(err)
	}
	if err := d.UploadAsync(y, hy); err != nil {
		t.Fatal(err)
	}
	// Offset 10 elements into out: the pointer parameter must carry the byte offset.
	if err := k.Launch([3]int{2, 1, 1}, []jit.Arg{{Buf: x}, {Buf: y}, {Buf: out, Offset: 10}, {Scalar: int64(n)}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	ho := make([]byte, 4*(n+10))
	if err := d.Download(out, ho); err != nil {
		t.Fatal(err)
	}
	for i := range n + 10 {
		got := math.Float32frombits(binary.LittleEndian.Uint32(ho[4*i:]))
		want := float32(0)
		if i >= 10 {
			want = float32(i-10) + 0.5
		}
		if got != want {
			t.Fatalf("out[%d] = %v, want %v", i, got, want)
		}
	}
	if err := k.Launch([3]int{2, 1, 1}, []jit.Arg{{Buf: x}, {Buf: y}, {Buf: out}}); err == nil || !strings.Contains(err.Error(), "3 arguments for 4 parameters") {
		t.Errorf("short argument list: %v", err)
	}
	if err := k.Launch([3]int{1, 70000, 1}, []jit.Arg{{Buf: x}, {Buf: y}, {Buf: out}, {Scalar: int64(n)}}); err == nil {
		t.Error("grid y of 70000 accepted")
	}

	// Device-to-device copy and event timing.
	if err := d.CopyAsync(y, x); err != nil {
		t.Fatal(err)
	}
	if err := d.DownloadAsync(y, hy); err != nil {
		t.Fatal(err)
	}
	d.Sync()
	if string(hy) != string(hx) {
		t.Error("device-to-device copy did not copy")
	}
	dt, err := d.Time(func() error { return nil })
	if err != nil || dt != 1500*time.Microsecond {
		t.Errorf("event time %v, %v; want the fake's 1.5 ms", dt, err)
	}
}

func TestJITLogAndDriverErrorsAgainstFakeDriver(t *testing.T) {
	d := fakeDevice(t)
	_, err := d.Load(&jit.Artifact{Kind: "ptx", Name: "bad", Payload: []byte(".visible .entry bad() { bogus; }"), Meta: map[string]string{"threads": "128"}})
	if err == nil {
		t.Fatal("bad PTX loaded")
	}
	for _, want := range []string{"cuModuleLoadDataEx", "CUDA_ERROR_INVALID_PTX (218)", "JIT error log", "Unknown instruction 'bogus'", "fake ptxas info"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	_, err = d.Load(&jit.Artifact{Kind: "ptx", Name: "missing", Payload: []byte(".visible .entry x() { ret; }"), Meta: map[string]string{"threads": "128"}})
	if err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_NOT_FOUND") || !strings.Contains(err.Error(), "entry missing") {
		t.Errorf("missing entry: %v", err)
	}
	_, err = d.Load(&jit.Artifact{Kind: "ir", Name: "x"})
	if err == nil || !strings.Contains(err.Error(), `cannot load a "ir" artifact`) {
		t.Errorf("CPU artifact: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Alloc(ir.F32, 4); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("alloc after close: %v", err)
	}
}

// Streams, events and pinned memory through the binding: offsets into buffers, a launch on a
// stream, the argument checks, and event times (the fake's 1.5 ms per record in between).
func TestStreamsAgainstFakeDriver(t *testing.T) {
	d := fakeDevice(t)
	k := streamtest.LoadAdd(t, d)
	s1, s2 := streamtest.NewStream(t, d), streamtest.NewStream(t, d)
	if s1.(*Stream).h == s2.(*Stream).h || s1.(*Stream).h == d.stream {
		t.Fatalf("streams share a handle: %#x, %#x, device %#x", s1.(*Stream).h, s2.(*Stream).h, d.stream)
	}
	host := streamtest.Pinned(t, d, append(streamtest.F32s(1, 2, 3, 4, 5, 6, 7, 8), make([]byte, 16)...))
	x, _ := d.Alloc(ir.F32, 8)
	out, _ := d.Alloc(ir.F32, 4)
	defer d.Free(x)
	defer d.Free(out)
	// elements 4..7 of x from the pinned bytes 16..31, then x[4:8] + x[4:8] on the other stream
	if err := s1.Upload(x, 4, host[16:32]); err != nil {
		t.Fatal(err)
	}
	ready, start, end := streamtest.NewEvent(t, d, false), streamtest.NewEvent(t, d, true), streamtest.NewEvent(t, d, true)
	if err := s1.Record(ready); err != nil {
		t.Fatal(err)
	}
	if err := s2.Wait(ready); err != nil {
		t.Fatal(err)
	}
	if err := s2.Record(start); err != nil {
		t.Fatal(err)
	}
	if err := s2.Launch(k, [3]int{1, 1, 1}, []jit.Arg{{Buf: x, Offset: 4}, {Buf: x, Offset: 4}, {Buf: out}, {Scalar: int64(4)}}); err != nil {
		t.Fatal(err)
	}
	if err := s2.Download(out, 1, host[32:44]); err != nil {
		t.Fatal(err)
	}
	if err := s2.Record(end); err != nil {
		t.Fatal(err)
	}
	if err := end.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := s2.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := streamtest.ReadF32s(host[32:44]); got[0] != 12 || got[1] != 14 || got[2] != 16 { // out[1:4] = 2 * x[5:8]
		t.Errorf("out[1:4] = %v, want 12 14 16", got)
	}
	if dt, err := end.Since(start); err != nil || dt != 1500*time.Microsecond {
		t.Errorf("event time %v, %v; want the fake's 1.5 ms for one record in between", dt, err)
	}
	if _, err := end.Since(ready); err == nil || !strings.Contains(err.Error(), "two timing events") {
		t.Errorf("time since an event without timing: %v", err)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{s1.Upload(x, 6, host[:12]), "async upload of 12 bytes at element 6 of a buffer of 8 x fp32"},
		{s1.Upload(x, 0, host[:6]), "async upload of 6 bytes"},
		{s1.Download(out, -1, host[:4]), "async download of 4 bytes at element -1"},
		{s1.Upload(&Buffer{dt: ir.F32, n: 1}, 0, host[:4]), "a freed buffer"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("error %v, want %q", c.err, c.want)
		}
	}
	other := fakeDevice(t)
	os2, err := other.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	if err := os2.Launch(k, [3]int{1, 1, 1}, nil); err == nil || !strings.Contains(err.Error(), "not loaded on the stream's device") {
		t.Errorf("launch of another device's kernel: %v", err)
	}
	if err := os2.Record(ready); err == nil || !strings.Contains(err.Error(), "not an event of the stream's device") {
		t.Errorf("record of another device's event: %v", err)
	}
}

// A generic device of each arch (`cache populate --arch`) has that arch's compute capability;
// only sm_90a's kernels use Hopper's warpgroup MMA.
func TestGenericDevice(t *testing.T) {
	for arch, cc := range map[string]string{"sm_80": "8.0", "sm_90": "9.0", "sm_90a": "9.0"} {
		d := GenericDevice(arch)
		if d.ComputeCapability != cc || d.Caps.WarpgroupMMA != (arch == "sm_90a") || !d.Caps.TensorCores {
			t.Errorf("GenericDevice(%s) = %+v, want compute capability %s", arch, d, cc)
		}
	}
}
