package lowering

import (
	"fmt"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/jit/cpu"
)

// mlpGraph is the README's MLP (64 -> 128 -> 64, batch 32) at n models, initialised.
func mlpGraph(n int) string {
	return fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
 "inputs": [{"name": "x", "shape": [32, 64], "dtype": "float32"}],
 "params": [{"name": "fc1.weight", "shape": [128, 64], "dtype": "float32"}, {"name": "fc1.bias", "shape": [128], "dtype": "float32"},
            {"name": "fc2.weight", "shape": [64, 128], "dtype": "float32"}, {"name": "fc2.bias", "shape": [64], "dtype": "float32"}],
 "nodes": [{"name": "fc1", "op": "linear", "inputs": ["x"], "params": {"weight": "fc1.weight", "bias": "fc1.bias"}, "attrs": {"in_features": 64, "out_features": 128}},
           {"name": "act", "op": "relu", "inputs": ["fc1"]},
           {"name": "fc2", "op": "linear", "inputs": ["act"], "params": {"weight": "fc2.weight", "bias": "fc2.bias"}, "attrs": {"in_features": 128, "out_features": 64}}],
 "outputs": ["fc2"], "init": {"seed": 1}}`, n)
}

// BenchmarkMLP times one execution of the MLP plan at N=100 per strategy on the CPU.
func BenchmarkMLP(b *testing.B) {
	g, err := graph.Parse("mlp.json", []byte(mlpGraph(100)), graph.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ins, _ := g.GenerateInputs(1)
	for _, v := range exampleVariants {
		b.Run(v.name, func(b *testing.B) {
			plan, err := Lower(g, v.opts)
			if err != nil {
				b.Fatal(err)
			}
			r, err := NewTestRunner(plan, cpu.NewDevice(benchThreads), testCompiler, g)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := r.Run(ins); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var benchThreads = 0 // CPU workers: 0 means every core
