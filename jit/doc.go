// Package jit owns the compile pipeline and the backend contract: kernel text plus a Spec
// becomes tile IR (package triton), a Target turns IR into an Artifact (CPU: encoded IR; CUDA:
// PTX), every artifact goes through the persistent store (package cache), and a Device
// loads artifacts as Kernels and owns buffers. A Device describes itself with DeviceInfo and
// its Capabilities (capabilities.go), which lowering, the runner, the autotuner and plugins
// read instead of the backend's name. A backend's options are part of every kernel key
// (CompilerOptions.BackendOptions).
//
// Backends live in subpackages: jit/cpu (the reference executor, bounds-checked), jit/ptx
// (PTX code generation) and jit/cuda (the CUDA driver, bound at run time); jit/device is the
// registry that names them (and out-of-tree ones) and opens their devices.
package jit
