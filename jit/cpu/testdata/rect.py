import triton
import triton.language as tl


# A strided 2-D copy whose live lanes are one rectangle per tile (conditions on rows alone
# and on columns alone): rows r < R and columns c0 <= c < C of x (rows xs apart) load, the
# others read -1; rows r < R2 of out (rows os apart) receive columns c >= c0.
@triton.jit
def rect_kernel(x_ptr, out_ptr, R, C, R2, c0, xs, os, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.arange(0, BLOCK_R)
    c = tl.arange(0, BLOCK_C)
    v = tl.load(x_ptr + r[:, None] * xs + c[None, :], mask=(r[:, None] < R) & (c[None, :] < C) & (c[None, :] >= c0), other=-1.0)
    tl.store(out_ptr + r[:, None] * os + c[None, :], v * 2.0, mask=(r[:, None] < R2) & (c[None, :] >= c0))
