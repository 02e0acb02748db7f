package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
)

// runOK runs widejit and fails the test unless it exits 0.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("widejit %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// runFails runs widejit and fails the test unless it exits with code and its stderr holds
// every one of want.
func runFails(t *testing.T, code int, want []string, args ...string) {
	t.Helper()
	got, out, errOut := runCLI(t, args...)
	if got != code {
		t.Errorf("widejit %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), got, code, out, errOut)
		return
	}
	for _, w := range want {
		if !strings.Contains(errOut, w) {
			t.Errorf("widejit %s: stderr lacks %q:\n%s", strings.Join(args, " "), w, errOut)
		}
	}
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	x, err1 := os.ReadFile(a)
	y, err2 := os.ReadFile(b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return bytes.Equal(x, y)
}

// For every example, the shards of several K (K = 2, one not dividing N, K = N), each
// checked against its rows of the example's expected outputs, merge (given in reverse order)
// into exactly the bytes the unsharded run writes.
func TestShardMergeBitIdenticalEveryExample(t *testing.T) {
	isolatedCache(t)
	graphs, _ := filepath.Glob("../../examples/*/graph.json")
	if len(graphs) == 0 {
		t.Fatal("no examples")
	}
	for _, gp := range graphs {
		dir := filepath.Dir(gp)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			g, err := graph.Load(gp)
			if err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			common := []string{gp, "--device", "cpu", "--inputs", filepath.Join(dir, "inputs.safetensors")}
			whole := filepath.Join(tmp, "whole.safetensors")
			runOK(t, append(append([]string{"run"}, common...), "--out", whole)...)
			ks := []int{2, 3, g.N}
			if testing.Short() {
				ks = []int{3}
			}
			for _, k := range ks {
				var parts []string
				for i := range k {
					p := filepath.Join(tmp, fmt.Sprintf("k%d-part%d.safetensors", k, i))
					out := runOK(t, append(append([]string{"run"}, common...), "--shard", fmt.Sprintf("%d/%d", i, k), "--out", p,
						"--check", filepath.Join(dir, "expected.safetensors"))...)
					lo, hi := graph.ShardRange(i, k, g.N)
					if !strings.Contains(out, fmt.Sprintf("ran models [%d, %d) of n=%d", lo, hi, g.N)) || !strings.Contains(out, " ok") {
						t.Errorf("shard %d/%d:\n%s", i, k, out)
					}
					parts = append(parts, p)
				}
				slices.Reverse(parts)
				merged := filepath.Join(tmp, fmt.Sprintf("k%d-merged.safetensors", k))
				runOK(t, append(append([]string{"merge"}, parts...), "--out", merged)...)
				if !sameFile(t, merged, whole) {
					t.Errorf("K=%d: the merged parts differ from the unsharded run's --out", k)
				}
			}
		})
	}
}

// merge refuses a missing, duplicated, overlapping or foreign part, naming the files.
func TestMergeRefusesBadParts(t *testing.T) {
	isolatedCache(t)
	tmp := t.TempDir()
	ex := "../../examples/mlp"
	run := func(out string, args ...string) string {
		p := filepath.Join(tmp, out)
		runOK(t, append([]string{"run", filepath.Join(ex, "graph.json"), "--device", "cpu", "--inputs", filepath.Join(ex, "inputs.safetensors"), "--out", p}, args...)...)
		return p
	}
	p0, p1, p2 := run("p0", "--shard", "0/3"), run("p1", "--shard", "1/3"), run("p2", "--shard", "2/3")
	h0 := run("h0", "--shard", "0/2")
	merged := filepath.Join(tmp, "all")
	runFails(t, exitInput, []string{"models [2, 5) of 8 are missing", p0, p2}, "merge", p0, p2, "--out", merged)
	runFails(t, exitInput, []string{"models [5, 8) of 8 are missing"}, "merge", p1, p0, "--out", merged)
	runFails(t, exitInput, []string{"parts overlap", p1, "are the same file"}, "merge", p0, p1, p1, p2, "--out", merged)
	runFails(t, exitInput, []string{"parts overlap", h0, p1, "both hold models [2, 4)"}, "merge", h0, p1, p2, "--out", merged)
	runFails(t, 2, []string{"--out " + p1 + " is an input"}, "merge", p0, p1, p2, "--out", p1)
	runFails(t, exitInput, []string{"inputs.safetensors: not the --out file of a widejit run"}, "merge", p0, filepath.Join(ex, "inputs.safetensors"), "--out", merged)
	runFails(t, 2, []string{"merge needs --out"}, "merge", p0, p1, p2)

	// the same graph with other weights (one byte changed) is foreign
	other := t.TempDir()
	for _, f := range []string{"graph.json", "weights.safetensors", "inputs.safetensors"} {
		data, err := os.ReadFile(filepath.Join(ex, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "weights.safetensors" {
			data[len(data)-1] ^= 1
		}
		if err := os.WriteFile(filepath.Join(other, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f1 := filepath.Join(tmp, "foreign1")
	runOK(t, "run", filepath.Join(other, "graph.json"), "--device", "cpu", "--inputs", filepath.Join(other, "inputs.safetensors"), "--shard", "1/3", "--out", f1)
	runFails(t, exitInput, []string{f1 + " is foreign", "other weights"}, "merge", p0, f1, p2, "--out", merged)
	// another graph with other outputs
	dm := "../../examples/deep_mlp"
	d0 := filepath.Join(tmp, "deep0")
	runOK(t, "run", filepath.Join(dm, "graph.json"), "--device", "cpu", "--inputs", filepath.Join(dm, "inputs.safetensors"), "--shard", "0/2", "--out", d0)
	runFails(t, exitInput, []string{d0 + " is foreign"}, "merge", p0, d0, "--out", merged)
	// the same graph and weights on other inputs: another inputs file (one byte changed), or
	// generated from another seed or at another batch size
	otherInputs := filepath.Join(other, "inputs.safetensors")
	data, err := os.ReadFile(otherInputs)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 1
	if err := os.WriteFile(otherInputs, data, 0o644); err != nil {
		t.Fatal(err)
	}
	i1 := filepath.Join(tmp, "inputs1")
	runOK(t, "run", filepath.Join(ex, "graph.json"), "--device", "cpu", "--inputs", otherInputs, "--shard", "1/3", "--out", i1)
	runFails(t, exitInput, []string{p0 + " and " + i1 + " were computed on different inputs", "file sha256:"}, "merge", p0, i1, p2, "--out", merged)
	gen := func(out string, args ...string) string {
		p := filepath.Join(tmp, out)
		runOK(t, append([]string{"run", filepath.Join(ex, "graph.json"), "--device", "cpu", "--out", p}, args...)...)
		return p
	}
	s0, s1 := gen("seed0", "--shard", "0/2", "--seed", "7"), gen("seed1", "--shard", "1/2", "--seed", "8")
	runFails(t, exitInput, []string{"were computed on different inputs", "generated seed=7 batch=32", "generated seed=8 batch=32"}, "merge", s0, s1, "--out", merged)
	b1 := gen("batch1", "--shard", "1/2", "--seed", "7", "--batch", "16")
	runFails(t, exitInput, []string{"were computed on different inputs", "generated seed=7 batch=16"}, "merge", s0, b1, "--out", merged)
	runFails(t, exitInput, []string{"were computed on different inputs"}, "merge", s0, p1, p2, "--out", merged)
	if _, err := os.Stat(merged); err == nil {
		t.Error("a refused merge wrote --out")
	}
	// parts generated from one seed and batch merge into what an unsharded run writes
	gen("seed1", "--shard", "1/2", "--seed", "7")
	runOK(t, "merge", s1, s0, "--out", merged)
	if whole := gen("seed-all", "--seed", "7"); !sameFile(t, merged, whole) {
		t.Error("the merged generated parts differ from the unsharded run's --out")
	}
	runOK(t, "merge", p2, p0, p1, "--out", merged)
}

// Usage errors of --shard and of --out naming an input exit 2 with a clear message.
func TestShardUsageErrors(t *testing.T) {
	isolatedCache(t)
	ex := "../../examples/mlp"
	g := filepath.Join(ex, "graph.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--shard", "8/8"}, "need 0 <= I < K"},
		{[]string{"--shard", "-1/2"}, "need 0 <= I < K"},
		{[]string{"--shard", "0/0"}, "need 0 <= I < K"},
		{[]string{"--shard", "0/9"}, "K=9 shards of N=8 models"},
		{[]string{"--shard", "1"}, "expected I/K"},
		{[]string{"--shard", "0/2", "--dropout", "mc"}, "Monte Carlo"},
		{[]string{"--out", filepath.Join(ex, "inputs.safetensors"), "--inputs", filepath.Join(ex, "inputs.safetensors")}, "is an input of this command"},
		{[]string{"--out", filepath.Join(ex, "weights.safetensors")}, "refusing to overwrite"},
		{[]string{"--out", g}, "refusing to overwrite"},
		{[]string{"--trace", filepath.Join(ex, "expected.safetensors"), "--check", filepath.Join(ex, "expected.safetensors")}, "--trace"},
		{[]string{"--device", "cpu:0,cuda:1"}, "mixes cpu and cuda"},
	} {
		runFails(t, 2, []string{c.want}, append([]string{"run", g, "--device", "cpu"}, c.args...)...)
	}
	// a shard's --check reads the same rows of a file holding all N; one of another N is refused
	part := filepath.Join(t.TempDir(), "part")
	runOK(t, "run", g, "--device", "cpu", "--inputs", filepath.Join(ex, "inputs.safetensors"), "--shard", "0/2", "--out", part)
	runFails(t, exitInput, []string{"expected outputs " + part, "expected F32[8 32 64]"}, "run", g, "--device", "cpu", "--shard", "1/2", "--check", part)
}

// --device cpu:0,cpu:1 writes the bytes of a one-device run; --trace writes Chrome trace
// JSON with a kernel event per launch on a track per device, plus the copies.
func TestRunDevicesAndTrace(t *testing.T) {
	isolatedCache(t)
	tmp := t.TempDir()
	ex := "../../examples/transformer"
	args := []string{"run", filepath.Join(ex, "graph.json"), "--inputs", filepath.Join(ex, "inputs.safetensors"), "--json"}
	one, two, tr := filepath.Join(tmp, "one"), filepath.Join(tmp, "two"), filepath.Join(tmp, "trace.json")
	runOK(t, append(args, "--device", "cpu", "--out", one)...)
	out := runOK(t, append(args, "--device", "cpu:0,cpu:1", "--out", two, "--trace", tr, "--profile", "--check", filepath.Join(ex, "expected.safetensors"))...)
	if !sameFile(t, one, two) {
		t.Error("--device cpu:0,cpu:1 wrote other outputs than --device cpu")
	}
	var doc struct {
		Plan     struct{ Launches int }
		KernelMS []struct{ Prepare bool } `json:"kernel_ms"`
		Devices  []struct {
			Device string
			Lo, Hi int
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	perRun := 0 // launches per run: the prepare launches ran once, at load, before the trace
	for _, k := range doc.KernelMS {
		if !k.Prepare {
			perRun++
		}
	}
	if len(doc.Devices) != 2 || doc.Devices[0].Device != "cpu:0" || doc.Devices[1].Hi != 4 || doc.Plan.Launches == 0 {
		t.Fatalf("devices %+v, %d launches", doc.Devices, doc.Plan.Launches)
	}
	data, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceEvents []struct {
			Name, Cat, Ph string
			PID, TID      int
			TS, Dur       float64
			Args          map[string]any
		}
	}
	if err := json.Unmarshal(data, &trace); err != nil {
		t.Fatalf("trace: %v", err)
	}
	kernels, copies := map[int]int{}, 0
	for _, e := range trace.TraceEvents {
		if e.Ph == "X" && e.Cat == "kernel" {
			kernels[e.PID]++
			if e.Args["device"] != fmt.Sprintf("cpu:%d", e.PID) || e.Args["template"] == nil {
				t.Errorf("kernel event %+v", e)
			}
		}
		if e.Ph == "X" && e.Cat == "copy" {
			copies++
		}
	}
	// The CPU reads inputs and writes outputs in place (jit.HostBinder): a run copies nothing.
	if kernels[0]+kernels[1] != perRun || kernels[0] == 0 || kernels[1] == 0 || copies != 0 {
		t.Errorf("trace: kernel events per device %v for %d launches per run, %d copies (want none)", kernels, perRun, copies)
	}
}

// `cache populate --shards K` compiles the kernels of every shard size, so that every
// shard hits the cache and compiles nothing.
func TestPopulateShardsThenEveryShardHits(t *testing.T) {
	isolatedCache(t)
	cache := t.TempDir()
	ex := "../../examples/deep_mlp" // N=6: shards of 3/4 hold 1 and 2 models
	g := filepath.Join(ex, "graph.json")
	runOK(t, "cache", "populate", g, "--shards", "4", "--cache-dir", cache)
	for i := range 4 {
		out := runOK(t, "run", g, "--device", "cpu", "--cache-dir", cache, "--shard", fmt.Sprintf("%d/4", i), "--json")
		if !strings.Contains(out, `"misses": 0`) {
			t.Errorf("shard %d/4 compiled kernels:\n%s", i, out)
		}
	}
	runFails(t, 2, []string{"K=7 shards of N=6"}, "cache", "populate", g, "--shards", "7", "--cache-dir", cache)
}

// fakeLibcuda builds jit/cuda's fake libcuda.so.1 (streams, events and pinned memory bound;
// kernels load but do not run) into a directory for LD_LIBRARY_PATH.
func fakeLibcuda(t *testing.T) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc) to build the fake libcuda")
	}
	dir := t.TempDir()
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", filepath.Join(dir, "libcuda.so.1"), "../../jit/cuda/testdata/fakecuda.c").CombinedOutput(); err != nil {
		t.Fatalf("building the fake libcuda: %v\n%s", err, out)
	}
	return dir
}

// runWithFakeGPU runs widejit (this test binary as the command) in a process that loads the
// fake libcuda, and returns its output.
func runWithFakeGPU(t *testing.T, lib string, args ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"--cache-dir", t.TempDir()}, args...)...)
	cmd.Env = append(os.Environ(), "WIDEJIT_TEST_AS_CLI=1", "LD_LIBRARY_PATH="+lib, "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("widejit %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// `run --device cuda` through the real driver binding (against the fake libcuda): by default
// two streams, which --explain shows with their models, copies, launches and events, and
// --trace draws as a track per stream with its copy and kernel slices; --streams 1 keeps one.
func TestRunStreamsExplainAndTrace(t *testing.T) {
	lib := fakeLibcuda(t)
	ex := "../../examples/transformer"
	args := []string{"run", filepath.Join(ex, "graph.json"), "--inputs", filepath.Join(ex, "inputs.safetensors"), "--device", "cuda", "--explain"}
	for _, c := range []struct {
		streams string
		explain []string
		tracks  []string
	}{
		{"", []string{"streams on Fake GPU: 1 (the default: more streams are for copy-heavy runs"}, []string{"stream 0"}},
		{"2", []string{"streams on Fake GPU: 2 (asked for)", "stream 1: models [2, 4)", "upload   src rows [2, 4)",
			"launch   k0_in_proj (batched, grid [3 1 2])", "download norm2 rows [0, 2)", "record   event stream-1-done"},
			[]string{"stream 0: models [0, 2)", "stream 1: models [2, 4)"}},
		{"1", []string{"streams on Fake GPU: 1 (asked for): copies and launches in order on the device's own queue"}, []string{"stream 0"}},
	} {
		tr := filepath.Join(t.TempDir(), "trace.json")
		a := append(args, "--trace", tr)
		if c.streams != "" {
			a = append(a, "--streams", c.streams)
		}
		out := runWithFakeGPU(t, lib, a...)
		for _, want := range c.explain {
			if !strings.Contains(out, want) {
				t.Errorf("--streams %q: --explain lacks %q:\n%s", c.streams, want, out)
			}
		}
		data, err := os.ReadFile(tr)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			TraceEvents []struct {
				Name, Cat, Ph string
				PID, TID      int
				Dur           float64
				Args          map[string]any
			}
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("trace: %v\n%s", err, data)
		}
		var tracks []string
		slices := map[string]int{}
		for _, e := range doc.TraceEvents {
			switch {
			case e.Ph == "M" && e.Name == "thread_name":
				tracks = append(tracks, fmt.Sprint(e.Args["name"]))
			case e.Ph == "X":
				slices[fmt.Sprintf("%s/%d", e.Cat, e.TID)]++
				if e.Args["device"] != "cuda" || e.Args["stream"] != float64(e.TID) {
					t.Errorf("--streams %q: event %+v", c.streams, e)
				}
			}
		}
		if strings.Join(tracks, ",") != strings.Join(c.tracks, ",") {
			t.Errorf("--streams %q: tracks %q, want %q", c.streams, tracks, c.tracks)
		}
		for tid := range c.tracks {
			if slices[fmt.Sprintf("kernel/%d", tid)] == 0 || slices[fmt.Sprintf("copy/%d", tid)] == 0 {
				t.Errorf("--streams %q: slices per track %v", c.streams, slices)
			}
		}
	}
}

// --streams is checked, and the CPU says why it runs one stream.
func TestRunStreamsFlag(t *testing.T) {
	isolatedCache(t)
	runFails(t, 2, []string{"--streams must be >= 0"}, "run", mlpGraph, "--device", "cpu", "--streams", "-1")
	out := runOK(t, "run", mlpGraph, "--device", "cpu", "--streams", "2", "--explain")
	if !strings.Contains(out, ": 1 (the cpu device runs each launch on the calling goroutine, one after another") {
		t.Errorf("--explain on the CPU:\n%s", out)
	}
}
