import triton
import triton.language as tl


@triton.jit
def bdot(a_ptr, b_ptr, c_ptr, BATCH: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, PREC: tl.constexpr):
    # c[b] += a[b] @ b[b] for contiguous [BATCH, M, K] and [BATCH, K, N] operands.
    rb = tl.arange(0, BATCH)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rka = tl.arange(0, K)[None, None, :]
    rkb = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + rb * (M * K) + rm * K + rka)
    b = tl.load(b_ptr + rb * (K * N) + rkb * N + rn)
    offs_c = rb * (M * N) + rm * N + rn
    c = tl.load(c_ptr + offs_c)
    tl.store(c_ptr + offs_c, tl.dot(a, b, c, input_precision=PREC))
