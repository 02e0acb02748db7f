package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// run --profile times every launch: one entry per launch in plan order, the kernels' times
// adding up to no more than the runs took, and a table in the text output.
func TestRunProfileTimesEveryKernel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kc")
	code, out, errOut := runCLI(t, "--cache-dir", dir, "run", mlpGraph, "--device", "cpu", "--json",
		"--inputs", mlpInputs, "--repeat", "3", "--profile")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var r struct {
		KernelMS []struct {
			Launch int     `json:"launch"`
			Kernel string  `json:"kernel"`
			MS     float64 `json:"ms"`
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
	for i, k := range r.KernelMS {
		if k.Launch != i || k.Kernel == "" || k.MS < 0 {
			t.Errorf("entry %d: %+v", i, k)
		}
	}
	for _, mode := range []string{"wide", "sequential"} {
		code, out, _ = runCLI(t, "--cache-dir", dir, "run", mlpGraph, "--device", "cpu", "--inputs", mlpInputs, "--profile", "--mode", mode)
		if code != 0 || !strings.Contains(out, "kernel times (mean per run") || !strings.Contains(out, r.KernelMS[0].Kernel) ||
			strings.Contains(out, "(mean per run, 0.000 ms in all)") {
			t.Fatalf("--mode %s: exit %d, no kernel times in:\n%s", mode, code, out)
		}
	}
}
