package lowering

import (
	"fmt"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/testkit"
)

// squeezeExcites are squeeze-excite blocks of the real models (bench/peers/real_models.py,
// batch 2): channels, hidden width, map side, and the hidden activation.
var squeezeExcites = []struct {
	name       string
	c, s, side int
	act        string
}{
	{"regnet_block1", 48, 8, 24, "relu"},
	{"regnet_block2", 104, 26, 12, "relu"},
	{"regnet_block3", 208, 52, 6, "relu"},
	{"regnet_block4", 440, 110, 3, "relu"},
	{"mobilenet_first", 16, 8, 16, "relu"},
	{"mobilenet_last", 576, 144, 2, "relu"},
	{"effnet_stage2", 96, 4, 16, "silu"},
	{"effnet_stage4", 240, 10, 4, "silu"},
	{"effnet_stage6", 672, 28, 2, "silu"},
	{"effnet_stage7", 1152, 48, 2, "silu"},
}

func squeezeExciteGraph(n, c, s, side int, act string) string {
	conv := func(name, in string, ci, co int) string {
		return fmt.Sprintf(`{"name": %q, "op": "conv2d", "inputs": [%q], "params": {"weight": "%s.w", "bias": "%s.b"}, "attrs": {"in_channels": %d, "out_channels": %d, "kernel_size": [1, 1], "stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 1, "bias": true, "padding_mode": "zeros"}}`,
			name, in, name, name, ci, co)
	}
	param := func(name string, shape ...int) string {
		return fmt.Sprintf(`{"name": %q, "shape": %s, "dtype": "float32"}`, name, shapeJSON(shape))
	}
	return fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
 "inputs": [{"name": "x", "shape": [2, %d, %d, %d], "dtype": "float32", "per_model": true}],
 "params": [%s, %s, %s, %s],
 "nodes": [{"name": "pool", "op": "adaptive_avg_pool2d", "inputs": ["x"], "attrs": {"output_size": 1}}, %s,
  {"name": "act", "op": %q, "inputs": ["fc1"]}, %s, {"name": "gate", "op": "sigmoid", "inputs": ["fc2"]}],
 "outputs": ["gate"], "init": {"seed": 1}}`, n, c, side, side,
		param("fc1.w", s, c, 1, 1), param("fc1.b", s), param("fc2.w", c, s, 1, 1), param("fc2.b", c),
		conv("fc1", "pool", c, s), act, conv("fc2", "act", s, c))
}

func shapeJSON(shape []int) string {
	out := "["
	for i, d := range shape {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprint(d)
	}
	return out + "]"
}

// BenchmarkSqueezeExcite runs the real models' squeeze-excite blocks (squeezeExcites) wide at
// N = 3 on the CPU as one se.py launch (fused) and as a pool and two matmul launches
// (separate), one after the other for each shape, and reports µs of the process's CPU time per
// run (which other load on a shared machine moves far less than the clock).
//
//	go test ./lowering -run '^$' -bench SqueezeExcite -count 3
func BenchmarkSqueezeExcite(b *testing.B) {
	const n = 3
	defer func() { cpuSqueezeExcite = true }()
	for _, s := range squeezeExcites {
		for _, fused := range []bool{true, false} {
			name := s.name + "/separate"
			if fused {
				name = s.name + "/fused"
			}
			b.Run(name, func(b *testing.B) {
				cpuSqueezeExcite = fused
				g, err := graph.Parse("se.json", []byte(squeezeExciteGraph(n, s.c, s.s, s.side, s.act)), graph.Options{})
				if err != nil {
					b.Fatal(err)
				}
				r, inputs, plan := benchRunner(b, g, 1)
				defer r.Close()
				if want := map[bool]int{true: 1, false: 3}[fused]; len(plan.Launches) != want {
					b.Fatalf("%d launches, want %d", len(plan.Launches), want)
				}
				if _, err := r.Run(inputs); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				cpu0 := testkit.CPUTime()
				for range b.N {
					if _, err := r.Run(inputs); err != nil {
						b.Fatal(err)
					}
				}
				cpuTime := testkit.CPUTime() - cpu0
				b.ReportMetric(float64(cpuTime.Microseconds())/float64(b.N), "cpu-µs/run")
			})
		}
	}
}
