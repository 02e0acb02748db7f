package cpu

import (
	"fmt"
	mrand "math/rand"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/widejit/widejit/jit"
)

// gemvAsGemm runs gemvF32 on the transpose of gemmCheck's b ([k, n], rows ldb apart), copied
// to [n, k] with rows k+7 apart, so that gemmCheck's float64 reference checks it.
func gemvAsGemm(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	ldt := k + 7
	bt := make([]float32, n*ldt)
	for p := range k {
		for j := range n {
			bt[j*ldt+p] = b[p*ldb+j]
		}
	}
	gemvF32(m, n, k, a, lda, bt, ldt, c, ldc)
}

// gemvF32 against the float64 reference on both kernel variants and in pure Go: every row
// count up to past two 3-row blocks, n around multiples of 4 (the last columns through a
// tile), k shorter than a vector, k a multiple of the vector and k with a tail.
func TestGemvF32(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	shapes := 0
	check := func() {
		for _, m := range []int{1, 2, 3, 4, 5, 7, 32} {
			for _, n := range []int{1, 3, 4, 5, 7, 8, 13, 64, 1001} {
				for _, k := range []int{1, 7, 8, 16, 33, 512, 517} {
					gemmCheck(t, r, m, n, k, gemvAsGemm)
					shapes++
				}
			}
		}
	}
	eachMicroKernel(check)
	defer selectMicroKernel(true)
	gemvKern = nil // the pure-Go form
	check()
	if shapes == 0 {
		t.Fatal("no shape checked")
	}
}

// BenchmarkGemvF32FewRows times the classifier-like product of BenchmarkGemmF32FewRows (m
// rows times a 1000 x 512 weight) with the weight as a Linear holds it, [1000, 512] read in
// place by gemvF32, next to gemmF32 on its transpose [512, 1000] (rows 1008 apart), and a
// plain read of as many bytes (allFinite: a vector OR per load), the floor. Every weight
// rotates through 256 MiB, so it is never in cache. All report the weight read in GB per
// second of the benchmark thread's CPU time (the machine may be shared), and GB/s of the
// clock:
//
//	go test ./jit/cpu -run '^$' -bench GemvF32FewRows -benchtime 300x
func BenchmarkGemvF32FewRows(b *testing.B) {
	const k, n, ldt = 512, 1000, 1008
	size := k * ldt // floats per copy, either layout
	copies := (256 << 20) / (size * 4)
	w := make([]float32, copies*size)
	for i := range w {
		w[i] = 1
	}
	run := func(name string, f func(i int)) {
		b.Run(name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0, i := threadCPUTime(), 0
			for b.Loop() {
				f(i)
				i++
			}
			bytes := float64(k*n*4) * float64(b.N)
			b.ReportMetric(bytes/(threadCPUTime()-cpu0).Seconds()/1e9, "GB/cpu-s")
			b.ReportMetric(bytes/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
	run("read", func(i int) {
		if !allFinite(w[(i%copies)*size:], n, k, k) {
			b.Fatal("not finite")
		}
	})
	for _, m := range []int{1, 2, 8, 32} {
		a, c := make([]float32, m*k), make([]float32, m*n)
		var scratch []float32
		run(fmt.Sprintf("m=%d/gemv", m), func(i int) { gemvF32(m, n, k, a, k, w[(i%copies)*size:], k, c, n) })
		run(fmt.Sprintf("m=%d/gemm-transposed", m), func(i int) { gemmF32(m, n, k, a, k, w[(i%copies)*size:], ldt, c, n, &scratch) })
	}
}

// A dot of a few live rows times tl.trans of a masked tile (a Linear's weight rows, as
// matmul.py reads them) reads the tile in place through gemvF32 (gemvFits); otherwise it
// transposes the tile and runs the gemm kernels. Both against a float64
// reference, on both kernel variants, at odd sizes and a K loop with a short last step.
func TestDotReadsTransposedTileInPlace(t *testing.T) {
	const bm, bn, bk = 64, 64, 256
	kn := compileKernel(t, "masked_dot.py", maskedDotKernel, "masked_dot", map[string]string{
		"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "bias_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32", "s": "fp32"},
		map[string]any{"BM": int64(bm), "BN": int64(bn), "BK": int64(bk)})
	rng := mrand.New(mrand.NewSource(9))
	eachMicroKernel(func() {
		// in place: 3 rows or fewer at any k, up to 32 rows on k steps of 256 or more
		for _, tc := range []struct {
			m, n, k int
			inPlace int64 // of the k steps of 256
		}{{1, 63, 70, 1}, {2, 64, 64, 1}, {3, 37, 33, 1}, {7, 37, 33, 0}, {7, 37, 600, 2}, {32, 5, 300, 1}, {40, 50, 300, 0}} {
			a, b, bias := randF32(rng, tc.m*tc.k, 1), randF32(rng, tc.n*tc.k, 1), randF32(rng, tc.n, 1)
			out := f32Buf(t, make([]float32, bm*bn))
			before := gemvDots.Load()
			if err := kn.Launch(grid1(1), []jit.Arg{buf(f32Buf(t, a)), buf(f32Buf(t, b)), buf(out), buf(f32Buf(t, bias)),
				scalar(int64(tc.m)), scalar(int64(tc.n)), scalar(int64(tc.k)), scalar(1.0)}); err != nil {
				t.Fatal(err)
			}
			steps, wantSteps := gemvDots.Load()-before, tc.inPlace
			if steps != wantSteps {
				t.Errorf("%s m%d_n%d_k%d: %d dots read the transposed tile in place, want %d", dotKernelName(), tc.m, tc.n, tc.k, steps, wantSteps)
			}
			got := out.f32()
			for i := range tc.m {
				for j := range tc.n {
					dot := 0.0
					for p := range tc.k {
						dot += float64(a[i*tc.k+p]) * float64(b[j*tc.k+p])
					}
					want := max(dot+1+float64(bias[j]), 0)
					if g := float64(got[i*bn+j]); !closeOrSameSpecial(g, want) {
						t.Fatalf("%s m%d_n%d_k%d: c[%d,%d] = %v, want %v", dotKernelName(), tc.m, tc.n, tc.k, i, j, g, want)
					}
				}
			}
		}
	})
}

// A dot whose b has exactly 4 live columns (a 1x1 convolution's pixels on a 2x2 map) runs as
// gemvF32 on those columns transposed (gemmF32's gemvCols) when k's live steps are whole vectors of at
// least narrowGemvMinK; other widths and depths take the gemm kernels. scaled_dot (b read as
// it lies, [K, N], its rows scaled, here by ones) against a float64 reference over the whole
// accumulator (the padding's zeros included), on both kernel variants.
func TestDotOnFourColumnsRunsGemv(t *testing.T) {
	const bm, bn, bk = 64, 16, 256
	kn := compileKernel(t, "scaled_dot.py", scaledDotKernel, "scaled_dot",
		map[string]string{"a_ptr": "*fp32", "b_ptr": "*fp32", "s_ptr": "*fp32", "c_ptr": "*fp32", "N": "i32", "K": "i32"},
		map[string]any{"BM": int64(bm), "BN": int64(bn), "BK": int64(bk)})
	rng := mrand.New(mrand.NewSource(17))
	eachMicroKernel(func() {
		for _, tc := range []struct {
			n, k int
			gemv int64 // of the k steps of 256
		}{{4, 192, 1}, {4, 512, 2}, {4, 320, 2}, {4, 300, 1}, {5, 192, 0}, {3, 192, 0}, {4, 40, 0}} {
			a, b, ones := randF32(rng, bm*tc.k, 1), randF32(rng, tc.k*tc.n, 1), make([]float32, tc.k)
			for p := range ones {
				ones[p] = 1
			}
			out := f32Buf(t, make([]float32, bm*bn))
			before := gemvColumnDots.Load()
			if err := kn.Launch(grid1(1), []jit.Arg{buf(f32Buf(t, a)), buf(f32Buf(t, b)), buf(f32Buf(t, ones)), buf(out),
				scalar(int64(tc.n)), scalar(int64(tc.k))}); err != nil {
				t.Fatal(err)
			}
			if got := gemvColumnDots.Load() - before; got != tc.gemv {
				t.Errorf("%s n%d_k%d: %d dots ran as gemv, want %d", dotKernelName(), tc.n, tc.k, got, tc.gemv)
			}
			got := out.f32()
			for i := range bm * bn {
				want := 0.0
				for p := range tc.k {
					if i%bn < tc.n {
						want += float64(a[i/bn*tc.k+p]) * float64(b[p*tc.n+i%bn])
					}
				}
				if g := float64(got[i]); !closeOrSameSpecial(g, want) {
					t.Fatalf("%s n%d_k%d: c[%d,%d] = %v, want %v", dotKernelName(), tc.n, tc.k, i/bn, i%bn, g, want)
				}
			}
		}
	})
}
