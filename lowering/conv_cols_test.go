package lowering

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
)

// The dense convolutions of more than one tap over small maps (the smallmaps fixture: ResNet's
// stride-2 3x3 and unit-stride 3x3 on 7x6 maps, a dilated and a 2x3 kernel) run on the CPU as
// their columns (conv_cols.py) and one GEMM over every sample (conv_flat.py Folded: one
// program row for all samples, so each weight is read once a launch), with their BatchNorm,
// ReLU and residual add in its epilogue; the 1x1 stride-2 shortcut and the two convolutions
// over larger maps keep the per-sample form; a folded GEMM stores the padded planes the next
// convolution reads (as its output, or as a copy beside it). TestConvFixtures checks the numbers of this plan
// against PyTorch; this checks that the columns path was taken.
func TestConvColsOnSmallMaps(t *testing.T) {
	dir := filepath.Join("testdata", "conv", "smallmaps_n3")
	g, err := graph.Load(filepath.Join(dir, "graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Lower(g, Options{Device: testDevice("cpu")})
	if err != nil {
		t.Fatal(err)
	}
	perSample := map[string]bool{"shortcut": true, "grow": true, "grow2": true}
	folded, cols, paddedOut, paddedCopy := map[string]bool{}, 0, 0, 0
	for _, ln := range plan.Launches {
		switch tmpl := ln.Kernel.Template; tmpl {
		case "conv_cols.py":
			cols++
			if ln.Grid[1] != 3 {
				t.Errorf("%v: conv_cols.py grid %v, want a program row per sample (3)", ln.Nodes, ln.Grid)
			}
		case "conv_flat.py":
			isFolded := strings.Contains(ln.Kernel.Source.Text, "qb = qi // QS")
			for _, n := range ln.Nodes {
				if g.Node(n) != nil && g.Node(n).Op == "conv2d" {
					folded[n] = isFolded
				}
			}
			for _, a := range ln.Args {
				if isFolded && a.Name == "c_off" && a.Int > 0 {
					paddedOut++
				}
				if isFolded && a.Name == "p_off" && a.Int > 0 {
					paddedCopy++
				}
			}
			if isFolded && ln.Grid[1] != 1 {
				t.Errorf("%v: folded conv_flat.py grid %v, want one program row for all samples", ln.Nodes, ln.Grid)
			}
		case "elementwise.py":
			t.Errorf("%v runs on %s: want it inside the convolutions\n%s", ln.Nodes, tmpl, Explain(plan))
		}
	}
	convs := 0
	for _, n := range g.Nodes {
		if n.Op != "conv2d" {
			continue
		}
		convs++
		f, ok := folded[n.Name]
		if !ok {
			t.Errorf("%s: not on conv_flat.py", n.Name)
		} else if f == perSample[n.Name] {
			t.Errorf("%s: folded (columns) %v, want %v\n%s", n.Name, f, !perSample[n.Name], Explain(plan))
		}
	}
	if paddedOut == 0 || paddedCopy == 0 {
		t.Errorf("folded GEMMs storing the next convolution's padded planes: %d as their output, %d as a copy; want both > 0", paddedOut, paddedCopy)
	}
	if want := convs - len(perSample); cols != want {
		t.Errorf("%d conv_cols.py launches, want %d", cols, want)
	}
}

// The unit-stride convolutions over few input channels (the fixture few_channels: a padded
// and an unpadded 3x3 over 3 channels, a dilated 2x3 over 2, a 5x5 over 1) run as one GEMM
// over their columns (conv_cols.py) on maps past convColsMaxPixels, the columns of a shared
// input gathered once; the 3x3 over 5 channels after them (K = 45) keeps the taps, and the 1x1
// its planes. TestConvFixtures (TestCNNFixturesAVX2 under AVX2) checks the numbers against
// PyTorch; this checks that the columns path was taken.
func TestConvColsFewChannels(t *testing.T) {
	for _, fixture := range []string{"few_channels_n3", "few_channels_shared_n3"} {
		g, err := graph.Load(filepath.Join("testdata", "conv", fixture, "graph.json"))
		if err != nil {
			t.Fatal(err)
		}
		plan, err := Lower(g, Options{Device: testDevice("cpu")})
		if err != nil {
			t.Fatal(err)
		}
		shared := strings.Contains(fixture, "shared")
		folded := map[string]bool{}
		for _, ln := range plan.Launches {
			switch ln.Kernel.Template {
			case "conv_cols.py":
				if models := ln.Grid[2]; shared != (models == 1) {
					t.Errorf("%s: %v: conv_cols.py grid %v: shared input %v, want one program slice %v", fixture, ln.Nodes, ln.Grid, shared, shared)
				}
			case "conv_flat.py":
				for _, n := range ln.Nodes {
					if g.Node(n) != nil && g.Node(n).Op == "conv2d" {
						folded[n] = strings.Contains(ln.Kernel.Source.Text, "qb = qi // QS")
					}
				}
			}
		}
		want := map[string]bool{"first": true, "valid": true, "dilated": true, "five": true, "second": false, "point": false}
		for n, w := range want {
			if f, ok := folded[n]; !ok || f != w {
				t.Errorf("%s: %s: on conv_flat.py %v, folded (columns) %v, want %v\n%s", fixture, n, ok, f, w, Explain(plan))
			}
		}
	}
}
