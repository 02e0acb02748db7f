// Package conformance is the suite every registered backend runs (like wazero's engine
// tests): Run(t, name) opens the backend called name through the registry and checks, each
// against an independent reference,
//   - the kernel language: kernels from triton/testdata/kernels (masked element-wise, a
//     persistent row loop with reductions, tl.dot in a masked K loop with grouped tiles and
//     a static if) against values computed here in Go;
//   - the lowering fixtures: every example graph under examples/ that carries PyTorch's
//     outputs (expected.safetensors), run through the public API on the backend;
//   - dynamic batch: a model loaded at one batch size run at others, against the rows of
//     PyTorch's outputs they give;
//   - model ranges: models [lo, hi) of a graph against the same rows of the full run.
//
// Only tests import it: jit/device (cpu, and cuda where a GPU opens) and the example
// out-of-tree backend in examples/backend.
package conformance
