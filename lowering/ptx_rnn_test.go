package lowering

import (
	"path/filepath"
	"testing"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/testkit/ptxkit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx"
)

// Every distinct recurrent kernel (rnn.py, each cell with and without bias and initial
// state, both directions) of the rnn fixtures' plans, GPU- and CPU-shaped, sequential too,
// compiles to PTX and assembles with ptxas for sm_80 and sm_90.
func TestRecurrentKernelsAssemblePTX(t *testing.T) {
	if testing.Short() {
		t.Skip("assembles every recurrent kernel with ptxas; skipped with -short")
	}
	ptxas, err := ptx.FindPtxas(".")
	if err != nil {
		t.Skip(err.Error() + " (bash .ci/setup installs ptxas)")
	}
	kernels := ptxkit.NewKernels(jit.NewCompiler(jit.CompilerOptions{}))
	paths, _ := filepath.Glob(filepath.Join("testdata", "rnn", "*_n3", "graph.json"))
	for _, p := range paths {
		g, err := graph.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, opts := range []Options{{}, {Strategy: Sequential}, {Device: autotune.DeviceInfo{Kind: "cpu", Cores: 2}}} {
			plan, err := Lower(g, opts)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			for _, l := range plan.Launches {
				if l.Kernel.Template != "rnn.py" {
					continue
				}
				if err := kernels.Add(filepath.Base(filepath.Dir(p))+"/"+l.Kernel.Source.Fn, l.Kernel.Source, l.Spec()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if kernels.Len() == 0 {
		t.Fatal("no recurrent kernels in the rnn fixtures' plans")
	}
	kernels.AssembleAll(t, ptxas)
	t.Logf("%d distinct kernels assembled for %v", kernels.Len(), ptx.Archs)
}
