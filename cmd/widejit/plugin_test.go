package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/viper"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/cache"
	"github.com/widejit/widejit/internal/config"
	"github.com/widejit/widejit/internal/engine"
	"github.com/widejit/widejit/plugins"
	"github.com/widejit/widejit/plugins/abi"
)

// pluginTestBuild builds a plugin package of this repository, or skips the test.
func pluginTestBuild(t *testing.T, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg)+".wasm")
	if err := plugins.BuildGoPlugin(pkg, out); err != nil {
		t.Skipf("cannot build %s with `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared` (needs Go >= 1.24): %v", pkg, err)
	}
	return out
}

func pluginTestRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := execute(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func pluginTestEnv(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	return dir
}

func TestPluginCheckExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and compiles two WebAssembly plugins (several seconds); run without -short")
	}
	dir := pluginTestEnv(t)
	rules := pluginTestBuild(t, "../../plugins/examples/rules")
	code, out, errOut := pluginTestRun(t, "plugin", "check", rules, "--plugin-deadline", "5s", "--reps", "2")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"plugin rules.wasm: ABI 1",
		"deadline 5s per call",
		// rules: N=8 and hidden 256 fuse, with BLOCK_M nearest the batch of 64 first
		"fused-m64 > fused-m32 > batched-m64 > batched-m32 > sequential  N=8 >= 4 and hidden 256 <= 1024: fuse",
		"ok: 12 sample requests answered",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The compiled module went into the compilation cache inside the cache dir (<cache_dir>/wasm).
	if entries, err := os.ReadDir(filepath.Join(dir, "cache", "widejit", "wasm")); err != nil || len(entries) == 0 {
		t.Errorf("no compilation cache in %s: %v", filepath.Join(dir, "cache", "widejit", "wasm"), err)
	}

	tree := pluginTestBuild(t, "../../plugins/examples/tree")
	code, out, errOut = pluginTestRun(t, "plugin", "check", tree, "--plugin-deadline", "5s", "--reps", "1")
	if code != 0 || !strings.Contains(out, "decision tree prefers") {
		t.Fatalf("tree: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestPluginCheckFailures(t *testing.T) {
	dir := pluginTestEnv(t)
	notWasm := filepath.Join(dir, "x.wasm")
	if err := os.WriteFile(notWasm, []byte("not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no argument", []string{"plugin", "check"}, 2, "accepts 1 arg"},
		{"bad deadline", []string{"plugin", "check", notWasm, "--plugin-deadline", "soon"}, 2, `plugin_deadline: "soon" is not a positive duration`},
		{"bad reps", []string{"plugin", "check", notWasm, "--reps", "0"}, 2, "--reps must be at least 1"},
		{"missing", []string{"plugin", "check", filepath.Join(dir, "nope.wasm")}, 1, "plugin nope.wasm: load:"},
		{"not wasm", []string{"plugin", "check", notWasm}, 1, "plugin x.wasm: load: not a valid WebAssembly module"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := pluginTestRun(t, c.args...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, errOut, c.code, c.want)
			}
		})
	}

}

// pluginTestChooser answers like a plugin that fails for N=8 and reverses the candidates
// otherwise.
type pluginTestChooser struct{ calls int }

func (f *pluginTestChooser) Choose(_ context.Context, req abi.Request) (abi.Response, error) {
	f.calls++
	if req.N == 8 {
		return abi.Response{}, &plugins.Error{Plugin: "fake.wasm", Kind: plugins.KindPanic, Reason: "choose panicked: boom"}
	}
	ids := make([]string, len(req.Candidates))
	for i, c := range req.Candidates {
		ids[len(ids)-1-i] = c.ID
	}
	return abi.Response{Ranking: ids, Note: "reversed"}, nil
}

func TestPluginCheckReport(t *testing.T) {
	samples := plugins.CheckSamples()
	if len(samples) != 12 {
		t.Fatalf("%d samples, want 12 (2 groups x 2 devices x 3 N)", len(samples))
	}
	var out bytes.Buffer
	fake := &pluginTestChooser{}
	failed, err := writePluginAnswers(&out, plugins.Ask(context.Background(), fake, samples, 3))
	if err != nil {
		t.Fatal(err)
	}
	// 4 samples at N=8 fail on their first call; the other 8 are called 3 times each.
	if failed != 4 || fake.calls != 4+8*3 {
		t.Fatalf("failed %d, calls %d", failed, fake.calls)
	}
	text := out.String()
	for _, want := range []string{
		"plugin fake.wasm: panic: choose panicked: boom",
		"fused-m64 > fused-m32 > batched-m64 > batched-m32 > sequential  reversed",
		"mlp 64x1024->4096->1024 N=64 cuda",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if got := strings.Count(text, "FAILED"); got != 4 {
		t.Errorf("%d FAILED rows, want 4:\n%s", got, text)
	}
}

// TestPluginDecisionsInTheKernelCache runs the autotuner's record-and-reuse cycle through the
// cache adapter on a real (in-memory) cache.Store.
func TestPluginDecisionsInTheKernelCache(t *testing.T) {
	store, err := cache.Open("", cache.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	problem := autotune.Problem{OpChain: []string{"linear"}, Shapes: [][]int{{8, 4}, {4, 4}}, DTypes: []string{"float32", "float32"}, N: 3, Device: autotune.DeviceInfo{Kind: "cpu", Name: "t", Cores: 1}}
	cands := []autotune.Candidate{{ID: "a", Strategy: "sequential"}, {ID: "b", Strategy: "batched"}}
	calls := 0
	tuner := &autotune.Tuner{Store: engine.DecisionStore{Store: store}}
	records, err := tuner.Tune(context.Background(), []autotune.Job{{Name: "g", Problem: problem, Candidates: cands, Run: func(c autotune.Candidate) error {
		calls++
		return nil
	}}}, autotune.MeasureOptions{Warmup: 1, Reps: 3}, nil)
	if err != nil || len(records) != 1 || calls != 8 {
		t.Fatalf("records %+v, err %v, calls %d", records, err, calls)
	}
	d, err := tuner.Decide(context.Background(), problem, cands)
	if err != nil || d.Source != autotune.SourceRecorded || !d.Reused || d.CandidateID != records[0].Winner {
		t.Fatalf("decision %+v, err %v; want the recorded %s", d, err, records[0].Winner)
	}
}

func TestLoadConfiguredPluginsWarnsAndContinues(t *testing.T) {
	dir := pluginTestEnv(t)
	notWasm := filepath.Join(dir, "x.wasm")
	if err := os.WriteFile(notWasm, []byte("not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &app{v: viper.New(), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	for k, v := range config.Defaults {
		a.v.SetDefault(k, v)
	}
	a.v.Set("plugins", []string{notWasm})
	var warnings []string
	cfg := engineConfig(a, []string{filepath.Join(dir, "missing.wasm")})
	cfg.Warn = func(m string) { warnings = append(warnings, m) }
	rankers, closeAll := cfg.LoadPlugins(context.Background())
	defer closeAll()
	if len(rankers) != 0 || len(warnings) != 2 || !strings.Contains(warnings[0], "x.wasm: load") || !strings.Contains(warnings[1], "missing.wasm: load") {
		t.Fatalf("rankers %d, warnings %q", len(rankers), warnings)
	}
}
