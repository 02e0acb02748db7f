package lowering

import (
	"path/filepath"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/testkit/ptxkit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx"
)

// Every distinct conv/pool/attention kernel of the fixtures' plans (default, unfused,
// sequential, Monte Carlo dropout; the depthwise convolutions through both kernels; every
// convolution through conv_rows.py; Conv3d and the transposed convolutions on conv_nd.py;
// 3-d pooling) compiles to
// PTX and assembles with ptxas for sm_80 and sm_90, so the templates stay GPU-ready.
func TestConvKernelsAssemblePTX(t *testing.T) {
	if testing.Short() {
		t.Skip("assembles every conv/pool/attention kernel with ptxas; skipped with -short")
	}
	ptxas, err := ptx.FindPtxas(".")
	if err != nil {
		t.Skip(err.Error() + " (bash .ci/setup installs ptxas)")
	}
	// the CPU plan's kernels (conv_flat.py, conv_pad.py) are valid Triton too: they assemble
	variants := []Options{{}, {NoFusion: true}, {Strategy: Sequential}, {Dropout: "mc", Seed: 1},
		{Device: testDevice("cpu")}}
	kernels := ptxkit.NewKernels(jit.NewCompiler(jit.CompilerOptions{}))
	collect := func() {
		for _, family := range []string{"conv", "pool", "attention", "fixtures"} {
			paths, _ := filepath.Glob(filepath.Join("testdata", family, "*_n3", "graph.json"))
			for _, p := range paths {
				g, err := graph.Load(p)
				if err != nil {
					t.Fatal(err)
				}
				for _, opts := range variants {
					plan, err := Lower(g, opts)
					if err != nil {
						t.Fatalf("%s: %v", p, err)
					}
					for _, l := range plan.Launches {
						switch l.Kernel.Template {
						case "conv.py", "conv_rows.py", "conv_weight.py", "conv_depthwise.py", "conv_flat.py", "conv_pad.py", "conv_nd.py", "pool.py", "attention.py",
							"norm_rows.py", "reduce_rows.py":
						default:
							continue
						}
						if err := kernels.Add(filepath.Base(filepath.Dir(p))+"/"+l.Kernel.Source.Fn, l.Kernel.Source, l.Spec()); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
	}
	collect()
	convDirectDepthwise = false
	collect()
	convDirectDepthwise = true
	convRowAlways = true // the row kernel on the fixtures' narrow images too
	defer func() { convRowAlways = false }()
	collect()
	convNDTapsOuter = 1 // conv_nd.py's other loop order on the fixtures' few channels too
	defer func() { convNDTapsOuter = 0 }()
	collect()
	if kernels.Len() == 0 {
		t.Fatal("no conv/pool/attention kernels in the fixtures' plans")
	}
	kernels.AssembleAll(t, ptxas)
	t.Logf("%d distinct kernels assembled for %v", kernels.Len(), ptx.Archs)
}
