"""numpy implementation of the triton.language subset widejit's templates use."""
import math

import numpy as np

_pid = (0, 0, 0)
_nprog = (1, 1, 1)


class constexpr:  # annotations only
    pass


float16, bfloat16, float32, float64 = np.float16, np.float32, np.float32, np.float64
int1, int8, int16, int32, int64 = np.bool_, np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64


class T(np.ndarray):
    """A tile: a numpy array with Triton's tensor methods."""

    def to(self, dtype, bitcast=False):
        return np.asarray(self).astype(dtype).view(T)


def _t(x):
    return np.asarray(x).view(T)


class Ptr:
    """A pointer tile: a 1-D numpy buffer and element offsets into it."""

    def __init__(self, buf, off):
        self.buf = buf
        self.off = off

    def __add__(self, other):
        if isinstance(other, Ptr):
            raise TypeError("pointer + pointer")
        return Ptr(self.buf, np.asarray(self.off, dtype=np.int64) + np.asarray(other, dtype=np.int64))

    __radd__ = __add__


def program_id(axis):
    return _pid[axis]


def num_programs(axis):
    return _nprog[axis]


def arange(start, end):
    return _t(np.arange(start, end, dtype=np.int32))


def zeros(shape, dtype):
    return _t(np.zeros(shape, dtype=dtype))


def full(shape, value, dtype):
    return _t(np.full(shape, value, dtype=dtype))


def cdiv(a, b):
    return (a + b - 1) // b


def _check(ptr, mask, what):
    off = np.asarray(ptr.off, dtype=np.int64)
    if mask is not None:
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), off.shape)
        if mask.shape != off.shape:
            raise ValueError("mask enlarges the pointer shape")
        live = off[mask]
    else:
        mask = np.ones(off.shape, dtype=bool)
        live = off.reshape(-1)
    if live.size and (live.min() < 0 or live.max() >= ptr.buf.size):
        raise IndexError("%s out of bounds: offsets %d..%d, buffer of %d (program %s)" %
                         (what, live.min(), live.max(), ptr.buf.size, _pid))
    return off, mask


def load(ptr, mask=None, other=None, **_):
    off, mask = _check(ptr, mask, "load")
    vals = ptr.buf[np.where(mask, off, 0)]
    fill = 0 if other is None else other
    return _t(np.where(mask, vals, np.asarray(fill).astype(ptr.buf.dtype)).astype(ptr.buf.dtype))


def store(ptr, value, mask=None, **_):
    off, mask = _check(ptr, mask, "store")
    value = np.broadcast_to(np.asarray(value), off.shape).astype(ptr.buf.dtype)
    ptr.buf[off[mask]] = value[mask]


def dot(a, b, acc=None, **_):
    r = np.matmul(np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32))
    if acc is not None:
        r = r + acc
    return _t(r.astype(np.float32))


def _reduce(f, x, axis):
    r = f(np.asarray(x), axis=axis)
    return _t(r) if np.ndim(r) else r


def sum(x, axis=None, keep_dims=False):
    return _reduce(np.sum, x, axis)


def max(x, axis=None, keep_dims=False):
    return _reduce(np.max, x, axis)


def min(x, axis=None, keep_dims=False):
    return _reduce(np.min, x, axis)


def _unary(f):
    def g(x):
        a = np.asarray(x)
        dt = a.dtype if a.dtype.kind == "f" else np.float32
        return _t(f(a).astype(dt))
    return g


exp = _unary(np.exp)
exp2 = _unary(np.exp2)
log = _unary(np.log)
log2 = _unary(np.log2)
sqrt = _unary(np.sqrt)
floor = _unary(np.floor)
erf = _unary(np.vectorize(math.erf, otypes=[np.float64]))


def rsqrt(x):
    return 1.0 / sqrt(x)


def abs(x):
    return _t(np.abs(np.asarray(x)))


class PropagateNan:
    NONE = "none"
    ALL = "all"


def maximum(a, b, propagate_nan=PropagateNan.NONE):
    # np.maximum propagates NaN: the replays' NaN-free inputs do not tell maxnum apart
    return _t(np.maximum(a, b))


def minimum(a, b, propagate_nan=PropagateNan.NONE):
    return _t(np.minimum(a, b))


def where(c, a, b):
    return _t(np.where(c, a, b))


def sigmoid(x):
    return 1.0 / (1.0 + exp(-x))


def device_assert(cond, msg="", mask=None):
    """A failing lane (where mask holds) stops the replay, as widejit's backends stop a run."""
    bad = ~np.asarray(cond, dtype=bool)
    if mask is not None:
        bad &= np.asarray(mask, dtype=bool)
    if bad.any():
        raise AssertionError("device assertion failed: %s" % msg)


def debug_barrier():
    """Programs run one after another and a program's statements in order: nothing to wait for."""


def rand(seed, offsets):
    """Deterministic uniform [0, 1) from (seed, offset): a stand-in for Philox."""
    o = np.asarray(offsets, dtype=np.uint64)
    h = (o * np.uint64(0x9E3779B97F4A7C15) + np.uint64(seed) * np.uint64(0xBF58476D1CE4E5B9)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    h ^= h >> np.uint64(31)
    h = (h * np.uint64(0x94D049BB133111EB)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    h ^= h >> np.uint64(29)
    return _t(((h >> np.uint64(40)).astype(np.float64) / float(1 << 24)).astype(np.float32))


def trans(x, *dims):
    return _t(np.transpose(np.asarray(x), dims or None))


permute = trans
