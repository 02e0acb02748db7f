package lowering

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/testkit"
)

// nn.RNN (tanh, relu), nn.GRU and nn.LSTM against PyTorch fixtures (testdata/rnn, regenerated
// by /usr/bin/python3 lowering/testdata/make_rnn_fixtures.py; the layers are listed in
// testdata/models_rnn.py): 1 and 2 layers, bidirectional, batch_first both ways (through a
// strided transpose), given and zero initial states, bias=False, eval-mode dropout between
// layers, an unbatched sequence, every output (out, h_n, c_n), and element-wise ops and a
// Linear reading them. Every plan variant (fused, unfused, sequential, model-major, CPU
// tiles) at N=3, the default at N=1; fp32 within 1e-5 + 1e-4*max|want|.
func TestRecurrentFixtures(t *testing.T) { checkFamilyFixtures(t, "rnn") }

// With BLOCK_J and BLOCK_K capped at 16, the hidden-20 layers of the wide fixture walk two
// slices of hidden units and two of h_prev per step (the GPU tiles of hidden sizes above 64
// or 32), in every plan variant.
func TestRecurrentHiddenSlices(t *testing.T) {
	defer func() { rnnBlockCap = 0 }()
	rnnBlockCap = 16
	dir := filepath.Join("testdata", "rnn", "wide_n3")
	for _, v := range exampleVariants {
		t.Run(v.name, func(t *testing.T) { checkFixtureCPU(t, dir, v.opts) })
	}
	plan, err := Lower(loadFixtureGraph(t, dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, l := range plan.Launches {
		if l.Kernel.Template == "rnn.py" {
			seen++
			if l.Kernel.Consts["BLOCK_J"] != int64(16) || l.Kernel.Consts["BLOCK_K"] != int64(16) {
				t.Errorf("%s: consts %v, want BLOCK_J = BLOCK_K = 16", l.Kernel.Source.Fn, l.Kernel.Consts)
			}
		}
	}
	// LSTM 2 layers, GRU 2 directions
	if seen != 4 {
		t.Errorf("%d rnn.py launches, want 4\n%s", seen, plan)
	}
}

// The time loop runs inside the kernel: one recurrent launch per layer and direction for
// all N models (grid: batch blocks x N), after one input-projection matmul each.
func TestRecurrentLaunches(t *testing.T) {
	g := loadFixtureGraph(t, filepath.Join("testdata", "rnn", "lstm_n3"))
	plan, err := Lower(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	perNode := map[string]int{}
	for _, l := range plan.Launches {
		if l.Kernel.Template != "rnn.py" {
			continue
		}
		perNode[l.Nodes[0]]++
		if l.Grid != [3]int{1, 3, 1} || l.ModelAxis != 1 || l.Strategy != Batched {
			t.Errorf("%s: grid %v model axis %d %s, want [1 3 1] over the 3 models, batched", l.Kernel.Source.Fn, l.Grid, l.ModelAxis, l.Strategy)
		}
	}
	// a: 1 layer; b: 2 layers x 2 directions; c: 2 layers; d: 2 directions
	want := map[string]int{"rnn_a": 1, "rnn_b": 4, "rnn_c": 2, "rnn_d": 2}
	for node, k := range want {
		if perNode[node] != k {
			t.Errorf("node %s: %d recurrent launches, want %d\n%s", node, perNode[node], k, plan)
		}
	}
}

// Monte Carlo mode drops between layers (rnn_c: 2 layers, dropout 0.25) with the same masks
// in every strategy, different ones for another seed, and leaves the layers without dropout
// as PyTorch computes them; p = 1 is refused.
func TestRecurrentMonteCarloDropout(t *testing.T) {
	dir := filepath.Join("testdata", "rnn", "lstm_n3")
	g := loadFixtureGraph(t, dir)
	ins := testkit.ReadTensors(t, filepath.Join(dir, "inputs.safetensors"))
	want := testkit.ReadTensors(t, filepath.Join(dir, "expected.safetensors"))
	base := runPlanCPU(t, g, Options{Dropout: "mc", Seed: 4}, ins)
	for name, w := range want {
		err := testkit.CompareTensors(base[name], w)
		if strings.HasPrefix(name, "rnn_c") != (err != nil) {
			t.Errorf("%s: %v (only rnn_c has dropout between layers)", name, err)
		}
	}
	for _, o := range []Options{{Strategy: Sequential}, {ModelMajor: true}, {NoFusion: true}} {
		o.Dropout, o.Seed = "mc", 4
		again := runPlanCPU(t, g, o, ins)
		for name, v := range base {
			if string(again[name].Data) != string(v.Data) {
				t.Errorf("%+v: %s differs from the batched plan's (masks must not depend on the strategy)", o, name)
			}
		}
	}
	other := runPlanCPU(t, g, Options{Dropout: "mc", Seed: 5}, ins)
	if string(other["rnn_c_item0"].Data) == string(base["rnn_c_item0"].Data) {
		t.Error("seeds 4 and 5 drew the same masks")
	}
	all := rewriteFixtureGraph(t, dir, "rnn_c", func(m map[string]any) { m["attrs"].(map[string]any)["dropout"] = 1.0 })
	_, err := Lower(all, Options{Dropout: "mc"})
	if err == nil || !strings.Contains(err.Error(), `"rnn_c" (lstm): dropout p=1 between layers drops everything; Monte Carlo mode needs p < 1`) {
		t.Errorf("p = 1: got %v", err)
	}
}

// What is not lowered is refused with the node's name and the reason: dtypes other than
// float32, float16 and bfloat16.
func TestRecurrentRefusals(t *testing.T) {
	g := loadGraphText(t, `{"format": "widejit.graph/v1", "n": 2,
  "inputs": [{"name": "x", "shape": [4, 2, 3], "dtype": "float64"}],
  "params": [{"name": "w_ih", "shape": [5, 3], "dtype": "float64"}, {"name": "w_hh", "shape": [5, 5], "dtype": "float64"}],
  "nodes": [{"name": "rec", "op": "rnn", "inputs": ["x"], "params": {"weight_ih_l0": "w_ih", "weight_hh_l0": "w_hh"},
             "attrs": {"input_size": 3, "hidden_size": 5, "bias": false}},
            {"name": "out", "op": "getitem", "inputs": ["rec"], "attrs": {"index": 0}}],
  "outputs": ["out"], "init": {"seed": 1}}`)
	_, err := Lower(g, Options{})
	if err == nil || !strings.Contains(err.Error(), `"rec" (rnn): input is float64; recurrent layers are lowered for float32, float16 and bfloat16`) {
		t.Errorf("float64 input: got %v", err)
	}
}

func loadFixtureGraph(t *testing.T, dir string) *graph.Graph {
	t.Helper()
	g, err := graph.Load(filepath.Join(dir, "graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// The recurrent plans replayed by testdata/run_plan.py (numpy, an independent executor of
// the dumped kernels): the default and CPU plans of every N=3 fixture.
func TestRecurrentReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("replays plans in Python; skipped with -short")
	}
	needPython(t)
	dirs, _ := filepath.Glob(filepath.Join("testdata", "rnn", "*_n3"))
	var jobs []replayJob
	for _, dir := range dirs {
		for _, v := range exampleVariants {
			if v.name != "fused-batched" && v.name != "cpu" {
				continue
			}
			plan, err := Lower(loadFixtureGraph(t, dir), v.opts)
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, replayJob{name: filepath.Base(dir) + "/" + v.name, plan: plan, weights: filepath.Join(dir, "weights.safetensors"),
				inputs: filepath.Join(dir, "inputs.safetensors"), expected: filepath.Join(dir, "expected.safetensors")})
		}
	}
	replayAll(t, jobs)
}
