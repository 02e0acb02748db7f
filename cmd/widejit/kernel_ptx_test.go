package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKernelDumpWritesPTXPerArch(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "kernel", "dump", "../../examples/mlp/graph.json", "--dir", dir, "--arch", "sm_80,sm_90,sm_90a")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "PTX files") {
		t.Errorf("output %q does not report the PTX files", out)
	}
	for _, arch := range []string{"sm_80", "sm_90", "sm_90a"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*."+arch+".ptx"))
		if len(files) == 0 {
			t.Fatalf("no %s PTX written", arch)
		}
		text, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(text), ".target "+arch) || !strings.Contains(string(text), ".visible .entry ") {
			t.Errorf("%s is not PTX for %s", files[0], arch)
		}
	}
	if code, _, errOut := runCLI(t, "kernel", "dump", "../../examples/mlp/graph.json", "--dir", dir, "--arch", "sm_70"); code != 2 || !strings.Contains(errOut, `--arch "sm_70"`) {
		t.Errorf("bad arch: exit %d, %q", code, errOut)
	}
}

func TestInfoShowsCUDAStatus(t *testing.T) {
	code, out, _ := runCLI(t, "info")
	if code != 0 || !strings.Contains(out, "cuda: ") || strings.Contains(out, "not built yet") {
		t.Fatalf("info: exit %d, %q", code, out)
	}
}
