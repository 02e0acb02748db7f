package lowering

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
)

// TestPoolStoresPaddedPlanes runs the ResNet stem fixture with and without the pools storing
// the zero-padded planes of the convolution after them (takePooledInput): without, a pad
// kernel copies each pooled map; with, those copies are gone (the max pool read twice, by a
// convolution and as its residual, and the one read once store the padded planes alone, the
// average pool that is also a graph output both its output and them), only the strided
// reader keeps its phase copy; both plans match PyTorch.
func TestPoolStoresPaddedPlanes(t *testing.T) {
	dir := "testdata/conv/stem_n3"
	g, err := graph.Load(filepath.Join(dir, "graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { convPooledStore = true }()
	for _, on := range []bool{false, true} {
		convPooledStore = on
		plan, err := Lower(g, Options{Device: testDevice("cpu")})
		if err != nil {
			t.Fatal(err)
		}
		ex := Explain(plan)
		launches := launchesOf(plan)
		for _, conv := range []string{"conv", "after_ceil", "dilated"} {
			if padded := launches[conv+" (input zero-padded)"] != nil; padded == on {
				t.Errorf("convPooledStore=%v: %s reads a pad kernel's copy: %v\n%s", on, conv, padded, ex)
			}
		}
		if launches["strided (input zero-padded, as 2x2 stride phases)"] == nil {
			t.Errorf("convPooledStore=%v: the strided reader of a pool has no phase copy:\n%s", on, ex)
		}
		for _, note := range []string{
			"stores its output zero-padded to [12, 13] planes for conv (no reader needs its dense output)",
			"stores its output zero-padded to [11, 13] planes for after_ceil",
			"stores a copy of its output zero-padded to [14, 15] planes for dilated",
			"reads its residual [2,8,10,11] from the zero-padded copy made for pool"} {
			if strings.Contains(ex, note) != on {
				t.Errorf("convPooledStore=%v: explain says %q: %v\n%s", on, note, !on, ex)
			}
		}
		// the pool read twice (conv and its residual add) stores the padded planes alone
		// once both read them, the average pool (a graph output too) both
		for _, ln := range plan.Launches {
			copies := strings.Contains(ln.Kernel.Source.Text, "c_base")
			switch {
			case slices.Contains(ln.Nodes, "pool") && copies:
				t.Errorf("convPooledStore=%v: pool still stores its dense output beside the padded planes:\n%s", on, ex)
			case slices.Contains(ln.Nodes, "avg") && copies != on:
				t.Errorf("convPooledStore=%v: avg stores a padded copy: %v\n%s", on, copies, ex)
			}
		}
		checkFixtureCPU(t, dir, Options{Device: testDevice("cpu")})
	}
}

// The stems of the stem fixture (a 7x7 and a 3x3 stride-2 convolution of an image's 3
// channels, and a 5x3 one at strides 3 and 2) reduce tap by tap in conv_flat.py (each tap's input tile the 3 phase planes at
// one shift, read in place) instead of gathering the rows of channels x taps per step, and
// match PyTorch (TestConvFixtures, and TestCNNFixturesAVX2 for the AVX2 kernels).
func TestStemConvsTapMajor(t *testing.T) {
	plan := lowerGraphFile(t, filepath.Join("testdata", "conv", "stem_n3", "graph.json"), "cpu")
	for _, stem := range []string{"stem", "stem3", "stem_s3"} {
		var src string
		for _, ln := range plan.Launches {
			if slices.Contains(ln.Nodes, stem) {
				src = ln.Kernel.Source.Text
				if ln.Kernel.Template != "conv_flat.py" {
					t.Errorf("%s runs on %s, want conv_flat.py", stem, ln.Kernel.Template)
				}
			}
		}
		if !strings.Contains(src, "for tap in range(0, KHW):") || strings.Contains(src, "tap = ks % KHW") {
			t.Errorf("%s does not reduce tap by tap:\n%s", stem, src)
		}
		if launchesOf(plan)[stem+" (weight as [tap, out, in])"] == nil {
			t.Errorf("%s's weight is not relaid as [tap, out, in]:\n%s", stem, Explain(plan))
		}
	}
}

// conv_pad.py copies the stem fixture's image (3 channels of 37x44 a sample) into each stem's
// stride phase planes (2x2, and 3x2 for stem_s3) one plane a program, as [row, column] tiles
// (PlaneTiles: 4 or 6 steps a plane where the row walk takes 2 x 37), and the max pool's small planes (8 channels of
// 10x11) for the strided convolution reading them by the row walk (one program over all
// its planes); both match PyTorch.
func TestStemPhaseCopyPlaneTiles(t *testing.T) {
	dir := filepath.Join("testdata", "conv", "stem_n3")
	plan := lowerGraphFile(t, filepath.Join(dir, "graph.json"), "cpu")
	tiled := map[string]bool{}
	for _, ln := range plan.Launches {
		if ln.Kernel.Template != "conv_pad.py" {
			continue
		}
		for _, n := range ln.Nodes {
			tiled[n] = strings.Contains(ln.Kernel.Source.Text, "for ph in range(0, PHH):")
			if want := map[bool]int{true: 2 * 3, false: 1}[tiled[n]]; ln.Grid[0] != want {
				t.Errorf("%s: grid %v, want %d programs a model", n, ln.Grid, want)
			}
		}
	}
	for node, want := range map[string]bool{"stem (input zero-padded, as 2x2 stride phases)": true,
		"stem3 (input zero-padded, as 2x2 stride phases)": true, "stem_s3 (input zero-padded, as 3x2 stride phases)": true, "strided (input zero-padded, as 2x2 stride phases)": false} {
		if got, ok := tiled[node]; !ok || got != want {
			t.Errorf("%s: plane tiles %v (a pad launch: %v), want %v:\n%s", node, got, ok, want, Explain(plan))
		}
	}
	checkFixtureCPU(t, dir, Options{Device: testDevice("cpu")})
}
