package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/widejit/widejit/cache"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
	"github.com/widejit/widejit/jit/ptx"
)

// TestMain lets the test binary act as the widejit command (WIDEJIT_TEST_AS_CLI=1), so the
// concurrency test can start real processes without building a second binary.
func TestMain(m *testing.M) {
	if os.Getenv("WIDEJIT_TEST_AS_CLI") == "1" {
		os.Exit(executeInterruptible(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

const (
	mlpGraph    = "../../examples/mlp/graph.json"
	mlpInputs   = "../../examples/mlp/inputs.safetensors"
	mlpExpected = "../../examples/mlp/expected.safetensors"
)

// runJSON is the part of `run --json` these tests read.
type runJSON struct {
	Cache   cache.RunReport `json:"cache"`
	Outputs []struct {
		Name   string  `json:"name"`
		Sum    float64 `json:"sum"`
		SHA256 string  `json:"sha256_prefix"`
	} `json:"outputs"`
	Check struct {
		OK bool `json:"ok"`
	} `json:"check"`
	Plan struct {
		Launches int64 `json:"launches"`
		Kernels  int64 `json:"kernels"`
	} `json:"plan"`
}

func runMLPJSON(t *testing.T, dir string, extra ...string) (runJSON, string) {
	t.Helper()
	args := append([]string{"--cache-dir", dir, "run", mlpGraph, "--device", "cpu", "--json",
		"--inputs", mlpInputs, "--check", mlpExpected}, extra...)
	code, out, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var r runJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("run --json: %v\n%s", err, out)
	}
	if !r.Check.OK {
		t.Fatalf("outputs differ from %s:\n%s", mlpExpected, out)
	}
	return r, errOut
}

// The CPU artifact is cached: a second run is all hits, with the same outputs.
func TestRunSecondRunOnlyHits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kc")
	first, _ := runMLPJSON(t, dir)
	if first.Cache.Misses != first.Plan.Kernels || first.Cache.Hits != 0 || first.Plan.Kernels == 0 {
		t.Fatalf("first run: cache %+v for %d kernels, want all misses", first.Cache, first.Plan.Kernels)
	}
	second, _ := runMLPJSON(t, dir)
	if second.Cache.Hits != second.Plan.Kernels || second.Cache.Misses != 0 || second.Cache.CompileMS != 0 {
		t.Fatalf("second run: cache %+v for %d kernels, want only hits", second.Cache, second.Plan.Kernels)
	}
	if fmt.Sprint(first.Outputs) != fmt.Sprint(second.Outputs) {
		t.Fatalf("outputs differ between the cold and the warm run:\n%v\n%v", first.Outputs, second.Outputs)
	}
	// --no-cache neither reads nor writes
	third, _ := runMLPJSON(t, dir, "--no-cache")
	if third.Cache.Hits != 0 || third.Cache.Misses != third.Plan.Kernels {
		t.Fatalf("--no-cache run: cache %+v, want only misses", third.Cache)
	}
}

const keyTestKernel = `import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

@triton.jit
def sub_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) - tl.load(y_ptr + offs, mask=mask), mask=mask)
`

// Every input of the key, changed alone, misses; the unchanged kernel hits.
func TestCompilerKeySensitivity(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kc")
	store, err := cache.Open(dir, cache.Options{Warn: func(m string) { t.Errorf("cache warning: %s", m) }})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	baseSrc := jit.Source{File: "add.py", Text: keyTestKernel, Fn: "add_kernel"}
	baseSig := map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
	baseSpec := jit.Spec{Sig: baseSig, Consts: map[string]any{"BLOCK": int64(64)}, NumWarps: 4}
	type variant struct {
		name    string
		src     jit.Source
		spec    jit.Spec
		target  jit.Target
		version string
		config  map[string]string
	}
	base := variant{"base", baseSrc, baseSpec, cpu.Target{}, "v1.0.0", map[string]string{"fast_math": "false"}}
	with := func(name string, f func(v *variant)) variant {
		v := base
		v.name = name
		v.spec.Sig = map[string]string{}
		for k, s := range baseSig {
			v.spec.Sig[k] = s
		}
		v.spec.Consts = map[string]any{"BLOCK": int64(64)}
		v.config = map[string]string{"fast_math": "false"}
		f(&v)
		return v
	}
	variants := []variant{
		with("text", func(v *variant) { v.src.Text += "\n# a comment changes the text\n" }),
		with("fn", func(v *variant) { v.src.Fn = "sub_kernel" }),
		with("signature", func(v *variant) { v.spec.Sig["n"] = "i64" }),
		with("constexpr", func(v *variant) { v.spec.Consts["BLOCK"] = int64(128) }),
		with("align16", func(v *variant) { v.spec.Align16 = []string{"x_ptr"} }),
		with("num_warps", func(v *variant) { v.spec.NumWarps = 8 }),
		with("num_stages", func(v *variant) { v.spec.NumStages = 2 }),
		with("target", func(v *variant) { v.target = ptx.Target{Arch: "sm_90"} }),
		with("version", func(v *variant) { v.version = "v1.0.1" }),
		with("backend option", func(v *variant) { v.config["fast_math"] = "true" }),
	}
	compile := func(v variant) (hit bool) {
		t.Helper()
		comp := jit.NewCompiler(jit.CompilerOptions{Store: store, Version: v.version, BackendOptions: v.config})
		before := comp.Stats() // the store's counters, shared by every compiler on it
		if _, err := comp.Compile(v.src, v.spec, v.target); err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		after := comp.Stats()
		if after.Hits+after.Misses != before.Hits+before.Misses+1 {
			t.Fatalf("%s: one compile read the store %d times", v.name, after.Hits+after.Misses-before.Hits-before.Misses)
		}
		return after.Hits == before.Hits+1
	}
	if compile(base) {
		t.Fatal("base: hit in an empty cache")
	}
	for _, v := range variants {
		if compile(v) {
			t.Errorf("changing the %s alone still hit the base entry", v.name)
		}
		if !compile(v) {
			t.Errorf("%s: compiling it again missed", v.name)
		}
	}
	if !compile(base) {
		t.Fatal("base: missed after the variants")
	}
}

// Damage to each kind of Badger file between two runs: the second run succeeds with the
// expected outputs, warns once and moves the damaged directory aside.
func TestRunSurvivesCacheCorruption(t *testing.T) {
	damages := []struct {
		name  string
		match func(string) bool
		do    func(path string) error
	}{
		{"MANIFEST truncated", isFile("MANIFEST"), truncateHalf},
		{"MANIFEST overwritten", isFile("MANIFEST"), overwrite},
		{".sst truncated", hasExt(".sst"), truncateHalf},
		{".sst overwritten", hasExt(".sst"), overwrite},
		{".vlog truncated", hasExt(".vlog"), truncateHalf},
		{".vlog overwritten", hasExt(".vlog"), overwrite},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "kc")
			runMLPJSON(t, dir)
			store := filepath.Join(dir, "kernels") // the cache's own store (cache/layout.go)
			ents, err := os.ReadDir(store)
			if err != nil {
				t.Fatal(err)
			}
			damaged := 0
			for _, e := range ents {
				if d.match(e.Name()) {
					if err := d.do(filepath.Join(store, e.Name())); err != nil {
						t.Fatal(err)
					}
					damaged++
				}
			}
			if damaged == 0 {
				t.Fatalf("no file to damage in %s", dir)
			}
			r, errOut := runMLPJSON(t, dir) // checks the outputs against the fixture
			if n := strings.Count(errOut, "was damaged"); n != 1 {
				t.Fatalf("want the damage reported once, got %d times:\n%s", n, errOut)
			}
			if r.Cache.Misses != r.Plan.Kernels {
				t.Errorf("after the damage: cache %+v, want a fresh cache (all misses)", r.Cache)
			}
			aside, _ := filepath.Glob(filepath.Join(dir, "kernels.damaged-*"))
			if len(aside) != 1 {
				t.Fatalf("want the damaged dir moved aside once, found %v", aside)
			}
			// the rebuilt cache works: the third run is all hits and does not warn
			r, errOut = runMLPJSON(t, dir)
			if r.Cache.Hits != r.Plan.Kernels || strings.Contains(errOut, "warning") {
				t.Fatalf("third run: cache %+v, stderr:\n%s", r.Cache, errOut)
			}
		})
	}
}

func isFile(name string) func(string) bool { return func(n string) bool { return n == name } }
func hasExt(ext string) func(string) bool {
	return func(n string) bool { return filepath.Ext(n) == ext }
}

func truncateHalf(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.Truncate(path, st.Size()/2)
}

func overwrite(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	junk := []byte(strings.Repeat("garbage!", int(st.Size()/8)+1))[:st.Size()]
	return os.WriteFile(path, junk, 0o644)
}

// 2 and 4 widejit processes on one cache dir: all succeed with the expected outputs.
func TestConcurrentProcessesShareOneCache(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 6 widejit processes; run without -short")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, procs := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d processes", procs), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "kc")
			config := t.TempDir()
			var wg sync.WaitGroup
			outs := make([]string, procs)
			errs := make([]error, procs)
			for i := range procs {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					cmd := exec.Command(exe, "--cache-dir", dir, "run", mlpGraph, "--device", "cpu", "--json",
						"--inputs", mlpInputs, "--check", mlpExpected)
					cmd.Env = append(os.Environ(), "WIDEJIT_TEST_AS_CLI=1", "XDG_CONFIG_HOME="+config)
					out, err := cmd.CombinedOutput()
					outs[i], errs[i] = string(out), err
				}(i)
			}
			wg.Wait()
			for i := range procs {
				if errs[i] != nil || !strings.Contains(outs[i], `"ok": true`) {
					t.Errorf("process %d: %v\n%s", i, errs[i], outs[i])
				}
			}
			// the store is intact afterwards: a run hits and `cache verify` passes
			r, _ := runMLPJSON(t, dir)
			if r.Cache.Hits != r.Plan.Kernels {
				t.Errorf("after the concurrent runs: cache %+v, want only hits", r.Cache)
			}
			if code, out, errOut := runCLI(t, "--cache-dir", dir, "cache", "verify"); code != 0 {
				t.Errorf("cache verify: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}
