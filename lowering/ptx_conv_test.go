package lowering

import (
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx"
)

// Every distinct conv/pool/attention kernel of the fixtures' plans (default, unfused,
// sequential, Monte Carlo dropout; the depthwise convolutions through both kernels) compiles to
// PTX and assembles with ptxas for sm_80 and sm_90, so the templates stay GPU-ready.
func TestConvKernelsAssemblePTX(t *testing.T) {
	if testing.Short() {
		t.Skip("assembles every conv/pool/attention kernel with ptxas; skipped with -short")
	}
	ptxas, err := ptx.FindPtxas(".")
	if err != nil {
		t.Skip(err.Error() + " (bash .ci/setup installs ptxas)")
	}
	variants := []Options{{}, {NoFusion: true}, {Strategy: Sequential}, {Dropout: "mc", Seed: 1}}
	c := jit.NewCompiler(jit.CompilerOptions{})
	type job struct {
		name string
		src  jit.Source
		spec jit.Spec
	}
	jobs := map[string]job{}
	collect := func() {
		for _, family := range []string{"conv", "pool", "attention"} {
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
						case "conv.py", "conv_depthwise.py", "pool.py", "attention.py":
						default:
							continue
						}
						spec := l.Spec()
						k, err := c.Key(l.Kernel.Source, spec, ptx.Target{Arch: "sm_90"})
						if err != nil {
							t.Fatal(err)
						}
						jobs[fmt.Sprint(k)] = job{filepath.Base(filepath.Dir(p)) + "/" + l.Kernel.Source.Fn, l.Kernel.Source, spec}
					}
				}
			}
		}
	}
	collect()
	convDirectDepthwise = false
	collect()
	convDirectDepthwise = true
	if len(jobs) == 0 {
		t.Fatal("no conv/pool/attention kernels in the fixtures' plans")
	}
	keys := make([]string, 0, len(jobs))
	for k := range jobs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, arch := range ptx.Archs {
		var texts, names []string
		for _, k := range keys {
			j := jobs[k]
			a, err := c.Compile(j.src, j.spec, ptx.Target{Arch: arch})
			if err != nil {
				t.Errorf("%s (%s): %v", j.name, arch, err)
				continue
			}
			texts = append(texts, string(a.Payload))
			names = append(names, j.name)
		}
		// one ptxas run for all kernels; on failure, one per kernel to name the culprit
		if _, err := ptx.Assemble(ptxas, arch, ptx.MergeModules(arch, texts)); err == nil {
			continue
		}
		for i, text := range texts {
			if _, err := ptx.Assemble(ptxas, arch, text); err != nil {
				t.Errorf("%s (%s): %v", names[i], arch, err)
			}
		}
	}
	t.Logf("%d distinct kernels assembled for %v", len(keys), ptx.Archs)
}
