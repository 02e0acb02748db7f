// Package device picks a jit.Device by name, so the CLI and the benchmarks choose devices in
// one place: "cpu" (the reference executor), "cuda" (GPU 0 through the run-time-bound driver)
// or "auto" (CUDA when a GPU is usable, else the CPU, with the reason).
package device
