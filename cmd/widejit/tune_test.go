package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/internal/engine"
)

// decisionLines returns the "  [i] ... source: ..." lines of an explanation.
func decisionLines(explain string) []string {
	var out []string
	for _, line := range strings.Split(explain, "\n") {
		if regexp.MustCompile(`^  \[\d+\] .* -> .*  source: `).MatchString(line) {
			out = append(out, line)
		}
	}
	return out
}

type tuneReport struct {
	Decisions []engine.TunedDecision `json:"decisions"`
}

// `tune` records decisions; the next run and `graph explain` use them as "recorded", without
// asking a plugin (the hostile plugin would fail loudly on any call).
func TestTuneThenRunUsesRecordedDecisions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a WebAssembly plugin; run without -short")
	}
	hostile := pluginTestBuild(t, "../../plugins/testdata/hostile")
	dir := filepath.Join(t.TempDir(), "kc")
	export := filepath.Join(t.TempDir(), "timings.json")
	code, out, errOut := runCLI(t, "--cache-dir", dir, "tune", mlpGraph, "--device", "cpu", "--reps", "2", "--json", "--export", export)
	if code != 0 {
		t.Fatalf("tune: exit %d\n%s\n%s", code, out, errOut)
	}
	var rep tuneReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("tune --json: %v\n%s", err, out)
	}
	measured, tunedWinner := 0, ""
	for _, d := range rep.Decisions {
		if d.Error != "" {
			t.Errorf("decision %d: %s", d.Index, d.Error)
		}
		if len(d.Timings) == 0 {
			continue
		}
		measured++
		ranked := autotune.RankByTime(d.Timings)
		if len(d.Timings) < 2 || ranked[0] != d.Winner {
			t.Errorf("decision %d: winner %s, timings %+v: the winner must be the fastest", d.Index, d.Winner, d.Timings)
		}
		// strategy x tunables: "batched|sequential x K tunables" is 2*K candidates, each timed;
		// which kernels are tuned depends on earlier winners (the fused MLP's bm-bk-bh tiles,
		// or, when the unfused plan won, a linear kernel's bm-bn-bk and the relu's block). On a
		// CPU num_warps is not offered (w4 only): it changes nothing there.
		if m := regexp.MustCompile(`x (\d+) tunables`).FindStringSubmatch(d.Label); m != nil {
			k, _ := strconv.Atoi(m[1])
			if len(d.Timings) != 2*k || !regexp.MustCompile(`^(batched|sequential)/([a-z]+\d+-)+w4$`).MatchString(d.Winner) {
				t.Errorf("decision %d (%s): winner %q, %d timings", d.Index, d.Label, d.Winner, len(d.Timings))
			}
			tunedWinner = d.Winner
		}
	}
	if tunedWinner == "" {
		t.Errorf("no decision with tunables was measured: %s", out)
	}
	if measured == 0 {
		t.Fatalf("tune measured nothing: %s", out)
	}
	f, err := os.Open(export)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := autotune.ReadTimings(f)
	f.Close()
	if err != nil || len(recs) != measured {
		t.Fatalf("export: %d records (%v), want %d", len(recs), err, measured)
	}

	r, errOut := runMLPJSON(t, dir, "--explain", "--plugin", hostile) // checks the outputs
	lines := decisionLines(errOut)                                    // with --json, explain goes to stderr
	if len(lines) == 0 {
		t.Fatalf("no decisions in the explanation:\n%s", errOut)
	}
	for _, l := range lines {
		if !strings.Contains(l, "source: recorded:") {
			t.Errorf("not a recorded decision: %s", l)
		}
	}
	if !strings.Contains(errOut, "-> "+tunedWinner+"  source: recorded:") {
		t.Errorf("run --explain does not report the recorded tunables %s:\n%s", tunedWinner, errOut)
	}
	if strings.Contains(errOut, "strategy plugin") {
		t.Errorf("the plugin was asked although every decision was recorded:\n%s", errOut)
	}
	if r.Cache.Misses != 0 {
		t.Errorf("tune compiled the tuned plan's kernels, yet the run missed: %+v", r.Cache)
	}
	code, out, errOut = runCLI(t, "--cache-dir", dir, "graph", "explain", mlpGraph, "--device", "cpu")
	if code != 0 || len(decisionLines(out)) != len(lines) || strings.Count(out, "source: recorded:") != len(lines) {
		t.Fatalf("graph explain: exit %d\n%s\n%s", code, out, errOut)
	}
}

// A wide hidden layer (2048 > 1024) at N=4: the rules plugin says "one batched launch per op",
// where the heuristic fuses the relu into the linear.
const wideHiddenGraph = `{
  "format": "widejit.graph/v1",
  "n": 4,
  "inputs": [{"name": "x", "shape": [3, 64], "dtype": "float32", "per_model": true}],
  "params": [{"name": "fc.weight", "shape": [2048, 64], "dtype": "float32"}, {"name": "fc.bias", "shape": [2048], "dtype": "float32"}],
  "nodes": [
    {"name": "fc", "op": "linear", "inputs": ["x"], "params": {"weight": "fc.weight", "bias": "fc.bias"}, "attrs": {"in_features": 64, "out_features": 2048}},
    {"name": "act", "op": "relu", "inputs": ["fc"]}
  ],
  "outputs": ["act"],
  "init": {"seed": 0}
}`

func TestRulesPluginChangesADecision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a WebAssembly plugin; run without -short")
	}
	rules := pluginTestBuild(t, "../../plugins/examples/rules")
	g := writeGraph(t, wideHiddenGraph)
	dir := filepath.Join(t.TempDir(), "kc")
	run := func(extra ...string) (runJSON, string) {
		t.Helper()
		args := append([]string{"--cache-dir", dir, "run", g, "--device", "cpu", "--json", "--explain"}, extra...)
		code, out, errOut := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("run %v: exit %d\n%s\n%s", extra, code, out, errOut)
		}
		var r runJSON
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r, errOut
	}
	// 3 rows a model: the CPU plan reads the weight in place (the gemv path, no transpose
	// launch) in the one fused kernel
	plain, explain := run()
	if plain.Plan.Launches != 1 || !strings.Contains(explain, "fused|unfused -> fused  source: heuristic") {
		t.Fatalf("without a plugin: %d launches\n%s", plain.Plan.Launches, explain)
	}
	for i, want := range []string{"source: plugin:rules.wasm: N=4, hidden 2048", "source: plugin:rules.wasm (recorded answer)"} {
		ruled, explain := run("--plugin", rules)
		if ruled.Plan.Launches != 2 || !strings.Contains(explain, "fused|unfused -> unfused  "+want) {
			t.Fatalf("run %d with rules.wasm: %d launches\n%s", i, ruled.Plan.Launches, explain)
		}
		// same models, same inputs: the unfused plan computes the same outputs
		if ruled.Outputs[0].Sum-plain.Outputs[0].Sum > 1e-3*(1+plain.Outputs[0].Sum) || plain.Outputs[0].Sum-ruled.Outputs[0].Sum > 1e-3*(1+plain.Outputs[0].Sum) {
			t.Fatalf("outputs differ: %v vs %v", ruled.Outputs, plain.Outputs)
		}
	}
}

func TestHostilePluginFallsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a WebAssembly plugin; run without -short")
	}
	hostile := pluginTestBuild(t, "../../plugins/testdata/hostile")
	dir := filepath.Join(t.TempDir(), "kc")
	_, errOut := runMLPJSON(t, dir, "--explain", "--plugin", hostile) // succeeds, outputs checked
	if !strings.Contains(errOut, "warning: strategy plugin hostile.wasm failed") || !strings.Contains(errOut, "falling back") {
		t.Fatalf("no fallback warning:\n%s", errOut)
	}
	lines := decisionLines(errOut)
	if len(lines) == 0 {
		t.Fatalf("no decisions:\n%s", errOut)
	}
	for _, l := range lines {
		if !strings.Contains(l, "source: heuristic") {
			t.Errorf("want the heuristic after the plugin failed: %s", l)
		}
	}
}

func TestTuneUsage(t *testing.T) {
	for _, args := range [][]string{
		{"tune", mlpGraph, "--budget", "soon"},
		{"tune", mlpGraph, "--reps", "0"},
		{"tune", mlpGraph, "--n", "2,x"},
	} {
		if code, _, errOut := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, errOut)
		}
	}
}
