import triton
import triton.language as tl


# Kernels that never finish (issue 14: a kernel watchdog must stop them by name).
@triton.jit
def spin_kernel(out_ptr, n):
    i = 0
    while n > 0:
        i += 1
    tl.store(out_ptr, i.to(tl.float32))


@triton.jit
def long_for_kernel(out_ptr, n):
    acc = 0.0
    for i in range(0, n):
        for j in range(0, n):
            acc += 1.0
    tl.store(out_ptr, acc)


@triton.jit
def tiny_kernel(out_ptr):
    tl.store(out_ptr, 1.0)
