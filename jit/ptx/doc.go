// Package ptx generates PTX (ISA 7.8, sm_80 and sm_90) from widejit's tile IR. It needs no
// GPU: jit/cuda loads its artifacts through the driver JIT, and tests check every generated
// kernel with NVIDIA's ptxas.
//
// Layout. A CTA runs 32*num_warps threads (T). Every tile of n elements is distributed by its
// row-major element index alone, whatever its shape or dtype, so element-wise ops, casts,
// reshapes and expand_dims never move data:
//   - n >= T: each thread holds R = n/T elements; slot r of thread t holds element r*T + t,
//     so a warp's loads of a contiguous row touch consecutive addresses (coalesced) and its
//     shared-memory accesses hit distinct banks. (The code is written for runs of V
//     contiguous elements per thread, element (r/V)*T*V + t*V + r%V, to vectorize later;
//     V is 1 until contiguity analysis proves wider accesses safe.)
//   - n < T (and scalars, n = 1): thread t holds element t mod n; elements are replicated.
//     Stores from replicas write the same value twice (harmless); atomics run only in the
//     owner thread (t < n), which shares the old value through shared memory.
//
// Scalars and splats share one register across slots. Control flow is uniform across the CTA
// (conditions are scalars), so barriers inside loops and branches are safe.
//
// Ops that move elements between threads stage their operands in dynamic shared memory
// (bar.sync, st.shared, bar.sync, ld.shared): broadcast (except from one element or between
// equal counts), permute, reduce and dot. A reduction with at least as many outputs as
// threads (or a short axis) folds each output sequentially in the thread that holds it; with
// fewer outputs, the axis is split into chunks, one thread per (output, chunk) folds its
// chunk, the chunks of a warp are combined with butterfly shuffles (shfl.sync.bfly, the
// lower chunk as the accumulator), and the warps' results through shared memory (64-bit
// values use a tree in shared memory instead). Combination stays in index order, so argmax
// keeps the first index; custom combine regions are assumed associative, as in Triton. A dot computes each
// output element in the thread that holds it with fp32 FMAs over K, reading A and B from
// shared memory (int8: 32-bit integer multiply-adds). The kernel's dynamic shared memory is
// the largest staging area (Meta "shared_bytes"); the launch passes it.
//
// Numerics. fp16/bf16 values live in 16-bit registers and compute in fp32 with one rounding
// per op. exp/exp2/log/log2/sin/cos use the .approx instructions as Triton does (exp and log
// via ex2/lg2 with log2(e) and ln(2) scaling), rsqrt.approx for fp32, IEEE sqrt and division
// (sqrt.rn, div.rn), erf a Taylor series below 1 and Abramowitz-Stegun 7.1.26 above. fp64
// transcendentals go through fp32. Float add/sub/mul use .rn so ptxas does not contract
// them into FMAs. tl.dot computes in full fp32 even when TF32 is allowed.
//
// Not yet done: vectorized global access (ld.global.v4 under Align16 and contiguity
// analysis), mma.sync tensor-core
// dots (fp16/bf16, TF32) and tl.device_print (rejected with a clear error).
//
// Tests: every test kernel and every kernel of the examples' plans is assembled with ptxas
// for sm_80 and sm_90; golden PTX for three small kernels; and a PTX emulator (test code)
// runs the generated kernels, and whole example plans, and compares them with the CPU
// backend and with PyTorch's outputs.
package ptx
