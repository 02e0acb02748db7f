import triton
import triton.language as tl


# Every st-th element of rows of x (rows xs apart), lanes c0 <= c < C of rows r < R live (the
# others read -1), as a strided pooling window or a stride phase reads them; out is dense.
@triton.jit
def lanestride_kernel(x_ptr, out_ptr, R, C, c0, xs, st, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.arange(0, BLOCK_R)
    c = tl.arange(0, BLOCK_C)
    v = tl.load(x_ptr + r[:, None] * xs + c[None, :] * st, mask=(r[:, None] < R) & (c[None, :] < C) & (c[None, :] >= c0), other=-1.0)
    tl.store(out_ptr + r[:, None] * BLOCK_C + c[None, :], v)
