package triton

import (
	"sync"

	"github.com/widejit/widejit/triton/syntax"
)

// preludeSource holds the tl functions that Triton itself writes in Triton (random.py,
// standard.py); they are specialized like user helpers. The Philox constants and rounds follow
// Triton's random.py (Philox 4x32-10, Salmon et al. 2011).
const preludeSource = `import triton
import triton.language as tl

PHILOX_KEY_A = tl.constexpr(0x9E3779B9)
PHILOX_KEY_B = tl.constexpr(0xBB67AE85)
PHILOX_ROUND_A = tl.constexpr(0xD2511F53)
PHILOX_ROUND_B = tl.constexpr(0xCD9E8D57)
N_ROUNDS_DEFAULT = tl.constexpr(10)


@triton.jit
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    for _ in tl.static_range(n_rounds):
        _c0 = c0
        _c2 = c2
        c0 = tl.umulhi(PHILOX_ROUND_B, _c2) ^ c1 ^ k0
        c2 = tl.umulhi(PHILOX_ROUND_A, _c0) ^ c3 ^ k1
        c1 = PHILOX_ROUND_B * _c2
        c3 = PHILOX_ROUND_A * _c0
        k0 = k0 + PHILOX_KEY_A
        k1 = k1 + PHILOX_KEY_B
    return c0, c1, c2, c3


@triton.jit
def philox(seed, c0, c1, c2, c3, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    seed = tl.to_tensor(seed)
    tl.static_assert(seed.dtype.is_int(), "the Philox seed must be an integer")
    seed = seed.to(tl.uint64)
    c0 = tl.to_tensor(c0)
    c1 = tl.to_tensor(c1)
    c2 = tl.to_tensor(c2)
    c3 = tl.to_tensor(c3)
    tl.static_assert(c0.dtype.primitive_bitwidth == 32, "widejit's Philox takes 32-bit offsets")
    seed_hi = ((seed >> 32) & 0xffffffff).to(tl.uint32)
    seed_lo = (seed & 0xffffffff).to(tl.uint32)
    c0 = c0.to(tl.uint32, bitcast=True)
    c1 = c1.to(tl.uint32, bitcast=True)
    c2 = c2.to(tl.uint32, bitcast=True)
    c3 = c3.to(tl.uint32, bitcast=True)
    return philox_impl(c0, c1, c2, c3, seed_lo, seed_hi, n_rounds)


@triton.jit
def randint4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    _0 = offset * 0
    return philox(seed, offset, _0, _0, _0, n_rounds)


@triton.jit
def randint(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    ret, _, _, _ = randint4x(seed, offset, n_rounds)
    return ret


@triton.jit
def uint_to_uniform_float(x):
    if tl.constexpr(x.dtype == tl.uint32) or tl.constexpr(x.dtype == tl.int32):
        x = x.to(tl.int32, bitcast=True)
        scale = 4.6566127342e-10
    else:
        tl.static_assert(tl.constexpr(x.dtype == tl.uint64) or tl.constexpr(x.dtype == tl.int64))
        x = x.to(tl.int64, bitcast=True)
        scale = 1.0842020432385337e-19
    x = tl.where(x < 0, -x - 1, x)
    return x * scale


@triton.jit
def rand(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    tl.static_assert(offset.dtype.primitive_bitwidth == 32, "widejit's Philox takes 32-bit offsets")
    offset = offset.to(tl.uint32, bitcast=True)
    source = randint(seed, offset, n_rounds)
    return uint_to_uniform_float(source)


@triton.jit
def pair_uniform_to_normal(u1, u2):
    u1 = tl.maximum(1.0e-7, u1)
    th = 6.283185307179586 * u2
    r = tl.sqrt(-2.0 * tl.log(u1))
    return r * tl.cos(th), r * tl.sin(th)


@triton.jit
def randn(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    u1 = uint_to_uniform_float(i1)
    u2 = uint_to_uniform_float(i2)
    n1, _ = pair_uniform_to_normal(u1, u2)
    return n1


@triton.jit
def rand4x(seed, offsets, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    tl.static_assert(offsets.dtype.primitive_bitwidth == 32, "widejit's Philox takes 32-bit offsets")
    offsets = offsets.to(tl.uint32, bitcast=True)
    i1, i2, i3, i4 = randint4x(seed, offsets, n_rounds)
    u1 = uint_to_uniform_float(i1)
    u2 = uint_to_uniform_float(i2)
    u3 = uint_to_uniform_float(i3)
    u4 = uint_to_uniform_float(i4)
    return u1, u2, u3, u4


@triton.jit
def randn4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4


@triton.jit
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False):
    if dim is None:
        _dim: tl.constexpr = 0
    else:
        _dim: tl.constexpr = dim
    z = x - tl.max(x, _dim, keep_dims=keep_dims)
    num = tl.exp(z)
    den = tl.sum(num, _dim, keep_dims=keep_dims)
    return tl.fdiv(num, den, ieee_rounding)


@triton.jit
def _xor_combine(a, b):
    return a ^ b


@triton.jit
def xor_sum(input, axis=None, keep_dims=False):
    tl.static_assert(input.type.scalar.is_int(), "xor_sum only supported for integers")
    return tl.reduce(input, axis, _xor_combine, keep_dims=keep_dims)
`

var prelude struct {
	once sync.Once
	u    *unit
	err  error
}

func preludeUnit() (*unit, error) {
	prelude.once.Do(func() {
		f, err := syntax.ParseFile("<triton.language>", []byte(preludeSource))
		if err != nil {
			prelude.err = err
			return
		}
		prelude.u = newUnit(f)
		prelude.u.builtin = true
	})
	return prelude.u, prelude.err
}

// callPrelude calls the tl function name if the prelude defines it.
func (s *spec) callPrelude(name string, ca callArgs) (value, bool) {
	u, err := preludeUnit()
	if err != nil {
		s.fail("internal error: the tl prelude does not parse: %v", err)
	}
	def, ok := u.funcs[name]
	if !ok {
		return nil, false
	}
	return s.inline(cJitFn{def: def, unit: u}, ca), true
}
