import triton
import triton.language as tl


# Hostile pointer arithmetic (issue 14): offsets past the executor's 48-bit pointer encoding
# must be reported where they are dereferenced, never wrapped onto a valid element.
@triton.jit
def far_kernel(x_ptr, out_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs + shift)
    tl.store(out_ptr + offs, x)


@triton.jit
def far_const_kernel(x_ptr, out_ptr, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs + SHIFT)
    tl.store(out_ptr + offs, x)


@triton.jit
def strided_kernel(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r[:, None] * stride + r[None, :])
    tl.store(out_ptr + r[:, None] * BLOCK + r[None, :], x)


@triton.jit
def masked_far_kernel(x_ptr, out_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs + shift, mask=offs < 0, other=3.0)
    tl.store(out_ptr + offs, x)
