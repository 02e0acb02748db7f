package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/cache"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/engine"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cuda"
	"github.com/widejit/widejit/jit/ptx"
	"github.com/widejit/widejit/lowering"
)

type populateJSON struct {
	Kernels int                    `json:"kernels"`
	Hits    int                    `json:"hits"`
	Misses  int                    `json:"misses"`
	Failed  int                    `json:"failed"`
	Targets []engine.PopulateCount `json:"targets"`
}

func populate(t *testing.T, dir string, args ...string) populateJSON {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"--cache-dir", dir, "cache", "populate", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("populate %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
	}
	var r populateJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("populate --json: %v\n%s", err, out)
	}
	return r
}

// The plan's kernels for mlp, lowered independently of populate (the heuristic decides, as
// it does on a fresh cache).
func mlpKernelNames(t *testing.T) []string {
	t.Helper()
	g, err := graph.Load(mlpGraph)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := lowering.Lower(g, lowering.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range plan.Kernels() {
		names = append(names, k.Source.Fn)
	}
	return names
}

func TestPopulatePTXThenLsAndRunKeys(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kc")
	want := mlpKernelNames(t)
	first := populate(t, dir, mlpGraph, "--arch", "sm_90")
	if first.Kernels != len(want) || first.Misses != len(want) || first.Hits != 0 || first.Failed != 0 {
		t.Fatalf("first populate: %+v, want %d misses (kernels %v)", first, len(want), want)
	}
	if len(first.Targets) != 1 || first.Targets[0].Target != "ptx7.8/sm_90" || !slices.Equal(first.Targets[0].Ns, []int{8}) {
		t.Fatalf("targets %+v", first.Targets)
	}
	second := populate(t, dir, mlpGraph, "--arch", "sm_90")
	if second.Hits != len(want) || second.Misses != 0 {
		t.Fatalf("second populate: %+v, want only hits", second)
	}
	code, out, errOut := runCLI(t, "--cache-dir", dir, "cache", "ls", "--json")
	if code != 0 {
		t.Fatalf("cache ls: exit %d: %s", code, errOut)
	}
	var ls struct{ Entries []cache.Entry }
	if err := json.Unmarshal([]byte(out), &ls); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ls.Entries {
		if e.Target != "ptx7.8/sm_90" || e.Backend != ptx.ArtifactKind {
			t.Errorf("entry %+v: want a ptx entry for ptx7.8/sm_90", e)
		}
		got = append(got, e.Name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("cache ls names %v, want the plan's kernels %v", got, want)
	}

	// What `run --device cuda --backend-opt arch=sm_90` on an H100 looks up: every key must be
	// there (an H100 loads sm_90a by default).
	runKeysAllHit(t, dir, map[string]string{"arch": "sm_90"})
}

// runKeysAllHit checks that the cache at dir holds every key that `run --device cuda
// [--backend-opt K=V...]` on an H100 looks up: the keys of the plan it lowers (fresh cache:
// the heuristic decides) for the target the device opens with those options.
func runKeysAllHit(t *testing.T, dir string, backendOpts map[string]string) {
	t.Helper()
	store, err := cache.Open(dir, cache.Options{Warn: func(m string) { t.Errorf("cache: %s", m) }})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g, err := graph.Load(mlpGraph)
	if err != nil {
		t.Fatal(err)
	}
	h100 := jit.DeviceInfo{Kind: "cuda", Name: "NVIDIA H100 80GB HBM3", ComputeCapability: "9.0", Cores: 132, Caps: cuda.Capabilities("9.0", 227<<10)}
	arch, err := ptx.ArchForCapability(h100.ComputeCapability)
	if err != nil {
		t.Fatal(err)
	}
	if a := backendOpts["arch"]; a != "" {
		arch = a
	}
	h100.Caps.WarpgroupMMA = arch == "sm_90a" // as jit/cuda opens it
	tuner := &autotune.Tuner{Store: engine.DecisionStore{Store: store}, Heuristic: lowering.Heuristic}
	plan, _, err := lowering.LowerWithDecisions(g, lowering.Options{Device: h100, BackendOptions: backendOpts}, tuner, nil)
	if err != nil {
		t.Fatal(err)
	}
	comp := jit.NewCompiler(jit.CompilerOptions{Store: store, Version: buildVersion(), BackendOptions: backendOpts})
	for _, l := range plan.Launches {
		if _, err := comp.Compile(l.Kernel.Source, l.Spec(), ptx.Target{Arch: arch}); err != nil {
			t.Fatal(err)
		}
	}
	if st := comp.Stats(); st.Misses != 0 || st.Hits != len(plan.Launches) {
		t.Fatalf("a cuda run's lookups (options %v): %+v, want %d hits", backendOpts, st, len(plan.Launches))
	}
}

// sm_90a, which a cc 9.0 device loads by default, is populated under the keys of a plain
// run; sm_90 under those of `run --backend-opt arch=sm_90`: each run finds every kernel; an
// explicit --backend-opt naming another arch than the populated one is refused.
func TestPopulateHopper(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kc")
	p := populate(t, dir, mlpGraph, "--arch", "sm_90,sm_90a")
	if len(p.Targets) != 2 || p.Targets[1].Target != "ptx8.0/sm_90a" || p.Failed != 0 || p.Targets[1].Misses == 0 {
		t.Fatalf("populate sm_90,sm_90a: %+v", p)
	}
	runKeysAllHit(t, dir, nil) // sm_90a, the default
	runKeysAllHit(t, dir, map[string]string{"arch": "sm_90"})
	again := populate(t, dir, mlpGraph, "--arch", "sm_90", "--backend-opt", "arch=sm_90")
	if again.Misses != 0 || again.Hits != p.Targets[0].Kernels {
		t.Fatalf("populate sm_90 with the option given: %+v, want only hits", again)
	}
	for _, c := range [][2]string{{"sm_90", "sm_90a"}, {"sm_90a", "sm_90"}} {
		code, _, errOut := runCLI(t, "--cache-dir", dir, "--backend-opt", "arch="+c[0], "cache", "populate", mlpGraph, "--arch", c[1])
		if code != 2 || !strings.Contains(errOut, "--arch "+c[1]+" with --backend-opt arch="+c[0]) {
			t.Fatalf("conflicting arch option %v: exit %d: %s", c, code, errOut)
		}
	}
}

// Populating for the CPU makes the next run all hits: populate and run use the same keys.
func TestPopulateCPUThenRunOnlyHits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kc")
	p := populate(t, dir, mlpGraph)
	if p.Misses == 0 || len(p.Targets) != 1 || p.Targets[0].Target != "cpu/ir1" && !strings.HasPrefix(p.Targets[0].Target, "cpu/") {
		t.Fatalf("populate: %+v", p)
	}
	r, _ := runMLPJSON(t, dir)
	if r.Cache.Misses != 0 || r.Cache.Hits != r.Plan.Kernels {
		t.Fatalf("run after populate: cache %+v, want only hits", r.Cache)
	}
}

func TestPopulateNsAndStrategies(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kc")
	g := writeGraph(t, cliGraph) // init graph: any n
	one := populate(t, dir, g, "--n", "1")
	both := populate(t, dir, g, "--n", "1,3")
	// n=1 hits; n=3's kernels are the same texts too (N lives in the grid, not the kernel)
	if both.Kernels != 2*one.Kernels || both.Hits != 2*one.Kernels || both.Misses != 0 {
		t.Fatalf("--n 1: %+v; --n 1,3: %+v; want only hits", one, both)
	}
	if ns := both.Targets[0].Ns; !slices.Equal(ns, []int{1, 3}) {
		t.Fatalf("ns %v", ns)
	}
	// the fused linear+relu (a few rows: its weight read in place, no transpose kernel), and
	// with --all-strategies its sequential variant (launched per model, the pointers move by
	// 5, 15 and 20 floats, not 16-byte steps, so it is specialized without their alignment)
	// and the unfused linear and relu kernels
	all := populate(t, dir, g, "--n", "3", "--all-strategies")
	if one.Kernels != 1 || all.Kernels != 4 || all.Hits != 1 || all.Misses != 3 {
		t.Fatalf("--n 1: %+v; --all-strategies: %+v, want 1 kernel, then 4 (1 already there)", one, all)
	}
	code, _, errOut := runCLI(t, "--cache-dir", dir, "cache", "populate", mlpGraph, "--n", "4")
	if code == 0 || !strings.Contains(errOut, "only init graphs") {
		t.Fatalf("weights graph with another n: exit %d: %s", code, errOut)
	}
	code, _, errOut = runCLI(t, "--cache-dir", dir, "cache", "populate", mlpGraph, "--arch", "sm_70")
	if code != 2 || !strings.Contains(errOut, "sm_80, sm_90, sm_90a") {
		t.Fatalf("--arch sm_70: exit %d: %s", code, errOut)
	}
	code, _, errOut = runCLI(t, "--cache-dir", dir, "cache", "populate", mlpGraph, "--n", "0")
	if code != 2 || !strings.Contains(errOut, "--n") {
		t.Fatalf("--n 0: exit %d: %s", code, errOut)
	}
}

func TestPopulateCubin(t *testing.T) {
	if _, _, err := engine.FindPtxas(); err != nil {
		t.Skipf("needs ptxas (bash .ci/setup): %v", err)
	}
	dir := filepath.Join(t.TempDir(), "kc")
	p := populate(t, dir, mlpGraph, "--arch", "sm_80", "--cubin")
	c := p.Targets[0]
	if c.Failed != 0 || c.CubinMisses != c.Kernels || c.Kernels == 0 {
		t.Fatalf("first --cubin: %+v", c)
	}
	p = populate(t, dir, mlpGraph, "--arch", "sm_80", "--cubin")
	if c := p.Targets[0]; c.CubinHits != c.Kernels || c.CubinMisses != 0 {
		t.Fatalf("second --cubin: %+v", c)
	}
	checkCubins(t, dir, "ptx7.8/sm_80+ptxas", c.Kernels)
}

// checkCubins checks that the cache at dir holds n cubins, each of a target starting with prefix.
func checkCubins(t *testing.T, dir, prefix string, n int) {
	t.Helper()
	code, out, _ := runCLI(t, "--cache-dir", dir, "cache", "ls", "--json")
	var ls struct{ Entries []cache.Entry }
	if code != 0 || json.Unmarshal([]byte(out), &ls) != nil {
		t.Fatalf("cache ls: %d %s", code, out)
	}
	cubins := 0
	for _, e := range ls.Entries {
		if e.Backend == "cubin" {
			cubins++
			if !strings.HasPrefix(e.Target, prefix) || e.Size < 100 {
				t.Errorf("cubin entry %+v: want a target %s...", e, prefix)
			}
		}
	}
	if cubins != n {
		t.Fatalf("%d cubin entries, want %d", cubins, n)
	}
}

// --cubin assembles sm_90a (PTX ISA 8.0) with CUDA 12's ptxas, found in .tools/cuda12/bin;
// where there is none, it says so and how to get it instead of storing what 11.8 refuses.
func TestPopulateCubinHopper(t *testing.T) {
	if _, err := ptx.FindCUDA12Tool(".", "ptxas"); err != nil {
		t.Skipf("needs CUDA 12's ptxas: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "kc")
	p := populate(t, dir, mlpGraph, "--arch", "sm_90a", "--cubin")
	if c := p.Targets[0]; c.Failed != 0 || c.Kernels == 0 || c.CubinMisses != c.Kernels {
		t.Fatalf("--cubin sm_90a: %+v", c)
	}
	checkCubins(t, dir, "ptx8.0/sm_90a+ptxas12.", p.Targets[0].Kernels) // CUDA 12's ptxas

	graph, err := filepath.Abs(mlpGraph)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // no .tools above: CUDA 12's ptxas is not found
	code, _, errOut := runCLI(t, "--cache-dir", filepath.Join(t.TempDir(), "kc"), "cache", "populate", graph, "--arch", "sm_90a", "--cubin")
	if code == 0 || !strings.Contains(errOut, "--cubin for sm_90a: PTX ISA 8.0 needs CUDA 12's ptxas") || !strings.Contains(errOut, ".ci/setup") {
		t.Fatalf("--cubin sm_90a without CUDA 12's ptxas: exit %d: %s", code, errOut)
	}
}
