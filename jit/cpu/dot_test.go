package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// gemmBenchSizes are (m, n, k): aligned, odd (the next aligned size per flop), few rows,
// and large n and k.
var gemmBenchSizes = [][3]int{{64, 128, 256}, {67, 131, 257}, {3, 131, 257}, {128, 1024, 512}, {64, 1024, 1024}}

// BenchmarkGemmF32 runs gemmF32 on the AVX-512 and the AVX2 path (the same kernel twice
// on a CPU without AVX-512) and reports GFLOP/s.
func BenchmarkGemmF32(b *testing.B) {
	defer selectMicroKernel(true)
	for _, avx512 := range []bool{true, false} {
		selectMicroKernel(avx512)
		path := map[bool]string{true: "avx512", false: "avx2"}[avx512]
		for _, s := range gemmBenchSizes {
			m, n, k := s[0], s[1], s[2]
			b.Run(fmt.Sprintf("%s/%dx%dx%d", path, m, n, k), func(b *testing.B) {
				selectMicroKernel(avx512)
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
