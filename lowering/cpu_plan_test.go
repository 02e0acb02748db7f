package lowering

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/testkit"
)

// CPU plans use the CPU's own kernels where they exist (row-block norms and last-dim
// reductions, flat convolutions, weights transposed once, the MLP over them) and GPU plans
// never do; the "cpu" variant of exampleVariants checks every such plan against PyTorch.
func TestCPUPlansUseCPUKernels(t *testing.T) {
	cpuOnly := map[string]bool{"norm_rows.py": true, "reduce_rows.py": true, "conv_flat.py": true, "conv_pad.py": true, "conv_cols.py": true, "se.py": true}
	seen := map[string]bool{}
	transposed, padded := false, false
	paths, _ := filepath.Glob(filepath.Join("testdata", "fixtures", "*_n3", "graph.json"))
	convs, _ := filepath.Glob(filepath.Join("testdata", "conv", "*_n3", "graph.json"))
	for _, p := range append(paths, convs...) {
		g, err := graph.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{"cpu", "cuda"} {
			plan, err := Lower(g, Options{Device: testDevice(kind)})
			if err != nil {
				t.Fatalf("%s (%s): %v", p, kind, err)
			}
			for _, l := range plan.Launches {
				tmpl := l.Kernel.Template
				if kind == "cuda" && cpuOnly[tmpl] {
					t.Errorf("%s: GPU plan uses %s", p, tmpl)
				}
				// the fused MLP reads the weights transposed once on the CPU (no tile is
				// transposed per step), as they lie on a GPU
				if text := l.Kernel.Source.Text; tmpl == "mlp.py" && (kind == "cpu") == (strings.Contains(text, "tl.trans(") || !strings.Contains(text, "w1_sk")) {
					t.Errorf("%s: the %s plan's MLP kernel has the other backend's form:\n%s", p, kind, text)
				}
				if kind == "cpu" {
					seen[tmpl] = true
					for _, n := range l.Nodes {
						transposed = transposed || l.Prepare && len(n) > 0 && n[len(n)-1] == ')' && l.Ops[0] == "transpose"
					}
					// the transposed weights' rows start on 64-byte lines (out_s0: the row stride)
					for _, a := range l.Args {
						padded = padded || l.Prepare && a.Name == "out_s0"
						if l.Prepare && l.Ops[0] == "transpose" && (a.Name == "out_s0" && a.Int%weightRowAlign != 0 ||
							a.Name == "out_mstride" && a.Int%weightRowAlign != 0) {
							t.Errorf("%s: %s of the transposed weight %v is not a multiple of %d", p, a.Name, a.Int, weightRowAlign)
						}
					}
				}
			}
		}
	}
	for tmpl := range cpuOnly {
		if !seen[tmpl] {
			t.Errorf("no CPU plan of the fixtures uses %s", tmpl)
		}
	}
	if !transposed {
		t.Error("no CPU plan transposes a Linear weight once in a prepare launch")
	}
	if !seen["mlp.py"] {
		t.Error("no CPU plan of the fixtures fuses an MLP")
	}
	if !padded {
		t.Error("no CPU plan pads a transposed weight's rows (no fixture has an odd width?)")
	}
}

// A feed-forward of 128 -> 512 -> 128 (512 KB of weights a model) fuses into one MLP kernel
// on the CPU, whose cores' L2 caches hold both weights, and stays two matmuls on a GPU.
func TestCPUFusesLargerMLPs(t *testing.T) {
	g, err := graph.Load(filepath.Join("..", "bench", "zoo", "transformer.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind string
		mlp  bool
	}{{"cpu", true}, {"cuda", false}} {
		plan, err := Lower(g, Options{Device: testDevice(c.kind)})
		if err != nil {
			t.Fatal(err)
		}
		fused := false
		for _, l := range plan.Launches {
			fused = fused || l.Kernel.Template == "mlp.py"
		}
		if fused != c.mlp {
			t.Errorf("%s plan: fused MLP %v, want %v\n%s", c.kind, fused, c.mlp, Explain(plan))
		}
	}
}

// The transformer example's residual adds fuse through the identities between them and
// their producers (getitem of the attention tuple, eval dropout) into the attention output
// projection and the MLP kernel, across the projection's [rows, features] layout; the
// numbers are checked against PyTorch by the examples' tests.
func TestResidualAddsFuseThroughIdentities(t *testing.T) {
	g, err := graph.Load(filepath.Join("..", "examples", "transformer", "graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Lower(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fusedInto := map[string][]string{}
	for _, l := range plan.Launches {
		for _, n := range l.Nodes {
			fusedInto[n] = l.Ops
		}
	}
	for node, wantOp := range map[string]string{"add": "out_proj", "add_1": "linear"} {
		ops := fusedInto[node]
		if len(ops) < 2 || ops[0] != wantOp {
			t.Errorf("%s runs in a launch of %v, want it fused into %s", node, ops, wantOp)
		}
	}
}

// makespan simulates workers taking programs in launch order as they come free; the
// figures are worked by hand: a 67 x 131 output in 64 x 64 tiles at k = 10 is two full
// tiles (64*64*10 + programCost = 106496), three slivers of 64 x 3 (67456) and one of 3 x 3
// (65626), taken alternately by two workers.
func TestMakespanByHand(t *testing.T) {
	full, sliver, corner := 64*64*10+programCost, 64*3*10+programCost, 3*3*10+programCost
	want := max(full+sliver+sliver, full+sliver+corner)
	if got := makespan(64, 64, 67, 131, 1, 10, 2); got != want {
		t.Errorf("makespan = %d, want %d", got, want)
	}
}

// An odd Linear of one model on two cores splits its rows into blocks that leave neither
// core idle: 67 rows as 32 + 32 + 3 (35 rows on one core, 32 on the other), not 64 + 3 or
// halves of the weight panel; with 32 models every core already has many programs and the
// tile stays whole, and so does a launch too small to be spread at all.
func TestSpreadOverCoresBalancesOddRows(t *testing.T) {
	g := &groupBase{models: 1, cores: 2}
	if bm, bn := g.spreadOverCores(128, 256, 67, 131, 1, 257); bm != 32 || bn != 256 {
		t.Errorf("one model: tile %d x %d, want 32 x 256", bm, bn)
	}
	g.models = 32
	if bm, bn := g.spreadOverCores(128, 256, 67, 131, 1, 257); bm != 128 || bn != 256 {
		t.Errorf("32 models: tile %d x %d, want 128 x 256", bm, bn)
	}
	// the zoo MLP at N=1 (32 rows of 64 -> 128 -> 64): less work than the CPU spreads over
	// its workers at all, so one program
	g.models = 1
	if bm, _ := g.spreadOverCores(32, 1, 32, 1, 1, 128*64+64*128); bm != 32 {
		t.Errorf("a launch one worker runs: %d-row tiles, want 32", bm)
	}
}

// A CPU plan runs a softmax, log_softmax or LayerNorm over the last dim inside the Linear
// kernel producing it when a program holds whole rows (rowops.go), also softmax then
// LayerNorm, and leaves alone a row wider than cpuRowTailMaxN and a Linear output read twice;
// GPU plans keep their row kernels. The idiom fixture's "cpu" variant checks the fused
// kernels against PyTorch.
func TestRowTailsOnTheCPU(t *testing.T) {
	want := []string{"linear_softmax", "linear_log_softmax", "linear_add_layer_norm", "linear_softmax_layer_norm", "linear_layer_norm"}
	rowKernel := func(l *Launch) bool { return l.Kernel.Template == "reduce_rows.py" || l.Kernel.Template == "reduce.py" }
	tails, rowKernels := rowOpKernels(t, "rowtails_n3", "cpu", "# row tail", rowKernel)
	require.Equal(t, want, tails)
	require.Equal(t, 2, rowKernels, "the 300-wide softmax and the twice-read Linear's softmax run as row kernels")
	tails, _ = rowOpKernels(t, "rowtails_n3", "cuda", "# row tail", rowKernel)
	require.Empty(t, tails, "GPU plans keep separate row kernels")

	// the post-norm encoder layer's feed-forward: Linear-ReLU-Linear, residual add and
	// LayerNorm in one mlp.py kernel (the fixture's "cpu" variant checks it against PyTorch)
	mlpTails, _ := rowOpKernels(t, "transformers_n3", "cpu", "# row tail: LayerNorm", func(*Launch) bool { return false })
	mlpTails = slices.DeleteFunc(mlpTails, func(chain string) bool { return !strings.Contains(chain, "linear_relu_linear") })
	require.Len(t, mlpTails, 2, "the encoder's and the decoder's feed-forward end in their LayerNorm")
}

// A CPU plan applies a LayerNorm or RMSNorm to a Linear's rows as the Linear loads them
// (rowops.go): before a plain Linear (an odd width; without affine), before a fused MLP and
// before a Linear a softmax ends; a norm over rows wider than one K tile and a norm read
// twice stay kernels of their own, and GPU plans keep theirs. The idiom fixture's "cpu"
// variant checks these kernels against PyTorch.
func TestRowHeadsOnTheCPU(t *testing.T) {
	want := []string{"layer_norm_linear", "layer_norm_linear", "layer_norm_linear_gelu_linear_etc", "layer_norm_linear_softmax"}
	normKernel := func(l *Launch) bool { return strings.HasSuffix(l.Kernel.Source.Fn, "_layer_norm") }
	heads, norms := rowOpKernels(t, "rowheads_n3", "cpu", "# row head", normKernel)
	require.Equal(t, want, heads)
	require.Equal(t, 2, norms, "the 600-wide norm and the norm read twice run as norm kernels")
	heads, _ = rowOpKernels(t, "rowheads_n3", "cuda", "# row head", normKernel)
	require.Empty(t, heads, "GPU plans keep separate norm kernels")
}

// rowOpKernels lowers idiom fixture name for a device kind and returns the op chains of the
// kernels whose source holds marker, in launch order, and how many launches alone reports.
func rowOpKernels(t *testing.T, name, kind, marker string, alone func(*Launch) bool) (chains []string, n int) {
	t.Helper()
	g, err := graph.Load(filepath.Join("testdata", "idioms", name, "graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Lower(g, Options{Device: testDevice(kind)})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range plan.Launches {
		if fn := l.Kernel.Source.Fn; strings.Contains(l.Kernel.Source.Text, marker) {
			chains = append(chains, fn[strings.Index(fn, "_")+1:])
		}
		if alone(l) {
			n++
		}
	}
	return chains, n
}

// An RMSNorm before a Linear, applied by the Linear as it loads its rows (rowops.go), against
// a float64 loop: the norm (no centring, eps, weight), then x @ W^T + b.
func TestRMSNormHeadAgainstLoop(t *testing.T) {
	const n, rows, k, out = 3, 5, 37, 12
	js := fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
  "inputs": [{"name": "x", "shape": [%d, %d], "dtype": "float32"}],
  "params": [{"name": "w", "shape": [%d], "dtype": "float32"},
             {"name": "lw", "shape": [%d, %d], "dtype": "float32"}, {"name": "lb", "shape": [%d], "dtype": "float32"}],
  "nodes": [{"name": "rms", "op": "rms_norm", "inputs": ["x"], "params": {"weight": "w"},
             "attrs": {"normalized_shape": [%d], "eps": 0.001, "elementwise_affine": true}},
            {"name": "fc", "op": "linear", "inputs": ["rms"], "params": {"weight": "lw", "bias": "lb"},
             "attrs": {"in_features": %d, "out_features": %d, "bias": true}}],
  "outputs": ["fc"], "weights": "weights.safetensors"}`, n, rows, k, k, out, k, out, k, k, out)
	g := writeGraph(t, js, map[string][]int{"w": {k}, "lw": {out, k}, "lb": {out}}, n, 11)
	opts := Options{Device: testDevice("cpu")}
	plan, err := Lower(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	require.Len(t, plan.Launches, 2, "the weight's transpose and one rms_norm_linear kernel:\n%s", plan)
	require.Contains(t, plan.Launches[1].Kernel.Source.Text, "# row head: RMSNorm")
	ins, err := g.GenerateInputs(4)
	if err != nil {
		t.Fatal(err)
	}
	got := f32s(t, runPlanCPU(t, g, opts, ins)["fc"])
	x := f32s(t, ins["x"])
	w, _ := g.ParamFloat32s("w")
	lw, _ := g.ParamFloat32s("lw")
	lb, _ := g.ParamFloat32s("lb")
	want := make([]float32, n*rows*out)
	for m := range n {
		for r := range rows {
			row := x[(m*rows+r)*k:][:k]
			ss := 0.0
			for _, v := range row {
				ss += float64(v) * float64(v)
			}
			scale := 1 / math.Sqrt(ss/k+1e-3)
			for o := range out {
				y := float64(lb[m*out+o])
				for c := range k {
					y += float64(row[c]) * scale * float64(w[m*k+c]) * float64(lw[(m*out+o)*k+c])
				}
				want[(m*rows+r)*out+o] = float32(y)
			}
		}
	}
	shape := []int{n, rows, out}
	require.NoError(t, testkit.CompareTensors(safetensors.FromFloat32s("fc", shape, got), safetensors.FromFloat32s("fc", shape, want)))
}

// A LayerNorm whose Linear is wider than one N tile and too large to become a fused MLP's
// first (headRepeats: ConvNeXt's stage 2-3 MLPs) runs as its own kernel, once, where a row
// head would normalise the same rows in every program along N; a narrower Linear, or one of
// a smaller weight, keeps the head. The plain LayerNorm then Linear is checked against a
// float64 loop (odd widths, 5 rows a model).
func TestRowHeadNotRepeatedAcrossN(t *testing.T) {
	const n, rows = 3, 5
	for _, tc := range []struct {
		k, out int
		head   bool
	}{{67, 2049, false}, {67, 1500, true}, {509, 255, true}} {
		js := fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
  "inputs": [{"name": "x", "shape": [%d, %d], "dtype": "float32"}],
  "params": [{"name": "w", "shape": [%d], "dtype": "float32"}, {"name": "b", "shape": [%d], "dtype": "float32"},
             {"name": "lw", "shape": [%d, %d], "dtype": "float32"}, {"name": "lb", "shape": [%d], "dtype": "float32"}],
  "nodes": [{"name": "ln", "op": "layer_norm", "inputs": ["x"], "params": {"weight": "w", "bias": "b"},
             "attrs": {"normalized_shape": [%d], "eps": 0.001, "elementwise_affine": true}},
            {"name": "fc", "op": "linear", "inputs": ["ln"], "params": {"weight": "lw", "bias": "lb"},
             "attrs": {"in_features": %d, "out_features": %d, "bias": true}}],
  "outputs": ["fc"], "weights": "weights.safetensors"}`, n, rows, tc.k, tc.k, tc.k, tc.out, tc.k, tc.out, tc.k, tc.k, tc.out)
		g := writeGraph(t, js, map[string][]int{"w": {tc.k}, "b": {tc.k}, "lw": {tc.out, tc.k}, "lb": {tc.out}}, n, 13)
		opts := Options{Device: testDevice("cpu")}
		plan, err := Lower(g, opts)
		require.NoError(t, err)
		heads, norms := 0, 0
		for _, l := range plan.Launches {
			if strings.Contains(l.Kernel.Source.Text, "# row head: LayerNorm") {
				heads++
			}
			if strings.HasSuffix(l.Kernel.Source.Fn, "_layer_norm") {
				norms++
			}
		}
		if tc.head {
			require.Equal(t, [2]int{1, 0}, [2]int{heads, norms}, "%d -> %d: the Linear normalises its rows (row head), no norm kernel:\n%s", tc.k, tc.out, plan)
			continue
		}
		require.Equal(t, [2]int{0, 1}, [2]int{heads, norms}, "%d -> %d: a norm kernel, no row head:\n%s", tc.k, tc.out, plan)
		ins, err := g.GenerateInputs(4)
		require.NoError(t, err)
		got := f32s(t, runPlanCPU(t, g, opts, ins)["fc"])
		x := f32s(t, ins["x"])
		w, _ := g.ParamFloat32s("w")
		b, _ := g.ParamFloat32s("b")
		lw, _ := g.ParamFloat32s("lw")
		lb, _ := g.ParamFloat32s("lb")
		k, out := tc.k, tc.out
		want := make([]float32, n*rows*out)
		for m := range n {
			for r := range rows {
				normed := layerNorm64(x[(m*rows+r)*k:][:k], w[m*k:], b[m*k:], 1e-3)
				for o := range out {
					y := float64(lb[m*out+o])
					for c, v := range normed {
						y += v * float64(lw[(m*out+o)*k+c])
					}
					want[(m*rows+r)*out+o] = float32(y)
				}
			}
		}
		shape := []int{n, rows, out}
		require.NoError(t, testkit.CompareTensors(safetensors.FromFloat32s("fc", shape, got), safetensors.FromFloat32s("fc", shape, want)))
	}
}
