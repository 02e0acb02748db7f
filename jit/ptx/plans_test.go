package ptx_test

import (
	"path/filepath"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/testkit/ptxkit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx"
	"github.com/widejit/widejit/lowering"
)

// TestExamplePlanKernelsAssemble generates PTX for every distinct kernel that the plans of the
// examples (and of lowering's recurrent fixtures) use (fused and unfused, batched and sequential, Monte Carlo dropout) and assembles
// each for sm_80 and sm_90. (A test-only import of lowering: the package itself knows
// nothing of plans.)
func TestExamplePlanKernelsAssemble(t *testing.T) {
	ptxas, err := ptx.FindPtxas(".")
	if err != nil {
		t.Skip(err.Error())
	}
	paths, _ := filepath.Glob("../../examples/*/graph.json")
	more, _ := filepath.Glob("../../examples/patterns/*/graph.json")
	paths = append(paths, more...)
	// the recurrent fixtures: rnn.py for every cell, with and without bias and initial state
	rnn, _ := filepath.Glob("../../lowering/testdata/rnn/*_n3/graph.json")
	paths = append(paths, rnn...)
	if len(paths) == 0 {
		t.Fatal("no example graphs found under examples/")
	}
	variants := map[string]lowering.Options{
		"default":    {},
		"unfused":    {NoFusion: true},
		"sequential": {Strategy: lowering.Sequential},
		"mc":         {Dropout: "mc", Seed: 1},
	}
	kernels := ptxkit.NewKernels(jit.NewCompiler(jit.CompilerOptions{}))
	for _, p := range paths {
		g, err := graph.Load(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		for vname, opts := range variants {
			plan, err := lowering.Lower(g, opts)
			if err != nil {
				// Not this package's concern: lowering reports what it cannot lower yet.
				t.Logf("skipping %s (%s): %v", p, vname, err)
				continue
			}
			for _, l := range plan.Launches {
				if err := kernels.Add(filepath.Base(filepath.Dir(p))+"/"+l.Kernel.Source.Fn, l.Kernel.Source, l.Spec()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	t.Logf("%d distinct kernels from %d example graphs", kernels.Len(), len(paths))
	kernels.AssembleAll(t, ptxas)
}
