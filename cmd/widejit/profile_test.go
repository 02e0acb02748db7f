package main

import (
	"encoding/json"
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
