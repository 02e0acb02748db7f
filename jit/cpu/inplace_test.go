package cpu

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/widejit/widejit/jit"
)

// epilogueKernel is a tile computed in the kernel (a dot) through a chain of arithmetic and
// a select before its store, as a matmul or convolution epilogue, and a loaded tile (which
// views the input buffer in place) through the same chain.
const epilogueKernel = `import triton
import triton.language as tl


@triton.jit
def epilogue(a_ptr, b_ptr, bias_ptr, c_ptr, d_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    bias = tl.load(bias_ptr + r)
    acc = tl.dot(a, b)
    t1 = acc + bias[None, :]
    t2 = tl.maximum(t1, 0.0)
    t3 = t2 * 0.5
    y = tl.where(r[None, :] < N - 3, t3, 0.0)
    tl.store(c_ptr + r[:, None] * N + r[None, :], y)
    a2 = tl.load(a_ptr + r[:, None] * N + r[None, :])
    u1 = a2 + bias[None, :]
    u2 = tl.maximum(u1, 0.0)
    tl.store(d_ptr + r[:, None] * N + r[None, :], u2)
`

// TestArithmeticChainsRunInPlace: the epilogue chain's steps overwrite the tile they read
// (compiled in place), the results equal the reference, and a tile that views an input
// buffer is never written: the inputs are unchanged after the run.
func TestArithmeticChainsRunInPlace(t *testing.T) {
	const n = 32
	kn := compileKernel(t, "epilogue.py", epilogueKernel, "epilogue",
		map[string]string{"a_ptr": "*fp32", "b_ptr": "*fp32", "bias_ptr": "*fp32", "c_ptr": "*fp32", "d_ptr": "*fp32"},
		map[string]any{"N": int64(n)})
	if kn.prog.inPlace != 6 {
		t.Fatalf("%d steps compiled in place, want both chains' 6", kn.prog.inPlace)
	}
	r := rand.New(rand.NewPCG(7, 8))
	a, b, bias := make([]float32, n*n), make([]float32, n*n), make([]float32, n)
	for _, v := range [][]float32{a, b, bias} {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
	}
	ab, bb, biasb := f32Buf(t, slices.Clone(a)), f32Buf(t, slices.Clone(b)), f32Buf(t, slices.Clone(bias))
	c, d := f32Buf(t, make([]float32, n*n)), f32Buf(t, make([]float32, n*n))
	for range 3 { // frames are reused: the rotated storage must not leak between runs
		if err := kn.Launch(grid1(1), []jit.Arg{buf(ab), buf(bb), buf(biasb), buf(c), buf(d)}); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(ab.f32(), a) || !slices.Equal(bb.f32(), b) || !slices.Equal(biasb.f32(), bias) {
		t.Fatal("an input buffer was written")
	}
	var scratch []float32
	acc := make([]float32, n*n)
	gemmF32(n, n, n, a, n, b, n, acc, n, &scratch)
	for i := range n {
		for j := range n {
			want := max(acc[i*n+j]+bias[j], 0) * 0.5
			if j >= n-3 {
				want = 0
			}
			if got := c.f32()[i*n+j]; got != want {
				t.Fatalf("c[%d][%d] = %g, want %g", i, j, got, want)
			}
			if got, want := d.f32()[i*n+j], max(a[i*n+j]+bias[j], 0); got != want {
				t.Fatalf("d[%d][%d] = %g, want %g", i, j, got, want)
			}
		}
	}
}
