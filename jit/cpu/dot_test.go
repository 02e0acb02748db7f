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
	gemmCheckLD(t, r, m, n, k, lda, n+5, run)
}

// gemmCheckLDB is gemmCheck with the rows of b ldb apart.
func gemmCheckLDB(t *testing.T, r *rand.Rand, m, n, k, ldb int, run func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int)) {
	t.Helper()
	gemmCheckLD(t, r, m, n, k, k+3, ldb, run)
}

// gemmCheckLD is gemmCheck with the rows of a lda and those of b ldb apart.
func gemmCheckLD(t *testing.T, r *rand.Rand, m, n, k, lda, ldb int, run func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int)) {
	t.Helper()
	ldc := n + 2
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

// gemmSameBits computes an m x n x k product (A's rows lda apart, B's ldb) on random operands,
// then again after off() turns a path off, and fails unless the two agree bit for bit: the
// path must change no sum. with and without name the two runs in the message.
func gemmSameBits(t *testing.T, r *rand.Rand, m, n, k, lda, ldb int, scratch *[]float32, off func(), with, without string) {
	t.Helper()
	a, b := make([]float32, m*lda), make([]float32, k*ldb)
	for _, x := range [][]float32{a, b} {
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
	}
	on, plain := make([]float32, m*n), make([]float32, m*n)
	gemmF32(m, n, k, a, lda, b, ldb, on, n, scratch)
	off()
	gemmF32(m, n, k, a, lda, b, ldb, plain, n, scratch)
	for i := range on {
		if math.Float32bits(on[i]) != math.Float32bits(plain[i]) {
			t.Fatalf("%s %dx%dx%d: c[%d] = %g %s, %g %s", dotKernelName(), m, n, k, i, on[i], with, plain[i], without)
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
// along its rows (up to 96 columns, a folded small map's, the first strip alone past 64):
// checked against the float64 reference and bit for bit against the plain kernels (a
// prefetch changes no sum), at every row count of a block and its edges, k below, at and
// past the 16-step prefetch loop with odd tails, and columns with and without edges.
func TestGemmF32StreamsFarRowsOfA(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	var scratch []float32
	run := func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
		gemmF32(m, n, k, a, lda, b, ldb, c, ldc, &scratch)
	}
	defer func(on bool) { gemmStreamA = on }(gemmStreamA)
	eachMicroKernel(func() {
		for _, m := range []int{1, 5, 6, 8, 13, 17, 128} {
			for _, n := range []int{16, 26, 32, 45, 64, 80, 92, 100} {
				for _, k := range []int{1, 15, 16, 17, 33, 256, 301} {
					lda := 1024 + 3*k
					gemmStreamA = true
					before := streamedDots.Load()
					gemmCheckLDA(t, r, m, n, k, lda, run)
					// whole strips and more rows than one block (narrower edges run on other kernels)
					if n%gemmWide.w == 0 && m >= len(gemmWide.kern) && streamedDots.Load() == before {
						t.Fatalf("%s %dx%dx%d, rows of a %d apart: no strip ran on the stream kernels", dotKernelName(), m, n, k, lda)
					}
					gemmSameBits(t, r, m, n, k, lda, n, &scratch, func() { gemmStreamA = false }, "on the stream kernels", "on the plain ones")
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
							gemmPanels(ps, c, 32, &scratch, &asm, nil, 0, 0, nil, nil)
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

// BenchmarkGemmLinearTiles runs gemmF32 as the CPU plans' Linear tiles do (matmul.py): one
// BLOCK_M x BLOCK_N accumulator tile against A and B read in place in their buffers (rows K
// and N apart), one call per BLOCK_K step, every column tile of B in turn, B's weight panel
// rotating through as many copies as the zoo's widest run has models (so that it comes
// from the L3 cache or memory, as in a wide run), one goroutine per core; GFLOP per
// CPU-second and % of PeakGFLOPS.
//
//	go test ./jit/cpu -run '^$' -bench GemmLinearTiles
func BenchmarkGemmLinearTiles(b *testing.B) {
	for _, s := range []struct {
		name                string
		m, n, k, bm, bn, bk int
		models              int
	}{
		{"linear1024", 64, 1024, 1024, 64, 256, 512, 8},
		{"mlp1024.fc1", 128, 1024, 512, 128, 256, 512, 16},
		{"mlp1024.fc2", 128, 512, 1024, 128, 256, 512, 16},
		{"linear256", 64, 128, 256, 64, 128, 256, 33},
	} {
		b.Run(s.name, func(b *testing.B) {
			benchmarkPerCore(b, 2*s.m*s.n*s.k, func() func() {
				r := rand.New(rand.NewPCG(1, 2))
				a, w := make([]float32, s.m*s.k), make([]float32, s.models*s.k*s.n)
				for _, x := range [][]float32{a, w} {
					for i := range x {
						x[i] = float32(r.Float64()*2 - 1)
					}
				}
				acc := make([]float32, s.bm*s.bn)
				var scratch []float32
				model := 0
				return func() {
					bw := w[model*s.k*s.n:]
					model = (model + 1) % s.models
					for i := 0; i < s.m; i += s.bm {
						for j := 0; j < s.n; j += s.bn {
							for p := 0; p < s.k; p += s.bk {
								gemmF32(min(s.bm, s.m-i), min(s.bn, s.n-j), min(s.bk, s.k-p), a[i*s.k+p:], s.k,
									bw[p*s.n+j:], s.n, acc, s.bn, &scratch)
							}
						}
					}
				}
			})
		})
	}
}

// packStrips lays [k, strips*w] of b out as strips [k, w] panels one after the other, on the
// assembly (w a multiple of 16, rows prefetched 0, a few or more than k rows ahead) and on
// the Go copy, against the layout written out element by element.
func TestPackStrips(t *testing.T) {
	defer func(ahead int) { gemmPackAhead = ahead }(gemmPackAhead)
	r := rand.New(rand.NewPCG(19, 20))
	eachMicroKernel(func() {
		for _, ahead := range []int{0, 1, 4, 300} {
			gemmPackAhead = ahead
			for _, w := range []int{8, 16, 32} {
				for _, k := range []int{1, 3, 65, 257} {
					for _, strips := range []int{1, 3, 4} {
						ldb := strips*w + 7
						b := make([]float32, k*ldb)
						for i := range b {
							b[i] = float32(r.NormFloat64())
						}
						dst := make([]float32, strips*k*w+5)
						packStrips(dst, b, ldb, k, strips, w)
						for s := range strips {
							for p := range k {
								for x := range w {
									if got, want := dst[(s*k+p)*w+x], b[p*ldb+s*w+x]; got != want {
										t.Fatalf("%s w=%d k=%d strips=%d ahead=%d: strip %d row %d col %d = %g, want %g",
											dotKernelName(), w, k, strips, ahead, s, p, x, got, want)
									}
								}
							}
						}
						for _, v := range dst[strips*k*w:] {
							if v != 0 {
								t.Fatalf("%s w=%d k=%d strips=%d: packStrips wrote past its panels", dotKernelName(), w, k, strips)
							}
						}
					}
				}
			}
		}
	})
}

// Rows of B 1 KB or more apart over k > 128 with four row blocks or more, or 4 KB or more
// apart over k > 64 with two, run on packed strips (in chunks of gemmPackKC along k): checked against the float64
// reference and bit for bit against the same product unpacked in gemmKC chunks (packing
// and the chunks of k keep the order of the sums), at odd m, n, k and leading dimensions,
// on every micro-kernel set. A product that should pack and did not fails.
func TestGemmF32PacksB(t *testing.T) {
	defer func(on bool) { gemmPackB = on }(gemmPackB)
	r := rand.New(rand.NewPCG(21, 22))
	var scratch []float32
	run := func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
		gemmF32(m, n, k, a, lda, b, ldb, c, ldc, &scratch)
	}
	eachMicroKernel(func() {
		mr := gemmWide.mr
		for _, s := range []struct{ m, n, k, ldb int }{
			{4*mr + 3, 131, 257, 261}, {4 * mr, 256, 512, 300}, {67, 77, 600, 517}, {gemmStreamRows + 1, 100, 65, 1030},
			{2*mr + 5, 1000, 301, 1024}, {128, 109, 777, 1031}, {4*mr + 1, 2*gemmWide.w + 16, 129, 256},
		} {
			gemmPackB = true
			if !gemmPacksB(s.m, s.n, s.k, s.ldb) {
				t.Fatalf("%s %dx%dx%d, rows of b %d apart: gemmPacksB says no", dotKernelName(), s.m, s.n, s.k, s.ldb)
			}
			before := packedDots.Load()
			gemmCheckLDB(t, r, s.m, s.n, s.k, s.ldb, run)
			if packedDots.Load() == before {
				t.Fatalf("%s %dx%dx%d, rows of b %d apart: B was not packed", dotKernelName(), s.m, s.n, s.k, s.ldb)
			}
			gemmSameBits(t, r, s.m, s.n, s.k, s.k, s.ldb, &scratch, func() { gemmPackB = false }, "on packed strips", "unpacked")
		}
		// rows 1 KB apart over k <= 128 or under four row blocks, and rows closer: in place
		gemmPackB = true
		for _, s := range []struct{ m, n, k, ldb int }{{4 * mr, 256, 128, 300}, {4*mr - 1, 256, 500, 1000}, {128, 200, 500, 255}} {
			before := packedDots.Load()
			gemmCheckLDB(t, r, s.m, s.n, s.k, s.ldb, run)
			if packedDots.Load() != before {
				t.Fatalf("%s %dx%dx%d, rows of b %d apart: B was packed", dotKernelName(), s.m, s.n, s.k, s.ldb)
			}
		}
	})
}

// Under AVX-512 on Intel, a product whose columns take fewer 48-wide strips than 32-wide
// ones (a folded small-map convolution's 92 pixels: 2, not 3) runs on the 8x48 kernels
// (prefetching A along its rows where they are 4 KB or more apart over two strips):
// checked against the float64 reference and bit for bit against the 32-wide strips (the
// sums run in the same order), at row counts around a block, k short and long, rows of A far
// apart (a convolution's weight) and near, with and without a remainder past the strips.
// Where 48-wide strips would take as many (80 columns) or B is packed, they are not taken.
func TestGemmF32Strips48(t *testing.T) {
	defer func(on bool) { gemmStrips48 = on }(gemmStrips48)
	r := rand.New(rand.NewPCG(23, 24))
	var scratch []float32
	run := func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
		gemmF32(m, n, k, a, lda, b, ldb, c, ldc, &scratch)
	}
	eachMicroKernel(func() {
		on := gemmWideEdge.masked != nil && !tallRows
		// 48-wide strips where they cover the columns (the last one holding 33-48) in fewer
		// strips than 32-wide ones (a remainder of 16 or less joining the last): 81-96 take 2
		// against 3, 131 and 144 3 against 4, 233 5 against 7; 80 (48 + 32 left), 128 and 176
		// (32 left), 40 (1 against 1) and 256 or more (always 32-wide) do not
		fewer := map[int]bool{81: true, 92: true, 95: true, 96: true, 131: true, 144: true, 233: true}
		for _, n := range []int{40, 80, 81, 92, 95, 96, 128, 131, 144, 176, 233, 256} {
			for _, m := range []int{5, 7, 8, 9, 13, 64, 67} { // row blocks of 4-8
				for _, k := range []int{1, 17, 128, 301} {
					for _, lda := range []int{k + 3, 2304} {
						gemmStrips48 = true
						before, streamedBefore := strips48Dots.Load(), streamedDots.Load()
						gemmCheckLD(t, r, m, n, k, lda, n+5, run)
						if took := strips48Dots.Load() != before; took && lda >= 1024 && n <= 96 && streamedDots.Load() == streamedBefore {
							t.Fatalf("%s %dx%dx%d, rows of a %d apart: the 48-wide strips did not prefetch a", dotKernelName(), m, n, k, lda)
						}
						// (a packed product is not asserted: its k chunks past gemmPackKC may not pack)
						want := on && fewer[n]
						if took := strips48Dots.Load() != before; took != want && !gemmPacksB(m, n, k, n+5) {
							t.Fatalf("%s %dx%dx%d: 48-wide strips taken %v, want %v", dotKernelName(), m, n, k, took, want)
						}
						gemmSameBits(t, r, m, n, k, lda, n, &scratch, func() { gemmStrips48 = false }, "on 48-wide strips", "on 32-wide ones")
					}
				}
			}
		}
	})
}

// TestGemmF32GemvColumn checks dotF32's products of 4 columns, which run on the gemv kernels
// over a deep k of whole vectors (narrowGemv), of 8q + 1 columns, whose last column does
// under AVX2 (gemmGemvColumn), and of 9 columns against rows of A 4 KB or more apart, which
// run there entirely under AVX-512 on AMD (gemmGemvAll), and that the gemv path is taken
// there and only there. Each changes the order of the sums (lanes along k, then a
// horizontal sum): checked against the float64 reference within gemmCheckLD's bound, and
// the 9 columns bit for bit against gemvF32 on B's columns transposed (TestGemvAllColumns).
func TestGemmF32GemvColumn(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	var scratch []float32
	run := func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
		dotF32(m, n, k, a, lda, b, ldb, c, ldc, &scratch)
	}
	eachMicroKernel(func() {
		on := gemmGemvColumn && gemmSIMD && gemmWideEdge.masked == nil && gemvKern != nil
		for _, n := range []int{1, 4, 8, 9, 16, 17, 25, 32} {
			for _, m := range []int{3, 4, 7, 13, 64, 256} {
				for _, k := range []int{5, 8, 17, 64, 256, 300, 1024} {
					for _, lda := range []int{k + 3, 2048} {
						before := gemvColumnDots.Load()
						gemmCheckLD(t, r, m, n, k, lda, n+5, run)
						narrow := gemmSIMD && gemvKern != nil && n == 4 && m >= 4 && k >= narrowGemvMinK && k%gemvLanes == 0
						all := tallRows && gemmWideEdge.masked != nil && n == 9 && lda >= 1024 && m >= 4 && k >= narrowGemvMinK
						want := narrow || on && n%8 == 1 && n < 32 && m >= 4 && k >= gemvLanes || all
						if took := gemvColumnDots.Load() != before; took != want {
							t.Fatalf("%s %dx%dx%d: gemv column taken %v, want %v", dotKernelName(), m, n, k, took, want)
						}
					}
				}
			}
		}
	})
}

// TestGemvAllColumns checks that a product of 9 columns on the gemv kernels alone
// (gemvTail: 8 columns 4 at a time against A's rows, the 9th with the roles swapped)
// gives bit for bit what gemvF32 gives for the 9 columns of B transposed, at row counts
// around the kernels' 3-row and 4-column blocks and k with and without a tail past the
// vectors; and that with gemmGemvAll off such a product runs on the strips again.
func TestGemvAllColumns(t *testing.T) {
	defer func(on bool) { gemmGemvAll = on }(gemmGemvAll)
	r := rand.New(rand.NewPCG(27, 28))
	var scratch []float32
	eachMicroKernel(func() {
		if !tallRows || gemmWideEdge.masked == nil {
			return
		}
		const n, lda = 9, 2048
		for _, m := range []int{4, 5, 7, 13, 64, 256} {
			for _, k := range []int{64, 100, 256, 512} {
				a, b := normalF32(r, m*lda), normalF32(r, k*n)
				bt := make([]float32, n*k)
				for p := range k {
					for j := range n {
						bt[j*k+p] = b[p*n+j]
					}
				}
				got, want := normalF32(r, m*n), make([]float32, m*n)
				copy(want, got)
				gemmGemvAll = true
				before := gemvColumnDots.Load()
				gemmF32(m, n, k, a, lda, b, n, got, n, &scratch)
				if gemvColumnDots.Load() == before {
					t.Fatalf("%s %dx%dx%d: not on the gemv kernels", dotKernelName(), m, n, k)
				}
				gemvF32(m, n, k, a, lda, bt, k, want, n)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s %dx%dx%d: c[%d] = %g, gemvF32 %g", dotKernelName(), m, n, k, i, got[i], want[i])
					}
				}
				gemmGemvAll = false
				before = gemvColumnDots.Load()
				gemmF32(m, n, k, a, lda, b, n, got, n, &scratch)
				if gemvColumnDots.Load() != before {
					t.Fatalf("%s %dx%dx%d: on the gemv kernels with gemmGemvAll off", dotKernelName(), m, n, k)
				}
			}
		}
	})
}

// BenchmarkGemmFoldedSmallMap runs the folded GEMM of resnet's 3x3 256-channel convolution
// on 6x6 maps at N = 8, batch 2 (conv_flat.py's Folded form: per model and 64-row channel
// tile, 18 dots of k = 128 over a row-major weight [256, 2304], 2.4 MB a model, against the
// 92 columns of both samples' flat padded pixels) on one thread, on 32-wide strips ("32":
// two and a masked one) and on 48-wide ones ("48": one and a masked one, prefetching the
// weight along its rows). GFLOP per CPU-second of the thread, the 92 columns counted.
func BenchmarkGemmFoldedSmallMap(b *testing.B) {
	defer func(on bool) { gemmStrips48 = on }(gemmStrips48)
	const models, oc, k, boc, bk, nq = 8, 256, 2304, 64, 128, 92
	w := make([]float32, models*oc*k)
	for i := range w {
		w[i] = float32(i%7) * 0.01
	}
	x := make([]float32, models*k*nq)
	for i := range x {
		x[i] = float32(i%5) * 0.01
	}
	c := make([]float32, boc*nq)
	var scratch []float32
	for _, v := range []struct {
		name string
		on   bool
	}{{"32", false}, {"48", true}} {
		b.Run(v.name, func(b *testing.B) {
			gemmStrips48 = v.on
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			t0 := threadCPUTime()
			for b.Loop() {
				for m := range models {
					for ot := range oc / boc {
						base := (m*oc + ot*boc) * k
						for kt := range k / bk {
							gemmF32(boc, nq, bk, w[base+kt*bk:], k, x[(m*k+kt*bk)*nq:], nq, c, nq, &scratch)
						}
					}
				}
			}
			if cpuTime := (threadCPUTime() - t0).Seconds(); cpuTime > 0 {
				b.ReportMetric(float64(2*models*oc*k*nq*b.N)/cpuTime/1e9, "GFLOP/cpu-s")
			}
		})
	}
}

// BenchmarkGemmNinePixels runs the dots of resnet50's layer-4 1x1 convolutions on 3x3 maps
// at N = 3, batch 2 (per model, sample and 256-row channel tile, dots of k = 256 over the
// row-major weight against the sample's 9 pixels), 2048 -> 512 (rows of A 8 KB apart) and
// 512 -> 2048 (2 KB: not on gemv), with gemmGemvAll off ("strips": the masked 16-wide
// strip) and on ("gemv"). One thread; GFLOP per CPU-second of the thread.
func BenchmarkGemmNinePixels(b *testing.B) {
	defer func(on bool) { gemmGemvAll = on }(gemmGemvAll)
	const models, batch, bm, bk, px = 3, 2, 256, 256, 9
	for _, sh := range []struct{ oc, ic int }{{512, 2048}, {2048, 512}} {
		w := make([]float32, models*sh.oc*sh.ic)
		for i := range w {
			w[i] = float32(i%7) * 0.01
		}
		x := make([]float32, models*batch*sh.ic*px)
		for i := range x {
			x[i] = float32(i%5) * 0.01
		}
		c := make([]float32, bm*px)
		var scratch []float32
		for _, on := range []bool{false, true} {
			name := map[bool]string{false: "strips", true: "gemv"}[on]
			b.Run(fmt.Sprintf("%d-%d/%s", sh.ic, sh.oc, name), func(b *testing.B) {
				gemmGemvAll = on
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				t0 := threadCPUTime()
				for b.Loop() {
					for m := range models {
						for s := range batch {
							for ot := range sh.oc / bm {
								for kt := range sh.ic / bk {
									a := w[(m*sh.oc+ot*bm)*sh.ic+kt*bk:]
									gemmF32(bm, px, bk, a, sh.ic, x[((m*batch+s)*sh.ic+kt*bk)*px:], px, c, px, &scratch)
								}
							}
						}
					}
				}
				if cpuTime := (threadCPUTime() - t0).Seconds(); cpuTime > 0 {
					b.ReportMetric(float64(2*models*batch*sh.oc*sh.ic*px*b.N)/cpuTime/1e9, "GFLOP/cpu-s")
				}
			})
		}
	}
}
