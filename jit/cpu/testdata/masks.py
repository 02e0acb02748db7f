import triton
import triton.language as tl


@triton.jit
def masks_kernel(x_ptr, out_ptr, n, m, lo, BLOCK: tl.constexpr):
    """Masks and offsets of every shape the executor keeps symbolic, and some it must not."""
    r = tl.arange(0, BLOCK)
    c = tl.arange(0, BLOCK)
    offs = r[:, None] * BLOCK + c[None, :]
    # four conditions: a triangle, a lower and two upper bounds
    mask = (r[:, None] >= c[None, :]) & (c[None, :] >= lo) & (r[:, None] < n) & (c[None, :] < m)
    x = tl.load(x_ptr + offs, mask=mask, other=-1.0)
    # `|` is not symbolic: the mask is materialized
    tl.store(out_ptr + offs, x * 2.0, mask=mask | (c[None, :] == 0))
    # a negative stride: the live lanes are a suffix
    rev = BLOCK - 1 - c
    y = tl.load(x_ptr + rev, mask=rev < m, other=0.0)
    tl.store(out_ptr + BLOCK * BLOCK + c, y)
    # i32 products that wrap: the comparison must see the wrapped values
    big = c * 1000000000
    tl.store(out_ptr + BLOCK * BLOCK + BLOCK + c, (big < 0).to(tl.float32))
    # a strided (non-contiguous) pointer row
    tl.store(out_ptr + BLOCK * BLOCK + 2 * BLOCK + 2 * c, c.to(tl.float32), mask=c < BLOCK // 2)
