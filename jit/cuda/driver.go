package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// result is a CUresult.
type result int32

// Driver API constants used here (cuda.h).
const (
	attrMaxThreadsPerBlock     = 1
	attrMultiprocessorCount    = 16
	attrComputeCapabilityMajor = 75
	attrComputeCapabilityMinor = 76
	attrMaxSharedPerBlockOptin = 97

	jitInfoLogBuffer       = 3
	jitInfoLogBufferSize   = 4
	jitErrorLogBuffer      = 5
	jitErrorLogBufferSize  = 6
	jitLogVerbose          = 12
	funcAttrMaxDynamicSmem = 8

	streamNonBlocking  = 1 // CU_STREAM_NON_BLOCKING: no implicit order with the legacy default stream
	eventDisableTiming = 2 // CU_EVENT_DISABLE_TIMING
	errNoDevice        = 100
)

// driver holds the entry points of libcuda, bound at run time so the binary needs no cgo.
// Versioned names (_v2) are the ones cuda.h maps the plain names to.
type driver struct {
	cuInit                    func(flags uint32) result
	cuDriverGetVersion        func(v *int32) result
	cuGetErrorName            func(r result, s **byte) result
	cuGetErrorString          func(r result, s **byte) result
	cuDeviceGetCount          func(n *int32) result
	cuDeviceGet               func(d *int32, ordinal int32) result
	cuDeviceGetName           func(name *byte, n int32, d int32) result
	cuDeviceGetAttribute      func(v *int32, attr int32, d int32) result
	cuDeviceTotalMem          func(bytes *uint64, d int32) result
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, d int32) result
	cuDevicePrimaryCtxRelease func(d int32) result
	cuCtxSetCurrent           func(ctx uintptr) result
	cuCtxSynchronize          func() result
	cuModuleLoadDataEx        func(mod *uintptr, image unsafe.Pointer, n uint32, opts *int32, vals *uintptr) result
	cuModuleUnload            func(mod uintptr) result
	cuModuleGetFunction       func(f *uintptr, mod uintptr, name *byte) result
	cuFuncSetAttribute        func(f uintptr, attr int32, v int32) result
	cuLaunchKernel            func(f uintptr, gx, gy, gz, bx, by, bz, smem uint32, stream uintptr, params *unsafe.Pointer, extra *unsafe.Pointer) result
	cuMemAlloc                func(p *uint64, size uint64) result
	cuMemFree                 func(p uint64) result
	cuMemcpyHtoD              func(dst uint64, src unsafe.Pointer, n uint64) result
	cuMemcpyDtoH              func(dst unsafe.Pointer, src uint64, n uint64) result
	cuMemcpyDtoD              func(dst, src uint64, n uint64) result
	cuMemcpyHtoDAsync         func(dst uint64, src unsafe.Pointer, n uint64, s uintptr) result
	cuMemcpyDtoHAsync         func(dst unsafe.Pointer, src uint64, n uint64, s uintptr) result
	cuMemsetD8                func(dst uint64, v uint8, n uint64) result
	cuStreamCreate            func(s *uintptr, flags uint32) result
	cuStreamDestroy           func(s uintptr) result
	cuStreamSynchronize       func(s uintptr) result
	cuStreamWaitEvent         func(s uintptr, e uintptr, flags uint32) result
	cuMemHostAlloc            func(p *unsafe.Pointer, size uint64, flags uint32) result
	cuMemFreeHost             func(p unsafe.Pointer) result
	cuEventCreate             func(e *uintptr, flags uint32) result
	cuEventRecord             func(e uintptr, s uintptr) result
	cuEventSynchronize        func(e uintptr) result
	cuEventElapsedTime        func(ms *float32, start, end uintptr) result
	cuEventDestroy            func(e uintptr) result
}

// libraryNames are tried in order; a test swaps them to check the failure path.
var libraryNames = []string{"libcuda.so.1"}

var (
	loadOnce sync.Once
	loaded   *driver
	loadErr  error
)

// load binds libcuda once per process and runs cuInit.
func load() (*driver, error) {
	loadOnce.Do(func() { loaded, loadErr = loadFrom(libraryNames) })
	return loaded, loadErr
}

func loadFrom(names []string) (d *driver, err error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("cuda: the CUDA backend supports linux only (this is %s)", runtime.GOOS)
	}
	var lib uintptr
	var reasons []string
	for _, n := range names {
		// RTLD_LOCAL: every symbol is looked up through this handle, and a global libcuda
		// would take over the calls of another library loaded later (the tests' fake driver
		// called the real driver's functions on a GPU machine).
		h, err := purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err == nil {
			lib = h
			break
		}
		reasons = append(reasons, err.Error())
	}
	if lib == 0 {
		return nil, fmt.Errorf("cuda: %s not found (no NVIDIA driver): %s", strings.Join(names, ", "), strings.Join(reasons, "; "))
	}
	// RegisterLibFunc panics on a missing symbol (a driver too old for these entry points).
	defer func() {
		if r := recover(); r != nil {
			d, err = nil, fmt.Errorf("cuda: libcuda.so.1 lacks an entry point widejit needs (driver too old?): %v", r)
		}
	}()
	d = &driver{}
	bind := func(fptr any, name string) { purego.RegisterLibFunc(fptr, lib, name) }
	bind(&d.cuInit, "cuInit")
	bind(&d.cuDriverGetVersion, "cuDriverGetVersion")
	bind(&d.cuGetErrorName, "cuGetErrorName")
	bind(&d.cuGetErrorString, "cuGetErrorString")
	bind(&d.cuDeviceGetCount, "cuDeviceGetCount")
	bind(&d.cuDeviceGet, "cuDeviceGet")
	bind(&d.cuDeviceGetName, "cuDeviceGetName")
	bind(&d.cuDeviceGetAttribute, "cuDeviceGetAttribute")
	bind(&d.cuDeviceTotalMem, "cuDeviceTotalMem_v2")
	bind(&d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
	bind(&d.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")
	bind(&d.cuCtxSetCurrent, "cuCtxSetCurrent")
	bind(&d.cuCtxSynchronize, "cuCtxSynchronize")
	bind(&d.cuModuleLoadDataEx, "cuModuleLoadDataEx")
	bind(&d.cuModuleUnload, "cuModuleUnload")
	bind(&d.cuModuleGetFunction, "cuModuleGetFunction")
	bind(&d.cuFuncSetAttribute, "cuFuncSetAttribute")
	bind(&d.cuLaunchKernel, "cuLaunchKernel")
	bind(&d.cuMemAlloc, "cuMemAlloc_v2")
	bind(&d.cuMemFree, "cuMemFree_v2")
	bind(&d.cuMemcpyHtoD, "cuMemcpyHtoD_v2")
	bind(&d.cuMemcpyDtoH, "cuMemcpyDtoH_v2")
	bind(&d.cuMemcpyDtoD, "cuMemcpyDtoD_v2")
	bind(&d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")
	bind(&d.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")
	bind(&d.cuMemsetD8, "cuMemsetD8_v2")
	bind(&d.cuStreamCreate, "cuStreamCreate")
	bind(&d.cuStreamDestroy, "cuStreamDestroy_v2")
	bind(&d.cuStreamSynchronize, "cuStreamSynchronize")
	bind(&d.cuStreamWaitEvent, "cuStreamWaitEvent")
	bind(&d.cuMemHostAlloc, "cuMemHostAlloc")
	bind(&d.cuMemFreeHost, "cuMemFreeHost")
	bind(&d.cuEventCreate, "cuEventCreate")
	bind(&d.cuEventRecord, "cuEventRecord")
	bind(&d.cuEventSynchronize, "cuEventSynchronize")
	bind(&d.cuEventElapsedTime, "cuEventElapsedTime")
	bind(&d.cuEventDestroy, "cuEventDestroy_v2")
	if err := d.check("cuInit", d.cuInit(0)); err != nil {
		return nil, err
	}
	return d, nil
}

// Error is a failed driver call.
type Error struct {
	Call string
	Code int
	Name string // CUDA_ERROR_...
	Msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("cuda: %s: %s (%d): %s", e.Call, e.Name, e.Code, e.Msg)
}

// ErrNoDevice is wrapped by errors when the driver loads but sees no GPU.
var ErrNoDevice = errors.New("no CUDA device")

func (d *driver) check(call string, r result) error {
	if r == 0 {
		return nil
	}
	e := &Error{Call: call, Code: int(r), Name: "CUDA_ERROR_UNKNOWN", Msg: "unknown error"}
	var s *byte
	if d.cuGetErrorName != nil && d.cuGetErrorName(r, &s) == 0 && s != nil {
		e.Name = cString(s)
	}
	s = nil
	if d.cuGetErrorString != nil && d.cuGetErrorString(r, &s) == 0 && s != nil {
		e.Msg = cString(s)
	}
	if r == errNoDevice {
		return fmt.Errorf("%w: %v", ErrNoDevice, e)
	}
	return e
}

// cString copies a NUL-terminated C string owned by the driver.
func cString(p *byte) string {
	var b []byte
	for ptr := unsafe.Pointer(p); *(*byte)(ptr) != 0; ptr = unsafe.Add(ptr, 1) {
		b = append(b, *(*byte)(ptr))
	}
	return string(b)
}

func cBytes(s string) []byte { return append([]byte(s), 0) }
