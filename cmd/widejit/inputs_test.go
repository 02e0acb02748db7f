package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph/safetensors"
)

// TestGraphNamingFilesOutsideItsDirectory: a graph whose weights are /etc/passwd-like files
// outside its directory is refused (exit 3) at its "weights" key, naming the flag that
// allows it; with --allow-outside-paths (or the config key) the file is read and called
// "not a safetensors file", never printed. The files stay byte for byte as they were.
func TestGraphNamingFilesOutsideItsDirectory(t *testing.T) {
	isolatedCache(t)
	root := t.TempDir()
	secret := filepath.Join(root, "passwd")
	content := []byte("root:x:0:0:root:/root:/bin/bash\n")
	if err := os.WriteFile(secret, content, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "model")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(cliGraph, `"init": {"seed": 0}`, `"weights": "../passwd"`, 1)
	g := filepath.Join(dir, "graph.json")
	if err := os.WriteFile(g, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "run", g, "--device", "cpu", "--no-cache")
	if code != exitInput || !strings.Contains(errOut, `weights "../passwd" leaves the graph's directory`) ||
		!strings.Contains(errOut, "--allow-outside-paths") || !strings.Contains(errOut, "graph.json:") {
		t.Errorf("refused path: exit %d, %s", code, errOut)
	}
	t.Setenv("WIDEJIT_ALLOW_OUTSIDE_PATHS", "true")
	for _, args := range [][]string{{"run", g, "--device", "cpu", "--no-cache"}, {"graph", "check", g, "--allow-outside-paths"}} {
		code, _, errOut = runCLI(t, args...)
		if code != exitInput || !strings.Contains(errOut, "not a safetensors file") ||
			strings.Contains(errOut, "3475222254926655346") || strings.Contains(errOut, "root:") {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
	if data, err := os.ReadFile(secret); err != nil || !bytes.Equal(data, content) {
		t.Errorf("the outside file changed: %q, %v", data, err)
	}
}

// TestErrorsArePrintable: a path holding terminal escapes, a NUL-free control character
// and a bidirectional override reaches stderr escaped, and errors carry one "widejit: "
// prefix.
func TestErrorsArePrintable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a\x1b[2J\x1b]0;pwned\x07\r\u202ecod.json")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	g := filepath.Join(dir, "graph.json")
	if err := os.WriteFile(g, []byte(`{"format": "widejit.graph/v1", "n": 2, "weights": "w\u001b[31m.safetensors"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"graph", "check", g}, {"run", g, "--device", "cpu", "--no-cache"}, {"run", filepath.Join(dir, "none.json")}} {
		code, _, errOut := runCLI(t, append(args, "--no-cache")...)
		if code == 0 || strings.ContainsAny(errOut, "\x1b\x07\r\u202e") || !strings.Contains(errOut, `a\x1b[2J\x1b]0;pwned\a\r\u202ecod.json`) {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	code, _, errOut := runCLI(t, "run", writeGraph(t, cliGraph), "--device", "cpu:0,cpu:1,cpu:2", "--no-cache")
	if code == 0 || strings.Count(errOut, "widejit:") != 1 || !strings.Contains(errOut, "3 devices for 2 models") {
		t.Errorf("prefix: exit %d, stderr %q", code, errOut)
	}
}

// TestMemoryLimitCoversInputs: --memory-limit-mib refuses generated inputs (they used to be
// allocated, 6 GB, and the plan refused after, exit 1) and inputs read from a file before
// they are read, exit 3 like the input check, with each input's elements and bytes each.
func TestMemoryLimitCoversInputs(t *testing.T) {
	isolatedCache(t)
	g := writeGraph(t, cliGraph)
	// generated: 2 models x 10^7 x 4 float32s = 320 MB, plus an 8-byte scratch copy
	code, _, errOut := runCLI(t, "run", g, "--batch", "10000000", "--device", "cpu", "--no-cache", "--memory-limit-mib", "64")
	if code != exitInput || !strings.Contains(errOut, `generating the inputs ("x" [2 10000000 4]: 80000000 elements of float32, 4 bytes each)`) ||
		!strings.Contains(errOut, "(960000000 bytes)") || !strings.Contains(errOut, "limit of 64.0 MiB") {
		t.Errorf("generated inputs: exit %d, %s", code, errOut)
	}
	// read: 2 x 200000 x 4 float32s = 6.4 MB in the file, against a 4 MiB limit
	in := filepath.Join(t.TempDir(), "inputs.safetensors")
	x := safetensors.FromFloat32s("x", []int{2, 200000, 4}, make([]float32, 2*200000*4))
	var buf bytes.Buffer
	if err := safetensors.Encode(&buf, []*safetensors.Tensor{x}, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, "run", g, "--inputs", in, "--device", "cpu", "--no-cache", "--memory-limit-mib", "4")
	if code != exitInput || !strings.Contains(errOut, "reading the inputs from "+in) ||
		!strings.Contains(errOut, `"x" [2 200000 4]: 1600000 elements of float32, 4 bytes each) needs 6.1 MiB (6400000 bytes)`) {
		t.Errorf("read inputs: exit %d, %s", code, errOut)
	}
}
