// Package device is the backend registry: every backend, built in (cpu, the reference
// executor; cuda, GPUs through the run-time-bound driver) or out of tree
// (widejit.RegisterBackend), is registered by name through Register, and the CLI, the public
// API and the benchmarks open devices by that name ("cuda", "cpu:1"), or by "auto" (the GPU
// when the CUDA driver finds one, else the CPU, with the reason). Only this package knows
// backends by name: everything downstream reads a device's jit.Capabilities.
package device
