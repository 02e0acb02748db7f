package lowering

import (
	"path/filepath"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/testkit/ptxkit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx"
)

// The PyTorch idioms of issue 12 (testdata/idioms, made by testdata/make_idiom_fixtures.py
// from testdata/idiom_models.py): indexing and slicing as views, shape-derived scalars, masks
// (masked_fill, where, comparisons, tril/triu), rsqrt, nn.Transformer* layers decomposed by the
// exporter, nn.MultiheadAttention with masks, and the Flux/DiT blocks, each against N PyTorch
// modules run one by one.
func TestIdiomFixtures(t *testing.T) {
	checkFixtureDirs(t, "testdata/idioms/*", "make_idiom_fixtures.py")
}

// Every kernel of the idiom fixtures' plans (masks, views, tril, the AdaLN-Zero norm, bool
// outputs, bfloat16) compiles to PTX and, where ptxas is installed, assembles for sm_80/sm_90.
func TestIdiomKernelsPTX(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles every idiom kernel to PTX; skipped with -short")
	}
	kernels := ptxkit.NewKernels(jit.NewCompiler(jit.CompilerOptions{}))
	paths, _ := filepath.Glob(filepath.Join("testdata", "idioms", "*", "graph.json"))
	for _, p := range paths {
		g, err := graph.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, opts := range []Options{{}, {Dropout: "mc", Seed: 1}} {
			plan, err := Lower(g, opts)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			for _, l := range plan.Launches {
				name := filepath.Base(filepath.Dir(p)) + "/" + l.Kernel.Source.Fn
				if _, err := testCompiler.Compile(l.Kernel.Source, l.Spec(), ptx.Target{Arch: ptx.Archs[0]}); err != nil {
					t.Errorf("%s: PTX: %v", name, err)
				}
				if err := kernels.Add(name, l.Kernel.Source, l.Spec()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	ptxas, err := ptx.FindPtxas(".")
	if err != nil {
		t.Skip(err.Error() + " (bash .ci/setup installs ptxas)")
	}
	kernels.AssembleAll(t, ptxas)
	t.Logf("%d distinct kernels assembled for %v", kernels.Len(), ptx.Archs)
}
