package lowering

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/jit/cpu"
)

// Benchmarks of the conv/pool/attention examples on the CPU backend, wide (one launch per
// kernel for all N) and model by model, for tuning the templates' block sizes:
//
//	go test ./lowering -run '^$' -bench 'Conv|Attention' -benchtime 3x
func benchmarkExample(b *testing.B, example string, opts Options) {
	dir := filepath.Join("..", "examples", example)
	g, err := graph.Load(filepath.Join(dir, "graph.json"))
	if err != nil {
		b.Fatal(err)
	}
	plan, err := Lower(g, opts)
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewTestRunner(plan, cpu.NewDevice(benchThreads), testCompiler, g)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	f, err := g.ReadInputs(filepath.Join(dir, "inputs.safetensors"))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Run(f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkConvResblockWide(b *testing.B) { benchmarkExample(b, "resblock", Options{}) }
func BenchmarkConvResblockModelMajor(b *testing.B) {
	benchmarkExample(b, "resblock", Options{ModelMajor: true})
}
func BenchmarkConvClassifierWide(b *testing.B) { benchmarkExample(b, "classifier", Options{}) }
func BenchmarkAttentionTransformerWide(b *testing.B) {
	benchmarkExample(b, "transformer", Options{})
}
func BenchmarkAttentionTransformerModelMajor(b *testing.B) {
	benchmarkExample(b, "transformer", Options{ModelMajor: true})
}

// The zoo's convolution models (bench/zoo) at N = 1 and 8, wide, through the row-tiled
// kernel (rows) and the flat implicit GEMM (flat), for before/after figures:
//
//	go test ./lowering -run '^$' -bench ZooConv -benchtime 20x
func BenchmarkZooConv(b *testing.B) {
	for _, model := range []string{"resblock", "convnet"} {
		for _, n := range []int{1, 8} {
			for _, kernel := range []string{"rows", "flat"} {
				b.Run(fmt.Sprintf("%s/n=%d/%s", model, n, kernel), func(b *testing.B) {
					convRowKernel = kernel == "rows"
					defer func() { convRowKernel = true }()
					path := filepath.Join("..", "bench", "zoo", model+".json")
					data, err := os.ReadFile(path)
					if err != nil {
						b.Fatal(err)
					}
					g, err := graph.Parse(path, data, graph.Options{N: n})
					if err != nil {
						b.Fatal(err)
					}
					inputs, err := g.GenerateInputs(0)
					if err != nil {
						b.Fatal(err)
					}
					plan, err := Lower(g, Options{})
					if err != nil {
						b.Fatal(err)
					}
					r, err := NewTestRunner(plan, cpu.NewDevice(benchThreads), testCompiler, g)
					if err != nil {
						b.Fatal(err)
					}
					defer r.Close()
					if _, err := r.Run(inputs); err != nil {
						b.Fatal(err)
					}
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if _, err := r.Run(inputs); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
