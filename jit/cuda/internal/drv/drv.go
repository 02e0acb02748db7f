// Package drv is the CUDA driver API as jit/cuda calls it: the entry points as a table of
// Go functions (API), filled from libcuda.so.1 by jit/cuda or by the test driver in
// jit/cuda/cudatest, which only packages under jit/cuda can see.
package drv

import "unsafe"

// Result is a CUresult.
type Result int32

// Device attributes and results that both drivers name (cuda.h).
const (
	AttrMaxThreadsPerBlock     = 1
	AttrMultiprocessorCount    = 16
	AttrComputeCapabilityMajor = 75
	AttrComputeCapabilityMinor = 76
	AttrMaxSharedPerBlockOptin = 97

	ErrNoDevice = 100 // CUDA_ERROR_NO_DEVICE

	StreamNonBlocking  = 1 // CU_STREAM_NON_BLOCKING: no implicit order with the legacy default stream
	EventDisableTiming = 2 // CU_EVENT_DISABLE_TIMING
)

// API holds the driver's entry points. Versioned names (_v2) are the ones cuda.h maps the
// plain names to.
type API struct {
	CuInit                    func(flags uint32) Result
	CuDriverGetVersion        func(v *int32) Result
	CuGetErrorName            func(r Result, s **byte) Result
	CuGetErrorString          func(r Result, s **byte) Result
	CuDeviceGetCount          func(n *int32) Result
	CuDeviceGet               func(d *int32, ordinal int32) Result
	CuDeviceGetName           func(name *byte, n int32, d int32) Result
	CuDeviceGetAttribute      func(v *int32, attr int32, d int32) Result
	CuDeviceTotalMem          func(bytes *uint64, d int32) Result
	CuDevicePrimaryCtxRetain  func(ctx *uintptr, d int32) Result
	CuDevicePrimaryCtxRelease func(d int32) Result
	CuCtxSetCurrent           func(ctx uintptr) Result
	CuCtxSynchronize          func() Result
	CuModuleLoadDataEx        func(mod *uintptr, image unsafe.Pointer, n uint32, opts *int32, vals *uintptr) Result
	CuModuleUnload            func(mod uintptr) Result
	CuModuleGetFunction       func(f *uintptr, mod uintptr, name *byte) Result
	CuFuncSetAttribute        func(f uintptr, attr int32, v int32) Result
	CuLaunchKernel            func(f uintptr, gx, gy, gz, bx, by, bz, smem uint32, stream uintptr, params *unsafe.Pointer, extra *unsafe.Pointer) Result
	CuMemAlloc                func(p *uint64, size uint64) Result
	CuMemFree                 func(p uint64) Result
	CuMemcpyHtoD              func(dst uint64, src unsafe.Pointer, n uint64) Result
	CuMemcpyDtoH              func(dst unsafe.Pointer, src uint64, n uint64) Result
	CuMemcpyDtoD              func(dst, src uint64, n uint64) Result
	CuMemcpyHtoDAsync         func(dst uint64, src unsafe.Pointer, n uint64, s uintptr) Result
	CuMemcpyDtoHAsync         func(dst unsafe.Pointer, src uint64, n uint64, s uintptr) Result
	CuMemsetD8                func(dst uint64, v uint8, n uint64) Result
	CuStreamCreate            func(s *uintptr, flags uint32) Result
	CuStreamDestroy           func(s uintptr) Result
	CuStreamSynchronize       func(s uintptr) Result
	CuStreamWaitEvent         func(s uintptr, e uintptr, flags uint32) Result
	CuMemHostAlloc            func(p *unsafe.Pointer, size uint64, flags uint32) Result
	CuMemFreeHost             func(p unsafe.Pointer) Result
	CuEventCreate             func(e *uintptr, flags uint32) Result
	CuEventRecord             func(e uintptr, s uintptr) Result
	CuEventSynchronize        func(e uintptr) Result
	CuEventElapsedTime        func(ms *float32, start, end uintptr) Result
	CuEventDestroy            func(e uintptr) Result
}
