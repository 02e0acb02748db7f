package lowering

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/testkit"
)

// fewRowLinears are the memory-bound Linears of the real models (bench/peers/real_models.py,
// batch 2): rows per model, in and out features, the activation fused after it.
var fewRowLinears = []struct {
	name          string
	rows, in, out int
	act           string
}{
	{"resnet18_fc", 2, 512, 1000, ""},
	{"mobilenet_v3_small_classifier", 2, 1024, 1000, ""},
	{"regnet_se_reduce", 2, 440, 110, "relu"},
	{"regnet_se_expand", 2, 110, 440, "sigmoid"},
	{"convnext_stage4_fc1", 8, 768, 3072, "gelu"},
	{"convnext_stage4_fc2", 8, 3072, 768, ""},
	{"convnext_stage3_fc1", 32, 384, 1536, "gelu"},
}

func fewRowLinearGraph(n, rows, in, out int, act string) string {
	nodes := fmt.Sprintf(`{"name": "fc", "op": "linear", "inputs": ["x"], "params": {"weight": "w", "bias": "b"}, "attrs": {"in_features": %d, "out_features": %d, "bias": true}}`, in, out)
	last := "fc"
	if act != "" {
		nodes += fmt.Sprintf(`, {"name": "act", "op": %q, "inputs": ["fc"]}`, act)
		last = "act"
	}
	return fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
 "inputs": [{"name": "x", "shape": [%d, %d], "dtype": "float32", "per_model": true}],
 "params": [{"name": "w", "shape": [%d, %d], "dtype": "float32"}, {"name": "b", "shape": [%d], "dtype": "float32"}],
 "nodes": [%s], "outputs": [%q], "init": {"seed": 1}}`, n, rows, in, out, in, out, nodes, last)
}

// BenchmarkFewRowLinears runs the real models' few-row Linears (fewRowLinears) wide at N = 3
// on the CPU, reading the weight in place (gemv: jit/cpu's gemv path) and transposed once
// at load (transposed: the gemm kernels, cpuGemvMaxRows = 0), one after the other for each
// shape, and a copy of 64 MiB (the floor: GB read, as many written). It reports the weights read (N
// models' [out, in] fp32) in GB/s of the matmul kernel's launches (the runner's profile) and
// GB per CPU-second of the process (which other load on a shared machine does not move).
//
//	go test ./lowering -run '^$' -bench FewRowLinears -count 3
func BenchmarkFewRowLinears(b *testing.B) {
	const n = 3
	b.Run("copy64MiB", func(b *testing.B) {
		src, dst := make([]byte, 64<<20), make([]byte, 64<<20)
		for i := range src {
			src[i] = 1
		}
		cpu0 := testkit.CPUTime()
		for b.Loop() {
			copy(dst, src)
		}
		bytes := float64(len(src)) * float64(b.N) // read (as many written)
		b.ReportMetric(bytes/b.Elapsed().Seconds()/1e9, "GB/s")
		if t := testkit.CPUTime() - cpu0; t > 0 {
			b.ReportMetric(bytes/t.Seconds()/1e9, "GB/cpu-s")
		}
	})
	defer func(rows int) { cpuGemvMaxRows = rows }(cpuGemvMaxRows)
	for _, s := range fewRowLinears {
		for _, path := range []struct {
			name string
			rows int
		}{{"gemv", cpuGemvMaxRows}, {"transposed", 0}} {
			b.Run(s.name+"/"+path.name, func(b *testing.B) {
				cpuGemvMaxRows = path.rows
				g, err := graph.Parse("linear.json", []byte(fewRowLinearGraph(n, s.rows, s.in, s.out, s.act)), graph.Options{})
				if err != nil {
					b.Fatal(err)
				}
				r, inputs, plan := benchRunner(b, g, 1)
				defer r.Close()
				prof, ok := r.(interface {
					Profile(bool)
					KernelTimes() []time.Duration
				})
				if !ok {
					b.Fatal("the test runner cannot profile")
				}
				if _, err := r.Run(inputs); err != nil {
					b.Fatal(err)
				}
				prof.Profile(true)
				b.ResetTimer()
				cpu0 := testkit.CPUTime()
				for range b.N {
					if _, err := r.Run(inputs); err != nil {
						b.Fatal(err)
					}
				}
				cpuTime := testkit.CPUTime() - cpu0
				b.StopTimer()
				var kernel time.Duration
				for i, t := range prof.KernelTimes() {
					if slices.Contains(plan.Launches[i].Ops, "linear") {
						kernel += t
					}
				}
				bytes := float64(n*s.in*s.out*4) * float64(b.N)
				b.ReportMetric(bytes/kernel.Seconds()/1e9, "kernel-GB/s")
				if cpuTime > 0 {
					b.ReportMetric(bytes/cpuTime.Seconds()/1e9, "GB/cpu-s")
				}
			})
		}
	}
}
