"""Parser coverage: every construct of the kernel-language subset, with odd spacing,
continuations and precedence corner cases. This is a syntax test, not a kernel to run."""
import math, triton
import triton.language as tl
from triton import language as tl2, jit
from . import helpers as h
from ..pkg.sub import (a as b,
                       c,)

BLOCK = tl.constexpr(128)
EPS = 1e-5
HEX, OCT, BIN = 0xFF_FF, 0o17, 0b1010_1010
BIG = 123456789012345678901234567890
FLOATS = (1., .5, 1e10, 1E-3, 3.14_15, 0.0, 1_000.000_1e+2)
STRS = ('single', "double", r'raw\n', '''triple
quoted''', """also "triple" """, 'esc\t\x41\u00e9\101\q', 'adj' "acent")
NEG = -1


@triton.jit
def helper(x, y: tl.constexpr = 2, z=None) -> tl.tensor:
    """Doc of helper."""
    return x * y, z


@triton.jit()
@triton.autotune(configs=[triton.Config(None, num_warps=4)], key=['n'],)
def kernel(ptr, n, FLAG: tl.constexpr, MODE: tl.constexpr = "fast"):
    pid = tl.program_id(0); other = pid ; pass
    a = b = c = pid + 1
    a, b = b, a
    (a, b), c = (b, a), c
    [p, q] = [1, 2]
    t = a,
    e = ()
    x: tl.constexpr = 3
    y: tl.tensor
    a += 1; a -= 1; a *= 2; a /= 2; a //= 2; a %= 3; a **= 2
    a <<= 1; a >>= 1; a &= 7; a |= 8; a ^= 1; a @= a
    ptr += pid * n
    # precedence
    r = a or b and not c
    r = not a == b
    r = a | b ^ c & d << e + f * g
    r = -a ** -b ** c
    r = (-a) ** 2 + ~a * +b
    r = a if b else c if d else e
    r = (a if b else c) + 1
    r = a < b
    r = a is not None
    r = a is b
    r = a not in b
    r = a in b
    r = a != b
    r = a >= b
    r = a <= b
    r = a > b
    r = a // b % c / d @ e - f
    r = a >> b
    r = x.y.z(1)(2)[3].w
    r = f(a, b=1, c=(2, 3),)
    r = f()
    r = x[None, :]
    r = x[:, None, ...]
    r = x[1:2, ::3, a:, :b:c]
    r = x[a]
    r = x[(a, b)]
    r = x[a, b,]
    r = (a
         + b)
    r = a + \
        b
    r = [a, [b, c], ()]
    r = 1 .real
    r = -1.0e6
    r = True, False, None
    r = b'bytes' b"more"
    r = 'x' \
        'y'
    if FLAG:
        pass
    elif MODE == "slow":
        a = 1
    elif a:
        if b: c = 1
        else: c = 2
    else:
        a = 2
    for i in range(0, n, 2):
        if i == 3:
            continue
        if i > 5:
            break
    for i, j in zip(a, b):
        pass
    for (i, j) in pairs:
        pass
    for i in tl.static_range(4):
        pass
    while a < n:
        a = a + 1
    assert a > 0
    assert a > 0, "a must be positive"
    "a string used as a comment"
    tl.store(ptr, a)
    return
