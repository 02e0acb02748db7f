package ptx_test

import (
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx"
	"github.com/widejit/widejit/lowering"
)

// TestExamplePlanKernelsAssemble generates PTX for every distinct kernel that the plans of the
// examples use (fused and unfused, batched and sequential, Monte Carlo dropout) and assembles
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
	if len(paths) == 0 {
		t.Fatal("no example graphs found under examples/")
	}
	variants := map[string]lowering.Options{
		"default":    {},
		"unfused":    {NoFusion: true},
		"sequential": {Strategy: lowering.Sequential},
		"mc":         {Dropout: "mc", Seed: 1},
	}
	c := jit.NewCompiler(jit.CompilerOptions{})
	type job struct {
		name string
		src  jit.Source
		spec jit.Spec
	}
	jobs := map[string]job{}
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
				spec := l.Spec()
				k, err := c.Key(l.Kernel.Source, spec, ptx.Target{Arch: "sm_90"})
				if err != nil {
					t.Fatal(err)
				}
				key := fmt.Sprint(k)
				if _, ok := jobs[key]; !ok {
					jobs[key] = job{filepath.Base(filepath.Dir(p)) + "/" + l.Kernel.Source.Fn, l.Kernel.Source, spec}
				}
			}
		}
	}
	keys := make([]string, 0, len(jobs))
	for k := range jobs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return jobs[keys[i]].name < jobs[keys[j]].name || (jobs[keys[i]].name == jobs[keys[j]].name && keys[i] < keys[j])
	})
	t.Logf("%d distinct kernels from %d example graphs", len(keys), len(paths))
	for _, arch := range ptx.Archs {
		texts := make([]string, 0, len(keys))
		names := make([]string, 0, len(keys))
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
		// One ptxas run for all kernels; on failure, one per kernel to name the culprit.
		if _, err := ptx.Assemble(ptxas, arch, ptx.MergeModules(arch, texts)); err == nil {
			continue
		}
		for i, text := range texts {
			if _, err := ptx.Assemble(ptxas, arch, text); err != nil {
				t.Errorf("%s (%s): %v", names[i], arch, err)
			}
		}
	}
}
