package cuda

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/widejit/widejit/internal/half"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cuda/internal/drv"
	"github.com/widejit/widejit/jit/ptx"
	"github.com/widejit/widejit/triton/ir"
)

// Device is one NVIDIA GPU as a jit.Device: its primary context, one stream for launches
// and copies, and a ptx.Target for its architecture. As a jit.StreamDevice (streams.go) it
// also makes more streams, events and pinned host memory.
type Device struct {
	drv     *driver
	ordinal int32
	ctx     uintptr
	stream  uintptr
	info    jit.DeviceInfo
	target  jit.Target // ptx.Target; the test driver's wraps it (OpenDriver)
	smemMax int

	mu      sync.Mutex
	closed  bool
	pending map[*Kernel]bool // kernels with device asserts launched since the last check (checkAsserts)
	pinned  []jit.Pinned     // the kernels' flagHost, freed by Close
}

// Options are how a device is opened (the cuda backend's --backend-opt NAME=VALUE).
type Options struct {
	// Arch is the PTX arch its kernels are generated for ("": ptx.ArchForCapability's for
	// the device); sm_90a (wgmma) only on a compute capability 9.0 device with a CUDA 12
	// driver (ptx.CheckArch).
	Arch string
}

// Open binds the driver (once per process), retains device ordinal's primary context and
// creates a stream. Without a driver or a GPU it returns a clear error.
func Open(ordinal int) (*Device, error) { return OpenWith(ordinal, Options{}) }

// OpenWith is Open with options.
func OpenWith(ordinal int, o Options) (*Device, error) {
	drv, err := load()
	if err != nil {
		return nil, err
	}
	return openWith(drv, ordinal, o)
}

// OpenDriver opens device ordinal through api, a driver other than libcuda (the test driver
// of jit/cuda/cudatest; drv is internal to jit/cuda), its kernels compiled for target(the
// GPU's PTX target).
func OpenDriver(api *drv.API, ordinal int, o Options, target func(jit.Target) jit.Target) (*Device, error) {
	d, err := openWith(&driver{api}, ordinal, o)
	if err != nil {
		return nil, err
	}
	d.target = target(d.target)
	return d, nil
}

func openWith(drv *driver, ordinal int, o Options) (*Device, error) {
	var n int32
	if err := drv.check("cuDeviceGetCount", drv.CuDeviceGetCount(&n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("cuda: %w: the driver sees no GPU", ErrNoDevice)
	}
	if ordinal < 0 || ordinal >= int(n) {
		return nil, fmt.Errorf("cuda: device %d does not exist (%d devices)", ordinal, n)
	}
	d := &Device{drv: drv}
	if err := drv.check("cuDeviceGet", drv.CuDeviceGet(&d.ordinal, int32(ordinal))); err != nil {
		return nil, err
	}
	var name [256]byte
	if err := drv.check("cuDeviceGetName", drv.CuDeviceGetName(&name[0], int32(len(name)), d.ordinal)); err != nil {
		return nil, err
	}
	attr := func(a int32) (int, error) {
		var v int32
		err := drv.check("cuDeviceGetAttribute", drv.CuDeviceGetAttribute(&v, a, d.ordinal))
		return int(v), err
	}
	major, err := attr(attrComputeCapabilityMajor)
	if err != nil {
		return nil, err
	}
	minor, err := attr(attrComputeCapabilityMinor)
	if err != nil {
		return nil, err
	}
	sms, err := attr(attrMultiprocessorCount)
	if err != nil {
		return nil, err
	}
	if d.smemMax, err = attr(attrMaxSharedPerBlockOptin); err != nil {
		return nil, err
	}
	var mem uint64
	if err := drv.check("cuDeviceTotalMem_v2", drv.CuDeviceTotalMem(&mem, d.ordinal)); err != nil {
		return nil, err
	}
	var ver int32
	if err := drv.check("cuDriverGetVersion", drv.CuDriverGetVersion(&ver)); err != nil {
		return nil, err
	}
	cc := fmt.Sprintf("%d.%d", major, minor)
	arch, err := ptx.ArchForCapability(cc)
	if err != nil {
		return nil, err
	}
	arch = ptx.FallbackArch(arch, cc, int(ver))
	if o.Arch != "" {
		if err := ptx.CheckArch(o.Arch, cc, int(ver)); err != nil {
			return nil, fmt.Errorf("cuda: device %d (%s) with arch=%s: %w", ordinal, cString(&name[0]), o.Arch, err)
		}
		arch = o.Arch
	}
	d.target = ptx.Target{Arch: arch}
	d.info = jit.DeviceInfo{Kind: "cuda", Name: cString(&name[0]), ComputeCapability: cc, MemoryBytes: int64(mem),
		Cores: sms, DriverVersion: fmt.Sprintf("%d.%d", ver/1000, ver%1000/10), Caps: Capabilities(cc, d.smemMax)}
	d.info.Caps.WarpgroupMMA = arch == "sm_90a"

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := drv.check("cuDevicePrimaryCtxRetain", drv.CuDevicePrimaryCtxRetain(&d.ctx, d.ordinal)); err != nil {
		return nil, err
	}
	if err := drv.check("cuCtxSetCurrent", drv.CuCtxSetCurrent(d.ctx)); err != nil {
		drv.CuDevicePrimaryCtxRelease(d.ordinal)
		return nil, err
	}
	if err := drv.check("cuStreamCreate", drv.CuStreamCreate(&d.stream, 0)); err != nil {
		drv.CuDevicePrimaryCtxRelease(d.ordinal)
		return nil, err
	}
	return d, nil
}

// bind makes d's context current on this OS thread; callers hold the thread locked (CUDA
// contexts are per thread and goroutines move between threads).
func (d *Device) bind() (func(), error) {
	runtime.LockOSThread()
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("cuda: device %s is closed", d.info.Name)
	}
	if err := d.drv.check("cuCtxSetCurrent", d.drv.CuCtxSetCurrent(d.ctx)); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return runtime.UnlockOSThread, nil
}

func (d *Device) Info() jit.DeviceInfo { return d.info }

// GenericDevice describes a GPU of arch ("sm_90") for plans made without one (`cache
// populate --arch`, `kernel dump`): its capabilities, size unknown.
func GenericDevice(arch string) jit.DeviceInfo {
	cc := ptx.GenericCapability(arch)
	info := jit.DeviceInfo{Kind: "cuda", Name: "generic " + arch, ComputeCapability: cc, Caps: Capabilities(cc, 0)}
	info.Caps.WarpgroupMMA = arch == "sm_90a"
	return info
}

// Capabilities are those of an NVIDIA GPU of compute capability cc ("9.0") whose programs may
// use sharedBytes of shared memory (0: unknown): warps of 32, its own memory, tensor cores from
// 8.0 on (the mma.sync forms package ptx emits).
func Capabilities(cc string, sharedBytes int) jit.Capabilities {
	major, _, _ := strings.Cut(cc, ".")
	m, _ := strconv.Atoi(major)
	return jit.Capabilities{WarpSize: 32, SharedMemoryBytes: sharedBytes, TensorCores: m >= 8, DiscreteMemory: true}
}
func (d *Device) Target() jit.Target { return d.target }

// Buffer is device memory.
type Buffer struct {
	ptr uint64
	dt  ir.DType
	n   int
}

func (b *Buffer) DType() ir.DType { return b.dt }
func (b *Buffer) Len() int        { return b.n }

// Ptr is the device address.
func (b *Buffer) Ptr() uint64 { return b.ptr }

func (d *Device) Alloc(dt ir.DType, n int) (jit.Buffer, error) {
	if dt == ir.Invalid || dt.Size() == 0 || n < 0 {
		return nil, fmt.Errorf("cuda: cannot allocate %d elements of %s", n, dt)
	}
	done, err := d.bind()
	if err != nil {
		return nil, err
	}
	defer done()
	b := &Buffer{dt: dt, n: n}
	size := uint64(max(n*dt.Size(), 1))
	if err := d.drv.check("cuMemAlloc_v2", d.drv.CuMemAlloc(&b.ptr, size)); err != nil {
		return nil, fmt.Errorf("%w (allocating %d bytes)", err, size)
	}
	if err := d.drv.check("cuMemsetD8_v2", d.drv.CuMemsetD8(b.ptr, 0, size)); err != nil {
		return nil, err
	}
	return b, nil
}

func (d *Device) Free(jb jit.Buffer) {
	b, ok := jb.(*Buffer)
	if !ok || b.ptr == 0 {
		return
	}
	done, err := d.bind()
	if err != nil {
		return
	}
	defer done()
	d.drv.CuMemFree(b.ptr)
	b.ptr = 0
}

func (d *Device) buffer(jb jit.Buffer, what string) (*Buffer, error) {
	b, ok := jb.(*Buffer)
	if !ok {
		return nil, fmt.Errorf("cuda: %s a %T, not a CUDA buffer", what, jb)
	}
	if b.ptr == 0 {
		return nil, fmt.Errorf("cuda: %s a freed buffer", what)
	}
	return b, nil
}

func (d *Device) Upload(dst jit.Buffer, src []byte) error {
	b, err := d.buffer(dst, "upload to")
	if err != nil {
		return err
	}
	if len(src) != b.n*b.dt.Size() {
		return fmt.Errorf("cuda: upload of %d bytes into a buffer of %d bytes (%d x %s)", len(src), b.n*b.dt.Size(), b.n, b.dt)
	}
	if len(src) == 0 {
		return nil
	}
	done, err := d.bind()
	if err != nil {
		return err
	}
	defer done()
	// The stream is blocking, so this synchronous copy orders after earlier launches.
	return d.drv.check("cuMemcpyHtoD_v2", d.drv.CuMemcpyHtoD(b.ptr, unsafe.Pointer(&src[0]), uint64(len(src))))
}

func (d *Device) Download(src jit.Buffer, dst []byte) error {
	b, err := d.buffer(src, "download from")
	if err != nil {
		return err
	}
	if len(dst) != b.n*b.dt.Size() {
		return fmt.Errorf("cuda: download of a buffer of %d bytes (%d x %s) into %d bytes", b.n*b.dt.Size(), b.n, b.dt, len(dst))
	}
	if len(dst) == 0 {
		return nil
	}
	done, err := d.bind()
	if err != nil {
		return err
	}
	defer done()
	if err := d.drv.check("cuStreamSynchronize", d.drv.CuStreamSynchronize(d.stream)); err != nil {
		return err
	}
	return d.drv.check("cuMemcpyDtoH_v2", d.drv.CuMemcpyDtoH(unsafe.Pointer(&dst[0]), b.ptr, uint64(len(dst))))
}

// CopyAsync copies n bytes between device buffers on the device's stream (benchmarks use it
// as the bandwidth reference).
func (d *Device) CopyAsync(dst, src jit.Buffer) error {
	db, err := d.buffer(dst, "copy to")
	if err != nil {
		return err
	}
	sb, err := d.buffer(src, "copy from")
	if err != nil {
		return err
	}
	n := min(db.n*db.dt.Size(), sb.n*sb.dt.Size())
	done, err := d.bind()
	if err != nil {
		return err
	}
	defer done()
	return d.drv.check("cuMemcpyDtoD_v2", d.drv.CuMemcpyDtoD(db.ptr, sb.ptr, uint64(n)))
}

// UploadAsync and DownloadAsync copy on the device's stream; host memory must stay alive and
// unchanged until Sync.
func (d *Device) UploadAsync(dst jit.Buffer, src []byte) error {
	b, err := d.buffer(dst, "upload to")
	if err != nil {
		return err
	}
	if len(src) != b.n*b.dt.Size() {
		return fmt.Errorf("cuda: async upload of %d bytes into a buffer of %d bytes", len(src), b.n*b.dt.Size())
	}
	if len(src) == 0 {
		return nil
	}
	done, err := d.bind()
	if err != nil {
		return err
	}
	defer done()
	return d.drv.check("cuMemcpyHtoDAsync_v2", d.drv.CuMemcpyHtoDAsync(b.ptr, unsafe.Pointer(&src[0]), uint64(len(src)), d.stream))
}

func (d *Device) DownloadAsync(src jit.Buffer, dst []byte) error {
	b, err := d.buffer(src, "download from")
	if err != nil {
		return err
	}
	if len(dst) != b.n*b.dt.Size() {
		return fmt.Errorf("cuda: async download of a buffer of %d bytes into %d bytes", b.n*b.dt.Size(), len(dst))
	}
	if len(dst) == 0 {
		return nil
	}
	done, err := d.bind()
	if err != nil {
		return err
	}
	defer done()
	return d.drv.check("cuMemcpyDtoHAsync_v2", d.drv.CuMemcpyDtoHAsync(unsafe.Pointer(&dst[0]), b.ptr, uint64(len(dst)), d.stream))
}

func (d *Device) Sync() error {
	done, err := d.bind()
	if err != nil {
		return err
	}
	defer done()
	if err := d.drv.check("cuStreamSynchronize", d.drv.CuStreamSynchronize(d.stream)); err != nil {
		return err
	}
	if err := d.drv.check("cuCtxSynchronize", d.drv.CuCtxSynchronize()); err != nil {
		return err
	}
	return d.checkAsserts()
}

// checkAsserts reads the assert flags of the kernels launched since the last check, once
// every launch has finished (Sync), and clears those set: the first failure found is the
// error. The context is bound.
func (d *Device) checkAsserts() error {
	d.mu.Lock()
	pending := d.pending
	d.pending = nil
	d.mu.Unlock()
	var first error
	var flag [jit.AssertFlagBytes]byte
	for k := range pending {
		if err := d.drv.check("cuMemcpyDtoH_v2", d.drv.CuMemcpyDtoH(unsafe.Pointer(&flag[0]), k.flag.ptr, jit.AssertFlagBytes)); err != nil {
			return err
		}
		if err := d.flagError(k, flag[:]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// flagError is the failure kernel k's flag words (read back) record, if any; the device's
// flag is then cleared for the next launches. The context is bound.
func (d *Device) flagError(k *Kernel, flag []byte) error {
	err := jit.FlagError(k.name, k.asserts, flag)
	if err == nil {
		return nil
	}
	clear(flag)
	if cerr := d.drv.check("cuMemsetD8_v2", d.drv.CuMemsetD8(k.flag.ptr, 0, jit.AssertFlagBytes)); cerr != nil {
		return cerr
	}
	return err
}

// Time runs fn (which issues work on the device) between two events on the stream and
// returns the GPU time it took.
func (d *Device) Time(fn func() error) (time.Duration, error) {
	done, err := d.bind()
	if err != nil {
		return 0, err
	}
	var start, end uintptr
	err = d.drv.check("cuEventCreate", d.drv.CuEventCreate(&start, 0))
	if err == nil {
		err = d.drv.check("cuEventCreate", d.drv.CuEventCreate(&end, 0))
	}
	if err == nil {
		err = d.drv.check("cuEventRecord", d.drv.CuEventRecord(start, d.stream))
	}
	done()
	defer func() {
		done, err := d.bind()
		if err == nil {
			if start != 0 {
				d.drv.CuEventDestroy(start)
			}
			if end != 0 {
				d.drv.CuEventDestroy(end)
			}
			done()
		}
	}()
	if err != nil {
		return 0, err
	}
	if err := fn(); err != nil {
		return 0, err
	}
	done, err = d.bind()
	if err != nil {
		return 0, err
	}
	defer done()
	if err := d.drv.check("cuEventRecord", d.drv.CuEventRecord(end, d.stream)); err != nil {
		return 0, err
	}
	if err := d.drv.check("cuEventSynchronize", d.drv.CuEventSynchronize(end)); err != nil {
		return 0, err
	}
	var ms float32
	if err := d.drv.check("cuEventElapsedTime", d.drv.CuEventElapsedTime(&ms, start, end)); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.mu.Unlock()
	done, err := d.bind()
	if err != nil {
		return err
	}
	d.drv.CuStreamSynchronize(d.stream)
	d.drv.CuStreamDestroy(d.stream)
	done()
	d.mu.Lock()
	pinned := d.pinned
	d.pinned = nil
	d.mu.Unlock()
	for _, p := range pinned {
		p.Free()
	}
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	return d.drv.check("cuDevicePrimaryCtxRelease_v2", d.drv.CuDevicePrimaryCtxRelease(d.ordinal))
}

// Kernel is a loaded PTX module's entry point.
type Kernel struct {
	dev     *Device
	name    string
	module  uintptr
	fn      uintptr
	params  []ir.Type
	threads int
	smem    int

	asserts  []jit.DeviceAssert // and their flag buffer (jit.AssertsMeta), if any
	flag     *Buffer
	flagHost jit.Pinned // where ReadAsserts copies the flag (streams.go), made at its first use
}

func (k *Kernel) Name() string { return k.name }

// Load JIT-compiles a PTX artifact with the driver; the JIT's error log is part of the error.
func (d *Device) Load(a *jit.Artifact) (jit.Kernel, error) {
	if a.Kind != ptx.ArtifactKind {
		return nil, fmt.Errorf("cuda device cannot load a %q artifact", a.Kind)
	}
	params, err := ptx.ParamTypes(a)
	if err != nil {
		return nil, err
	}
	threads, err := strconv.Atoi(a.Meta["threads"])
	if err != nil || threads <= 0 {
		return nil, fmt.Errorf("cuda: artifact %s has no thread count in its meta", a.Name)
	}
	asserts, err := jit.KernelAsserts(a)
	if err != nil {
		return nil, err
	}
	smem, _ := strconv.Atoi(a.Meta["shared_bytes"])
	if smem > d.smemMax {
		return nil, fmt.Errorf("cuda: kernel %s needs %d bytes of shared memory; %s allows %d", a.Name, smem, d.info.Name, d.smemMax)
	}
	done, err := d.bind()
	if err != nil {
		return nil, err
	}
	defer done()
	image := cBytes(string(a.Payload))
	infoLog := make([]byte, 16<<10)
	errLog := make([]byte, 16<<10)
	opts := []int32{jitInfoLogBuffer, jitInfoLogBufferSize, jitErrorLogBuffer, jitErrorLogBufferSize, jitLogVerbose}
	vals := []uintptr{uintptr(unsafe.Pointer(&infoLog[0])), uintptr(len(infoLog)), uintptr(unsafe.Pointer(&errLog[0])), uintptr(len(errLog)), 1}
	k := &Kernel{dev: d, name: a.Name, params: params, threads: threads, smem: smem, asserts: asserts}
	r := d.drv.CuModuleLoadDataEx(&k.module, unsafe.Pointer(&image[0]), uint32(len(opts)), &opts[0], &vals[0])
	runtime.KeepAlive(image)
	runtime.KeepAlive(infoLog)
	runtime.KeepAlive(errLog)
	if err := d.drv.check("cuModuleLoadDataEx", r); err != nil {
		return nil, fmt.Errorf("%w\nJIT error log:\n%s\nJIT info log:\n%s", err, cLog(errLog), cLog(infoLog))
	}
	name := cBytes(a.Name)
	if err := d.drv.check("cuModuleGetFunction", d.drv.CuModuleGetFunction(&k.fn, k.module, &name[0])); err != nil {
		d.drv.CuModuleUnload(k.module)
		return nil, fmt.Errorf("%w (entry %s)", err, a.Name)
	}
	if smem > 48<<10 {
		if err := d.drv.check("cuFuncSetAttribute", d.drv.CuFuncSetAttribute(k.fn, funcAttrMaxDynamicSmem, int32(smem))); err != nil {
			d.drv.CuModuleUnload(k.module)
			return nil, err
		}
	}
	if len(asserts) > 0 {
		k.flag = &Buffer{dt: ir.U8, n: jit.AssertFlagBytes}
		err := d.drv.check("cuMemAlloc_v2", d.drv.CuMemAlloc(&k.flag.ptr, jit.AssertFlagBytes))
		if err == nil {
			err = d.drv.check("cuMemsetD8_v2", d.drv.CuMemsetD8(k.flag.ptr, 0, jit.AssertFlagBytes))
		}
		if err != nil {
			d.drv.CuModuleUnload(k.module)
			return nil, err
		}
	}
	return k, nil
}

func cLog(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// Launch runs the kernel asynchronously on the device's stream; Sync waits for it.
func (k *Kernel) Launch(grid [3]int, args []jit.Arg) error {
	return k.launchOn(k.dev.stream, grid, args)
}

// launchOn queues the kernel on stream (the device's own, or one of NewStream's).
func (k *Kernel) launchOn(stream uintptr, grid [3]int, args []jit.Arg) error {
	for i, g := range grid {
		if g < 1 || g > math.MaxInt32 || (i > 0 && g > 65535) {
			return fmt.Errorf("kernel %s: grid dimension %d is %d, outside the GPU's limits", k.name, i, g)
		}
	}
	if len(args) != len(k.params) {
		return fmt.Errorf("kernel %s: %d arguments for %d parameters", k.name, len(args), len(k.params))
	}
	// One 8-byte cell per parameter, and one for the assert flag; kernelParams points at each.
	cells := make([]uint64, len(args)+1)
	ptrs := make([]unsafe.Pointer, len(args)+2)
	for i, t := range k.params {
		v, err := packArg(t, args[i])
		if err != nil {
			return fmt.Errorf("kernel %s: argument %d: %w", k.name, i, err)
		}
		cells[i] = v
		ptrs[i] = unsafe.Pointer(&cells[i])
	}
	if k.flag != nil {
		cells[len(args)] = k.flag.ptr
		ptrs[len(args)] = unsafe.Pointer(&cells[len(args)])
		k.dev.mu.Lock()
		if k.dev.pending == nil {
			k.dev.pending = map[*Kernel]bool{}
		}
		k.dev.pending[k] = true
		k.dev.mu.Unlock()
	}
	done, err := k.dev.bind()
	if err != nil {
		return err
	}
	defer done()
	var pp *unsafe.Pointer
	if ptrs[0] != nil {
		pp = &ptrs[0]
	}
	r := k.dev.drv.CuLaunchKernel(k.fn, uint32(grid[0]), uint32(grid[1]), uint32(grid[2]), uint32(k.threads), 1, 1, uint32(k.smem), stream, pp, nil)
	runtime.KeepAlive(cells)
	runtime.KeepAlive(ptrs)
	if err := k.dev.drv.check("cuLaunchKernel", r); err != nil {
		return fmt.Errorf("kernel %s: %w", k.name, err)
	}
	return nil
}

// packArg encodes one argument as the kernel parameter ABI of package ptx expects it, in the
// low bytes of a little-endian cell.
func packArg(t ir.Type, a jit.Arg) (uint64, error) {
	if t.Ptr {
		if a.Buf == nil {
			return 0, fmt.Errorf("pointer parameter %s needs a buffer", t)
		}
		b, ok := a.Buf.(*Buffer)
		if !ok {
			return 0, fmt.Errorf("a %T is not a CUDA buffer", a.Buf)
		}
		if b.dt != t.Elem {
			return 0, fmt.Errorf("parameter is %s but the buffer holds %s", t, b.dt)
		}
		if a.Offset < 0 || a.Offset > b.n {
			return 0, fmt.Errorf("offset %d outside the buffer of %d elements", a.Offset, b.n)
		}
		return b.ptr + uint64(a.Offset*b.dt.Size()), nil
	}
	if a.Buf != nil {
		return 0, fmt.Errorf("scalar parameter %s given a buffer", t)
	}
	d := t.Elem
	var iv int64
	var fv float64
	isFloat := false
	switch v := a.Scalar.(type) {
	case bool:
		if d != ir.I1 {
			return 0, fmt.Errorf("a bool for a %s parameter", t)
		}
		if v {
			return 1, nil
		}
		return 0, nil
	case int:
		iv = int64(v)
	case int32:
		iv = int64(v)
	case int64:
		iv = v
	case float32:
		fv, isFloat = float64(v), true
	case float64:
		fv, isFloat = v, true
	default:
		return 0, fmt.Errorf("a %T for a %s parameter (want int64, float64 or bool)", a.Scalar, t)
	}
	if d.IsFloat() {
		if !isFloat {
			fv = float64(iv)
		}
		switch d {
		case ir.F32:
			return uint64(math.Float32bits(float32(fv))), nil
		case ir.F64:
			return math.Float64bits(fv), nil
		case ir.F16:
			return uint64(half.F32ToF16(float32(fv))), nil
		case ir.BF16:
			return uint64(half.F32ToBF16(float32(fv))), nil
		}
	}
	if isFloat {
		return 0, fmt.Errorf("a float for a %s parameter", t)
	}
	if d == ir.I1 {
		return 0, fmt.Errorf("an int for a %s parameter", t)
	}
	if !fits(d, iv) {
		return 0, fmt.Errorf("%d does not fit in %s", iv, d)
	}
	if d.Bits() <= 32 {
		return uint64(uint32(iv)), nil
	}
	return uint64(iv), nil
}

func fits(d ir.DType, v int64) bool {
	switch d {
	case ir.I8:
		return v == int64(int8(v))
	case ir.I16:
		return v == int64(int16(v))
	case ir.I32:
		return v == int64(int32(v))
	case ir.U8:
		return v == int64(uint8(v))
	case ir.U16:
		return v == int64(uint16(v))
	case ir.U32:
		return v == int64(uint32(v))
	case ir.U64:
		return true
	}
	return true
}
