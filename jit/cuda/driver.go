package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/widejit/widejit/jit/cuda/internal/drv"
)

// result is a CUresult.
type result = drv.Result

// Driver API constants used here (cuda.h).
const (
	attrMaxThreadsPerBlock     = drv.AttrMaxThreadsPerBlock
	attrMultiprocessorCount    = drv.AttrMultiprocessorCount
	attrComputeCapabilityMajor = drv.AttrComputeCapabilityMajor
	attrComputeCapabilityMinor = drv.AttrComputeCapabilityMinor
	attrMaxSharedPerBlockOptin = drv.AttrMaxSharedPerBlockOptin

	jitInfoLogBuffer       = 3
	jitInfoLogBufferSize   = 4
	jitErrorLogBuffer      = 5
	jitErrorLogBufferSize  = 6
	jitLogVerbose          = 12
	funcAttrMaxDynamicSmem = 8

	streamNonBlocking  = drv.StreamNonBlocking
	eventDisableTiming = drv.EventDisableTiming
	errNoDevice        = drv.ErrNoDevice
)

// driver is libcuda's entry points, bound at run time so the binary needs no cgo (or a test
// driver's: jit/cuda/cudatest), and how their results become errors.
type driver struct{ *drv.API }

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
		h, err := dlopenLocal(n)
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
	d = &driver{&drv.API{}}
	bind := func(fptr any, name string) { purego.RegisterLibFunc(fptr, lib, name) }
	bind(&d.CuInit, "cuInit")
	bind(&d.CuDriverGetVersion, "cuDriverGetVersion")
	bind(&d.CuGetErrorName, "cuGetErrorName")
	bind(&d.CuGetErrorString, "cuGetErrorString")
	bind(&d.CuDeviceGetCount, "cuDeviceGetCount")
	bind(&d.CuDeviceGet, "cuDeviceGet")
	bind(&d.CuDeviceGetName, "cuDeviceGetName")
	bind(&d.CuDeviceGetAttribute, "cuDeviceGetAttribute")
	bind(&d.CuDeviceTotalMem, "cuDeviceTotalMem_v2")
	bind(&d.CuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
	bind(&d.CuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")
	bind(&d.CuCtxSetCurrent, "cuCtxSetCurrent")
	bind(&d.CuCtxSynchronize, "cuCtxSynchronize")
	bind(&d.CuModuleLoadDataEx, "cuModuleLoadDataEx")
	bind(&d.CuModuleUnload, "cuModuleUnload")
	bind(&d.CuModuleGetFunction, "cuModuleGetFunction")
	bind(&d.CuFuncSetAttribute, "cuFuncSetAttribute")
	bind(&d.CuLaunchKernel, "cuLaunchKernel")
	bind(&d.CuMemAlloc, "cuMemAlloc_v2")
	bind(&d.CuMemFree, "cuMemFree_v2")
	bind(&d.CuMemcpyHtoD, "cuMemcpyHtoD_v2")
	bind(&d.CuMemcpyDtoH, "cuMemcpyDtoH_v2")
	bind(&d.CuMemcpyDtoD, "cuMemcpyDtoD_v2")
	bind(&d.CuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")
	bind(&d.CuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")
	bind(&d.CuMemsetD8, "cuMemsetD8_v2")
	bind(&d.CuStreamCreate, "cuStreamCreate")
	bind(&d.CuStreamDestroy, "cuStreamDestroy_v2")
	bind(&d.CuStreamSynchronize, "cuStreamSynchronize")
	bind(&d.CuStreamWaitEvent, "cuStreamWaitEvent")
	bind(&d.CuMemHostAlloc, "cuMemHostAlloc")
	bind(&d.CuMemFreeHost, "cuMemFreeHost")
	bind(&d.CuEventCreate, "cuEventCreate")
	bind(&d.CuEventRecord, "cuEventRecord")
	bind(&d.CuEventSynchronize, "cuEventSynchronize")
	bind(&d.CuEventElapsedTime, "cuEventElapsedTime")
	bind(&d.CuEventDestroy, "cuEventDestroy_v2")
	if err := d.check("cuInit", d.CuInit(0)); err != nil {
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
	if d.CuGetErrorName != nil && d.CuGetErrorName(r, &s) == 0 && s != nil {
		e.Name = cString(s)
	}
	s = nil
	if d.CuGetErrorString != nil && d.CuGetErrorString(r, &s) == 0 && s != nil {
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
