import triton
import triton.language as tl


# A kernel that never ends: the Runner's launch time limit must stop it by name.
@triton.jit
def spin_kernel(out_ptr, n):
    i = 0
    while n > 0:
        i += 1
    tl.store(out_ptr, i.to(tl.float32))
