import triton
import triton.language as tl


# kloop.py with B given as B^T ([N, K], K contiguous, as a Linear's weight) and masked on
# every edge: rows of A past M, rows of B^T past N, and the last K tile. Both loads become
# 16-byte cp.async copies (K divisible by 16), and tl.dot(a, tl.trans(bt)) reads B^T as it is
# staged: on sm_90a the pipelined loop runs on wgmma with K-major operands (wgmma.go). With
# ACC_FROM_C the accumulator starts from C (converted into wgmma fragments before the loop).
@triton.jit
def kloop_t(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ACC_FROM_C: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_n[:, None] * stride_bn + offs_k[None, :] * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    if ACC_FROM_C:
        acc = tl.load(c_ptrs, mask=c_mask, other=0.0).to(tl.float32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K), other=0.0)
        bt = tl.load(b_ptrs, mask=(offs_n[:, None] < N) & (offs_k[None, :] < K - k * BLOCK_K), other=0.0)
        acc += tl.dot(a, tl.trans(bt))
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    tl.store(c_ptrs, acc, mask=c_mask)
