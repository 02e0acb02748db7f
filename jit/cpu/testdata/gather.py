import triton
import triton.language as tl


@triton.jit
def gather_kernel(x_ptr, idx_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    """Gathered rows and columns combined with affine offsets (symbolic tiles with vectors)."""
    r = tl.arange(0, BLOCK)
    rows = tl.load(idx_ptr + r)
    x = tl.load(x_ptr + (rows[:, None] * stride + r[None, :]))
    neg = r[None, :] - rows[:, None] * 2
    out = out_ptr + r[:, None] * BLOCK + r[None, :]
    tl.store(out, x + neg.to(tl.float32))
    y = tl.load(x_ptr + (r[:, None] * stride + rows[None, :]))
    tl.store(out + BLOCK * BLOCK, y)
    w = tl.load(x_ptr + ((rows[:, None] + r[None, :] * 0) * -1 + stride * BLOCK - 1 - r[None, :]))
    tl.store(out + 2 * BLOCK * BLOCK, w)
