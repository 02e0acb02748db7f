"""Vector addition with a tail mask, in the style of Triton's tutorial 01.

Launch with grid = (cdiv(n_elements, BLOCK_SIZE),); x_ptr, y_ptr and output_ptr point to
n_elements values of one dtype. scale_shift_kernel is a second element-wise kernel with
scalar arguments.
"""
import triton
import triton.language as tl


@triton.jit
def add_kernel(
    x_ptr,  # pointer to the first input vector
    y_ptr,  # pointer to the second input vector
    output_ptr,  # pointer to the output vector
    n_elements,  # size of the vectors
    BLOCK_SIZE: tl.constexpr,  # number of elements each program processes
):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    # The last program may run past the end: mask off the tail.
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


@triton.jit
def scale_shift_kernel(x_ptr, out_ptr, n_elements, scale, shift, BLOCK_SIZE: tl.constexpr):
    """An element-wise chain out = x * scale + shift (the element-wise benchmark kernel)."""
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = x * scale + shift
    tl.store(out_ptr + offsets, y, mask=mask)
