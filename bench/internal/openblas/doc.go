// Package openblas picks the OpenBLAS core type for this CPU, for the benchmarks' PyTorch and
// numpy peers. OpenBLAS detects the CPU by model number, and a model newer than its release
// falls back to an old generic core: 0.3.21 runs Emerald Rapids on Prescott's SSE3 kernels, a
// quarter of its speed. A peer on such kernels is not the baseline a benchmark claims, so the
// peers are rerun with OPENBLAS_CORETYPE naming the newest core the CPU's features allow.
package openblas
