import triton
import triton.language as tl


@triton.jit
def vecloop(x_ptr, y_ptr, n, B: tl.constexpr, ITERS: tl.constexpr):
    # y[i] = sum over rows r of x[r, i]: a pointer tile advanced in the loop keeps its
    # contiguity and alignment (loop-carried facts), the mask its constancy.
    offs = tl.arange(0, B)
    p = x_ptr + offs
    acc = tl.zeros([B], tl.float32)
    for r in range(ITERS):
        acc += tl.load(p, mask=offs < n, other=1.0)
        p += B
    tl.store(y_ptr + offs, acc, mask=offs < n)
