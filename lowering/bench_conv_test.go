package lowering

import (
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
	r, err := NewRunner(plan, cpu.NewDevice(benchThreads), testCompiler, g)
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
