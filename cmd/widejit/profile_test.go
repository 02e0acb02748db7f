package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run --profile times every launch: one entry per launch, slowest first (the launches that
// prepare the weights once at load included, marked), the kernels' times adding up to no
// more than the runs took, and a table of the others in the text output.
func TestRunProfileTimesEveryKernel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kc")
	code, out, errOut := runCLI(t, "--cache-dir", dir, "run", mlpGraph, "--device", "cpu", "--json",
		"--inputs", mlpInputs, "--repeat", "3", "--profile")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var r struct {
		KernelMS []struct {
			Kernel  string  `json:"kernel"`
			MS      float64 `json:"ms"`
			Prepare bool    `json:"prepare"`
		} `json:"kernel_ms"`
		Timing struct {
			Median float64 `json:"median_ms"`
		} `json:"timing"`
		Plan struct {
			Launches int `json:"launches"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(r.KernelMS) != r.Plan.Launches || r.Plan.Launches == 0 {
		t.Fatalf("%d kernel times for %d launches", len(r.KernelMS), r.Plan.Launches)
	}
	run := "" // the slowest kernel that runs every time
	for i, k := range r.KernelMS {
		if k.Kernel == "" || k.MS < 0 || i > 0 && k.MS > r.KernelMS[i-1].MS {
			t.Errorf("entry %d: %+v (after %+v)", i, k, r.KernelMS[max(i-1, 0)])
		}
		if !k.Prepare && run == "" {
			run = k.Kernel
		}
	}
	if run == "" {
		t.Fatalf("no kernel runs every time: %+v", r.KernelMS)
	}
	for _, mode := range []string{"wide", "sequential"} {
		code, out, _ = runCLI(t, "--cache-dir", dir, "run", mlpGraph, "--device", "cpu", "--inputs", mlpInputs, "--profile", "--mode", mode)
		if code != 0 || !strings.Contains(out, "kernel times (mean per run") || !strings.Contains(out, run) ||
			strings.Contains(out, "(mean per run, 0.000 ms in all)") {
			t.Fatalf("--mode %s: exit %d, no kernel times in:\n%s", mode, code, out)
		}
	}
}

// run --cpuprofile writes a profile pprof reads (a gzipped protobuf naming the executor's
// functions), and refuses to overwrite a file that is there.
func TestRunCPUProfile(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	code, out, errOut := runCLI(t, "--cache-dir", filepath.Join(dir, "kc"), "run", mlpGraph, "--device", "cpu",
		"--inputs", mlpInputs, "--repeat", "20", "--cpuprofile", prof)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	data, err := os.ReadFile(prof)
	if err != nil || len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		t.Fatalf("profile %s: %d bytes, %v (want a gzipped profile)", prof, len(data), err)
	}
	code, _, errOut = runCLI(t, "--cache-dir", filepath.Join(dir, "kc"), "run", mlpGraph, "--device", "cpu",
		"--inputs", mlpInputs, "--cpuprofile", prof)
	again, _ := os.ReadFile(prof)
	if code == 0 || !strings.Contains(errOut, "--cpuprofile") || !strings.Contains(errOut, "exists") || !bytes.Equal(again, data) {
		t.Fatalf("second run over an existing profile: exit %d, stderr %q, file changed %v", code, errOut, !bytes.Equal(again, data))
	}
}
