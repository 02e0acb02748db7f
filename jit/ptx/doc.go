// Package ptx generates PTX (ISA 7.8 for sm_80 and sm_90; ISA 8.0 for sm_90a, Hopper only,
// with wgmma) from widejit's tile IR. It needs no GPU: jit/cuda loads its artifacts through
// the driver JIT, and tests check every generated kernel with NVIDIA's ptxas.
//
// Layout. A CTA runs 32*num_warps threads (T). Every tile of n elements is distributed by its
// row-major element index alone, whatever its shape or dtype, so element-wise ops, casts,
// reshapes and expand_dims never move data:
//   - n >= T: each thread holds R = n/T elements in runs of V contiguous elements: slot r of
//     thread t holds element (r/V)*T*V + t*V + r%V. V is one per kernel: 1 (element r*T + t,
//     so a warp's scalar loads of a row coalesce and its shared-memory accesses hit distinct
//     banks) unless the contiguity analysis (contiguity.go) proves that some global load or
//     store can use ld/st.global.v2/.v4; then V is that width (2, 4, or 8 for 16-bit types,
//     at most 16 bytes: eight fp16/bf16 move as a .v4.b32 of packed pairs), capped by R. A
//     vector access needs, along the fastest dim, a pointer tile contiguous over the run and
//     aligned to the vector's bytes, and a mask constant over it; the facts come from arange,
//     constants, expand_dims/broadcast and the specialization of jit.Spec: Align16 (16-byte
//     aligned pointers, ints divisible by 16) and EqualTo1 (ints equal to 1, compiled as the
//     constant 1, so a unit stride keeps an arange contiguous and ptxas folds it away), and
//     survive loops (fixed point). Without such hints nothing is vectorized and V is 1.
//     An element-wise result proven constant over each run (a mask cols < N with N divisible
//     by 16) is computed once per run and copied to the run's other slots.
//   - n < T (and scalars, n = 1): thread t holds element t mod n; elements are replicated.
//     Stores from replicas write the same value twice (harmless); atomics run only in the
//     owner thread (t < n), which shares the old value through shared memory.
//
// Scalars and splats share one register across slots. Control flow is uniform across the CTA
// (conditions are scalars), so barriers inside loops and branches are safe.
//
// Ops that move elements between threads stage their operands in dynamic shared memory
// (bar.sync, st.shared, bar.sync, ld.shared): broadcast (except from one element or between
// equal counts), permute, reduce and dot. Two exceptions spare most of a K loop's barriers
// (remat.go): a broadcast of a tile computed from indices alone (aranges, scalars, splats,
// integer arithmetic, comparisons, pointer offsets: row/column indices, masks, pointer tiles)
// is recomputed from each element's coordinates in the consumer's layout, and a permute read
// only by a dot (tl.trans) is written to the dot's staging area at its permuted positions;
// for a 2-D tensor-core dot's B, the untransposed tile is staged as it stands (B^T, 16-byte
// stores) and read with ldmatrix without .trans. A reduction with at least as many outputs as
// threads (or a short axis) folds each output sequentially in the thread that holds it; with
// fewer outputs, the axis is split into chunks = min(threads/outputs, K/4) chunks of
// consecutive elements, one thread per (output, chunk) folds its chunk left to right, the
// chunks of a warp are combined with butterfly shuffles (shfl.sync.bfly: chunks j and j^s for
// s = 1, 2, 4, ..., the lower chunk as the accumulator), and the warps' results, written to
// shared memory once, are folded left to right by every thread (64-bit values use a tree in
// shared memory instead). This tree is fixed by the shapes alone, so results are
// deterministic (reduce_test.go checks it bit for bit). When a whole tile reduces to one
// value and each thread's chunk is the run of elements it holds (16-byte runs: 1024 fp16 or
// 512 fp32 values over 128 threads), the chunks fold in registers and the tile is not staged.
// Sums skip the lower/upper selection (addition commutes exactly). Combination stays in index
// order, so argmax keeps the first index; custom combine regions are assumed associative, as
// in Triton.
//
// Dots. Tensor cores where eligible (mma.go): fp16/bf16 operands with
// mma.sync.m16n8k16.row.col.f32, fp32 operands whose precision is TF32 (Triton's default)
// with mma.sync.m16n8k8 .tf32 (fp32 operands passed as they stand: the tensor cores ignore
// their low 13 mantissa bits, i.e. truncate them to TF32, as Triton's do), when M, N, K are
// multiples of 16, 8 and the instruction's K. A, B and the accumulator (as fp32) are staged
// row-major in shared memory; the output is cut into 16x8 tiles (batch, M/16, N/8) dealt
// round-robin to the warps; each warp loads its C fragment and, per K step, its A and B
// fragments (ldmatrix.x4 for A, ldmatrix.x2.trans for B, which hand each lane the PTX ISA's
// fragment layout, groupID = lane>>2, threadID_in_group = lane%4; a TF32 element is two b16
// halves to ldmatrix, and TF32 B not staged as B^T is read per element), accumulates in fp32
// registers and stores D over C; after a
// barrier every thread reads its elements back in the blocked layout. Every warp runs the
// same number of tiles so mma.sync stays warp-uniform (a warp past the last tile recomputes
// one and does not store it). A K loop's accumulator (a loop-carried tile used only as the
// accumulator of such a dot, acc = tl.dot(a, b, acc), or acc += tl.dot(a, b), and yielded)
// stays in registers as the warps' C/D fragments for the whole loop, as Triton keeps it in
// the MMA layout (mmaloop.go): each step stages only A and B, and the accumulator crosses
// shared memory once before the loop and once after it. Everything else (IEEE fp32, TF32x3, int8, odd shapes, or
// Target.FMADots) computes each output element in the thread that holds it with fp32 FMAs
// over K from shared memory (int8: 32-bit integer multiply-adds). The kernel's dynamic
// shared memory is the largest staging area (Meta "shared_bytes"); the launch passes it.
//
// Numerics. fp16/bf16 values live in 16-bit registers and compute in fp32 with one rounding
// per op. exp/exp2/log/log2/sin/cos use the .approx instructions as Triton does (exp and log
// via ex2/lg2 with log2(e) and ln(2) scaling), rsqrt.approx for fp32, IEEE sqrt and division
// (sqrt.rn, div.rn), erf a Taylor series below 1 and Abramowitz-Stegun 7.1.26 above. fp64
// transcendentals go through fp32. Float add/sub/mul use .rn so ptxas does not contract
// them into FMAs. TF32 dots truncate their inputs to 10 mantissa bits (each product up to
// 2^-9 of itself off, toward zero; tests allow 1e-2); fp16/bf16 tensor-core dots differ from the FMA path
// only in summation order.
//
// Codegen verifies its input (ir.Verify) and relies on triton/ir's type rules from there on;
// what it refuses itself are the limits of the target (tile sizes, atomics, print).
//
// A load read only by a dot is copied from global to shared memory by the dot with cp.async
// (async.go) instead of through registers. A K loop whose accumulator stays in registers and
// whose dot operands are both such copies (fp16, bf16 or TF32) is software-pipelined num_stages
// deep (jit.Spec.NumStages, a tunable of the lowering's GEMM kernels; else the kernel's
// num_stages constexpr; else 3, Triton's default; fewer where the ring would pass 48 KiB of
// shared memory, 195 KiB on sm_90a, whose launches opt into more; pipeline.go): a ring of
// staging buffers, cp.async.commit_group per step and cp.async.wait_group, one barrier per
// step. On sm_90a such a loop runs on wgmma.mma_async instead (wgmma.go) when its tile has a
// multiple of 64 rows per warpgroup and its staged rows (A's K; B^T's K, as a Linear's
// weight, or B's N; TF32: K-major only, A and B^T) are 32, 64 or 128 bytes: each
// warpgroup's 64xN blocks of fp32 accumulators in registers, A and B read from the ring
// through matrix descriptors (B^T K-major, B MN-major), the ring written by cp.async in the
// swizzled layout its rows' length gives, fence.proxy.async before the barrier.
//
// The mma.sync staging areas are swizzled as Triton's shared layouts where their rows are
// 32, 64 or 128 bytes (mma.go's mmaShape.swA; docs/gpu-layouts.md), so ldmatrix's phases are
// free of bank conflicts (the emulator measures them: ptxemu.RunBanks).
//
// Device asserts (assert.go) write their failure to a flag buffer passed after the kernel's
// parameters (jit.AssertsMeta), which the GPU device reads back when it synchronises.
//
// Not yet done: tl.device_print (rejected with a clear error); swizzles for rows of other
// lengths; layouts as Triton has them (rematerialization covers index-only
// broadcasts; docs/gpu-layouts.md says which layout each tile value gets); wgmma for dots
// outside pipelined K loops, for tiles under 64 rows, for rows of other lengths and for TF32
// with B staged [K, N] (they keep mma.sync on sm_90a); TMA. A cc 9.0 device loads sm_90a PTX
// (ArchForCapability), checked on an H100, unless its driver predates CUDA 12 (FallbackArch).
//
// Tests: every test kernel and every kernel of the examples' plans is assembled with ptxas
// for sm_80 and sm_90; golden PTX for three small kernels; and a PTX emulator (package
// ptxemu, test support) runs the generated kernels, and whole example plans, and compares
// them with the CPU backend and with PyTorch's outputs.
package ptx
