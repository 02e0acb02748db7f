import triton
import triton.language as tl


# tl.where under a row mask broadcast over the rows: a computed one (c % P < K, runs of K
# lanes every P, like conv_flat.py's dropped columns) and a symbolic one (c < K).
@triton.jit
def rowmask_kernel(x_ptr, out_ptr, P, K, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.arange(0, BLOCK_R)
    c = tl.arange(0, BLOCK_C)
    offs = r[:, None] * BLOCK_C + c[None, :]
    x = tl.load(x_ptr + offs)
    y = tl.where((c % P)[None, :] < K, x, 0.0)
    tl.store(out_ptr + offs, y)
    w = tl.where(c[None, :] < K, -1.0, x)
    tl.store(out_ptr + BLOCK_R * BLOCK_C + offs, w)
