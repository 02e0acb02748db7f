package lowering

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/testkit"
)

// The fixtures of Conv3d, the transposed convolutions and BatchNorm3d (their numbers against
// PyTorch are checked by TestConvFixtures on every plan variant, GPU-shaped and CPU).
var convNDFixtures = []string{"testdata/conv/transposed_n3", "testdata/conv/convs_3d_n3", "testdata/conv/nd_unbatched_n3"}

// Every Conv3d and transposed convolution runs on conv_nd.py, in GPU and CPU plans alike;
// a BatchNorm3d and ReLU after a Conv3d, and a BatchNorm2d after a ConvTranspose2d, fuse into
// its epilogue, and a BatchNorm3d on its own is one element-wise kernel.
func TestConvNDKernelChoice(t *testing.T) {
	for _, opts := range []Options{{Device: testDevice("cuda")}, {Device: testDevice("cpu")}} {
		for _, dir := range convNDFixtures {
			g, err := graph.Load(filepath.Join(dir, "graph.json"))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := Lower(g, opts)
			if err != nil {
				t.Fatal(err)
			}
			launchOf := map[string]*Launch{}
			for _, ln := range plan.Launches {
				for _, n := range ln.Nodes {
					launchOf[n] = ln
				}
			}
			for _, n := range g.Nodes {
				if n.Op != "conv3d" && !strings.HasPrefix(n.Op, "conv_transpose") {
					continue
				}
				if ln := launchOf[n.Name]; ln == nil || ln.Kernel.Template != "conv_nd.py" {
					t.Errorf("%s (%s): node %s (%s) does not run on conv_nd.py", dir, opts.Device.Kind, n.Name, n.Op)
				}
			}
			fused := map[string][]string{ // node -> the nodes fused into its launch
				"testdata/conv/transposed_n3": {"t2_bn", "bn"},
				"testdata/conv/convs_3d_n3":   {"pointwise", "bn_fused", "relu_1"},
			}[dir]
			if len(fused) > 0 {
				if ln := launchOf[fused[0]]; ln == nil || strings.Join(ln.Nodes, ",") != strings.Join(fused, ",") {
					t.Errorf("%s: want %v in one launch, got %v", dir, fused, ln.Nodes)
				}
			}
			if dir == "testdata/conv/convs_3d_n3" {
				if ln := launchOf["bn"]; ln == nil || ln.Kernel.Template != "elementwise.py" || len(ln.Nodes) != 1 {
					t.Errorf("%s: BatchNorm3d bn alone should be one element-wise kernel", dir)
				}
			}
		}
	}
}

// Every tile configuration the autotuner may pick for a conv_nd.py launch (BLOCK_P, BLOCK_OC,
// BLOCK_K halved or doubled; more or fewer programs) still matches PyTorch, for one launch of
// each op chain (conv_transpose1d/2d/3d, conv3d, with fused epilogues).
func TestConvNDForcedTunablesMatchPyTorch(t *testing.T) {
	for _, dir := range convNDFixtures[:2] {
		g, err := graph.Load(filepath.Join(dir, "graph.json"))
		if err != nil {
			t.Fatal(err)
		}
		inputs := testkit.ReadTensors(t, filepath.Join(dir, "inputs.safetensors"))
		expected := testkit.ReadTensors(t, filepath.Join(dir, "expected.safetensors"))
		_, points, err := LowerWithDecisions(g, Options{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		runs, seen := 0, map[string]bool{}
		for _, p := range strategyPoints(points) {
			chain := strings.Join(p.Problem.OpChain, "-")
			if !strings.HasPrefix(chain, "conv") || seen[chain] {
				continue // one launch of each op chain keeps the test short
			}
			seen[chain] = true
			for _, c := range p.Candidates[1:] {
				if c.Strategy != Batched || c.Params[NumWarpsParam] != defaultNumWarps {
					continue // the same kernel computes the same numbers
				}
				forced := func() Options {
					ch := &AutotuneChooser{}
					ch.Force(p.Index, c.ID)
					return Options{Chooser: ch}
				}
				plan, err := Lower(g, forced())
				if err != nil {
					t.Fatalf("forcing %s: %v", c.ID, err)
				}
				// several launches share an op chain: one of them renders the forced tiles
				rendered := false
				for _, l := range plan.Launches {
					rendered = rendered || l.Kernel.Template == "conv_nd.py" && Tunables(c.Params).equal(l.Tunables)
				}
				if !rendered {
					t.Fatalf("forced %s: no conv_nd.py launch renders it", c.ID)
				}
				t.Run(chain+"/"+c.ID, func(t *testing.T) { testkit.CheckOutputs(t, runPlanCPU(t, g, forced(), inputs), expected) })
				runs++
			}
		}
		if runs < 5 {
			t.Errorf("%s: only %d forced plans ran", dir, runs)
		}
	}
}

// What conv_nd.py does not compute is refused with an error naming the node: a float64
// input, a BatchNorm3d with batch statistics.
func TestConvNDRefusals(t *testing.T) {
	dir := "testdata/conv/convs_3d_n3"
	g := rewriteFixtureGraph(t, dir, "bn", func(m map[string]any) { m["attrs"].(map[string]any)["training"] = true })
	if _, err := Lower(g, Options{}); err == nil || !strings.Contains(err.Error(), `"bn" (batch_norm3d)`) || !strings.Contains(err.Error(), "training=true") {
		t.Errorf("BatchNorm3d in training mode: got %v, want a refusal naming node \"bn\" and training=true", err)
	}
	g = loadGraphText(t, `{"format": "widejit.graph/v1", "n": 3,
  "inputs": [{"name": "x", "shape": [2, 4, 3, 5, 5], "dtype": "float64"}],
  "params": [{"name": "w", "shape": [4, 2, 1, 2, 2], "dtype": "float64"}],
  "nodes": [{"name": "up", "op": "conv_transpose3d", "inputs": ["x"], "params": {"weight": "w"},
             "attrs": {"in_channels": 4, "out_channels": 2, "kernel_size": [1, 2, 2], "stride": 2, "bias": false}}],
  "outputs": ["up"], "init": {"seed": 1}}`)
	want := `"up" (conv_transpose3d): input is float64; convolutions are lowered for float32, float16 and bfloat16`
	if _, err := Lower(g, Options{}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("float64 conv_transpose3d: got %v, want %q", err, want)
	}
}

// Both loop orders of conv_nd.py (taps outside with channel blocks inside, and the flat
// (channel, tap) loop) on every fixture and plan variant, whatever the channels per group
// would choose, against PyTorch.
func TestConvNDLoopOrders(t *testing.T) {
	defer func() { convNDTapsOuter = 0 }()
	for _, order := range []int{1, -1} {
		convNDTapsOuter = order
		for _, dir := range convNDFixtures {
			g, err := graph.Load(filepath.Join(dir, "graph.json"))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := Lower(g, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, ln := range plan.Launches {
				if ln.Kernel.Template == "conv_nd.py" && ln.Kernel.Consts["TAPS_OUTER"] != (order > 0) {
					t.Errorf("%s: %s has TAPS_OUTER %v with convNDTapsOuter %d", dir, ln.Kernel.Source.Fn, ln.Kernel.Consts["TAPS_OUTER"], order)
				}
			}
			for _, v := range exampleVariants {
				t.Run(fmt.Sprintf("%s/taps_outer=%v/%s", filepath.Base(dir), order > 0, v.name), func(t *testing.T) { checkFixtureCPU(t, dir, v.opts) })
			}
		}
	}
}
