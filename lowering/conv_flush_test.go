package lowering

import (
	"fmt"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/jit/cpu"
)

// TestConvEpilogueInPanelsFlush: the CPU backend runs the epilogue of resnet18's
// convolutions (BatchNorm's multiply and add, ReLU) inside the flush of their queued dots,
// each register block through it after its last panel (jit/cpu panels_epilogue.go), for
// every form conv_flat.py renders them in here (tap loops over padded planes and phase
// planes, the pointwise loop, the folded small maps): fails if the template's epilogue or
// the backend's recognition drift apart and the steps fall back to passes over the tile.
// Its output store goes there too (jit/cpu panels_store.go), each block copied to the output
// after its epilogue.
// Results are checked against PyTorch by the conv fixtures (TestConvFixtures,
// TestCNNFixturesAVX2), which run the same path.
func TestConvEpilogueInPanelsFlush(t *testing.T) {
	dev := cpu.NewDevice(1)
	for _, c := range resnet18Convs {
		kernels, names := convFlatKernels(t, dev, convBNReLUGraph(3, 2, c))
		for i, k := range kernels {
			// acc * scale, + shift, ReLU
			if n := k.FlushedEpilogueSteps(); n != 3 {
				t.Errorf("%s (%s): %d epilogue steps in the panels flush, want BatchNorm's 2 and ReLU", c.name, names[i], n)
			}
			// and its output store (jit/cpu panels_store.go)
			if n := k.FusedStores(); n != 1 {
				t.Errorf("%s (%s): %d stores in the panels flush, want the output's", c.name, names[i], n)
			}
		}
		if len(kernels) != 1 {
			t.Errorf("%s: %d conv_flat.py launches, want 1", c.name, len(kernels))
		}
	}
}

// convFlatKernels lowers the graph src for dev and loads its conv_flat.py kernels, returning
// them and their names.
func convFlatKernels(t *testing.T, dev *cpu.Device, src string) (kernels []*cpu.Kernel, names []string) {
	t.Helper()
	g, err := graph.Parse("conv.json", []byte(src), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Lower(g, Options{Device: dev.Info()})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range plan.Launches {
		if l.Kernel.Template != "conv_flat.py" {
			continue
		}
		art, err := testCompiler.Compile(l.Kernel.Source, l.Spec(), cpu.Target{})
		if err != nil {
			t.Fatal(err)
		}
		k, err := dev.Load(art)
		if err != nil {
			t.Fatal(err)
		}
		kernels, names = append(kernels, k.(*cpu.Kernel)), append(names, l.Kernel.Source.Fn)
	}
	return kernels, names
}

// TestConvStoreInPanelsFlush: where a convolution feeds the next one, its output goes there
// as zero-padded planes (conv_flat.py's padded store, its dropped columns zeroed by a
// tl.where), and the backend still runs the store inside the flush (jit/cpu panels_store.go),
// the tl.where a fourth step of the epilogue: checked on pairs of resnet18's 3x3 convolutions
// at stride 1 (each with its BatchNorm and ReLU), fails if the padded store's form and the
// backend's recognition drift apart.
func TestConvStoreInPanelsFlush(t *testing.T) {
	dev := cpu.NewDevice(1)
	for _, c := range resnet18Convs {
		if c.k != 3 || c.stride != 1 {
			continue
		}
		kernels, names := convFlatKernels(t, dev, convPairGraph(3, 2, c))
		for i, kn := range kernels {
			// the first stores padded planes where the second reads them (maps of 12 and
			// more; the small maps' second convolution reads its columns, conv_cols.py)
			steps := 3
			if i == 0 && c.hw >= 12 {
				steps = 4
			}
			if n := kn.FlushedEpilogueSteps(); n != steps {
				t.Errorf("%s, convolution %d (%s): %d epilogue steps in the panels flush, want %d", c.name, i+1, names[i], n, steps)
			}
			if n := kn.FusedStores(); n != 1 {
				t.Errorf("%s, convolution %d (%s): %d stores in the panels flush, want the output's", c.name, i+1, names[i], n)
			}
		}
		if len(kernels) != 2 {
			t.Errorf("%s: %d conv_flat.py launches, want 2", c.name, len(kernels))
		}
	}
}

// convPairGraph is two convolutions of c's shape in turn (the second from c.out channels),
// each with its BatchNorm and ReLU, at n models.
func convPairGraph(n, batch int, c convShape) string {
	conv := func(name, in, w string, cin int) string {
		return fmt.Sprintf(`{"name": %q, "op": "conv2d", "inputs": [%q], "params": {"weight": %q}, "attrs": {"in_channels": %d, "out_channels": %d, "kernel_size": [%d, %d], "stride": [1, 1], "padding": [%d, %d], "dilation": [1, 1], "groups": 1, "bias": false, "padding_mode": "zeros"}}`,
			name, in, w, cin, c.out, c.k, c.k, c.k/2, c.k/2)
	}
	bn := func(name, in string) string {
		return fmt.Sprintf(`{"name": %q, "op": "batch_norm2d", "inputs": [%q], "params": {"weight": "g", "bias": "b", "running_mean": "m", "running_var": "v"}, "attrs": {"num_features": %d, "eps": 1e-05, "momentum": 0.1, "affine": true, "track_running_stats": true, "training": false}}`,
			name, in, c.out)
	}
	return fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
 "inputs": [{"name": "x", "shape": [%d, %d, %d, %d], "dtype": "float32", "per_model": true}],
 "params": [{"name": "w1", "shape": [%d, %d, %d, %d], "dtype": "float32"}, {"name": "w2", "shape": [%d, %d, %d, %d], "dtype": "float32"},
  {"name": "g", "shape": [%d], "dtype": "float32"}, {"name": "b", "shape": [%d], "dtype": "float32"},
  {"name": "m", "shape": [%d], "dtype": "float32"}, {"name": "v", "shape": [%d], "dtype": "float32"}],
 "nodes": [%s, %s, {"name": "relu1", "op": "relu", "inputs": ["bn1"]}, %s, %s, {"name": "relu2", "op": "relu", "inputs": ["bn2"]}],
 "outputs": ["relu2"], "init": {"seed": 1}}`,
		n, batch, c.in, c.hw, c.hw, c.out, c.in, c.k, c.k, c.out, c.out, c.k, c.k, c.out, c.out, c.out, c.out,
		conv("conv1", "x", "w1", c.in), bn("bn1", "conv1"), conv("conv2", "relu1", "w2", c.out), bn("bn2", "conv2"))
}

// TestResidualConvInPanelsFlush: a basic block's second convolution adds its residual and
// then ReLU inside the flush (the residual tile a step of the chain), and where the block's
// output feeds both the next block's first convolution (padded planes, through a tl.where)
// and its residual add (the plain output), both stores run inside the flush too (jit/cpu
// panels_store.go: the select left to its store). Checked on two basic blocks at resnet18's
// 3x3 stride-1 shapes with maps of 12 and more; fails if conv_flat.py's residual read or
// padded copy and the backend's recognition drift apart.
func TestResidualConvInPanelsFlush(t *testing.T) {
	dev := cpu.NewDevice(1)
	for _, c := range resnet18Convs {
		if c.k != 3 || c.stride != 1 || c.hw < 12 {
			continue
		}
		kernels, names := convFlatKernels(t, dev, basicBlocksGraph(3, 2, c))
		if len(kernels) != 4 {
			t.Fatalf("%s: %d conv_flat.py launches, want 4", c.name, len(kernels))
		}
		// the first convolution of a block: BatchNorm, ReLU and the padded store's tl.where;
		// the second: BatchNorm, the residual add and ReLU; the first block's second also
		// stores the padded planes of the next block's first convolution
		for i, want := range []struct{ steps, stores int }{{4, 1}, {4, 2}, {4, 1}, {4, 1}} {
			if n := kernels[i].FlushedEpilogueSteps(); n != want.steps {
				t.Errorf("%s, convolution %d (%s): %d epilogue steps in the panels flush, want %d", c.name, i+1, names[i], n, want.steps)
			}
			if n := kernels[i].FusedStores(); n != want.stores {
				t.Errorf("%s, convolution %d (%s): %d stores in the panels flush, want %d", c.name, i+1, names[i], n, want.stores)
			}
		}
	}
}

// basicBlocksGraph is two of resnet18's basic blocks of c's channels in turn (3x3
// convolution, BatchNorm, ReLU, 3x3 convolution, BatchNorm, the block's input added, ReLU),
// at n models.
func basicBlocksGraph(n, batch int, c convShape) string {
	conv := func(name, in string) string {
		return fmt.Sprintf(`{"name": %q, "op": "conv2d", "inputs": [%q], "params": {"weight": "w"}, "attrs": {"in_channels": %d, "out_channels": %d, "kernel_size": [3, 3], "stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 1, "bias": false, "padding_mode": "zeros"}}`,
			name, in, c.out, c.out)
	}
	bn := func(name, in string) string {
		return fmt.Sprintf(`{"name": %q, "op": "batch_norm2d", "inputs": [%q], "params": {"weight": "g", "bias": "b", "running_mean": "m", "running_var": "v"}, "attrs": {"num_features": %d, "eps": 1e-05, "momentum": 0.1, "affine": true, "track_running_stats": true, "training": false}}`,
			name, in, c.out)
	}
	var nodes []string
	in := "x"
	for _, blk := range []string{"a", "b"} {
		nodes = append(nodes, conv(blk+"conv1", in), bn(blk+"bn1", blk+"conv1"),
			fmt.Sprintf(`{"name": "%srelu1", "op": "relu", "inputs": ["%sbn1"]}`, blk, blk),
			conv(blk+"conv2", blk+"relu1"), bn(blk+"bn2", blk+"conv2"),
			fmt.Sprintf(`{"name": "%sadd", "op": "add", "inputs": ["%sbn2", %q]}`, blk, blk, in),
			fmt.Sprintf(`{"name": "%srelu2", "op": "relu", "inputs": ["%sadd"]}`, blk, blk))
		in = blk + "relu2"
	}
	return fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
 "inputs": [{"name": "x", "shape": [%d, %d, %d, %d], "dtype": "float32", "per_model": true}],
 "params": [{"name": "w", "shape": [%d, %d, 3, 3], "dtype": "float32"},
  {"name": "g", "shape": [%d], "dtype": "float32"}, {"name": "b", "shape": [%d], "dtype": "float32"},
  {"name": "m", "shape": [%d], "dtype": "float32"}, {"name": "v", "shape": [%d], "dtype": "float32"}],
 "nodes": [%s],
 "outputs": [%q], "init": {"seed": 1}}`,
		n, batch, c.out, c.hw, c.hw, c.out, c.out, c.out, c.out, c.out, c.out, strings.Join(nodes, ",\n  "), in)
}
