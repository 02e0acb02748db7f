package lowering

import (
	"path/filepath"
	"testing"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/graph"
)

// CPU plans use the CPU's own kernels where they exist (row-block norms and last-dim
// reductions, flat convolutions, weights transposed once) and GPU plans never do; the
// "cpu" variant of exampleVariants checks every such plan against PyTorch.
func TestCPUPlansUseCPUKernels(t *testing.T) {
	cpuOnly := map[string]bool{"norm_rows.py": true, "reduce_rows.py": true, "conv_flat.py": true, "conv_pad.py": true}
	seen := map[string]bool{}
	transposed := false
	paths, _ := filepath.Glob(filepath.Join("testdata", "fixtures", "*_n3", "graph.json"))
	convs, _ := filepath.Glob(filepath.Join("testdata", "conv", "*_n3", "graph.json"))
	for _, p := range append(paths, convs...) {
		g, err := graph.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{"cpu", "cuda"} {
			plan, err := Lower(g, Options{Device: autotune.DeviceInfo{Kind: kind, Cores: 2}})
			if err != nil {
				t.Fatalf("%s (%s): %v", p, kind, err)
			}
			for _, l := range plan.Launches {
				tmpl := l.Kernel.Template
				if kind == "cuda" && cpuOnly[tmpl] {
					t.Errorf("%s: GPU plan uses %s", p, tmpl)
				}
				if kind == "cpu" {
					seen[tmpl] = true
					for _, n := range l.Nodes {
						transposed = transposed || l.Prepare && len(n) > 0 && n[len(n)-1] == ')' && l.Ops[0] == "transpose"
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
