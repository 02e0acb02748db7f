// Command libwidejit is the widejit shared library: built with
//
//	go build -buildmode=c-shared -o libwidejit.so ./cmd/libwidejit
//
// (cgo and a C compiler), it exposes the public API (package widejit: Load, LoadMemory,
// Model.RunInto, Explain, KernelTimes, Close) to C through a small ABI (cabi.go; go build
// writes its header, libwidejit.h, beside the library), which the Python package
// (python/widejit) calls with ctypes to run a model inside the calling process. The
// CLI's static CGO_ENABLED=0 build is unaffected: without cgo this package builds a program
// that only says how to build the library.
//
// The ABI: a loaded model is an int64 handle; every call returns 0 or the exit code the CLI
// would give for the same error (1 the work failed, 2 usage, 3 an input file) and then sets
// *err to the CLI's message ("widejit: ..."), which the caller frees with widejit_free, as it
// does every string returned. Tensors cross as pointers to caller-owned memory with a dtype
// name (graph.json's: float32, int64, ...) and a shape: inputs are read in place and outputs
// written in place on the CPU. Runs of one handle are serialised; a Go panic inside a call
// becomes an error, never a crash of the caller.
package main
