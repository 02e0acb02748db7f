package lowering

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
)

// TestSqueezeExciteOneKernel checks that the CPU plans run each squeeze-excite block of the
// fixtures (testdata/conv/se: RegNet's ReLU and sigmoid, EfficientNet's SiLU and sigmoid,
// MobileNetV3's ReLU and hardsigmoid, at odd channel counts; blocks of channels, hidden units,
// outputs and pixels walked; a pool written as x.mean; testdata/conv/cnn and mobile: the
// earlier SE shapes) as one se.py launch serving the pool, both FCs and their activations,
// and that a pool with another reader keeps its own kernel and its FCs their matmuls; then
// checks the plans against PyTorch under the CPU plan's strategies (TestCNNFixturesAVX2 runs
// the "cpu" one again on the AVX2 kernels).
func TestSqueezeExciteOneKernel(t *testing.T) {
	blocks := map[string][][]string{
		"se": {
			{"regnet_avgpool", "regnet_fc1", "regnet_activation", "regnet_fc2", "regnet_scale_activation"},
			{"effnet_avgpool", "effnet_fc1", "effnet_activation", "effnet_fc2", "effnet_scale_activation"},
			{"mobile_avgpool", "mobile_fc1", "mobile_activation", "mobile_fc2", "mobile_scale_activation"},
			{"wide_avgpool", "wide_fc1", "wide_activation", "wide_fc2", "wide_scale_activation"},
			{"big_avgpool", "big_fc1", "big_activation", "big_fc2", "big_scale_activation"},
			{"mean", "mean_fc1", "relu", "mean_fc2", "sigmoid"},
		},
		"cnn": {{"se_pool", "se_reduce", "relu_3", "se_expand", "sigmoid"}},
		"mobile": {
			{"adaptive_avg_pool2d", "se_reduce", "relu_2", "se_expand", "hardsigmoid"},
			{"adaptive_avg_pool2d_1", "small_reduce", "relu_4", "small_expand", "sigmoid"},
		},
	}
	cpu := testDevice("cpu")
	for _, name := range []string{"se", "cnn", "mobile"} {
		dir := filepath.Join("testdata", "conv", name+"_n3")
		g, err := graph.Load(filepath.Join(dir, "graph.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct {
			name string
			opts Options
		}{{"cpu", Options{Device: cpu}}, {"cpu-sequential", Options{Device: cpu, Strategy: Sequential}},
			{"cpu-model-major", Options{Device: cpu, ModelMajor: true}}} {
			t.Run(fmt.Sprintf("%s/%s", name, v.name), func(t *testing.T) {
				plan, err := Lower(g, v.opts)
				if err != nil {
					t.Fatal(err)
				}
				for _, block := range blocks[name] {
					var serving []*Launch
					for _, ln := range plan.Launches {
						for _, n := range block {
							if slices.Contains(ln.Nodes, n) && !slices.Contains(serving, ln) {
								serving = append(serving, ln)
							}
						}
					}
					if len(serving) != 1 || serving[0].Kernel.Template != "se.py" || !slices.Equal(serving[0].Nodes, block) {
						var got []string
						for _, ln := range serving {
							got = append(got, fmt.Sprintf("%s %v", ln.Kernel.Template, ln.Nodes))
						}
						t.Errorf("squeeze-excite %v is served by %v, want one se.py launch\n%s", block, got, Explain(plan))
					}
				}
				if name == "se" {
					served := launchesOf(plan)
					// the pool also a graph output: its own kernel, and its FCs matmuls
					for n, want := range map[string]string{"adaptive_avg_pool2d": "reduce_rows.py", "shared_fc1": "matmul.py", "shared_fc2": "matmul.py"} {
						if !slices.Equal(served[n], []string{want}) {
							t.Errorf("%s is served by %v, want %s", n, served[n], want)
						}
					}
					if ex := Explain(plan); !strings.Contains(ex, "regnet_avgpool, regnet_fc1 and regnet_fc2 in one squeeze-excite kernel") {
						t.Errorf("explain does not say that regnet's pool and FCs are one kernel:\n%s", ex)
					}
				}
				checkFixtureCPU(t, dir, v.opts)
			})
		}
	}
	// GPU plans keep the pool and the matmuls
	for _, ln := range lowerGraphFile(t, filepath.Join("testdata", "conv", "se_n3", "graph.json"), "cuda").Launches {
		if ln.Kernel.Template == "se.py" {
			t.Errorf("the GPU plan runs %v on se.py", ln.Nodes)
		}
	}
}

// The squeeze-excite fixtures' CPU plans replayed by testdata/run_plan.py (numpy executor of
// the dumped kernels): se.py's text and the scaled 1x1s', independently of the CPU executor.
func TestReplaySqueezeExcite(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the plans in Python; skipped with -short")
	}
	needPython(t)
	var jobs []replayJob
	for _, fixture := range []string{"se", "se_small_maps"} {
		for _, n := range []int{1, 3} {
			dir := filepath.Join("testdata", "conv", fmt.Sprintf("%s_n%d", fixture, n))
			plan := lowerGraphFile(t, filepath.Join(dir, "graph.json"), "cpu")
			jobs = append(jobs, replayJob{name: filepath.Base(dir) + "/cpu", plan: plan,
				weights: filepath.Join(dir, "weights.safetensors"), inputs: filepath.Join(dir, "inputs.safetensors"),
				expected: filepath.Join(dir, "expected.safetensors")})
		}
	}
	replayAll(t, jobs)
}

// TestScaledSmallMapOneChannelTile checks the CPU plans of squeeze-excite-scaled 1x1
// convolutions on small maps with more output channels than a tile of 64
// (testdata/conv/se_small_maps: RegNet's f.c over 83 channels on 5x7, 45 -> 150 on 3x3,
// 70 -> 97 on 1x3) against PyTorch, and that at N = 3 (the samples giving each core two
// programs) each takes every output channel in one tile and scales its input tile
// (scaledSmallMap), while at N = 1 the 83-channel one keeps two channel tiles.
func TestScaledSmallMapOneChannelTile(t *testing.T) {
	for _, n := range []int{1, 3} {
		dir := filepath.Join("testdata", "conv", fmt.Sprintf("se_small_maps_n%d", n))
		plan := lowerGraphFile(t, filepath.Join(dir, "graph.json"), "cpu")
		for _, conv := range []struct {
			node     string
			channels int
		}{{"regnet_fc", 83}, {"tiny_project", 150}, {"row_project", 97}} {
			found := false
			for _, ln := range plan.Launches {
				if !slices.Contains(ln.Nodes, conv.node) {
					continue
				}
				found = true
				boc, _ := ln.Kernel.Consts["BLOCK_OC"].(int64)
				oneTile := int(boc) >= conv.channels
				if want := n == 3 || conv.node != "regnet_fc"; oneTile != want {
					t.Errorf("n=%d: %s runs BLOCK_OC=%d: every channel one tile %v, want %v", n, conv.node, boc, oneTile, want)
				}
				if !strings.Contains(ln.Kernel.Source.Text, "b = b * tl.load(s_base") {
					t.Errorf("n=%d: %s scales its weight tile, want its input tile", n, conv.node)
				}
			}
			if !found {
				t.Fatalf("n=%d: no launch serves %s", n, conv.node)
			}
		}
		for _, v := range exampleVariants {
			if v.name == "fused-batched" || n == 3 {
				t.Run(fmt.Sprintf("n%d/%s", n, v.name), func(t *testing.T) { checkFixtureCPU(t, dir, v.opts) })
			}
		}
	}
}
