package cpu

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/widejit/widejit/triton/ir"
	"testing"

	"github.com/widejit/widejit/internal/testkit"
	"github.com/widejit/widejit/jit"
)

// Benchmarks of whole kernels (bench/kernels compares them against peers).

func BenchmarkElementwiseScaleShift(b *testing.B) {
	const n, block = 1 << 24, 16384
	k := loadKernel(b, filepath.Join(tutorialKernels, "vector_add.py"), "scale_shift_kernel",
		map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32", "scale": "fp32", "shift": "fp32"},
		map[string]any{"BLOCK_SIZE": int64(block)})
	x, _ := NewBuffer(ir.F32, n)
	y, _ := NewBuffer(ir.F32, n)
	args := []jit.Arg{{Buf: x}, {Buf: y}, {Scalar: int64(n)}, {Scalar: 2.0}, {Scalar: 1.0}}
	b.SetBytes(8 * n)
	for b.Loop() {
		if err := k.Launch(grid1(n/block), args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMatmul1024(b *testing.B) {
	const n, bm = 1024, 256
	k := loadKernel(b, filepath.Join(tutorialKernels, "matmul.py"), "matmul_kernel", matmulSig, map[string]any{
		"BLOCK_SIZE_M": int64(bm), "BLOCK_SIZE_N": int64(bm), "BLOCK_SIZE_K": int64(64), "GROUP_SIZE_M": int64(4), "ACTIVATION": ""})
	a, _ := NewBuffer(ir.F32, n*n)
	bb, _ := NewBuffer(ir.F32, n*n)
	c, _ := NewBuffer(ir.F32, n*n)
	b.SetBytes(2 * n * n * n) // "bytes" here are flops: MB/s reads as MFLOP/s
	for b.Loop() {
		if err := runMatmul(b, k, a, bb, c, n, n, n, bm, bm); err != nil {
			b.Fatal(err)
		}
	}
}

// Masked row loads whose masks and offsets are written with integer literals (iw >= 0,
// ow * 1 - 1): they stay symbolic and copy row by row instead of gathering.
func BenchmarkLiteralMaskConv(b *testing.B) {
	const c, w, blockC, blockP = 64, 1 << 14, 64, 64
	path := filepath.Join(b.TempDir(), "lit.py")
	if err := os.WriteFile(path, []byte(litConvSource), 0o644); err != nil {
		b.Fatal(err)
	}
	k := loadKernel(b, path, "lit_conv", map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "C": "i32", "W": "i32"},
		map[string]any{"BLOCK_C": int64(blockC), "BLOCK_P": int64(blockP)})
	x, _ := NewBuffer(ir.F32, c*w)
	y, _ := NewBuffer(ir.F32, c*w)
	args := []jit.Arg{{Buf: x}, {Buf: y}, {Scalar: int64(c)}, {Scalar: int64(w)}}
	for b.Loop() {
		if err := k.Launch(grid1(w/blockP), args); err != nil {
			b.Fatal(err)
		}
	}
}

// The dot micro-kernels' own ceiling, on operands that stay in the L1 cache, one goroutine
// per core, in GFLOP/s and % of one core's FMA peak (PeakGFLOPS) per CPU-second used:
//
//	go test ./jit/cpu -run '^$' -bench DotMicroKernel
//
// tile: one register block, c[mr, w] += a[mr, k] x b[k, w], as gemmF32 runs it;
// panels: the same block summing 9 panels of 64-deep products (a 3x3 convolution's taps over
// 64 channels), as the queued dots of a tap loop run (gemmPanels), and on the wider panels
// kernel where the CPU has one (8x48 on Intel AVX-512).
func BenchmarkDotMicroKernel(b *testing.B) {
	eachISA(b, func(b *testing.B) {
		mr, w := gemmWide.mr, gemmWide.w
		b.Run(fmt.Sprintf("tile=%dx%d/k=256", mr, w), func(b *testing.B) {
			const k = 256
			benchmarkPerCore(b, 2*mr*w*k, func() func() {
				a, bb, c := make([]float32, mr*k), make([]float32, k*w), make([]float32, mr*w)
				var scratch []float32
				return func() { gemmF32(mr, w, k, a, k, bb, w, c, w, &scratch) }
			})
		})
		widths := []int{w}
		if panelWide.run != nil {
			widths = append(widths, panelWide.cols)
		}
		for _, w := range widths {
			b.Run(fmt.Sprintf("panels=%dx%d/taps=9/k=64", mr, w), func(b *testing.B) {
				const taps, k = 9, 64
				benchmarkPerCore(b, 2*mr*w*k*taps, func() func() {
					ps := make([]dotPanel, taps)
					for i := range ps {
						ps[i] = dotPanel{a: make([]float32, mr*k), b: make([]float32, k*w), lda: k, ldb: w, m: mr, n: w, k: k}
					}
					c := make([]float32, mr*w)
					var scratch []float32
					var asm []gemmPanel
					return func() { gemmPanels(ps, c, w, &scratch, &asm, nil, 0, 0, nil, nil) }
				})
			})
		}
	})
}

// benchmarkPerCore runs one call of setup's function per iteration on every core at once
// (each core its own operands) and reports GFLOP/s over all cores, GFLOP per CPU-second
// (what a core does while it runs: on a shared machine other processes take cores away) and
// that as % of PeakGFLOPS (the faster of a measurement before and after).
func benchmarkPerCore(b *testing.B, flopsPerCall int, setup func() func()) {
	peak := PeakGFLOPS(50 * time.Millisecond)
	b.SetParallelism(1)
	b.ResetTimer()
	start, cpu0 := time.Now(), testkit.CPUTime()
	b.RunParallel(func(pb *testing.PB) {
		call := setup()
		for pb.Next() {
			call()
		}
	})
	wall, cpuTime := time.Since(start), testkit.CPUTime()-cpu0
	b.StopTimer()
	peak = max(peak, PeakGFLOPS(50*time.Millisecond))
	flops := float64(flopsPerCall) * float64(b.N)
	b.ReportMetric(flops/wall.Seconds()/1e9, "GFLOP/s")
	if cpuTime > 0 && peak > 0 {
		b.ReportMetric(flops/cpuTime.Seconds()/1e9, "GFLOP/cpu-s")
		b.ReportMetric(100*flops/cpuTime.Seconds()/1e9/peak, "%peak")
	}
}

// BenchmarkStreamedPanels: a folded small-map convolution's queued dots as gemmPanels runs
// them with row blocks outside (streamedA): resnet18's layer-4 3x3/512 at BLOCK_OC 64, 26
// pixel columns, 36 panels of k = 128 along weight rows 4608 floats apart, a different
// weight every call (19 MB a core, past the L2 cache, as a launch at N = 8 reads its 75 MB),
// with the panels kernels that prefetch the rows ahead (stream) and without (plain). Under
// AVX-512 the 26 columns are narrower than a panel strip (gemmF32 runs them): the two are the
// same code there, a measure of the noise. The weights' first pass (page faults) falls in
// the timing, so run enough calls:
//
//	go test ./jit/cpu -run '^$' -bench StreamedPanels -benchtime 2000x -count 5
func BenchmarkStreamedPanels(b *testing.B) {
	eachISA(b, func(b *testing.B) {
		for _, kind := range []string{"stream", "plain"} {
			b.Run(kind, func(b *testing.B) {
				if kind == "plain" {
					saved := panelKernels
					panelKernels = slices.Clone(panelKernels)
					for i := range panelKernels {
						panelKernels[i].stream = nil
					}
					defer func() { panelKernels = saved }()
				}
				const rows, cols, panels, k, weights = 64, 26, 36, 128, 16
				const lda = panels * k
				benchmarkPerCore(b, 2*rows*cols*lda, func() func() {
					w := make([]float32, weights*rows*lda)
					bb, c := make([]float32, lda*cols), make([]float32, rows*cols)
					ps := make([]dotPanel, panels)
					var scratch []float32
					var asm []gemmPanel
					next := 0
					return func() {
						a := w[next*rows*lda:]
						next = (next + 1) % weights
						for i := range ps {
							ps[i] = dotPanel{a: a[i*k:], lda: lda, b: bb[i*k*cols:], ldb: cols, m: rows, n: cols, k: k}
						}
						gemmPanels(ps, c, cols, &scratch, &asm, nil, 0, 0, nil, nil)
					}
				})
			})
		}
	})
}

// eachISA runs f as a sub-benchmark on the AVX-512 kernels (where the CPU has them) and on
// the AVX2 ones.
func eachISA(b *testing.B, f func(b *testing.B)) {
	for _, isa := range []string{"avx512", "avx2"} {
		b.Run(isa, func(b *testing.B) {
			if isa == "avx512" && !haveAVX512 {
				b.Skip("no AVX-512 on this CPU")
			}
			if isa == "avx2" {
				selectMicroKernel(false)
				defer selectMicroKernel(true)
			}
			f(b)
		})
	}
}
