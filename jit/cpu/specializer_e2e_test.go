package cpu

// End-to-end checks of the specializer's semantics (package triton) on this executor, written
// by the front-end engineer: Philox tiles, reductions with indices and combine functions,
// block pointers with boundary checks, runtime if/while, C-style integer division. Each is
// compared with a straightforward Go reference.

import (
	"math"
	"math/bits"
	"testing"

	"github.com/widejit/widejit/triton"
	"github.com/widejit/widejit/triton/ir"
)

func specialize(t *testing.T, src, fn string, sig map[string]string, consts map[string]any) *ir.Func {
	t.Helper()
	f, err := triton.Specialize("e2e.py", src, fn, sig, consts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

const e2eHeader = "import triton\nimport triton.language as tl\n\n\n"

func philox4x32(ctr [4]uint32, key [2]uint32) [4]uint32 {
	const m0, m1, w0, w1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
	for r := 0; r < 10; r++ {
		hi0, lo0 := bits.Mul32(m0, ctr[0])
		hi1, lo1 := bits.Mul32(m1, ctr[2])
		ctr = [4]uint32{hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0}
		key[0] += w0
		key[1] += w1
	}
	return ctr
}

func TestSpecializedRandTiles(t *testing.T) {
	src := e2eHeader + `@triton.jit
def rng(u_ptr, i_ptr, n_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(u_ptr + offs, tl.rand(seed, offs))
    tl.store(i_ptr + offs, tl.randint(seed, offs))
    tl.store(n_ptr + offs, tl.randn(seed, offs))
`
	f := specialize(t, src, "rng", map[string]string{"u_ptr": "*fp32", "i_ptr": "*u32", "n_ptr": "*fp32", "seed": "i64"}, map[string]any{"BLOCK": 32})
	const n = 96
	u, _ := NewBuffer(ir.F32, n)
	iv, _ := NewBuffer(ir.U32, n)
	nv, _ := NewBuffer(ir.F32, n)
	seed := int64(0x1234_5678_9abc)
	mustRun(t, f, grid1(n/32), buf(u), buf(iv), buf(nv), scalar(seed))
	key := [2]uint32{uint32(seed), uint32(uint64(seed) >> 32)}
	toUniform := func(x uint32) float32 {
		v := int32(x)
		if v < 0 {
			v = -v - 1
		}
		return float32(v) * float32(4.6566127342e-10)
	}
	got := ints(iv)
	for i := 0; i < n; i++ {
		w := philox4x32([4]uint32{uint32(i), 0, 0, 0}, key)
		if uint32(got[i]) != w[0] {
			t.Fatalf("randint[%d] = %08x, want %08x", i, got[i], w[0])
		}
		if u.f32()[i] != toUniform(w[0]) {
			t.Fatalf("rand[%d] = %v, want %v", i, u.f32()[i], toUniform(w[0]))
		}
		u1 := math.Max(1e-7, float64(toUniform(w[0])))
		want := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*float64(toUniform(w[1])))
		if d := math.Abs(float64(nv.f32()[i]) - want); d > 1e-4*(1+math.Abs(want)) {
			t.Fatalf("randn[%d] = %v, want %v", i, nv.f32()[i], want)
		}
	}
}

func TestSpecializedReductions(t *testing.T) {
	src := e2eHeader + `@triton.jit
def pick(a_val, a_idx, b_val, b_idx):
    take_b = b_val > a_val
    return tl.where(take_b, b_val, a_val), tl.where(take_b, b_idx, a_idx)


@triton.jit
def red(x_ptr, amax_ptr, cmax_ptr, cidx_ptr, rsum_ptr, all_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    tl.store(amax_ptr + rows, tl.argmax(x, axis=1))
    v, i = tl.reduce((x, cols[None, :] + rows[:, None] * 0), 1, pick)
    tl.store(cmax_ptr + rows, v)
    tl.store(cidx_ptr + rows, i)
    s = tl.sum(x, axis=0, keep_dims=True)
    tl.store(rsum_ptr + cols[None, :], s)
    tl.store(all_ptr, tl.sum(x) + tl.max(x))
`
	const M, N = 4, 8
	x := []float32{
		1, 5, 5, 2, 0, -1, 3, 5,
		-3, -2, -9, -2, -8, -7, -6, -5,
		0, 0, 0, 0, 0, 0, 0, 0,
		7, 1, 2, 3, 4, 5, 6, 8,
	}
	f := specialize(t, src, "red", map[string]string{"x_ptr": "*fp32", "amax_ptr": "*i32", "cmax_ptr": "*fp32", "cidx_ptr": "*i32", "rsum_ptr": "*fp32", "all_ptr": "*fp32"}, map[string]any{"M": M, "N": N})
	amax, _ := NewBuffer(ir.I32, M)
	cmax, _ := NewBuffer(ir.F32, M)
	cidx, _ := NewBuffer(ir.I32, M)
	rsum, _ := NewBuffer(ir.F32, N)
	all, _ := NewBuffer(ir.F32, 1)
	mustRun(t, f, grid1(1), buf(f32Buf(t, x)), buf(amax), buf(cmax), buf(cidx), buf(rsum), buf(all))
	var total float32
	maxAll := float32(math.Inf(-1))
	for r := 0; r < M; r++ {
		best := 0
		for c := 0; c < N; c++ {
			if x[r*N+c] > x[r*N+best] {
				best = c
			}
			total += x[r*N+c]
			maxAll = max(maxAll, x[r*N+c])
		}
		if got := ints(amax)[r]; got != int64(best) {
			t.Errorf("argmax row %d = %d, want %d (the first maximum)", r, got, best)
		}
		if got := cmax.f32()[r]; got != x[r*N+best] {
			t.Errorf("reduce max row %d = %v, want %v", r, got, x[r*N+best])
		}
		// The combine function keeps a on ties, but the combination order is unspecified,
		// so any index holding the maximum is acceptable.
		if gi := ints(cidx)[r]; gi < 0 || gi >= N || x[r*N+int(gi)] != x[r*N+best] {
			t.Errorf("reduce index row %d = %d, which does not hold the maximum", r, gi)
		}
	}
	for c := 0; c < N; c++ {
		var s float32
		for r := 0; r < M; r++ {
			s += x[r*N+c]
		}
		if rsum.f32()[c] != s {
			t.Errorf("column sum %d = %v, want %v", c, rsum.f32()[c], s)
		}
	}
	if all.f32()[0] != total+maxAll {
		t.Errorf("sum + max = %v, want %v", all.f32()[0], total+maxAll)
	}
}

func TestSpecializedBlockPointers(t *testing.T) {
	src := e2eHeader + `@triton.jit
def copy(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    s = tl.make_block_ptr(src, (M, N), (N, 1), (pid * BM, 0), (BM, BN), (1, 0))
    d = tl.make_block_ptr(dst, (M, N), (N, 1), (pid * BM, 0), (BM, BN), (1, 0))
    for _ in range(0, tl.cdiv(N, BN)):
        tile = tl.load(s, boundary_check=(0, 1), padding_option="zero")
        tl.store(d, tile + 1.0, boundary_check=(0, 1))
        s = tl.advance(s, (0, BN))
        d = tl.advance(d, (0, BN))
`
	const M, N = 5, 11
	f := specialize(t, src, "copy", map[string]string{"src": "*fp32", "dst": "*fp32", "M": "i32", "N": "i32"}, map[string]any{"BM": 4, "BN": 4})
	in := make([]float32, M*N)
	for i := range in {
		in[i] = float32(i)
	}
	out := f32Buf(t, make([]float32, M*N))
	mustRun(t, f, grid1(2), buf(f32Buf(t, in)), buf(out), scalar(int64(M)), scalar(int64(N)))
	for i, v := range out.f32() {
		if v != in[i]+1 {
			t.Fatalf("dst[%d] = %v, want %v", i, v, in[i]+1)
		}
	}
}

func TestSpecializedControlFlowAndIntegers(t *testing.T) {
	src := e2eHeader + `@triton.jit
def collatz(out_ptr, q_ptr, r_ptr, h_ptr, n, BLOCK: tl.constexpr):
    steps = 0
    x = n
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        steps += 1
    tl.store(out_ptr, steps)
    offs = tl.arange(0, BLOCK)
    a = offs - 4
    tl.store(q_ptr + offs, a // 3)
    tl.store(r_ptr + offs, a % 3)
    h = tl.load(h_ptr + offs)
    tl.store(h_ptr + offs, h * 0.5)
`
	f := specialize(t, src, "collatz", map[string]string{"out_ptr": "*i32", "q_ptr": "*i32", "r_ptr": "*i32", "h_ptr": "*fp16", "n": "i32"}, map[string]any{"BLOCK": 8})
	out, _ := NewBuffer(ir.I32, 1)
	q, _ := NewBuffer(ir.I32, 8)
	r, _ := NewBuffer(ir.I32, 8)
	h, _ := NewBuffer(ir.F16, 8)
	for i := range 8 {
		h.setInt(ir.U16, i, 0x3C00+int64(i)) // 1.0, 1.0009765625, ...: halving is exact in fp16
	}
	mustRun(t, f, grid1(1), buf(out), buf(q), buf(r), buf(h), scalar(int64(27)))
	if got := ints(out)[0]; got != 111 {
		t.Errorf("collatz steps for 27 = %d, want 111", got)
	}
	for i := 0; i < 8; i++ {
		a := int64(i - 4)
		if ints(q)[i] != a/3 || ints(r)[i] != a%3 {
			t.Errorf("%d // 3, %d %% 3 = %d, %d; want C semantics %d, %d", a, a, ints(q)[i], ints(r)[i], a/3, a%3)
		}
		if got := h.getInt(ir.U16, i); got != 0x3800+int64(i) {
			t.Errorf("fp16 h*0.5 bits %04x, want %04x (weak scalar keeps fp16)", got, 0x3800+i)
		}
	}
}
