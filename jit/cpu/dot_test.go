package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// gemmBenchSizes are (m, n, k): aligned, odd (the next aligned size per flop), few rows,
// and large n and k.
var gemmBenchSizes = [][3]int{{64, 128, 256}, {67, 131, 257}, {3, 131, 257}, {128, 1024, 512}, {64, 1024, 1024}}

// BenchmarkGemmF32 runs gemmF32 on the AVX-512 and the AVX2 path (the same kernels twice
// on a CPU without AVX-512), and on AVX2 with the 4x16 main tile it had before 6x16, and
// reports GFLOP/s.
func BenchmarkGemmF32(b *testing.B) {
	defer selectMicroKernel(true)
	paths := []struct {
		name   string
		avx512 bool
		mr     int
	}{{"avx512", true, 0}, {"avx2", false, 0}, {"avx2-4x16", false, 4}}
	for _, path := range paths {
		for _, s := range gemmBenchSizes {
			m, n, k := s[0], s[1], s[2]
			b.Run(fmt.Sprintf("%s/%dx%dx%d", path.name, m, n, k), func(b *testing.B) {
				selectMicroKernel(path.avx512)
				if path.mr > 0 && gemmSIMD {
					gemmWide.mr, gemmWide.kern = path.mr, gemmWide.kern[:path.mr+1]
				}
				r := rand.New(rand.NewPCG(1, 2))
				a, bb, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
				for _, x := range [][]float32{a, bb} {
					for i := range x {
						x[i] = float32(r.Float64()*2 - 1)
					}
				}
				var scratch []float32
				for b.Loop() {
					gemmF32(m, n, k, a, k, bb, n, c, n, &scratch)
				}
				b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkGemmF32FewRows times a classifier-like product (m = 2 or 8 rows, a 512 x 1000
// weight panel with rows 1008 apart, the CPU plans' transposed weight) streamed in
// gemmStreamKC chunks and in one pass over k, on weights not in cache (the panel rotates
// through 256 MiB), and reports the weight read in GB/s.
func BenchmarkGemmF32FewRows(b *testing.B) {
	defer func(kc int) { gemmStreamKC = kc }(gemmStreamKC)
	const k, n, ldb = 512, 1000, 1008
	copies := (256 << 20) / (k * ldb * 4)
	w := make([]float32, copies*k*ldb)
	for i := range w {
		w[i] = 1
	}
	for _, m := range []int{2, 8} {
		for _, order := range []struct {
			name string
			kc   int
		}{{"streamed", gemmStreamKC}, {"one-pass", 1 << 30}} {
			b.Run(fmt.Sprintf("m=%d/%s", m, order.name), func(b *testing.B) {
				gemmStreamKC = order.kc
				a, c := make([]float32, m*k), make([]float32, m*n)
				var scratch []float32
				i := 0
				for b.Loop() {
					gemmF32(m, n, k, a, k, w[(i%copies)*k*ldb:], ldb, c, n, &scratch)
					i++
				}
				b.ReportMetric(float64(k*n*4)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

// gemmCheck runs gemmF32 on random operands with leading dimensions wider than the rows and
// checks c against a float64 reference within fp32 rounding of the sum (the kernels may
// contract each multiply-add): columns past n and the row past m stay untouched.
func gemmCheck(t *testing.T, r *rand.Rand, m, n, k int, run func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int)) {
	t.Helper()
	gemmCheckLDA(t, r, m, n, k, k+3, run)
}

// gemmCheckLDA is gemmCheck with the rows of a lda apart.
func gemmCheckLDA(t *testing.T, r *rand.Rand, m, n, k, lda int, run func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int)) {
	t.Helper()
	ldb, ldc := n+5, n+2
	a, b, c := make([]float32, m*lda), make([]float32, k*ldb), make([]float32, (m+1)*ldc)
	for _, x := range [][]float32{a, b, c} {
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
	}
	c0 := append([]float32(nil), c...)
	run(m, n, k, a, lda, b, ldb, c, ldc)
	for i := range m + 1 {
		for j := range ldc {
			if i == m || j >= n {
				if c[i*ldc+j] != c0[i*ldc+j] {
					t.Fatalf("%s %dx%dx%d: c[%d][%d] outside the product changed", dotKernelName(), m, n, k, i, j)
				}
				continue
			}
			want, mag := float64(c0[i*ldc+j]), math.Abs(float64(c0[i*ldc+j]))
			for p := range k {
				x := float64(a[i*lda+p]) * float64(b[p*ldb+j])
				want += x
				mag += math.Abs(x)
			}
			if got := float64(c[i*ldc+j]); math.Abs(got-want) > float64(k+2)*0x1p-23*mag {
				t.Fatalf("%s %dx%dx%d: c[%d][%d] = %g, want %g", dotKernelName(), m, n, k, i, j, got, want)
			}
		}
	}
}

// Every m < 18 and n < 71 (every row and column edge of the 8x32/16-wide AVX-512 and
// 6x16/8-wide AVX2 tiles, masked and padded) for short and long k, on both paths.
func TestGemmF32OddSizes(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var scratch []float32
	run := func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
		gemmF32(m, n, k, a, lda, b, ldb, c, ldc, &scratch)
	}
	eachMicroKernel(func() {
		for _, k := range []int{1, 2, 7, 33, 257} {
			for m := 1; m <= 17; m++ {
				for n := 1; n <= 70; n++ {
					if k == 257 && n%3 != 0 && n != 70 {
						continue
					}
					gemmCheck(t, r, m, n, k, run)
				}
			}
		}
	})
}

// Larger shapes: several row blocks with leftovers, rows of A or B 4 KB apart (packed), k
// over gemmKC (chunks), and the pure-Go kernel.
func TestGemmF32Large(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	var scratch []float32
	run := func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
		gemmF32(m, n, k, a, lda, b, ldb, c, ldc, &scratch)
	}
	shapes := [][3]int{{67, 131, 257}, {64, 128, 256}, {19, 1030, 600}, {13, 1100, 37}, {40, 1024, 1025}, {100, 47, 9}, {20, 300, 1030}, {64, 80, 256}, {30, 112, 64}}
	eachMicroKernel(func() {
		for _, s := range shapes {
			gemmCheck(t, r, s[0], s[1], s[2], run)
		}
	})
	for _, s := range [][3]int{{5, 7, 3}, {17, 33, 65}} {
		gemmCheck(t, r, s[0], s[1], s[2], gemmGo)
	}
}

// Rows of A 4 KB or more apart and too few columns to pack A (a convolution's row-major
// weight against a narrow pixel tile) run the wide strips on the kernels that prefetch A
// along its rows: checked against the float64 reference and bit for bit against the plain
// kernels (a prefetch changes no sum), at every row count of a block and its edges, k below,
// at and past the 16-step prefetch loop with odd tails, and columns with and without edges.
func TestGemmF32StreamsFarRowsOfA(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	var scratch []float32
	run := func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
		gemmF32(m, n, k, a, lda, b, ldb, c, ldc, &scratch)
	}
	defer func(on bool) { gemmStreamA = on }(gemmStreamA)
	eachMicroKernel(func() {
		for _, m := range []int{1, 5, 6, 8, 13, 17, 128} {
			for _, n := range []int{16, 26, 32, 45, 64, 100} {
				for _, k := range []int{1, 15, 16, 17, 33, 256, 301} {
					lda := 1024 + 3*k
					gemmStreamA = true
					before := streamedDots.Load()
					gemmCheckLDA(t, r, m, n, k, lda, run)
					// whole strips and more rows than one block (narrower edges run on other kernels)
					if n%gemmWide.w == 0 && m >= len(gemmWide.kern) && streamedDots.Load() == before {
						t.Fatalf("%s %dx%dx%d, rows of a %d apart: no strip ran on the stream kernels", dotKernelName(), m, n, k, lda)
					}
					a, b := make([]float32, m*lda), make([]float32, k*n)
					for _, x := range [][]float32{a, b} {
						for i := range x {
							x[i] = float32(r.NormFloat64())
						}
					}
					streamed, plain := make([]float32, m*n), make([]float32, m*n)
					gemmF32(m, n, k, a, lda, b, n, streamed, n, &scratch)
					gemmStreamA = false
					gemmF32(m, n, k, a, lda, b, n, plain, n, &scratch)
					for i := range streamed {
						if math.Float32bits(streamed[i]) != math.Float32bits(plain[i]) {
							t.Fatalf("%s %dx%dx%d: c[%d] = %g on the stream kernels, %g on the plain ones", dotKernelName(), m, n, k, i, streamed[i], plain[i])
						}
					}
				}
			}
		}
	})
}

// Few rows and many columns (a Linear on a handful of rows) take k in gemmStreamKC chunks:
// checked against the float64 reference, and bit for bit against the same product in one
// pass over k (the chunks keep the order of the sums), at odd k, n and leading dimensions.
func TestGemmF32StreamsFewRows(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	var scratch []float32
	run := func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
		gemmF32(m, n, k, a, lda, b, ldb, c, ldc, &scratch)
	}
	defer func(kc int) { gemmStreamKC = kc }(gemmStreamKC)
	eachMicroKernel(func() {
		for _, m := range []int{1, 2, 3, 7, 16} {
			for _, s := range [][2]int{{65, 17}, {131, 37}, {301, 70}, {1000, 600}} {
				n, k := s[0], s[1]
				gemmStreamKC = 16
				gemmCheck(t, r, m, n, k, run)
				a, b := make([]float32, m*k), make([]float32, k*(n+3))
				for _, x := range [][]float32{a, b} {
					for i := range x {
						x[i] = float32(r.NormFloat64())
					}
				}
				streamed, whole := make([]float32, m*n), make([]float32, m*n)
				gemmF32(m, n, k, a, k, b, n+3, streamed, n, &scratch)
				gemmStreamKC = 1 << 30
				gemmF32(m, n, k, a, k, b, n+3, whole, n, &scratch)
				for i := range streamed {
					if math.Float32bits(streamed[i]) != math.Float32bits(whole[i]) {
						t.Fatalf("%s %dx%dx%d: c[%d] = %g in chunks of k, %g in one pass", dotKernelName(), m, n, k, i, streamed[i], whole[i])
					}
				}
			}
		}
	})
}

// BenchmarkGemmStreamedWeight runs the folded GEMM of resnet18's layer-4 3x3 convolution at
// N = 8 (conv_flat.py's Folded form: per model and 128-row channel tile, 18 dots of k = 256
// over a row-major weight [512, 4608], 9.4 MB a model, 75 MB in all, read once a pass,
// against 32 pixel columns) on one thread: "plain" and "stream" run the dots one at a time
// on the plain and the prefetching strip kernels, "queued" each tile's dots together per
// register block (gemmPanels, as the executor queues them: each block walks its rows of
// the weight from end to end). It reports the weight read per CPU-second of the thread and
// GFLOP per CPU-second (the clock is no measure on a shared machine).
func BenchmarkGemmStreamedWeight(b *testing.B) {
	defer func() { gemmStreamA = true }()
	const models, oc, k, boc, bk, nq = 8, 512, 4608, 128, 256, 26
	w := make([]float32, models*oc*k)
	for i := range w {
		w[i] = float32(i%7) * 0.01
	}
	x := make([]float32, k*nq+32)
	c := make([]float32, boc*32)
	var scratch []float32
	var asm []gemmPanel
	ps := make([]dotPanel, k/bk)
	for _, v := range []struct {
		name           string
		stream, queued bool
	}{{"plain", false, false}, {"stream", true, false}, {"queued", true, true}} {
		b.Run(v.name, func(b *testing.B) {
			gemmStreamA = v.stream
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			t0 := threadCPUTime()
			for b.Loop() {
				for m := range models {
					for ot := range oc / boc {
						base := (m*oc + ot*boc) * k
						for kt := range k / bk {
							if v.queued {
								ps[kt] = dotPanel{a: w[base+kt*bk:], lda: k, b: x[kt*bk*nq:], ldb: nq, m: boc, n: 32, k: bk}
							} else {
								gemmF32(boc, 32, bk, w[base+kt*bk:], k, x[kt*bk*nq:], nq, c, 32, &scratch)
							}
						}
						if v.queued {
							gemmPanels(ps, c, 32, &scratch, &asm, nil, 0, 0)
						}
					}
				}
			}
			if cpuTime := (threadCPUTime() - t0).Seconds(); cpuTime > 0 {
				b.ReportMetric(float64(len(w)*4*b.N)/cpuTime/1e9, "weight-GB/cpu-s")
				b.ReportMetric(float64(2*models*oc*k*32*b.N)/cpuTime/1e9, "GFLOP/cpu-s")
			}
		})
	}
}

// A's rows far apart against a wide B (a Linear's activations against its weight panel) keep
// gemmF32's k blocks: no stream kernels, no queueing over all of k (streamsA).
func TestWideTilesDoNotStreamA(t *testing.T) {
	if !streamsA(1024, streamMaxCols) || streamsA(1024, streamMaxCols+1) || streamsA(1023, 16) {
		t.Fatalf("streamsA: rows 1024 apart against %d columns %v, %d columns %v; rows 1023 apart %v",
			streamMaxCols, streamsA(1024, streamMaxCols), streamMaxCols+1, streamsA(1024, streamMaxCols+1), streamsA(1023, 16))
	}
	r := rand.New(rand.NewPCG(19, 20))
	var scratch []float32
	const m, n, k, lda = 32, 128, 256, 1024
	a, b, c := make([]float32, m*lda), make([]float32, k*n), make([]float32, m*n)
	for _, x := range [][]float32{a, b} {
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
	}
	before := streamedDots.Load()
	gemmF32(m, n, k, a, lda, b, n, c, n, &scratch)
	if streamedDots.Load() != before {
		t.Fatalf("%s %dx%dx%d, rows of a %d apart: a %d-column B ran on the stream kernels", dotKernelName(), m, n, k, lda, n)
	}
}
