package autotune

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/widejit/widejit/plugins"
)

// buildPlugin builds a Go plugin package from this repository into dir, or skips the test.
func buildPlugin(t *testing.T, pkg, dir string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg)+".wasm")
	if err := plugins.BuildGoPlugin(pkg, out); err != nil {
		t.Skipf("cannot build %s with `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared` (needs Go >= 1.24): %v", pkg, err)
	}
	return out
}

// TestRealPluginsEndToEnd runs the tuner with real WebAssembly plugins: the rules example
// changes the heuristic's decision, and a hostile plugin's failure falls back with a warning
// within the deadline.
func TestRealPluginsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	rulesPath := buildPlugin(t, "../plugins/examples/rules", dir)
	hostilePath := buildPlugin(t, "../plugins/testdata/hostile", dir)
	ctx := context.Background()
	opts := plugins.Options{Deadline: 5 * time.Second, CacheDir: filepath.Join(dir, "wasm")}
	rules, err := plugins.Load(ctx, rulesPath, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rules.Close(ctx)
	opts.Deadline = 200 * time.Millisecond
	hostile, err := plugins.Load(ctx, hostilePath, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer hostile.Close(ctx)

	heuristic := func(Problem, []Candidate) []string { return []string{"seq"} }
	p := linearProblem(32, 8) // N=8, hidden 128: the rules fuse
	without := &Tuner{Heuristic: heuristic}
	d0, err := without.Decide(ctx, p, candidates())
	if err != nil || d0.CandidateID != "seq" {
		t.Fatalf("without a plugin: %+v %v", d0, err)
	}
	store := newMemStore()
	with := &Tuner{Store: store, Plugins: []Ranker{rules}, Heuristic: heuristic}
	d1, err := with.Decide(ctx, p, candidates())
	if err != nil {
		t.Fatal(err)
	}
	if d1.CandidateID != "fused" || d1.Source != "plugin:rules.wasm" || !strings.Contains(d1.Note, "fuse") {
		t.Fatalf("with the rules plugin: %+v", d1)
	}

	// "loop" as the first op makes the hostile plugin spin forever.
	var warnings []string
	loop := linearProblem(32, 8)
	loop.OpChain = []string{"loop"}
	hostileTuner := &Tuner{Plugins: []Ranker{hostile}, Heuristic: heuristic, Warn: func(m string) { warnings = append(warnings, m) }}
	start := time.Now()
	d2, err := hostileTuner.Decide(ctx, loop, candidates())
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Fatalf("the fallback took %v", elapsed) // hang detection, not a speed test
	}
	if err != nil || d2.Source != SourceHeuristic || d2.CandidateID != "seq" {
		t.Fatalf("hostile plugin: %+v %v", d2, err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "hostile.wasm") || !strings.Contains(warnings[0], "deadline") {
		t.Fatalf("warnings %q", warnings)
	}
	var perr *plugins.Error
	_, err = hostile.Choose(ctx, loop.Request(candidates()))
	if !errors.As(err, &perr) || perr.Kind != plugins.KindDeadline {
		t.Fatalf("direct call: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "wasm")); len(entries) == 0 {
		t.Fatal("no compilation cache written")
	}
}
