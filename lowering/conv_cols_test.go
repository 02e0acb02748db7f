package lowering

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
)

// The dense convolutions over small maps (the smallmaps fixture: ResNet's stride-2 3x3, 1x1
// shortcut and unit-stride 3x3 on 7x6 maps, a dilated and a 2x3 kernel) run on the CPU as their
// columns (conv_cols.py) and one GEMM over every sample (conv_flat.py Folded: one program row
// for all samples, so each weight is read once a launch), with their BatchNorm, ReLU and
// residual add in its epilogue; the two convolutions over larger maps keep the padded-planes
// form, their inputs stored zero-padded by the small-map convolutions producing them (one as
// its output, one as a copy beside it), so no pad kernel runs. TestConvFixtures checks the
// numbers of this plan against PyTorch; this checks that the columns path was taken.
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
	large := map[string]bool{"grow": true, "grow2": true}
	folded, cols := map[string]bool{}, 0
	for _, ln := range plan.Launches {
		switch tmpl := ln.Kernel.Template; tmpl {
		case "conv_cols.py":
			cols++
			if ln.Grid[1] != 3 {
				t.Errorf("%v: conv_cols.py grid %v, want a program row per sample (3)", ln.Nodes, ln.Grid)
			}
		case "conv_flat.py":
			isFolded := strings.Contains(ln.Kernel.Source.Text, "qb = q // P")
			for _, n := range ln.Nodes {
				if g.Node(n) != nil && g.Node(n).Op == "conv2d" {
					folded[n] = isFolded
				}
			}
			if isFolded && ln.Grid[1] != 1 {
				t.Errorf("%v: folded conv_flat.py grid %v, want one program row for all samples", ln.Nodes, ln.Grid)
			}
		case "conv_pad.py", "elementwise.py":
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
		} else if f == large[n.Name] {
			t.Errorf("%s: folded (columns) %v, want %v\n%s", n.Name, f, !large[n.Name], Explain(plan))
		}
	}
	if want := convs - len(large); cols != want {
		t.Errorf("%d conv_cols.py launches, want %d", cols, want)
	}
}
