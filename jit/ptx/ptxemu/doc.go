// Package ptxemu is a small emulator for the PTX subset package ptx emits, test support
// shared by the backends' tests (not compiled into widejit), so tests run generated kernels
// without a GPU and compare their results with the CPU backend and PyTorch. It runs each
// CTA's threads one after another up to each bar.sync, checks every global and shared access
// against its allocation, and models .approx instructions with exact math (the tolerances of
// the comparisons cover the hardware's approximation error). A cp.async copy lands only at the
// cp.async.wait_group or wait_all that covers its commit group, so a pipeline that reads a
// buffer before waiting for it reads stale data, and a thread that ends with copies in flight
// is an error. Hopper's wgmma (wgmma.go) runs per warpgroup: matrix descriptors and their
// swizzles decoded as the PTX ISA specifies them, independently of the code generator, the
// result landing only at the wgmma.wait_group that covers it, and reading an accumulator in
// flight, a missing wgmma.fence or fence.proxy.async, or a kernel ending with wgmmas in flight
// are errors. RunBanks also measures the shared-memory bank conflicts of each ldmatrix,
// st.shared and cp.async phase (banks.go). It is a test oracle for the code
// generator's logic (layouts, staging through shared memory, control flow, casts), not a
// model of GPU timing or of races between CTAs. Device runs PTX artifacts as a jit.Device,
// passing a kernel with device asserts its flag buffer and reading it after each launch.
package ptxemu
