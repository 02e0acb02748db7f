package cpu

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

// ArtifactKind is the Kind of CPU artifacts: the encoded tile IR.
const ArtifactKind = "ir"

// Target generates CPU artifacts: the IR itself, encoded (the executor compiles it on Load).
type Target struct{}

// Key names the CPU target in cache keys; the IR encoding format is part of it so a format
// change never serves stale artifacts.
func (Target) Key() string { return fmt.Sprintf("cpu/ir%d", ir.EncodingFormat) }

// Codegen encodes f. It checks that the executor accepts f, so a kernel the CPU cannot run
// fails at compile time, not at its first launch.
func (Target) Codegen(f *ir.Func, spec jit.Spec) (*jit.Artifact, error) {
	if _, err := compileFunc(f); err != nil {
		return nil, err
	}
	return &jit.Artifact{Kind: ArtifactKind, Name: f.Name, Target: Target{}.Key(), Payload: ir.Encode(f)}, nil
}

// Device is the CPU as a jit.Device: host buffers, and workers (the launching goroutine and
// helpers that stay awake between launches, pool.go) that share each launch's programs.
type Device struct {
	threads int
	pool    pool

	printMu sync.Mutex
	printW  io.Writer
}

// NewDevice makes a CPU device that runs each launch on threads workers (0: GOMAXPROCS).
func NewDevice(threads int) *Device {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	return &Device{threads: threads, printW: os.Stdout}
}

// SetPrintWriter sends tl.device_print output to w (default os.Stdout).
func (d *Device) SetPrintWriter(w io.Writer) {
	d.printMu.Lock()
	d.printW = w
	d.printMu.Unlock()
}

// Threads is the number of workers a launch uses at most.
func (d *Device) Threads() int { return d.threads }

func (d *Device) Info() jit.DeviceInfo {
	return jit.DeviceInfo{Kind: "cpu", Name: runtime.GOARCH + " (" + dotKernelName() + ")", Cores: d.threads,
		Caps: Capabilities()}
}

func (d *Device) Target() jit.Target { return Target{} }

// Capabilities are the CPU executor's: programs on host threads, buffers in host memory.
func Capabilities() jit.Capabilities {
	return jit.Capabilities{HostThreads: true, SIMDWidth: simdLanes()}
}

// Load decodes a CPU artifact and compiles it into an executable program.
func (d *Device) Load(a *jit.Artifact) (jit.Kernel, error) {
	if a.Kind != ArtifactKind {
		return nil, fmt.Errorf("cpu device cannot load a %q artifact", a.Kind)
	}
	f, err := ir.Decode(a.Payload)
	if err != nil {
		return nil, err
	}
	return d.LoadFunc(f)
}

// LoadFunc compiles f directly, skipping the encoding (tests, `widejit kernel run`).
func (d *Device) LoadFunc(f *ir.Func) (*Kernel, error) {
	p, err := compileFunc(f)
	if err != nil {
		return nil, err
	}
	return &Kernel{dev: d, prog: p, homes: make([]atomic.Pointer[frame], d.threads)}, nil
}

// Buffer is host memory of Len elements of DType, little-endian, 8-byte aligned.
type Buffer struct {
	dt   ir.DType
	n    int
	data []byte // own, or host memory bound in its place (Device.BindHost)
	own  []byte
	// atomicMu serializes the atomics of concurrent programs on this buffer.
	atomicMu sync.Mutex
}

// NewBuffer allocates a zeroed buffer without a device (the CPU needs none).
func NewBuffer(dt ir.DType, n int) (*Buffer, error) {
	if dt == ir.Invalid || dt.Size() == 0 {
		return nil, fmt.Errorf("cpu: cannot allocate a buffer of dtype %s", dt)
	}
	if n < 0 || n > 1<<46 {
		return nil, fmt.Errorf("cpu: cannot allocate %d elements", n)
	}
	bytes := n * dt.Size()
	words := make([]uint64, (bytes+7)/8)
	var data []byte
	if len(words) > 0 {
		data = unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), bytes)
	}
	return &Buffer{dt: dt, n: n, data: data, own: data}, nil
}

func (b *Buffer) DType() ir.DType { return b.dt }
func (b *Buffer) Len() int        { return b.n }

// Bytes is the buffer's memory itself (not a copy), little-endian, for zero-copy access.
func (b *Buffer) Bytes() []byte { return b.data }

func (b *Buffer) f32() []float32 {
	if b.n == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b.data[0])), b.n)
}

func (b *Buffer) f64() []float64 {
	if b.n == 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&b.data[0])), b.n)
}

func (b *Buffer) u16() []uint16 {
	if b.n == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b.data[0])), b.n)
}

func (b *Buffer) u32() []uint32 {
	if b.n == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b.data[0])), b.n)
}

func (b *Buffer) u64() []uint64 {
	if b.n == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b.data[0])), b.n)
}

func (d *Device) Alloc(dt ir.DType, n int) (jit.Buffer, error) { return NewBuffer(dt, n) }

func (d *Device) Free(jit.Buffer) {}

func (d *Device) Upload(dst jit.Buffer, src []byte) error {
	b, ok := dst.(*Buffer)
	if !ok {
		return fmt.Errorf("cpu: upload to a %T, not a CPU buffer", dst)
	}
	if len(src) != len(b.data) {
		return fmt.Errorf("cpu: upload of %d bytes into a buffer of %d bytes (%d x %s)", len(src), len(b.data), b.n, b.dt)
	}
	copy(b.data, src)
	return nil
}

func (d *Device) Download(src jit.Buffer, dst []byte) error {
	b, ok := src.(*Buffer)
	if !ok {
		return fmt.Errorf("cpu: download from a %T, not a CPU buffer", src)
	}
	if len(dst) != len(b.data) {
		return fmt.Errorf("cpu: download of a buffer of %d bytes (%d x %s) into %d bytes", len(b.data), b.n, b.dt, len(dst))
	}
	copy(dst, b.data)
	return nil
}

// BindHost points b at data, which must have b's size and an address aligned to 8 bytes
// (the widest element a kernel may load); the Go runtime keeps data alive through b.
func (d *Device) BindHost(buf jit.Buffer, data []byte) bool {
	b, ok := buf.(*Buffer)
	if !ok || len(data) != len(b.own) || len(data) == 0 || uintptr(unsafe.Pointer(&data[0]))%8 != 0 {
		return false
	}
	b.data = data
	return true
}

// UnbindHost points b back at its own memory.
func (d *Device) UnbindHost(buf jit.Buffer) {
	if b, ok := buf.(*Buffer); ok {
		b.data = b.own
	}
}

// Sync returns at once: launches and copies are synchronous on the CPU.
func (d *Device) Sync() error { return nil }

func (d *Device) Close() error { return nil }
