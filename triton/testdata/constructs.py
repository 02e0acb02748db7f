"""Constructs of the kernel language: static if, static_range, helpers with tuple returns,
dynamic if and while, conditional expressions, builtins and tuples."""
import triton
import triton.language as tl

SCALE = tl.constexpr(2)
OFFSET = 3


@triton.jit
def split_sum(x, FACTOR: tl.constexpr):
    # Returns a tuple; FACTOR stays a compile-time value inside the helper.
    return x * FACTOR, tl.sum(x, axis=0)


@triton.jit
def constructs_kernel(x_ptr, out_ptr, n, flag, BLOCK: tl.constexpr, MODE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if MODE == "double":
        x = x * SCALE
    elif MODE == "skip":
        pass
    else:
        x = x + OFFSET
    for i in tl.static_range(2):
        x = x + i
    y, total = split_sum(x, BLOCK // 4)
    if flag > 0:
        y = y + total
    else:
        y = y - total
    k = 0
    while k < n:
        k += BLOCK
    y = y if BLOCK > 8 else -y
    half: tl.constexpr = max(BLOCK // 2, 1)
    tl.static_assert(half * 2 == BLOCK, "BLOCK must be even")
    out_ptr += 0
    tl.store(out_ptr + offs, y + k, mask=mask)
