package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/config"
	"github.com/widejit/widejit/internal/outputs"
)

// run executes widejit with an empty config home and returns exit code, stdout, stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	if os.Getenv("XDG_CONFIG_HOME") == "" || !strings.HasPrefix(os.Getenv("XDG_CONFIG_HOME"), os.TempDir()) {
		t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	}
	var out, errb bytes.Buffer
	code := execute(args, &out, &errb)
	return code, out.String(), errb.String()
}

const cliGraph = `{
  "format": "widejit.graph/v1",
  "n": 2,
  "inputs": [{"name": "x", "shape": [3, 4], "dtype": "float32"}],
  "params": [{"name": "fc.weight", "shape": [5, 4], "dtype": "float32"}, {"name": "fc.bias", "shape": [5], "dtype": "float32"}],
  "nodes": [
    {"name": "fc", "op": "linear", "inputs": ["x"], "params": {"weight": "fc.weight", "bias": "fc.bias"}, "attrs": {"in_features": 4, "out_features": 5}},
    {"name": "act", "op": "relu", "inputs": ["fc"]}
  ],
  "outputs": ["act"],
  "init": {"seed": 0}
}`

func writeGraph(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "graph.json")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInfo(t *testing.T) {
	code, out, _ := runCLI(t, "info")
	for _, want := range []string{"widejit " + buildVersion(), "go: go", "\n  cpu: available: ", "host threads", "\n  cuda: "} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
	if _, out, _ := runCLI(t, "info", "--backend-opt", "x=1"); !strings.Contains(out, "cpu: not available: backend cpu takes no options; got x") {
		t.Fatalf("info with a backend option the cpu backend does not take:\n%s", out)
	}
	if code, _, errOut := runCLI(t, "info", "--backend-opt", "novalue"); code != exitUsage || !strings.Contains(errOut, `--backend-opt "novalue": expected NAME=VALUE`) {
		t.Fatalf("a malformed --backend-opt: exit %d, %s", code, errOut)
	}
}

func TestGraphCheck(t *testing.T) {
	p := writeGraph(t, cliGraph)
	code, out, errOut := runCLI(t, "graph", "check", p)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"ok: n=2, 1 inputs, 2 params, 2 nodes, 1 outputs, init seed 0", "fc    linear  x       float32[3,5]", "act   relu    fc      float32[3,5]"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "graph", "check", "--json", p)
	var doc struct {
		N     int `json:"n"`
		Nodes []struct {
			Name    string `json:"name"`
			Outputs []struct {
				Shape []int `json:"shape"`
			} `json:"outputs"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || doc.N != 2 || doc.Nodes[1].Outputs[0].Shape[1] != 5 {
		t.Fatalf("json: %v %+v\n%s", err, doc, out)
	}
	code, out, _ = runCLI(t, "graph", "check", "--n", "6", p)
	if code != 0 || !strings.Contains(out, "n=6") {
		t.Fatalf("--n: exit %d\n%s", code, out)
	}
}

func TestGraphCheckErrors(t *testing.T) {
	bad := writeGraph(t, strings.Replace(cliGraph, `"inputs": ["fc"]`, `"inputs": ["fcc"]`, 1))
	code, out, errOut := runCLI(t, "graph", "check", bad)
	want := bad + `:8:46: nodes[1].inputs[0] (node "act"): unknown input "fcc"; did you mean "fc"?`
	if code != exitInput || out != "" || !strings.Contains(errOut, want) || strings.Contains(errOut, "Usage") || strings.Contains(errOut, "--help") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q\nwant %q", code, out, errOut, want)
	}
	code, _, errOut = runCLI(t, "graph", "check", filepath.Join(t.TempDir(), "missing.json"))
	if code != exitInput || !strings.Contains(errOut, "missing.json") {
		t.Fatalf("missing file: exit %d %s", code, errOut)
	}
	if code, _, errOut = runCLI(t, "graph", "check"); code != 2 || !strings.Contains(errOut, "accepts 1 arg") {
		t.Fatalf("no argument: exit %d %s", code, errOut)
	}
	if code, _, _ = runCLI(t, "graph"); code != 2 {
		t.Fatalf("no subcommand: exit %d", code)
	}
}

// The command tree is built explicitly: every command, subcommand and the flags other
// files used to add to them are there.
func TestCommandTree(t *testing.T) {
	root := newRootCmd(&app{v: viper.New(), stdout: io.Discard, stderr: io.Discard})
	want := map[string][]string{
		"cache":          nil,
		"cache populate": {"n", "arch", "all-strategies", "cubin", "json", "shards", "plugin"},
		"cache stats":    {"json"},
		"config":         {"json"},
		"graph check":    {"json", "n"},
		"graph explain":  {"n", "mode", "no-fusion", "strategy", "dropout", "seed", "plan", "device", "plugin"},
		"info":           nil,
		"kernel run":     {"fn", "grid", "const", "arg", "inputs", "out", "num-warps", "device"},
		"kernel ir":      {"fn", "sig", "const"},
		"kernel dump":    {"dir", "arch", "n", "mode", "no-fusion", "strategy", "dropout", "seed", "device"},
		"merge":          {"out"},
		"plugin check":   {"plugin-deadline", "plugin-memory-mib", "reps"},
		"run": {"inputs", "out", "check", "rtol", "atol", "device", "mode", "json", "seed", "n", "batch",
			"launch-timeout", "memory-limit-mib", "repeat", "compare", "dropout", "explain", "profile", "shard", "trace", "cpuprofile", "plugin"},
		"tune":    {"n", "device", "budget", "export", "reps", "warmup", "seed", "json", "plugin"},
		"version": nil,
	}
	for path, flags := range want {
		cmd, rest, err := root.Find(strings.Fields(path))
		if err != nil || len(rest) > 0 || cmd.CommandPath() != "widejit "+path {
			t.Errorf("%s: found %q (rest %v, %v)", path, cmd.CommandPath(), rest, err)
			continue
		}
		for _, f := range flags {
			if cmd.Flags().Lookup(f) == nil {
				t.Errorf("%s: no --%s", path, f)
			}
		}
	}
	if len(root.Commands()) != 10 {
		t.Errorf("%d top-level commands, want 10", len(root.Commands()))
	}
}

func TestExamplesPassGraphCheck(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*", "graph.json"))
	if len(paths) == 0 {
		t.Skip("no examples/ yet")
	}
	for _, p := range paths {
		if code, _, errOut := runCLI(t, "graph", "check", p); code != 0 {
			t.Errorf("%s: exit %d: %s", p, code, errOut)
		}
	}
}

func TestConfigSources(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	os.MkdirAll(filepath.Join(home, "widejit"), 0o755)
	cfg := filepath.Join(home, "widejit", "config.yaml")
	os.WriteFile(cfg, []byte("threads: 3\ndevice: cpu\nplugins: [a.wasm, b.wasm]\n"), 0o644)
	t.Setenv("WIDEJIT_DEVICE", "cuda")
	t.Setenv("WIDEJIT_CACHE_DIR", "/tmp/envcache")
	code, out, errOut := runCLI(t, "config", "--no-cache")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"config file: " + cfg + " (read)",
		"threads            3              file " + cfg,
		"device             cuda           env WIDEJIT_DEVICE",
		"cache_dir          /tmp/envcache  env WIDEJIT_CACHE_DIR",
		"no_cache           true           flag --no-cache",
		"plugins            [a.wasm,b.wasm]  file " + cfg,
		"plugin_deadline    50ms           default",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("config output lacks %q:\n%s", want, out)
		}
	}
	// flags beat the environment
	code, out, _ = runCLI(t, "config", "--json", "--cache-dir", "/tmp/flagcache")
	var doc struct {
		Keys []config.Entry `json:"keys"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatalf("json: %v\n%s", err, out)
	}
	for _, e := range doc.Keys {
		if e.Key == "cache_dir" && (e.Value != "/tmp/flagcache" || e.Source != "flag --cache-dir") {
			t.Errorf("cache_dir: %+v", e)
		}
	}
	// --config names another file; a missing explicit file is an error
	other := filepath.Join(t.TempDir(), "other.yaml")
	os.WriteFile(other, []byte("threads: 9\n"), 0o644)
	if code, out, _ := runCLI(t, "config", "--config", other); code != 0 || !strings.Contains(out, "file "+other) || !strings.Contains(out, "9") {
		t.Errorf("--config: exit %d\n%s", code, out)
	}
	if code, _, errOut := runCLI(t, "config", "--config", other+".missing"); code != exitUsage || !strings.Contains(errOut, "other.yaml.missing") {
		t.Errorf("missing --config: exit %d %s", code, errOut)
	}
}

func TestConfigProblems(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	os.MkdirAll(filepath.Join(home, "widejit"), 0o755)
	os.WriteFile(filepath.Join(home, "widejit", "config.yaml"), []byte("device: gpu\nthreds: 2\n"), 0o644)
	code, _, errOut := runCLI(t, "config")
	if code != exitUsage || !strings.Contains(errOut, `device: "gpu" is not auto, a backend's name`) || !strings.Contains(errOut, "no such backend (expected auto, cpu, cuda)") || !strings.Contains(errOut, "threds: unknown key") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestRunUsageAndInputErrors(t *testing.T) {
	p := writeGraph(t, cliGraph)
	for _, args := range [][]string{{"run", p, "--mode", "fast"}, {"run", p, "--device", "tpu"}, {"run", p, "--rtol", "-1"}, {"run"}} {
		if code, _, errOut := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d (want 2): %s", args, code, errOut)
		}
	}
	bad := filepath.Join(t.TempDir(), "in.safetensors")
	safetensors.Write(bad, []*safetensors.Tensor{safetensors.FromFloat32s("x", []int{3, 4}, make([]float32, 12))}, nil)
	code, _, errOut := runCLI(t, "run", p, "--inputs", bad)
	if code != exitInput || !strings.Contains(errOut, `input "x" has shape [3 4], expected [2 3 4]`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	exp := filepath.Join(t.TempDir(), "exp.safetensors")
	safetensors.Write(exp, []*safetensors.Tensor{safetensors.FromFloat32s("fc", []int{2, 3, 5}, make([]float32, 30))}, nil)
	code, _, errOut = runCLI(t, "run", p, "--check", exp)
	if code != exitInput || !strings.Contains(errOut, `output "act" is missing`) || !strings.Contains(errOut, `tensor "fc" is not a graph output`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// referenceOutputs computes cliGraph's relu(x W^T + b) with plain loops from the graph's own
// weights and the inputs of --seed 0, then adds delta to every output.
func referenceOutputs(t *testing.T, p string, delta float32) []*safetensors.Tensor {
	t.Helper()
	g, err := graph.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	in, err := g.GenerateInputs(0)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := in["x"].Float32s()
	w, _ := g.ParamFloat32s("fc.weight")
	b, _ := g.ParamFloat32s("fc.bias")
	out := make([]float32, g.N*3*5)
	for m := 0; m < g.N; m++ {
		for r := 0; r < 3; r++ {
			for o := 0; o < 5; o++ {
				s := float64(b[m*5+o])
				for i := 0; i < 4; i++ {
					s += float64(x[m*12+r*4+i]) * float64(w[m*20+o*4+i])
				}
				out[m*15+r*5+o] = float32(math.Max(s, 0)) + delta
			}
		}
	}
	return []*safetensors.Tensor{safetensors.FromFloat32s("act", []int{g.N, 3, 5}, out)}
}

func TestRunWithExecutorAndCheck(t *testing.T) {
	p := writeGraph(t, cliGraph)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.safetensors")
	if code, stdout, errOut := runCLI(t, "run", p, "--device", "cpu", "--no-cache", "--out", out); code != 0 || !strings.Contains(stdout, "act") {
		t.Fatalf("exit %d: %s %s", code, stdout, errOut)
	}
	ref := filepath.Join(dir, "ref.safetensors")
	// within tolerance of an independent computation off by 1e-6
	if err := safetensors.Write(ref, referenceOutputs(t, p, 1e-6), nil); err != nil {
		t.Fatal(err)
	}
	code, stdout, errOut := runCLI(t, "run", p, "--device", "cpu", "--no-cache", "--check", ref, "--json")
	var doc struct {
		Outputs []struct {
			Name  string `json:"name"`
			Shape []int  `json:"shape"`
		} `json:"outputs"`
		Check struct {
			OK      bool           `json:"ok"`
			Outputs []outputs.Diff `json:"outputs"`
		} `json:"check"`
		Cache map[string]float64 `json:"cache"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || code != 0 || !doc.Check.OK || doc.Cache["misses"] < 1 || doc.Outputs[0].Shape[0] != 2 {
		t.Fatalf("exit %d %v: %s %s", code, err, stdout, errOut)
	}
	if d := doc.Check.Outputs[0].MaxAbs; math.Abs(d-1e-6) > 2e-7 {
		t.Errorf("max abs %v, want 1e-6", d)
	}
	// beyond tolerance: exit 1, the error printed
	if err := safetensors.Write(ref, referenceOutputs(t, p, 0.01), nil); err != nil {
		t.Fatal(err)
	}
	code, stdout, errOut = runCLI(t, "run", p, "--device", "cpu", "--no-cache", "--check", ref)
	if code != exitCheck || !strings.Contains(stdout, "FAIL") || !strings.Contains(errOut, "check failed: act differ") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, errOut)
	}
	// a looser tolerance accepts it
	if code, _, errOut := runCLI(t, "run", p, "--device", "cpu", "--no-cache", "--check", ref, "--atol", "0.02"); code != 0 {
		t.Fatalf("--atol 0.02: exit %d %s", code, errOut)
	}
}

// A backquoted word in a flag's usage becomes its value's name in --help (pflag), so only a
// placeholder may be backquoted: `run --help` once showed "--shard widejit merge".
func TestFlagValueNames(t *testing.T) {
	a := &app{v: viper.New(), stdout: io.Discard, stderr: io.Discard}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(f); strings.Contains(name, " ") || (strings.Contains(f.Usage, "`") && strings.ToUpper(name) != name) {
				t.Errorf("%s --%s shows its value as %q: backquote only a placeholder such as `I/K`", c.CommandPath(), f.Name, name)
			}
		}
		c.LocalFlags().VisitAll(check)
		c.PersistentFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(a))
	if _, out, _ := runCLI(t, "run", "--help"); !strings.Contains(out, "--shard I/K") {
		t.Errorf("run --help:\n%s", out)
	}
}
