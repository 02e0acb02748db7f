import triton
import triton.language as tl


@triton.jit
def copy_tiles(src, dst, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    src_bp = tl.make_block_ptr(base=src, shape=(M, N), strides=(stride_m, 1),
                               offsets=(pid * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    dst_bp = tl.make_block_ptr(base=dst, shape=(M, N), strides=(stride_m, 1),
                               offsets=(pid * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    for _ in range(0, tl.cdiv(N, BLOCK_N)):
        tile = tl.load(src_bp, boundary_check=(0, 1), padding_option="zero")
        tl.store(dst_bp, tile, boundary_check=(0, 1))
        src_bp = tl.advance(src_bp, (0, BLOCK_N))
        dst_bp = tl.advance(dst_bp, (0, BLOCK_N))
