package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/widejit/widejit/bench/internal/openblas"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/jit/cpu"
)

// TestSmoke runs the whole benchmark at tiny N, one repetition, without the peer, and checks
// that the three files are produced and well-formed.
func TestSmoke(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run([]string{"--n", "2,1", "--models", "mlp,convnet", "--reps", "1", "--peers=false",
		"--min-sample", "1ms", "--quiet", "--out", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, stderr.String())
	}

	var rep report
	js, err := os.ReadFile(filepath.Join(out, "zoo.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatalf("zoo.json: %v", err)
	}
	if len(rep.Cells) != 4 {
		t.Fatalf("zoo.json has %d cells, want 4 (2 models x 2 N)", len(rep.Cells))
	}
	wantOrder := []struct {
		model string
		n     int
	}{{"mlp", 1}, {"mlp", 2}, {"convnet", 1}, {"convnet", 2}}
	for i, cl := range rep.Cells {
		if cl.Model != wantOrder[i].model || cl.N != wantOrder[i].n {
			t.Errorf("cell %d is %s N=%d, want %s N=%d", i, cl.Model, cl.N, wantOrder[i].model, wantOrder[i].n)
		}
		if cl.Wide == nil || cl.Seq == nil {
			t.Fatalf("cell %s N=%d: widejit timings missing", cl.Model, cl.N)
		}
		for _, tm := range []*timing{cl.Wide, cl.Seq} {
			if !(tm.MedianMS > 0) || len(tm.SamplesMS) != 1 || cl.Reps != 1 {
				t.Errorf("cell %s N=%d: timing %+v, reps %d: want one positive sample", cl.Model, cl.N, tm, cl.Reps)
			}
		}
		if cl.SpeedupVsSeq == nil || math.Abs(*cl.SpeedupVsSeq-cl.Seq.MedianMS/cl.Wide.MedianMS) > 1e-9 {
			t.Errorf("cell %s N=%d: speedup vs seq %v, want seq/wide", cl.Model, cl.N, cl.SpeedupVsSeq)
		}
		if cl.TorchLoop != nil || cl.Check != nil || cl.SpeedupVsTorchLoop != nil {
			t.Errorf("cell %s N=%d: torch figures without the peer", cl.Model, cl.N)
		}
		if cl.WideVsSeqRel == nil {
			t.Errorf("cell %s N=%d: wide vs sequential not compared", cl.Model, cl.N)
		}
	}

	md, err := os.ReadFile(filepath.Join(out, "zoo.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := tableLines(string(md))
	if len(lines) != 2*(2+4) {
		t.Fatalf("zoo.md has %d table lines, want two tables of header, rule and 4 rows:\n%s", len(lines), md)
	}
	lines = lines[:6]
	if len(lines) != 2+4 {
		t.Fatalf("zoo.md table has %d lines, want header, rule and 4 rows:\n%s", len(lines), md)
	}
	cols := strings.Count(lines[0], "|")
	for _, l := range lines {
		if strings.Count(l, "|") != cols {
			t.Errorf("zoo.md row %q has %d bars, header has %d", l, strings.Count(l, "|"), cols)
		}
	}
	if !strings.Contains(lines[2], "| mlp | 1 |") || !strings.Contains(lines[2], "n/a (--peers=false)") {
		t.Errorf("first row %q: want mlp N=1 with n/a peer columns", lines[2])
	}
	if !strings.Contains(stdout.String(), lines[0]) {
		t.Errorf("stdout does not print the table")
	}

	f, err := os.Open(filepath.Join(out, "zoo.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("zoo.png: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 2*panelW || b.Dy() != chartTop+panelH {
		t.Errorf("zoo.png is %v, want %dx%d (two panels side by side)", b, 2*panelW, chartTop+panelH)
	}
}

func tableLines(md string) []string {
	var out []string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| ") || strings.HasPrefix(l, "|---") {
			out = append(out, l)
		}
	}
	return out
}

// TestPeer runs the PyTorch peer on mlp and resblock at N=2: its batched strategies must match
// its loop, and widejit's outputs are compared with the loop's on the same weights.
func TestPeer(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import torch, numpy").Run(); err != nil {
		t.Skip("PyTorch is missing (/usr/bin/python3 -c 'import torch'): install it with bash .ci/setup")
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run([]string{"--n", "2", "--models", "mlp,resblock", "--reps", "2", "--min-sample", "1ms", "--quiet", "--out", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, stderr.String())
	}
	var rep report
	js, _ := os.ReadFile(filepath.Join(out, "zoo.json"))
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	wantVariants := map[string][]string{"mlp": {"bmm", "baddbmm", "einsum", "vmap"}, "resblock": {"grouped", "grouped_concat_first", "vmap"}}
	for _, cl := range rep.Cells {
		if cl.Check == nil || cl.TorchLoop == nil {
			t.Fatalf("%s: no torch figures; notes %v", cl.Model, cl.Notes)
		}
		if len(cl.Check.Rejected) > 0 {
			t.Errorf("%s: batched strategies rejected: %v", cl.Model, cl.Check.Rejected)
		}
		for _, v := range wantVariants[cl.Model] {
			rel, checked := cl.Check.BatchedMaxRel[v]
			// timed at one thread count at least: one far slower than another is not timed
			// (measure.go's slowerThreads), which a loaded machine can make either of them
			timed := false
			for key, tm := range cl.TorchBatched {
				timed = timed || strings.HasPrefix(key, v+"@") && tm != nil
			}
			if !timed || !checked || rel > 1e-4 {
				t.Errorf("%s: variant %s timed %v (%v), checked %v, max rel %v", cl.Model, v, timed, cl.TorchBatched, checked, rel)
			}
		}
		if loop := cl.TorchLoops["loop@1t"]; loop == nil || cl.TorchLoop.MedianMS > loop.MedianMS {
			t.Errorf("%s: torch loop %v is not the faster of %v", cl.Model, cl.TorchLoop, cl.TorchLoops)
		}
		if cl.Check.WidejitMaxRel == nil {
			t.Errorf("%s: widejit's output was not compared with torch's: %s", cl.Model, cl.Check.WidejitError)
		}
		if cl.SpeedupVsTorchBest == nil || math.Abs(*cl.SpeedupVsTorchBest-*cl.TorchBestMS/cl.Wide.MedianMS) > 1e-9 {
			t.Errorf("%s: speedup vs torch best %v", cl.Model, cl.SpeedupVsTorchBest)
		}
	}
}

// TestPeerMissingParams feeds the peer a params file for the wrong model and expects a
// clear error instead of timings.
func TestPeerMissingParams(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import torch, numpy").Run(); err != nil {
		t.Skip("PyTorch is missing: install it with bash .ci/setup")
	}
	pr, _, err := startPeer("/usr/bin/python3", "peers/torch_zoo.py", 1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	// The peer's OpenBLAS uses this CPU's vector units, however it detected the CPU.
	if core := pr.openBLASCore(); openblas.Rank(core) < openblas.Rank(openblas.ThisCPU()) && core != "" {
		t.Errorf("the peer's OpenBLAS runs core type %s on a CPU that allows %s", core, openblas.ThisCPU())
	}
	dir := t.TempDir()
	// inputs and params of mlp, set up as deep_mlp: the peer must name the missing param.
	g, err := loadZooModel("mlp", 1)
	if err != nil {
		t.Fatal(err)
	}
	inputs, _ := g.GenerateInputs(0)
	cl := &cell{Model: "deep_mlp", N: 1}
	_, err = setupPeerCell(&config{threads: 1}, pr, cl, dir, g, inputs, nil)
	if err == nil || !strings.Contains(err.Error(), "layers.0.weight") {
		t.Fatalf("setup with the wrong params: err %v, want one naming layers.0.weight", err)
	}
}

func TestMedianAndRound(t *testing.T) {
	if m := median([]float64{5, 1, 3}); m != 3 {
		t.Errorf("median odd = %v, want 3", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median even = %v, want 2.5", m)
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing should be NaN")
	}
	if r := round3(0.0123456); r != 0.0123 {
		t.Errorf("round3(0.0123456) = %v, want 0.0123", r)
	}
	if r := round3(1234.56789); r != 1234.568 {
		t.Errorf("round3(1234.56789) = %v, want 1234.568", r)
	}
	if s := fmtMS(0.01234); s != "0.012" {
		t.Errorf("fmtMS = %q", s)
	}
	if s := fmtMS(123.4); s != "123" {
		t.Errorf("fmtMS = %q", s)
	}
}

func TestParseArgsErrors(t *testing.T) {
	for _, args := range [][]string{{"--n", "0"}, {"--n", "a"}, {"--models", "gpt"}, {"--reps", "0"}, {"extra"}, {"--budget", "-1s"}} {
		_, err := parseArgs(args, &bytes.Buffer{})
		if _, ok := err.(usageError); !ok {
			t.Errorf("parseArgs(%q) = %v, want a usage error", args, err)
		}
	}
	c, err := parseArgs([]string{"--n", "8, 1", "--models", "deep_mlp"}, &bytes.Buffer{})
	if err != nil || len(c.ns) != 2 || c.ns[0] != 8 || c.ns[1] != 1 || c.models[0] != "deep_mlp" || c.threads < 1 || c.cellBudget != 40*time.Second {
		t.Errorf("parseArgs: %+v, %v", c, err)
	}
	if ns := c.nsFor("linear256"); !slices.Equal(ns, []int{1, 8}) {
		t.Errorf("--n 8,1: linear256 sweeps %v, want [1 8]", ns)
	}
	c, err = parseArgs(nil, &bytes.Buffer{})
	if err != nil || c.ns != nil || len(c.models) != len(zooModels) {
		t.Fatalf("parseArgs(nil): %+v, %v: want every model and no --n", c, err)
	}
	if ns := c.nsFor("linear256"); !slices.Equal(ns, zooDefaultNs["linear256"]) {
		t.Errorf("default sweep of linear256 %v, want %v", ns, zooDefaultNs["linear256"])
	}
}

func TestPeerEnv(t *testing.T) {
	env := peerEnv([]string{"PATH=/bin", "OPENBLAS_CORETYPE=Haswell", "OMP_NUM_THREADS=9"}, 2, "")
	got := strings.Join(env, " ")
	if strings.Contains(got, "CORETYPE") || strings.Contains(got, "=9") || !strings.Contains(got, "PATH=/bin") || !strings.Contains(got, "OPENBLAS_NUM_THREADS=2") {
		t.Errorf("peerEnv = %v", env)
	}
	env = peerEnv([]string{"OPENBLAS_CORETYPE=Haswell"}, 2, "SkylakeX")
	if got := strings.Join(env, " "); strings.Count(got, "CORETYPE") != 1 || !strings.Contains(got, "OPENBLAS_CORETYPE=SkylakeX") {
		t.Errorf("peerEnv with a core type = %v", env)
	}
}

// The peer runs under tcmalloc when it is installed (preloaded, the caller's LD_PRELOAD kept
// after it), else under glibc's malloc with its thresholds raised; and the peer itself reports
// the allocator it really has.
func TestPeerAllocator(t *testing.T) {
	env := withAllocator([]string{"PATH=/bin"}, "/lib/libtcmalloc_minimal.so.4")
	if got := strings.Join(env, " "); got != "PATH=/bin LD_PRELOAD=/lib/libtcmalloc_minimal.so.4" {
		t.Errorf("withAllocator with tcmalloc = %q", got)
	}
	env = withAllocator([]string{"LD_PRELOAD=/x.so"}, "/lib/libtcmalloc_minimal.so.4")
	if got := strings.Join(env, " "); got != "LD_PRELOAD=/lib/libtcmalloc_minimal.so.4:/x.so" {
		t.Errorf("withAllocator with a caller's LD_PRELOAD = %q", got)
	}
	env = withAllocator([]string{"PATH=/bin"}, "")
	if got := strings.Join(env, " "); !strings.Contains(got, "MALLOC_MMAP_THRESHOLD_=") || !strings.Contains(got, "MALLOC_TRIM_THRESHOLD_=") {
		t.Errorf("withAllocator without tcmalloc = %q", got)
	}
	p, _, err := startPeer("/usr/bin/python3", "bench/peers/torch_zoo.py", 1, false)
	if err != nil {
		t.Skipf("no PyTorch peer (install python3-torch: bash .ci/setup): %v", err)
	}
	defer p.Close()
	got, _ := p.Hello["allocator"].(string)
	want := "glibc malloc (MALLOC_MMAP_THRESHOLD_="
	if lib := findTCMalloc(); lib != "" {
		want = "tcmalloc ("
	}
	if !strings.HasPrefix(got, want) {
		t.Errorf("the peer reports allocator %q, want %q...", got, want)
	}
}

func TestDrawText(t *testing.T) {
	for r, g := range glyphs {
		for _, row := range g {
			if len(row) != glyphW || strings.Trim(row, "01") != "" {
				t.Errorf("glyph %q row %q is not %d bits", r, row, glyphW)
			}
		}
	}
	if w := textWidth("n=8", 2); w != (3*6-1)*2 {
		t.Errorf("textWidth = %d", w)
	}
	// "1" is 00100 on its first row and 01110 on its last: check those pixels.
	img := image.NewRGBA(image.Rect(0, 0, 10, 10))
	drawText(img, 1, 1, "1", 1, chartInk)
	for x, want := range []bool{false, false, false, true, false, false} {
		if got := img.RGBAAt(x, 1) == chartInk; got != want {
			t.Errorf("pixel (%d,1) inked %v, want %v", x, got, want)
		}
	}
	for x, want := range []bool{false, false, true, true, true, false} {
		if got := img.RGBAAt(x, 7) == chartInk; got != want {
			t.Errorf("pixel (%d,7) inked %v, want %v", x, got, want)
		}
	}
}

// TestBudgetSkips: with no budget left, the contenders of the second N are predicted (from the
// first) to overrun it and are skipped with a note; the report still has every row.
func TestBudgetSkips(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run([]string{"--n", "1,2", "--models", "mlp", "--reps", "1", "--peers=false", "--min-sample", "1ms",
		"--budget", "1ns", "--quiet", "--out", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var rep report
	js, _ := os.ReadFile(filepath.Join(out, "zoo.json"))
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Cells) != 2 || rep.Cells[0].Wide == nil {
		t.Fatalf("cells %+v: want N=1 measured", rep.Cells)
	}
	second := rep.Cells[1]
	if second.Wide != nil || second.Seq != nil || second.SpeedupVsSeq != nil || len(second.Notes) != 2 ||
		!strings.Contains(second.Notes[0], "widejit wide skipped") {
		t.Errorf("N=2 cell: wide %v seq %v notes %q: want both skipped with notes", second.Wide, second.Seq, second.Notes)
	}
	if !strings.Contains(stdout.String(), "| mlp | 2 | skipped | skipped |") {
		t.Errorf("table does not show the skipped cell:\n%s", stdout.String())
	}
}

// TestPeerFlagsWrongOutput hands the peer a widejit output with one value changed: its check
// must see the difference (and the report must call it WRONG).
func TestPeerFlagsWrongOutput(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import torch, numpy").Run(); err != nil {
		t.Skip("PyTorch is missing: install it with bash .ci/setup")
	}
	pr, _, err := startPeer("/usr/bin/python3", "peers/torch_zoo.py", 1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	g, err := loadZooModel("mlp", 2)
	if err != nil {
		t.Fatal(err)
	}
	inputs, _ := g.GenerateInputs(0)
	dev := cpu.NewDevice(1)
	defer dev.Close()
	p, err := newWidejitPlan(g, dev, "wide", inputs)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	outs, err := p.runner.Run(inputs)
	if err != nil {
		t.Fatal(err)
	}
	for _, wrong := range []bool{false, true} {
		if wrong {
			vals, _ := outs["fc2"].Float32s()
			vals[len(vals)-1] += 0.5
			outs["fc2"] = safetensors.FromFloat32s("fc2", outs["fc2"].Shape, vals)
		}
		cl := &cell{Model: "mlp", N: 2, TorchBatched: map[string]*timing{}, TorchLoops: map[string]*timing{}}
		if _, err := setupPeerCell(&config{threads: 1}, pr, cl, t.TempDir(), g, inputs, outs); err != nil {
			t.Fatal(err)
		}
		if cl.Check.WidejitMaxRel == nil {
			t.Fatalf("no widejit check: %+v", cl.Check)
		}
		rel := *cl.Check.WidejitMaxRel
		if wrong != (rel > 1e-4) || wrong != strings.HasPrefix(checkText(cl), "WRONG") {
			t.Errorf("perturbed %v: max rel %g, check %q", wrong, rel, checkText(cl))
		}
	}
}

// TestNoTorch: a Python that cannot run the peer leaves the peer columns n/a, with the way to
// install torch, and the run still succeeds.
func TestNoTorch(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	for _, python := range []string{filepath.Join(out, "no-such-python"), "/bin/false"} {
		err := run([]string{"--n", "1", "--models", "mlp", "--reps", "1", "--min-sample", "1ms", "--python", python,
			"--quiet", "--out", out}, &stdout, &stderr)
		if err != nil {
			t.Fatalf("python %s: run: %v", python, err)
		}
		md, _ := os.ReadFile(filepath.Join(out, "zoo.md"))
		row := tableLines(string(md))[2]
		if strings.Count(row, noTorch) != 2 {
			t.Errorf("python %s: row %q: want the two torch columns to say %q", python, row, noTorch)
		}
	}
}

// TestZooGraphs: every case of the zoo has a graph in zoo/ (and every graph there is a case)
// that parses at another N, with the one per-model-or-shared input x and the one output the
// peer expects, params that can be generated, and a default N sweep from 1 that holds the N
// of issue #11 for its cases.
func TestZooGraphs(t *testing.T) {
	entries, err := zooFiles.ReadDir("zoo")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, strings.TrimSuffix(e.Name(), ".json"))
	}
	slices.Sort(files)
	if cases := slices.Sorted(slices.Values(zooModels)); !slices.Equal(files, cases) {
		t.Errorf("zoo/ holds %v, zooModels is %v", files, cases)
	}
	for _, model := range zooModels {
		ns := zooDefaultNs[model]
		if len(ns) == 0 || ns[0] != 1 || !slices.IsSorted(ns) {
			t.Errorf("%s: default Ns %v: want an increasing sweep from 1", model, ns)
		}
		g, err := loadZooModel(model, 3)
		if err != nil {
			t.Errorf("%s: %v", model, err)
			continue
		}
		if g.N != 3 || g.Init == nil {
			t.Errorf("%s: N %d, init %v: want N=3 and an init graph", model, g.N, g.Init)
		}
		if len(g.Inputs) != 1 || g.Inputs[0].Name != "x" || len(g.Outputs) != 1 {
			t.Errorf("%s: inputs %v, outputs %v: the peer wants one input x and one output", model, g.Inputs, g.Outputs)
		}
		if _, err := g.GenerateInputs(0); err != nil {
			t.Errorf("%s: inputs: %v", model, err)
		}
		for _, p := range g.Params {
			if _, err := g.ParamTensor(p.Name); err != nil {
				t.Errorf("%s: param %s: %v", model, p.Name, err)
			}
		}
	}
	for model, n := range map[string]int{"linear256": 33, "linear_odd": 33, "mlp1024": 16, "conv3x3": 12} {
		if !slices.Contains(zooDefaultNs[model], n) {
			t.Errorf("%s: default Ns %v lack the issue's N=%d", model, zooDefaultNs[model], n)
		}
	}
}

// TestPeerBuildsEveryModel: for every zoo case at N=2 the peer builds the N modules from the
// graph's params, every batched strategy the case has matches its loop, and widejit wide's
// outputs match the loop's on the same weights and inputs.
func TestPeerBuildsEveryModel(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import torch, numpy").Run(); err != nil {
		t.Skip("PyTorch is missing: install it with bash .ci/setup")
	}
	pr, _, err := startPeer("/usr/bin/python3", "peers/torch_zoo.py", 1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	linear := []string{"bmm", "baddbmm", "einsum"}
	sharedConv := []string{"grouped", "grouped_concat_first"}
	want := map[string][]string{
		"mlp": linear, "deep_mlp": linear, "linear256": linear, "linear_odd": linear, "linear1024": linear, "mlp1024": linear,
		"resblock": sharedConv, "convnet": sharedConv, "conv64": sharedConv, "conv3x3": {"grouped"},
		"transformer": {"bmm"}, "norm_softmax": {"bmm"},
	}
	hasVmap := pr.Hello["vmap"] == "functorch"
	if !hasVmap {
		t.Logf("this torch has no functorch (%v): vmap is not expected", pr.Hello["vmap"])
	}
	dev := cpu.NewDevice(1)
	defer dev.Close()
	for _, model := range zooModels {
		t.Run(model, func(t *testing.T) {
			g, err := loadZooModel(model, 2)
			if err != nil {
				t.Fatal(err)
			}
			inputs, err := g.GenerateInputs(0)
			if err != nil {
				t.Fatal(err)
			}
			p, err := newWidejitPlan(g, dev, "wide", inputs)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			outs, err := p.runner.Run(inputs)
			if err != nil {
				t.Fatal(err)
			}
			cl := &cell{Model: model, N: 2, TorchBatched: map[string]*timing{}, TorchLoops: map[string]*timing{}}
			cts, err := setupPeerCell(&config{threads: 1}, pr, cl, t.TempDir(), g, inputs, outs)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ct := range cts {
				got = append(got, ct.(*peerVariant).variant)
			}
			wantVariants := append([]string{"loop"}, want[model]...)
			if hasVmap {
				wantVariants = append(wantVariants, "vmap")
			}
			slices.Sort(got)
			slices.Sort(wantVariants)
			if !slices.Equal(got, wantVariants) {
				t.Errorf("variants %v, want %v; notes %q", got, wantVariants, cl.Notes)
			}
			if len(cl.Check.Rejected)+len(cl.Check.Unavailable) > 0 {
				t.Errorf("rejected %v, unavailable %v", cl.Check.Rejected, cl.Check.Unavailable)
			}
			for _, v := range wantVariants {
				if rel, ok := cl.Check.BatchedMaxRel[v]; v != "loop" && (!ok || rel > cl.Check.RTol) {
					t.Errorf("variant %s: checked %v, max rel %g", v, ok, rel)
				}
			}
			if cl.Check.WidejitMaxRel == nil || *cl.Check.WidejitMaxRel > cl.Check.RTol {
				t.Errorf("widejit wide against the torch loop: %s (max rel %v)", checkText(cl), cl.Check.WidejitMaxRel)
			}
		})
	}
}

// --avx2 times widejit's AVX2/FMA kernels only: where Go still reports AVX-512 (no
// GODEBUG=cpu.avx512f=off) the run is refused with the way out, else the report names the
// kernels it timed.
func TestAVX2Run(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run([]string{"--avx2", "--n", "1", "--models", "mlp", "--reps", "1", "--min-sample", "1ms", "--peers=false",
		"--quiet", "--out", out}, &stdout, &stderr)
	if strings.Contains(cpu.NewDevice(1).Info().Name, "AVX-512") {
		var u usageError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), "GODEBUG=cpu.avx512f=off") {
			t.Fatalf("--avx2 with AVX-512 kernels: %v, want a usage error naming GODEBUG=cpu.avx512f=off", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(out, "zoo.md"))
	if !strings.Contains(string(md), "widejit's CPU kernels: ") || strings.Contains(string(md), "AVX-512") {
		t.Errorf("zoo.md does not name AVX2 kernels:\n%s", md)
	}
}

// graphFLOPs against counts by hand: conv3x3 (16->32->32 3x3 on 8 images of 32x32), mlp
// (64->128->64 on 32 rows) and the transformer block (d=128, 4x64 tokens, feed-forward 512:
// the attention's four projections and two products, then two Linears).
func TestGraphFLOPs(t *testing.T) {
	for model, want := range map[string]float64{
		"conv3x3":     2 * 8 * 32 * 32 * 32 * (16*9 + 32*9),
		"mlp":         2 * 32 * (64*128 + 128*64),
		"transformer": 2*128*4*(4*64*128) + 4*(4*64*128)*64 + 2*(4*64)*(128*512+512*128),
	} {
		g, err := loadZooModel(model, 3)
		if err != nil {
			t.Fatal(err)
		}
		got, uncounted := graphFLOPs(g)
		if got != want || len(uncounted) > 0 {
			t.Errorf("%s: %g FLOPs (uncounted %v), want %g", model, got, uncounted, want)
		}
	}
}

// The real models' Go table matches bench/peers/real_models.py's (names and inputs).
func TestRealModelsTable(t *testing.T) {
	out, err := exec.Command("/usr/bin/python3", "-c", "import json, sys; sys.path.insert(0, 'peers'); import real_models; print(json.dumps(real_models.INPUTS))").Output()
	if err != nil {
		t.Skipf("no Debian python3 with torch (bash .ci/setup): %v", err)
	}
	var inputs map[string]string
	if err := json.Unmarshal(out, &inputs); err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(realModels), realExtraModels...)
	for i, m := range all {
		if _, ok := realInputs[m]; !ok || slices.Contains(all[i+1:], m) {
			t.Errorf("%s: no input, or listed twice in realModels and realExtraModels", m)
		}
	}
	if !maps.Equal(inputs, realInputs) || len(all) != len(realInputs) {
		t.Errorf("real_models.py INPUTS = %v, bench/real.go has %v for %v", inputs, realInputs, all)
	}
}

// --extra is the real-models section on the families' other members, N = 3 and 8, written to
// real_extra.*; a member the exporter refuses is a row with the exporter's message.
func TestRealExtra(t *testing.T) {
	c, err := parseArgs([]string{"--extra"}, &bytes.Buffer{})
	if err != nil || !c.real || !slices.Equal(c.models, realExtraModels) || !slices.Equal(c.nsFor("resnet50"), realDefaultNs) {
		t.Fatalf("parseArgs(--extra): %+v, %v: want the real section on %v", c, err, realExtraModels)
	}
	if c, err := parseArgs([]string{"--real"}, &bytes.Buffer{}); err != nil || !slices.Equal(c.models, realModels) {
		t.Fatalf("parseArgs(--real): %+v, %v: want %v", c, err, realModels)
	}
	if _, err := parseArgs([]string{"--models", "resnet50"}, &bytes.Buffer{}); err == nil {
		t.Errorf("--models resnet50 without --real or --extra accepted")
	}
	dir := t.TempDir()
	refuse := filepath.Join(dir, "refuse.py")
	msg := "resnet50: node 'x' (call_function f) is not in the widejit vocabulary"
	if err := os.WriteFile(refuse, []byte(fmt.Sprintf("import sys\nprint(%q, file=sys.stderr)\nsys.exit(2)\n", "export.py: error: "+msg)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	err = run([]string{"--extra", "--models", "resnet50", "--n", "3", "--peers=false", "--export-script", refuse,
		"--quiet", "--out", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run --extra: %v\nstderr: %s", err, stderr.String())
	}
	md, err := os.ReadFile(filepath.Join(out, "real_extra.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := tableLines(string(md))
	if !strings.Contains(string(md), "families' other members") || !strings.Contains(string(md), msg) ||
		len(rows) < 3 || !strings.HasPrefix(rows[2], "| resnet50 | 3 |") {
		t.Errorf("real_extra.md: want the --extra header, a resnet50 N=3 row and the exporter's message:\n%s", md)
	}
	var rep report
	js, err := os.ReadFile(filepath.Join(out, "real_extra.json"))
	if err == nil {
		err = json.Unmarshal(js, &rep)
	}
	if err != nil || rep.Section != "real_extra" || len(rep.Cells) != 1 || rep.Cells[0].ExportError != msg {
		t.Errorf("real_extra.json: %v, section %q, cells %+v", err, rep.Section, rep.Cells)
	}
}

// A real model the exporter refuses is a cell with the exporter's message and no timings,
// not a failed run; one it exports loads as a graph of N models.
func TestRealModelExport(t *testing.T) {
	dir := t.TempDir()
	refuse := filepath.Join(dir, "refuse.py")
	msg := "mobilenet_v3_small: node 'hardsigmoid' (call_function torch.nn.functional.hardsigmoid) is not in the widejit vocabulary"
	if err := os.WriteFile(refuse, []byte(fmt.Sprintf("import sys\nprint(%q, file=sys.stderr)\nsys.exit(2)\n", "export.py: error: "+msg)), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &config{python: "/usr/bin/python3", exportScript: refuse}
	_, err := c.loadModel("mobilenet_v3_small", 3, filepath.Join(dir, "cell"))
	var refused exportError
	if !errors.As(err, &refused) || refused.msg != msg {
		t.Fatalf("loadModel with a refusing exporter: %v, want exportError %q", err, msg)
	}
	if _, err := exec.Command("/usr/bin/python3", "-c", "import torch").Output(); err != nil {
		t.Skipf("no Debian python3 with torch (bash .ci/setup): %v", err)
	}
	c.exportScript = "../exporters/torch/export.py"
	g, err := c.loadModel("vit", 2, filepath.Join(dir, "vit"))
	if err != nil {
		t.Fatal(err)
	}
	if g.N != 2 || len(g.Inputs) != 1 || !slices.Equal(g.Inputs[0].Type.Shape, []int{2, 3, 32, 32}) {
		t.Errorf("exported vit: N=%d, inputs %v", g.N, g.Inputs)
	}
}

// stubContender takes perCall for every call.
type stubContender struct {
	perCall time.Duration
	calls   int
}

func (s *stubContender) Name() string { return "torch loop@1t" }

func (s *stubContender) Time(calls int) (time.Duration, error) {
	s.calls += calls
	return time.Duration(calls) * s.perCall, nil
}

// A contender is timed standalone too (back to back after a quarter sample), and the
// report keeps the faster median with both recorded, saying so when they differ by over 10%.
func TestStandaloneTiming(t *testing.T) {
	st := &stubContender{perCall: 12 * time.Millisecond}
	tm := &timing{MedianMS: 25, MinMS: 24}
	note, err := standalone(st, 4, tm)
	if err != nil {
		t.Fatal(err)
	}
	if tm.MedianMS != 12 || tm.MinMS != 12 || tm.InterleavedMedianMS != 25 || tm.StandaloneMedianMS != 12 || len(tm.StandaloneMS) != standaloneSamples {
		t.Errorf("timing after standalone = %+v", tm)
	}
	if st.calls != 1+4*standaloneSamples {
		t.Errorf("%d calls, want a quarter sample and %d samples of 4", st.calls, standaloneSamples)
	}
	if !strings.Contains(note, "interleaved median 25") || !strings.Contains(note, "standalone 12") {
		t.Errorf("note %q", note)
	}
	tm = &timing{MedianMS: 11.5, MinMS: 11}
	if note, _ := standalone(st, 4, tm); note != "" || tm.MedianMS != 11.5 || tm.MinMS != 11 {
		t.Errorf("interleaved faster: note %q, timing %+v", note, tm)
	}
}

// The peer sets PyTorch's thread count only when a timing request changes it: setting it, even
// to the count it has, slows the calls after it (bench/results/peer_standalone.md), which made
// the standalone samples of a 2-thread contender as slow as its interleaved ones.
func TestPeerSetsThreadsOnlyOnChange(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import torch, numpy").Run(); err != nil {
		t.Skip("PyTorch is missing (/usr/bin/python3 -c 'import torch'): install it with bash .ci/setup")
	}
	script := `
import sys, torch
sys.path.insert(0, "peers")
import torch_zoo
sets = []
real = torch.set_num_threads
def counting(n):
    sets.append(n)
    real(n)
torch.set_num_threads = counting
real(2)
s = torch_zoo.Session()
s.calls = {"loop": lambda: None}
for th in (2, 2, 1, 1, 1, 2, 2):
    s.time({"variant": "loop", "calls": 1, "threads": th})
print(sets)
`
	cmd := exec.Command("/usr/bin/python3", "-c", script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "[1, 2]" {
		t.Errorf("set_num_threads calls for requests at 2, 2, 1, 1, 1, 2, 2 threads: %s, want [1, 2]", got)
	}
}

// An --avx2 run names its files apart, so it does not overwrite the same section's AVX-512
// report in the same directory.
func TestReportFileNames(t *testing.T) {
	for _, tc := range []struct {
		section string
		avx2    bool
		want    string
	}{
		{"zoo", false, "zoo"}, {"zoo", true, "zoo_avx2"},
		{"real", false, "real"}, {"real", true, "real_avx2"},
		{"real_extra", false, "real_extra"}, {"real_extra", true, "real_extra_avx2"},
	} {
		if got := (&report{Section: tc.section, AVX2: tc.avx2}).fileBase(); got != tc.want {
			t.Errorf("section %q, avx2 %v: files %q, want %q", tc.section, tc.avx2, got, tc.want)
		}
	}
}
