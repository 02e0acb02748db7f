package lowering

import (
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
		g, err := graph.Parse("conv.json", []byte(convBNReLUGraph(3, 2, c)), graph.Options{})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := Lower(g, Options{Device: dev.Info()})
		if err != nil {
			t.Fatal(err)
		}
		convs := 0
		for _, l := range plan.Launches {
			if l.Kernel.Template != "conv_flat.py" {
				continue
			}
			convs++
			art, err := testCompiler.Compile(l.Kernel.Source, l.Spec(), cpu.Target{})
			if err != nil {
				t.Fatal(err)
			}
			k, err := dev.Load(art)
			if err != nil {
				t.Fatal(err)
			}
			// acc * scale, + shift, ReLU
			if n := k.(*cpu.Kernel).FlushedEpilogueSteps(); n != 3 {
				t.Errorf("%s (%s): %d epilogue steps in the panels flush, want BatchNorm's 2 and ReLU", c.name, l.Kernel.Source.Fn, n)
			}
			// and its output store (jit/cpu panels_store.go)
			if n := k.(*cpu.Kernel).FusedStores(); n != 1 {
				t.Errorf("%s (%s): %d stores in the panels flush, want the output's", c.name, l.Kernel.Source.Fn, n)
			}
		}
		if convs != 1 {
			t.Errorf("%s: %d conv_flat.py launches, want 1", c.name, convs)
		}
	}
}
