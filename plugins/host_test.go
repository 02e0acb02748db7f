package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/widejit/widejit/plugins/abi"
)

// Test plugins are built from Go sources once per test binary.
var (
	buildDir      string
	buildErr      error
	hostileWasm   string // plugins/testdata/hostile, ABI 1
	hostileV2Wasm string // the same, speaking ABI version 2
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "widejit-plugins-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	hostileWasm = filepath.Join(dir, "hostile.wasm")
	hostileV2Wasm = filepath.Join(dir, "hostile-abi2.wasm")
	buildErr = BuildGoPlugin("./testdata/hostile", hostileWasm)
	if buildErr == nil {
		buildErr = BuildGoPlugin("./testdata/hostile", hostileV2Wasm, "-ldflags=-X main.abiVersion=2")
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func needPlugins(t *testing.T) {
	t.Helper()
	if buildErr != nil {
		t.Skipf("cannot build the test plugins with `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared` (needs Go >= 1.24 with its wasm toolchain): %v", buildErr)
	}
}

func sampleRequest(behaviour string) abi.Request {
	return abi.Request{
		OpChain: []string{behaviour, "gelu"},
		Shapes:  [][]int{{32, 64}, {128, 64}, {128}},
		DTypes:  []string{"float32", "float32", "float32"},
		N:       8,
		Device:  abi.Device{Kind: "cpu", Name: "test", Cores: 2, MemoryBytes: 1 << 30},
		Candidates: []abi.Candidate{
			{ID: "seq", Strategy: "sequential"},
			{ID: "bat-64", Strategy: "batched", Params: map[string]int{"BLOCK_M": 64}},
			{ID: "fused-32", Strategy: "fused", Params: map[string]int{"BLOCK_M": 32, "num_warps": 4}},
		},
	}
}

// testOptions uses a generous deadline so valid calls do not fail on a loaded test machine,
// and one compilation cache for the whole test binary.
func testOptions() Options {
	return Options{Deadline: 5 * time.Second, PoolSize: 2, CacheDir: filepath.Join(buildDir, "wasm-cache")}
}

func load(t *testing.T, path string, opts Options) *Plugin {
	t.Helper()
	p, err := Load(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

func TestValidRanking(t *testing.T) {
	needPlugins(t)
	p := load(t, hostileWasm, testOptions())
	resp, err := p.Choose(context.Background(), sampleRequest("ok"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(resp.Ranking, ","); got != "fused-32,bat-64,seq" {
		t.Fatalf("ranking %s, want the candidates reversed: fused-32,bat-64,seq", got)
	}
	if p.Name() != "hostile.wasm" || len(p.Hash()) != 64 {
		t.Fatalf("name %q hash %q", p.Name(), p.Hash())
	}
}

func TestPartialRankingIsAccepted(t *testing.T) {
	needPlugins(t)
	p := load(t, hostileWasm, testOptions())
	resp, err := p.Choose(context.Background(), sampleRequest("partial"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(resp.Ranking, ","); got != "fused-32" {
		t.Fatalf("ranking %s, want fused-32", got)
	}
}

// TestHostileCallsFail checks that each misbehaviour is reported with its kind, quickly, and
// leaves the plugin usable for the next call (a fresh instance replaces the broken one).
func TestHostileCallsFail(t *testing.T) {
	needPlugins(t)
	opts := testOptions()
	opts.MemoryLimit = 32 << 20
	p := load(t, hostileWasm, opts)
	// A short deadline only where the deadline is the point, so that slow calls on a loaded
	// machine do not turn other failures into deadline failures; still long enough for the
	// well-behaved call after the loop (a fresh instance) on a loaded machine.
	short := opts
	short.Deadline = time.Second
	looping := load(t, hostileWasm, short)
	cases := []struct {
		behaviour string
		kind      Kind
		reason    string
	}{
		{"loop", KindDeadline, "did not return within the deadline"},
		{"membomb", KindMemory, "out of memory"},
		{"garbage", KindMalformed, "not the expected JSON"},
		{"huge", KindTooLarge, "524288000 bytes exceeds"},
		{"outside", KindMalformed, "outside the module"},
		{"panic", KindPanic, "hostile plugin: deliberate panic"},
		{"exit", KindExit, "exited with code 3"},
		{"unknown", KindRanking, `unknown candidate id "no-such-candidate"`},
		{"duplicate", KindRanking, `duplicate candidate id "fused-32"`},
		{"empty", KindRanking, "empty ranking"},
	}
	for _, c := range cases {
		t.Run(c.behaviour, func(t *testing.T) {
			plugin, deadline := p, opts.Deadline
			if c.kind == KindDeadline {
				plugin, deadline = looping, short.Deadline
			}
			start := time.Now()
			_, err := plugin.Choose(context.Background(), sampleRequest(c.behaviour))
			elapsed := time.Since(start)
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("error %v (%T), want *plugins.Error", err, err)
			}
			if perr.Kind != c.kind || !strings.Contains(perr.Reason, c.reason) || perr.Plugin != "hostile.wasm" {
				t.Fatalf("got %v (kind %s), want kind %s with reason containing %q", err, perr.Kind, c.kind, c.reason)
			}
			t.Logf("%v", err)
			// A hang detector, not a speed assertion: every failure must end near the deadline.
			if elapsed > deadline+2*time.Second {
				t.Fatalf("the failing call took %v", elapsed)
			}
			resp, err := plugin.Choose(context.Background(), sampleRequest("ok"))
			if err != nil || len(resp.Ranking) != 3 {
				t.Fatalf("the call after %s: %v %v", c.behaviour, resp, err)
			}
		})
	}
}

func TestFloodedOutputIsBounded(t *testing.T) {
	needPlugins(t)
	p := load(t, hostileWasm, testOptions())
	resp, err := p.Choose(context.Background(), sampleRequest("flood"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Ranking) != 3 {
		t.Fatalf("ranking %v", resp.Ranking)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, inst := range p.idle {
		if n := len(inst.output.String()); n > guestOutputLimit {
			t.Fatalf("kept %d bytes of guest output, limit %d", n, guestOutputLimit)
		}
	}
}

func TestInstancesAreReusedAndDiscardedAfterErrors(t *testing.T) {
	needPlugins(t)
	opts := testOptions()
	opts.PoolSize = 1
	p := load(t, hostileWasm, opts)
	note := func() string {
		t.Helper()
		resp, err := p.Choose(context.Background(), sampleRequest("ok"))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Note
	}
	if a, b := note(), note(); a != "calls=1" || b != "calls=2" {
		t.Fatalf("notes %q %q: want one pooled instance serving both calls", a, b)
	}
	if _, err := p.Choose(context.Background(), sampleRequest("unknown")); err == nil {
		t.Fatal("want an error")
	}
	if got := note(); got != "calls=1" {
		t.Fatalf("note %q after an error: want a fresh instance (calls=1)", got)
	}
}

func TestConcurrentCalls(t *testing.T) {
	needPlugins(t)
	p := load(t, hostileWasm, testOptions())
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			behaviour := "ok"
			if i%4 == 3 {
				behaviour = "panic"
			}
			resp, err := p.Choose(context.Background(), sampleRequest(behaviour))
			if behaviour == "ok" && (err != nil || len(resp.Ranking) != 3) {
				errs <- fmt.Errorf("call %d: %v %v", i, resp, err)
			}
			if behaviour == "panic" && err == nil {
				errs <- fmt.Errorf("call %d: want a panic error", i)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestLoadFailures(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cases := []struct {
		name   string
		path   string
		kind   Kind
		reason string
	}{
		{"missing file", filepath.Join(dir, "nope.wasm"), KindLoad, "no such file"},
		{"not wasm", write("text.wasm", []byte("hello, I am not WebAssembly")), KindLoad, "not a valid WebAssembly module"},
		// The smallest valid module: magic and version, no sections, hence no exports.
		{"no exports", write("empty.wasm", []byte("\x00asm\x01\x00\x00\x00")), KindABI, `missing export "memory"`},
	}
	if buildErr == nil {
		cases = append(cases, struct {
			name   string
			path   string
			kind   Kind
			reason string
		}{"abi 2", hostileV2Wasm, KindABI, "widejit_abi() returned 2; this widejit speaks ABI version 1"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Load(context.Background(), c.path, testOptions())
			var perr *Error
			if !errors.As(err, &perr) {
				if p != nil {
					p.Close(context.Background())
				}
				t.Fatalf("error %v, want *plugins.Error", err)
			}
			if perr.Kind != c.kind || !strings.Contains(perr.Reason, c.reason) {
				t.Fatalf("got %v (kind %s), want kind %s with %q", err, perr.Kind, c.kind, c.reason)
			}
		})
	}
}

func TestCompilationCacheOnDisk(t *testing.T) {
	needPlugins(t)
	opts := testOptions()
	opts.CacheDir = t.TempDir()
	for i := 0; i < 2; i++ {
		p := load(t, hostileWasm, opts)
		if _, err := p.Choose(context.Background(), sampleRequest("ok")); err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
	}
	entries, err := os.ReadDir(opts.CacheDir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("compilation cache dir is empty (%v)", err)
	}
}

func TestClosedPlugin(t *testing.T) {
	needPlugins(t)
	p := load(t, hostileWasm, testOptions())
	p.Close(context.Background())
	_, err := p.Choose(context.Background(), sampleRequest("ok"))
	var perr *Error
	if !errors.As(err, &perr) || perr.Kind != KindClosed {
		t.Fatalf("error %v, want kind closed", err)
	}
}

func TestBuildFailureIsReported(t *testing.T) {
	err := BuildGoPlugin("./testdata/does-not-exist", filepath.Join(t.TempDir(), "x.wasm"))
	if err == nil {
		t.Fatal("want an error for a missing package")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) && !strings.Contains(err.Error(), "does-not-exist") {
		t.Fatalf("error %v does not say what failed", err)
	}
}

// TestSandbox checks what a guest can see: no arguments, environment or files, a fake clock,
// and the same "random" bytes in every fresh instance.
func TestSandbox(t *testing.T) {
	needPlugins(t)
	t.Setenv("WIDEJIT_SANDBOX_PROBE", "leaked")
	probe := func() map[string]any {
		p := load(t, hostileWasm, testOptions())
		resp, err := p.Choose(context.Background(), sampleRequest("probe"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(resp.Note), &m); err != nil {
			t.Fatalf("probe note %q: %v", resp.Note, err)
		}
		return m
	}
	first, second := probe(), probe()
	t.Logf("probe: %v", first)
	if env, _ := first["env"].([]any); len(env) != 0 {
		t.Errorf("the guest sees environment variables: %v", env)
	}
	if first["args"] != 0.0 || first["readdir"] != true || first["readfile"] != true {
		t.Errorf("the guest sees arguments or files: %v", first)
	}
	if year := first["year"].(float64); year >= float64(time.Now().Year()) {
		t.Errorf("the guest's clock says %v: want wazero's fake clock (2022), not the real one", year)
	}
	if first["random"] != second["random"] {
		t.Errorf("random bytes differ between instances (%v, %v): want a fixed seed", first["random"], second["random"])
	}
}

// What a plugin says reaches terminals only as printable text: a note's escape sequences
// (OSC retitling, colours, a bidi override) are shown escaped and a long note is cut; the
// first line of a panic is treated the same way.
func TestPluginTextIsPrintable(t *testing.T) {
	needPlugins(t)
	p := load(t, hostileWasm, testOptions())
	resp, err := p.Choose(context.Background(), sampleRequest("escape"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(resp.Note, "\x1b\x07\u202e") || !strings.HasPrefix(resp.Note, `\x1b]0;pwned\a\x1b[31mred\u202e`) {
		t.Errorf("note not escaped: %.80q", resp.Note)
	}
	if len(resp.Note) > MaxNoteBytes+64 || !strings.Contains(resp.Note, "more bytes)") {
		t.Errorf("note of %d bytes, want it cut near %d with the count of the rest", len(resp.Note), MaxNoteBytes)
	}
	_, err = p.Choose(context.Background(), sampleRequest("escapepanic"))
	if err == nil || strings.Contains(err.Error(), "\x1b") || !strings.Contains(err.Error(), `\x1b[2J`) {
		t.Errorf("panic message not escaped: %q", err)
	}
}

func TestPrintable(t *testing.T) {
	for _, c := range []struct {
		in    string
		limit int
		want  string
	}{
		{"plain text, ünïcode", 100, "plain text, ünïcode"},
		{"a\nb\tc", 100, "a b c"},
		{"\x1b[0m\r\x00", 100, `\x1b[0m\r\x00`},
		{"bad \xff utf8", 100, `bad \xff utf8`},
		{"rtl \u202e", 100, `rtl \u202e`},
		{"0123456789", 5, "01234... (5 more bytes)"},
	} {
		if got := Printable(c.in, c.limit); got != c.want {
			t.Errorf("Printable(%q, %d) = %q, want %q", c.in, c.limit, got, c.want)
		}
	}
}
