// Package cuda is widejit's NVIDIA GPU device: the CUDA driver API bound at run time from
// libcuda.so.1 with purego (no cgo, so one static binary runs with or without a GPU), the
// device query, the primary context, a stream, memory (alloc, sync and async copies), events
// for timing, and PTX modules loaded through the driver JIT (cuModuleLoadDataEx) with its
// error log captured into the returned error. Kernels come from package ptx; Device.Target
// is the ptx.Target for the GPU's architecture (sm_90 for 9.x and newer, sm_80 for 8.x).
// Device is also a jit.StreamDevice (streams.go): more streams, events between them, and
// pinned host memory for copies that overlap kernels. A kernel with device asserts gets the
// flag buffer jit.AssertsMeta describes; Sync reads the flags of the kernels launched since the
// last check and reports a failure, as does the check ReadAsserts returns for a run over
// streams (jit.AssertReader).
//
// Two stand-ins for libcuda serve tests without a GPU: testdata/fakecuda.c, a C library that
// checks the binding's calling convention through purego, and the stub driver of package
// cudatest, written in Go and reached through OpenDriver (the entry-point table is
// internal/drv, visible only under jit/cuda), which multi-stream schedules are tested against.
//
// CUDA contexts are current per OS thread, so every call locks its goroutine's thread and
// makes the device's context current first.
package cuda
