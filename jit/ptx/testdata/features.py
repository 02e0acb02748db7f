"""Exercises PTX backend features the tutorial kernels do not: casts between bf16, i8, i32
and fp32, transcendental functions, erf, integer division, while loops, runtime ifs,
custom and arg reductions, atomics and Philox random numbers."""
import triton
import triton.language as tl


@triton.jit
def _pick(a, ai, b, bi):
    take = a > b
    return tl.where(take, a, b), tl.where(take, ai, bi)


@triton.jit
def features(x_ptr, h_ptr, i_ptr, b_ptr, out_ptr, cnt_ptr, n, seed, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    h = tl.load(h_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    i = tl.load(i_ptr + offs, mask=mask, other=1)
    b = tl.load(b_ptr + offs, mask=mask, other=0)
    y = tl.exp(x) + tl.log(tl.abs(x) + 1.0) + tl.sqrt(tl.abs(h)) + tl.rsqrt(tl.abs(x) + 1.0)
    y += tl.sin(x) * tl.cos(h) + tl.erf(x) + tl.sigmoid(h)
    q = (i // 3 + i % 5).to(tl.float32) + (b.to(tl.int32) >> 1).to(tl.float32)
    k = 0
    acc = y + q
    while k < n:
        acc = acc * 0.5
        k += BLOCK
    if pid > 2:
        acc = acc + 1.0
    else:
        acc = acc - tl.floor(acc)
    rows = tl.reshape(acc, (8, BLOCK // 8))
    idx = tl.broadcast_to(tl.arange(0, BLOCK // 8)[None, :], (8, BLOCK // 8))
    best, where = tl.reduce((rows, idx), 1, _pick)
    am = tl.argmax(rows, axis=1)
    t = tl.trans(rows)
    tot = tl.sum(t, axis=0) + best + where.to(tl.float32) + am.to(tl.float32)
    gi = tl.argmax(acc, axis=0)
    gb, gw = tl.reduce((acc, offs), 0, _pick)
    tot += gi.to(tl.float32) + gb + (gw % 64).to(tl.float32) + tl.max(y, axis=0)
    tot += tl.argmin(tl.floor(x), axis=0).to(tl.float32)  # ties: the first index must win
    tot += tl.load(i_ptr + 5, volatile=True).to(tl.float32)  # a volatile scalar: shared
    r = tl.rand(seed, offs)
    tl.store(out_ptr + offs, acc + r, mask=mask)
    tl.store(out_ptr + n + pid * 8 + tl.arange(0, 8), tot)
    tl.store(h_ptr + offs, (acc * 2.0).to(tl.bfloat16), mask=mask)
    tl.store(b_ptr + offs, (i * 3).to(tl.int8), mask=mask)
    tl.atomic_add(cnt_ptr, tl.sum(mask.to(tl.int32), axis=0))
    tl.atomic_max(x_ptr + offs, acc, mask=mask)
