package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// copyExample copies examples/mlp into a temp dir (the run may not touch the repository's
// files) and returns the paths of its graph, weights, inputs and expected outputs.
func copyExample(t *testing.T) (graph, weights, inputs, expected string) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"graph.json", "weights.safetensors", "inputs.safetensors", "expected.safetensors"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "examples", "mlp", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "graph.json"), filepath.Join(dir, "weights.safetensors"),
		filepath.Join(dir, "inputs.safetensors"), filepath.Join(dir, "expected.safetensors")
}

func snapshot(t *testing.T, paths ...string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m[p] = data
	}
	return m
}

// --out naming any input of the run (the graph, its weights, --inputs, --check, also
// through a symlink) is refused before the run with a usage error, and every file stays
// byte for byte as it was; a good --out is written whole, with the umask's permissions.
func TestRunOutNeverReplacesAnInput(t *testing.T) {
	g, w, in, exp := copyExample(t)
	before := snapshot(t, g, w, in, exp)
	link := filepath.Join(t.TempDir(), "link.safetensors")
	if err := os.Symlink(w, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{g, w, in, exp, link} {
		code, _, errOut := runCLI(t, "run", g, "--device", "cpu", "--no-cache", "--inputs", in, "--check", exp, "--out", out)
		if code != exitUsage || !strings.Contains(errOut, "is an input of this command") {
			t.Errorf("--out %s: exit %d, %s", out, code, errOut)
		}
	}
	for p, data := range snapshot(t, g, w, in, exp) {
		if !bytes.Equal(data, before[p]) {
			t.Errorf("%s changed", p)
		}
	}
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	out := filepath.Join(t.TempDir(), "out.safetensors")
	if code, _, errOut := runCLI(t, "run", g, "--device", "cpu", "--no-cache", "--inputs", in, "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("--out written with %v (%v), want -rw-r----- under umask 027", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*tmp-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	// and a directory is not replaced
	if code, _, errOut := runCLI(t, "run", g, "--device", "cpu", "--no-cache", "--inputs", in, "--out", t.TempDir()); code != exitUsage || !strings.Contains(errOut, "not a regular file") {
		t.Errorf("--out DIR: exit %d, %s", code, errOut)
	}
}

// Each class of failure has its own exit code: usage 2, a bad input file 3, a check
// mismatch 4 (the work failing is 1, tested where kernels fail).
func TestExitCodes(t *testing.T) {
	g, _, in, exp := copyExample(t)
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"format": "widejit.graph/v1", "n": 2,`), 0o644)
	wrong := filepath.Join(t.TempDir(), "wrong.safetensors")
	// expected outputs from another run (other inputs): a mismatch
	if code, _, errOut := runCLI(t, "run", g, "--device", "cpu", "--no-cache", "--seed", "7", "--out", wrong); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"run", g, "--mode", "fast"}, exitUsage, "--mode"},
		{[]string{"run", g, "--threads", "-3"}, exitUsage, "threads: -3 must be >= 0 (0: all cores) (from flag --threads)"},
		{[]string{"run", bad}, exitInput, "bad.json"},
		{[]string{"run", g, "--inputs", exp}, exitInput, "expected.safetensors"},
		{[]string{"run", g, "--device", "cpu", "--no-cache", "--inputs", in, "--check", wrong}, exitCheck, "check failed"},
		{[]string{"run", g, "--device", "cpu", "--no-cache", "--inputs", in, "--check", exp}, 0, ""},
	} {
		code, _, errOut := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d (want %d), stderr %q (want %q)", c.args, code, c.code, errOut, c.msg)
		}
	}
	if code, out, _ := runCLI(t, "--help"); code != 0 || !strings.Contains(out, "4 run --check found outputs beyond the tolerance") {
		t.Errorf("--help does not document the exit codes:\n%s", out)
	}
}

// Configuration values are checked for every command, naming where the bad value came from.
func TestConfigValuesValidatedWithTheirSource(t *testing.T) {
	g, _, _, _ := copyExample(t)
	t.Setenv("WIDEJIT_THREADS", "abc")
	code, _, errOut := runCLI(t, "run", g)
	if code != exitUsage || !strings.Contains(errOut, `threads: "abc" is not an integer (from env WIDEJIT_THREADS)`) {
		t.Errorf("WIDEJIT_THREADS=abc: exit %d, %s", code, errOut)
	}
	t.Setenv("WIDEJIT_THREADS", "")
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	os.MkdirAll(filepath.Join(home, "widejit"), 0o755)
	file := filepath.Join(home, "widejit", "config.yaml")
	os.WriteFile(file, []byte("plugin_memory_mib: 100000\n"), 0o644)
	code, _, errOut = runCLI(t, "graph", "check", g)
	if code != exitUsage || !strings.Contains(errOut, "plugin_memory_mib: 100000 is outside 1..4096 (from file "+file+")") {
		t.Errorf("plugin_memory_mib in the file: exit %d, %s", code, errOut)
	}
}

// The limits of the hardening reach the CLI: a memory limit refuses a run with the figures
// before allocating (exit 1), a bad launch_timeout is a configuration error naming its
// source, and populate refuses a read-only cache instead of storing nothing silently.
func TestLimitsFromTheConfiguration(t *testing.T) {
	g, _, in, _ := copyExample(t)
	t.Setenv("WIDEJIT_MEMORY_LIMIT_MIB", "-5")
	if code, _, errOut := runCLI(t, "run", g); code != exitUsage || !strings.Contains(errOut, "memory_limit_mib") || !strings.Contains(errOut, "env WIDEJIT_MEMORY_LIMIT_MIB") {
		t.Errorf("memory_limit_mib -5: exit %d, %s", code, errOut)
	}
	t.Setenv("WIDEJIT_MEMORY_LIMIT_MIB", "")
	code, _, errOut := runCLI(t, "run", writeGraph(t, cliGraph), "--n", "100000", "--device", "cpu", "--no-cache", "--config", writeConfig(t, "memory_limit_mib: 1\n"))
	if code == 0 || !strings.Contains(errOut, "limit") {
		t.Errorf("a 1 MiB memory limit: exit %d, %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "run", g, "--config", writeConfig(t, "launch_timeout: soon\n")); code != exitUsage || !strings.Contains(errOut, `launch_timeout: "soon"`) {
		t.Errorf("launch_timeout soon: exit %d, %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "run", g, "--device", "cpu", "--no-cache", "--inputs", in, "--config", writeConfig(t, "launch_timeout: 1m\n")); code != 0 {
		t.Errorf("launch_timeout 1m: exit %d, %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "run", g, "--device", "cpu", "--no-cache", "--inputs", in, "--launch-timeout", "1ns"); code != exitFailure ||
		!strings.Contains(errOut, "launch 0 (k0_") || !strings.Contains(errOut, "time limit") {
		t.Errorf("--launch-timeout 1ns: exit %d, %s", code, errOut)
	}
	dir := t.TempDir()
	if code, _, errOut := runCLI(t, "cache", "populate", g, "--cache-dir", dir, "--cache-read-only"); code != exitFailure || !strings.Contains(errOut, "read-only") {
		t.Errorf("populate into a read-only cache: exit %d, %s", code, errOut)
	}
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
