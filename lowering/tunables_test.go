package lowering

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/testkit"
	"github.com/widejit/widejit/internal/testkit/ptxkit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
	"github.com/widejit/widejit/jit/ptx"
)

// pow2AtLeast is the smallest power of two >= x, written out independently of nextPow2.
func pow2AtLeast(x int) int {
	for p := 1; ; p *= 2 {
		if p >= x {
			return p
		}
	}
}

// Pruning: no configuration offers a tile larger than the next power of two of its dimension
// (or than 16, the smallest tile tl.dot takes, for dot tiles); the built-in choice is the
// first configuration; a group has at most 12 candidates and their ids are unique.
func TestTunablePruning(t *testing.T) {
	dims := []int{1, 3, 5, 16, 17, 33, 64, 100, 129, 300, 1000, 5000}
	check := func(what string, g tunableGroup, limits map[string]int) {
		t.Helper()
		space, ok := g.tunables()
		if !ok {
			t.Fatalf("%s: no tunables", what)
		}
		configs := space.configs(true)
		if !configs[0].equal(space.defaults()) {
			t.Errorf("%s: first configuration %s is not the built-in %s", what, configs[0], space.defaults())
		}
		cands := strategyCandidates(g, testDevice("cuda"))
		if len(cands) > 12 || len(cands) != 2*len(configs) {
			t.Errorf("%s: %d candidates for %d configurations", what, len(cands), len(configs))
		}
		// on a CPU num_warps changes nothing, so it is not offered
		for _, c := range strategyCandidates(g, testDevice("cpu")) {
			if c.Params[NumWarpsParam] != 4 {
				t.Errorf("%s: CPU candidate %s", what, c.ID)
			}
		}
		seen := map[string]bool{}
		for _, c := range cands {
			if seen[c.ID] {
				t.Errorf("%s: duplicate id %s", what, c.ID)
			}
			seen[c.ID] = true
			for name, limit := range limits {
				v, ok := c.Params[name]
				if !ok || v > limit || v&(v-1) != 0 {
					t.Errorf("%s: candidate %s offers %s=%d (limit %d, power of two)", what, c.ID, name, v, limit)
				}
			}
			if w := c.Params[NumWarpsParam]; w != 4 && w != 8 {
				t.Errorf("%s: candidate %s num_warps %d", what, c.ID, w)
			}
		}
	}
	dot := func(d int) int { return max(pow2AtLeast(d), 16) }
	for _, m := range dims {
		for _, n := range dims {
			for _, k := range []int{1, 19, 64, 700} {
				check(fmt.Sprintf("matmul %dx%dx%d", m, n, k), &matmulGroup{m: m, nn: n, k: k},
					map[string]int{"BLOCK_M": dot(m), "BLOCK_N": dot(n), "BLOCK_K": dot(k)})
				mlp := &mlpGroup{first: &matmulGroup{m: m, nn: n, k: k}, o: 7}
				check(fmt.Sprintf("mlp %dx%dx%d", m, n, k), mlp,
					map[string]int{"BLOCK_M": dot(m), "BLOCK_H": dot(n), "BLOCK_K": dot(k)})
				conv := &convGroup{oh: m, ow: 1, ocg: n, cg: k, kh: 1, kw: 1}
				check(fmt.Sprintf("conv p=%d oc=%d k=%d", m, n, k), conv,
					map[string]int{"BLOCK_P": dot(m), "BLOCK_OC": dot(n), "BLOCK_K": dot(k)})
			}
		}
		ew := &ewGroup{groupBase{out: View{Shape: []int{m}}}}
		check(fmt.Sprintf("elementwise %d", m), ew, map[string]int{"BLOCK": max(pow2AtLeast(m), 16)})
		check(fmt.Sprintf("norm %d", m), &normGroup{r: m}, map[string]int{"BLOCK": max(pow2AtLeast(m), 16)})
	}
	if _, ok := (&convGroup{depthwise: true}).tunables(); ok {
		t.Errorf("the depthwise kernel has no tunables here")
	}
	// a hand-checked set: matmul M=5, N=19, K=19 (built in: 16, 32, 32)
	var ids []string
	for _, c := range strategyCandidates(&matmulGroup{m: 5, nn: 19, k: 19}, jit.DeviceInfo{}) {
		ids = append(ids, c.ID)
	}
	want := "batched/bm16-bn32-bk32-w4 batched/bm16-bn16-bk32-w4 batched/bm16-bn32-bk16-w4 batched/bm16-bn32-bk32-w8 " +
		"sequential/bm16-bn32-bk32-w4 sequential/bm16-bn16-bk32-w4 sequential/bm16-bn32-bk16-w4 sequential/bm16-bn32-bk32-w8"
	if got := strings.Join(ids, " "); got != want {
		t.Errorf("candidates\n got %s\nwant %s", got, want)
	}
}

// strategyPoints returns the decision points that choose a strategy with tunables.
func strategyPoints(points []DecisionPoint) []DecisionPoint {
	var out []DecisionPoint
	for _, p := range points {
		if len(p.Candidates) > 0 && p.Candidates[0].Params != nil {
			out = append(out, p)
		}
	}
	return out
}

// launchFor finds the launch of the group whose ops are the point's op chain.
func launchFor(t *testing.T, plan *Plan, p DecisionPoint) *Launch {
	t.Helper()
	for _, l := range plan.Launches {
		if strings.Join(l.Ops, ",") == strings.Join(p.Problem.OpChain, ",") {
			return l
		}
	}
	t.Fatalf("no launch for %s", p.Label())
	return nil
}

// The heuristic keeps the emitters' built-in tiles: the plan through the tuner is the plan
// Lower makes, constexpr for constexpr and grid for grid.
func TestHeuristicKeepsBuiltInTunables(t *testing.T) {
	for _, dir := range []string{"testdata/fixtures/blocks_n3", "testdata/fixtures/matmuls_n8", "../examples/mlp"} {
		g, err := graph.Load(filepath.Join(dir, "graph.json"))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := Lower(g, Options{})
		if err != nil {
			t.Fatal(err)
		}
		tuned, points, err := LowerWithDecisions(g, Options{}, &autotune.Tuner{Heuristic: Heuristic}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(strategyPoints(points)) == 0 {
			t.Fatalf("%s: no decision with tunables", dir)
		}
		for i, l := range plain.Launches {
			u := tuned.Launches[i]
			if fmt.Sprint(l.Kernel.Consts) != fmt.Sprint(u.Kernel.Consts) || l.Grid != u.Grid || u.Kernel.NumWarps != 0 {
				t.Errorf("%s launch %d: %v grid %v vs tuned %v grid %v warps %d", dir, i, l.Kernel.Consts, l.Grid, u.Kernel.Consts, u.Grid, u.Kernel.NumWarps)
			}
		}
		for _, p := range strategyPoints(points) {
			if p.Decision.CandidateID != p.Candidates[0].ID {
				t.Errorf("%s: %s chose %s, want the built-in %s", dir, p.Label(), p.Decision.CandidateID, p.Candidates[0].ID)
			}
		}
	}
	// the MLP example by hand: M=32, K=128 (in), H=64 (hidden): BLOCK_M 32, BLOCK_K 64, BLOCK_H 64
	g, _ := graph.Load("../examples/mlp/graph.json")
	plan, _ := Lower(g, Options{})
	if l := plan.Launches[0]; l.TunablesID == "" || !strings.Contains(Explain(plan), "tunables: "+l.TunablesID) {
		t.Errorf("explain does not show the tunables %q:\n%s", l.TunablesID, Explain(plan))
	}
}

// A forced candidate with other tunables renders its constexprs, num_warps and grid, and the
// plan still matches PyTorch (blocks fixture, N=3: fused MLP, linear epilogue, layer norm).
func TestForcedTunablesRenderAndMatchPyTorch(t *testing.T) {
	dir := "testdata/fixtures/blocks_n3"
	g, err := graph.Load(filepath.Join(dir, "graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	inputs := testkit.ReadTensors(t, filepath.Join(dir, "inputs.safetensors"))
	expected := testkit.ReadTensors(t, filepath.Join(dir, "expected.safetensors"))
	_, points, err := LowerWithDecisions(g, Options{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	forcedRuns, gridChanged := 0, false
	for _, p := range strategyPoints(points) {
		for i, c := range p.Candidates[1:] {
			// every batched alternative; one sequential one (the other strategy is tested elsewhere)
			if c.Strategy == Sequential && i != len(p.Candidates)/2 {
				continue
			}
			plan, _, err := LowerWithDecisions(g, Options{}, nil, map[int]string{p.Index: c.ID})
			if err != nil {
				t.Fatalf("forcing %s: %v", c.ID, err)
			}
			l := launchFor(t, plan, p)
			if !strings.HasSuffix(c.ID, "/"+l.TunablesID) || !Tunables(c.Params).equal(l.Tunables) {
				t.Errorf("forced %s: launch tunables %s (%v)", c.ID, l.TunablesID, l.Tunables)
			}
			for name, v := range c.Params {
				if name == NumWarpsParam {
					if want := map[int]int{4: 0, 8: 8}[v]; l.Kernel.NumWarps != want {
						t.Errorf("forced %s: NumWarps %d, want %d", c.ID, l.Kernel.NumWarps, want)
					}
					continue
				}
				if got := l.Kernel.Consts[name]; got != int64(v) {
					t.Errorf("forced %s: constexpr %s = %v, want %d", c.ID, name, got, v)
				}
			}
			if l.Kernel.Template == "matmul.py" { // linear [5,19] -> 19: grid axis 0 = row tiles x column tiles
				bm, bn := c.Params["BLOCK_M"], c.Params["BLOCK_N"]
				if want := ((5 + bm - 1) / bm) * ((19 + bn - 1) / bn); l.Grid[0] != want {
					t.Errorf("forced %s: grid %v, want %d programs along axis 0", c.ID, l.Grid, want)
				}
				gridChanged = gridChanged || l.Grid[0] != 1
			}
			r, err := NewTestRunner(plan, cpu.NewDevice(2), testCompiler, g)
			if err != nil {
				t.Fatalf("forced %s: %v", c.ID, err)
			}
			outs, err := r.Run(inputs)
			r.Close()
			if err != nil {
				t.Fatalf("forced %s: run: %v", c.ID, err)
			}
			t.Run(c.ID, func(t *testing.T) { testkit.CheckOutputs(t, outs, expected) })
			forcedRuns++
		}
	}
	if forcedRuns < 5 || !gridChanged {
		t.Fatalf("%d forced plans ran, grid changed: %v", forcedRuns, gridChanged)
	}
}

// The candidate set hash covers the tunables: a decision recorded for strategies alone (or for
// other tunables) is not reused.
func TestCandidateKeyCoversTunables(t *testing.T) {
	g := mlpForTuning(t)
	_, points, err := LowerWithDecisions(g, Options{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sp := strategyPoints(points)
	if len(sp) != 1 {
		t.Fatalf("%d decisions with tunables\n%s", len(sp), ExplainDecisions(points))
	}
	p := sp[0]
	strategiesOnly := []autotune.Candidate{{ID: Batched, Strategy: Batched}, {ID: Sequential, Strategy: Sequential}}
	oldKey := autotune.Key(p.Problem, strategiesOnly)
	if oldKey == p.Key() {
		t.Fatalf("the key ignores the tunables: %s", oldKey)
	}
	changed := append([]autotune.Candidate(nil), p.Candidates...)
	changed[1].Params = Tunables(changed[1].Params).with("BLOCK_M", 128)
	if autotune.CandidateSetHash(changed) == autotune.CandidateSetHash(p.Candidates) {
		t.Fatalf("changing a tunable does not change the candidate set hash")
	}
	// a record under the strategies-only key (as before tunables) is not used
	store := mapDecisions{}
	rec := autotune.Record{Format: 1, Key: oldKey, Problem: p.Problem, Candidates: strategiesOnly, Winner: Sequential,
		Source: "measured", Ranking: []string{Sequential, Batched},
		Timings: []autotune.Timing{{CandidateID: Sequential, Median: 1000, Samples: 3}, {CandidateID: Batched, Median: 2000, Samples: 3}}}
	data, _ := json.Marshal(rec)
	store[oldKey] = data
	plan, points, err := LowerWithDecisions(g, Options{}, &autotune.Tuner{Store: store, Heuristic: Heuristic}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := strategyPoints(points)[0].Decision; d.Source != autotune.SourceHeuristic || plan.Launches[0].Strategy != Fused {
		t.Fatalf("stale record used: %+v", d)
	}
	// a record under the current key is, tunables included
	winner := p.Candidates[len(p.Candidates)-1] // sequential, 8 warps
	rec.Key, rec.Candidates, rec.Winner = p.Key(), p.Candidates, winner.ID
	rec.Ranking = []string{winner.ID, p.Candidates[0].ID}
	rec.Timings = []autotune.Timing{{CandidateID: winner.ID, Median: 1000, Samples: 3}, {CandidateID: p.Candidates[0].ID, Median: 2000, Samples: 3}}
	data, _ = json.Marshal(rec)
	store[p.Key()] = data
	plan, points, err = LowerWithDecisions(g, Options{}, &autotune.Tuner{Store: store, Heuristic: Heuristic}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := plan.Launches[0]
	if d := strategyPoints(points)[0].Decision; d.Source != autotune.SourceRecorded || l.Strategy != Sequential || l.Kernel.NumWarps != 8 {
		t.Fatalf("recorded %s: source %s, launch %s warps %d", winner.ID, d.Source, l.Strategy, l.Kernel.NumWarps)
	}
	if !strings.Contains(ExplainDecisions(points), "-> "+winner.ID+"  source: recorded") {
		t.Fatalf("explain:\n%s", ExplainDecisions(points))
	}
}

// Every tunables candidate of the example MLP, the blocks fixture and the conv fixtures (2-d,
// transposed, 3-d) compiles to PTX and assembles with ptxas (sm_80, sm_90), so a GPU tune can
// time each of them.
func TestTunableCandidatesAssemblePTX(t *testing.T) {
	if testing.Short() {
		t.Skip("assembles every tunables candidate with ptxas; skipped with -short")
	}
	ptxas, err := ptx.FindPtxas(".")
	if err != nil {
		t.Skip(err.Error() + " (bash .ci/setup installs ptxas)")
	}
	kernels := ptxkit.NewKernels(jit.NewCompiler(jit.CompilerOptions{}))
	for _, path := range []string{"../examples/mlp/graph.json", "testdata/fixtures/blocks_n3/graph.json", "testdata/conv/convs_a_n3/graph.json",
		"testdata/conv/transposed_n3/graph.json", "testdata/conv/convs_3d_n3/graph.json"} {
		g, err := graph.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		_, points, err := LowerWithDecisions(g, Options{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range strategyPoints(points) {
			for _, c := range p.Candidates {
				if c.Strategy != Batched { // the other strategy launches the same kernel
					continue
				}
				plan, _, err := LowerWithDecisions(g, Options{}, nil, map[int]string{p.Index: c.ID})
				if err != nil {
					t.Fatal(err)
				}
				l := launchFor(t, plan, p)
				if err := kernels.Add(path+"/"+c.ID, l.Kernel.Source, l.Spec()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	kernels.AssembleAll(t, ptxas)
	t.Logf("%d distinct kernels assembled for %v", kernels.Len(), ptx.Archs)
}

// num_stages is a GPU tunable of the kernels whose K loop jit/ptx pipelines: tensor-core dots
// (fp16/bf16, fp32 at TF32), never on the CPU or for IEEE fp32. The built-in depth is 3; 2
// and 4 are offered where their ring fits 48 KiB and differs from the built-in one; only a
// depth other than 3 reaches the kernel (jit.Spec's NumStages, so the cache key).
func TestNumStagesTunable(t *testing.T) {
	ids := func(g tunableGroup) string {
		var out []string
		for _, c := range strategyCandidates(g, jit.DeviceInfo{}) {
			if strings.HasPrefix(c.ID, Batched+"/") {
				out = append(out, strings.TrimPrefix(c.ID, Batched+"/"))
			}
		}
		return strings.Join(out, " ")
	}
	mm := func(dt graph.DType, precision string, cpu bool) *matmulGroup {
		v := View{DType: dt}
		return &matmulGroup{groupBase: groupBase{precision: precision, cpu: cpu}, a: v, b: v, m: 4096, nn: 4096, k: 4096}
	}
	for _, tc := range []struct {
		what string
		g    tunableGroup
		want string
	}{
		// fp16 64x64x32: a stage is (64*32 + 32*64) * 2 = 8 KiB, so 4 fit
		{"fp16", mm(graph.Float16, "ieee", false), "bm64-bn64-bk32-w4-s3 bm32-bn64-bk32-w4-s3 bm64-bn32-bk32-w4-s3 bm64-bn64-bk16-w4-s3 " +
			"bm128-bn64-bk32-w4-s3 bm64-bn64-bk32-w8-s3 bm64-bn64-bk32-w4-s2 bm64-bn64-bk32-w4-s4"},
		// TF32: 16 KiB a stage, 3 fill 48 KiB, 4 do not fit
		{"fp32 at tf32", mm(graph.Float32, "tf32", false), "bm64-bn64-bk32-w4-s3 bm32-bn64-bk32-w4-s3 bm64-bn32-bk32-w4-s3 bm64-bn64-bk16-w4-s3 " +
			"bm128-bn64-bk32-w4-s3 bm64-bn64-bk32-w8-s3 bm64-bn64-bk32-w4-s2"},
		// IEEE fp32 runs on FMAs, bf16 precision casts after loading: no pipeline
		{"fp32 ieee", mm(graph.Float32, "ieee", false), "bm64-bn64-bk32-w4 bm32-bn64-bk32-w4 bm64-bn32-bk32-w4 bm64-bn64-bk16-w4 bm128-bn64-bk32-w4 bm64-bn64-bk32-w8"},
		{"fp32 bf16", mm(graph.Float32, "bf16", false), "bm64-bn64-bk32-w4 bm32-bn64-bk32-w4 bm64-bn32-bk32-w4 bm64-bn64-bk16-w4 bm128-bn64-bk32-w4 bm64-bn64-bk32-w8"},
	} {
		if got := ids(tc.g); got != tc.want {
			t.Errorf("%s: candidates\n got %s\nwant %s", tc.what, got, tc.want)
		}
	}
	if space, _ := mm(graph.Float16, "ieee", true).tunables(); space.stageBytes != 0 || space.defaults()[NumStagesParam] != 0 {
		t.Errorf("the CPU's matmul has num_stages: %+v", space)
	}
	odd := mm(graph.Float16, "ieee", false)
	odd.k = 100 // fp16 rows of 200 bytes: copied through registers, not pipelined
	if space, _ := odd.tunables(); space.stageBytes != 0 {
		t.Errorf("an fp16 matmul over K = 100 has num_stages: %+v", space)
	}
	for stages, want := range map[int]int{2: 2, 3: 0, 4: 4} {
		k := &KernelSource{}
		applyGPUTunables(k, Tunables{NumWarpsParam: 4, NumStagesParam: stages})
		if k.NumStages != want {
			t.Errorf("num_stages %d: the kernel's NumStages is %d, want %d", stages, k.NumStages, want)
		}
	}
}

// On a wgmma device a Linear whose launch has at least hopperMinPrograms Hopper tiles gets
// the deepest-ring Hopper tile as its built-in configuration (first among the candidates, the
// axes' 64x64 default second); a smaller launch, a non-wgmma device and the CPU keep 64x64.
func TestHopperTileIsBuiltInForLargeLaunches(t *testing.T) {
	linear := func(models, m, n int, wgmma bool) *matmulGroup {
		v := View{DType: graph.Float16}
		return &matmulGroup{groupBase: groupBase{precision: "ieee", wgmma: wgmma, models: models}, a: v, b: v,
			bSK: 1, bSN: 4096, batch: 1, m: m, nn: n, k: 4096}
	}
	for _, c := range []struct {
		what string
		g    *matmulGroup
		want string // the first two candidates
	}{
		{"4096^2", linear(1, 4096, 4096, true), "bm128-bn128-bk64-w8-s4 bm64-bn64-bk32-w4-s3"},
		{"8 models of 128x2048", linear(8, 128, 2048, true), "bm128-bn128-bk64-w8-s4 bm64-bn64-bk32-w4-s3"},
		{"8 models of 128x1024: 64 tiles", linear(8, 128, 1024, true), "bm64-bn64-bk32-w4-s3 bm32-bn64-bk32-w4-s3"},
		{"no wgmma", linear(1, 4096, 4096, false), "bm64-bn64-bk32-w4-s3 bm32-bn64-bk32-w4-s3"},
	} {
		space, _ := c.g.tunables()
		cs := space.configs(true)
		ids := space.id(cs[0]) + " " + space.id(cs[1])
		if ids != c.want {
			t.Errorf("%s: first candidates %s, want %s", c.what, ids, c.want)
		}
		if !cs[0].equal(space.defaults()) {
			t.Errorf("%s: the first candidate %s is not the built-in %s", c.what, space.id(cs[0]), space.id(space.defaults()))
		}
		seen := map[string]bool{}
		for _, t2 := range cs {
			if seen[space.id(t2)] {
				t.Errorf("%s: %s offered twice", c.what, space.id(t2))
			}
			seen[space.id(t2)] = true
		}
	}
}

// Plugins and decision keys see a wgmma device as such (warpgroup_mma), while every other
// device's description, and so its decision keys, stays as it was (the field is omitted).
func TestPluginDeviceWarpgroupMMA(t *testing.T) {
	gpu := jit.DeviceInfo{Kind: "cuda", Name: "H100", ComputeCapability: "9.0",
		Caps: jit.Capabilities{WarpSize: 32, TensorCores: true, DiscreteMemory: true}}
	plain, err := json.Marshal(PluginDevice(gpu, nil).Capabilities)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), "warpgroup") {
		t.Fatalf("a device without wgmma describes it: %s", plain)
	}
	gpu.Caps.WarpgroupMMA = true
	hopper, err := json.Marshal(PluginDevice(gpu, map[string]string{"arch": "sm_90a"}).Capabilities)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(hopper), `"warpgroup_mma":true`) {
		t.Fatalf("a wgmma device's capabilities: %s", hopper)
	}
}
