package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// writeReport writes zoo.md, zoo.json and zoo.png to dir (real.* or real_extra.* for the
// real-models sections) and returns their paths.
func writeReport(dir string, rep *report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	png, err := renderChart(rep)
	if err != nil {
		return nil, err
	}
	files := []struct {
		name string
		data []byte
	}{
		{rep.fileBase() + ".md", []byte(markdownReport(rep))},
		{rep.fileBase() + ".json", append(js, '\n')},
		{rep.fileBase() + ".png", png},
	}
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// fileBase names the report's files: "zoo", or "real" / "real_extra" for the real-models
// sections, with "_avx2" after it for an --avx2 run, so that the AVX2 report of a section
// does not overwrite its AVX-512 one in the same directory.
func (rep *report) fileBase() string {
	base := "zoo"
	if rep.Section == "real" || rep.Section == "real_extra" {
		base = rep.Section
	}
	if rep.AVX2 {
		base += "_avx2"
	}
	return base
}

// markdownTable is the report's table: one row per cell.
func markdownTable(rep *report) string {
	var b strings.Builder
	b.WriteString("| model | N | widejit wide ms | widejit seq ms | torch loop ms | torch batched ms (best) | wide vs seq | wide vs torch loop | wide vs torch best | GFLOP/s wide (% sgemm peak) | GFLOP/s torch loop (% peak) | load ms (wide) | compile ms / kernel | check |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	peerNA := "n/a"
	if s, ok := rep.Torch.(string); ok {
		peerNA = s
	}
	for _, cl := range rep.Cells {
		torchCell := func(t *timing) string {
			if t != nil {
				return fmtMS(t.MedianMS)
			}
			if cl.ExportError != "" {
				return "-"
			}
			if cl.Check == nil {
				return peerNA
			}
			return "skipped"
		}
		best := torchCell(nil)
		if cl.TorchBestMS != nil {
			best = fmt.Sprintf("%s (%s)", fmtMS(*cl.TorchBestMS), cl.TorchBest)
		}
		wide, seq := "skipped", "skipped"
		if cl.ExportError != "" {
			wide, seq = "does not export yet", "-"
		}
		if cl.Wide != nil {
			wide = fmtMS(cl.Wide.MedianMS)
		}
		if cl.Seq != nil {
			seq = fmtMS(cl.Seq.MedianMS)
		}
		loop := torchCell(cl.TorchLoop)
		if cl.TorchLoop != nil {
			loop += " (" + strings.TrimPrefix(cl.TorchLoopBest, "loop@") + ")"
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f | %.2f | %s |\n", cl.Model, cl.N, wide, seq,
			loop, best, fmtRatio(cl.SpeedupVsSeq), fmtRatio(cl.SpeedupVsTorchLoop),
			fmtRatio(cl.SpeedupVsTorchBest), rateText(cl.GFLOPPerCall, cl.Wide, rep.SgemmPeakGFLOPS),
			rateText(cl.GFLOPPerCall, cl.TorchLoop, rep.SgemmPeakGFLOPS), cl.WideCompile, cl.WideKernelMS, checkText(cl))
	}
	return b.String()
}

// rateText is a contender's GFLOP/s at its median and its share of the measured sgemm peak.
func rateText(gflop float64, t *timing, peak *float64) string {
	if t == nil || gflop <= 0 || t.MedianMS <= 0 {
		return "-"
	}
	rate := gflop / (t.MedianMS / 1e3)
	if peak == nil || *peak <= 0 {
		return fmt.Sprintf("%.1f (peak n/a)", rate)
	}
	return fmt.Sprintf("%.1f (%.0f%%)", rate, 100*rate / *peak)
}

// minTable is the fastest sample of each contender and the ratios between them.
func minTable(rep *report) string {
	var b strings.Builder
	b.WriteString("| model | N | widejit wide | widejit seq | torch loop | torch batched (best) | wide vs torch loop | wide vs torch best |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	val := func(t *timing) (string, float64) {
		if t == nil {
			return "-", math.NaN()
		}
		return fmtMS(t.MinMS), t.MinMS
	}
	ratio := func(other, wide float64) string {
		if math.IsNaN(other) || math.IsNaN(wide) || wide <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", other/wide)
	}
	for _, cl := range rep.Cells {
		wide, w := val(cl.Wide)
		seq, _ := val(cl.Seq)
		fastest := func(ts map[string]*timing) (string, float64) {
			text, v := "-", math.NaN()
			for _, name := range sortedKeys(ts) {
				if t := ts[name]; math.IsNaN(v) || t.MinMS < v {
					v, text = t.MinMS, fmt.Sprintf("%s (%s)", fmtMS(t.MinMS), name)
				}
			}
			return text, v
		}
		loop, l := fastest(cl.TorchLoops)
		best, bv := fastest(cl.TorchBatched)
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", cl.Model, cl.N, wide, seq, loop, best, ratio(l, w), ratio(bv, w))
	}
	return b.String()
}

// checkText summarises the correctness checks of a cell: widejit wide against the PyTorch
// loop on the same weights and inputs (or against widejit sequential without the peer).
func checkText(cl *cell) string {
	var parts []string
	if cl.Check != nil && cl.Check.WidejitMaxRel != nil {
		r := *cl.Check.WidejitMaxRel
		verdict := "ok"
		if r > cl.Check.RTol {
			verdict = "WRONG"
		}
		parts = append(parts, fmt.Sprintf("%s vs torch %.1e", verdict, r))
	} else if cl.Check != nil && cl.Check.WidejitError != "" {
		parts = append(parts, "WRONG vs torch (shape)")
	}
	if cl.WideVsSeqRel != nil {
		parts = append(parts, fmt.Sprintf("wide vs seq %.1e", *cl.WideVsSeqRel))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

func fmtMS(ms float64) string {
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0f", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1f", ms)
	case ms >= 1:
		return fmt.Sprintf("%.2f", ms)
	default:
		return fmt.Sprintf("%.3f", ms)
	}
}

func fmtRatio(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.2fx", *r)
}

// markdownReport is zoo.md: how it was measured, the table, and every cell's notes.
func markdownReport(rep *report) string {
	var b strings.Builder
	switch rep.Section {
	case "real", "real_extra":
		if rep.Section == "real" {
			b.WriteString("# widejit real-models benchmark (CPU)\n\n")
			b.WriteString("`go run ./bench --real`: torchvision CNNs, a GPT-style LM, a ViT, an MLP-Mixer and a dilated temporal conv net\n")
		} else {
			b.WriteString("# widejit real-models benchmark, the families' other members (CPU)\n\n")
			b.WriteString("`go run ./bench --real --extra`: the torchvision CNNs' relatives, a wider GPT-style LM and a ViT of 8x8 patches\n")
		}
		b.WriteString("(bench/peers/real_models.py), each ")
		b.WriteString("exported with exporters/torch/export.py as the run starts its cell (N instances, --seed); a model\n")
		b.WriteString("whose export is refused is listed with the exporter's message. Everything else as in the zoo:\n\n")
	default:
		b.WriteString("# widejit zoo benchmark (CPU)\n\n")
	}
	b.WriteString("Generated by `go run ./bench` (bench/README.md). Times are the median time of one execution of all N\n")
	b.WriteString("models, in milliseconds, measured in the same run with the contenders interleaved repetition by\n")
	b.WriteString("repetition. Ratios are `other / widejit wide`: above 1 means widejit wide is faster. \"torch\n")
	b.WriteString("batched\" is the fastest of PyTorch's batched strategies that matched its loop (named in\n")
	b.WriteString("brackets: `bmm`/`baddbmm`/`einsum` over stacked weights, `grouped` convolutions, functorch `vmap`\n")
	b.WriteString("over `combine_state_for_ensemble`). Every PyTorch contender runs at the full thread count and at 1 thread (`@2t`, `@1t`)\n")
	b.WriteString("and the faster is reported: on a loaded machine OpenMP's barriers can make the multi-threaded runs\n")
	b.WriteString("much slower. \"check\" compares widejit wide's outputs with the PyTorch loop's on the same weights\n")
	b.WriteString("and inputs (max |diff| / max |torch|; ok at <= 1e-4), and with widejit sequential. \"load ms\" is\n")
	b.WriteString("lowering, compiling, weight initialisation and upload and the prepare launches, cold; \"compile ms /\n")
	b.WriteString("kernel\" is the kernel compile alone (kernels compiled on every core) over the plan's distinct kernels.\n\n")
	m := rep.Machine
	fmt.Fprintf(&b, "- started %s, %.0f s; %s/%s, %d cores (%s), %d threads for widejit and PyTorch; %s\n",
		rep.Started, rep.Seconds, m.GOOS, m.GOARCH, m.Cores, orDash(m.CPUModel), m.Threads, m.Go)
	fmt.Fprintf(&b, "- load average before / after: %s / %s (the machine is shared; read ratios, not absolute times)\n", orDash(m.LoadBefore), orDash(m.LoadAfter))
	if m.Kernels != "" {
		fmt.Fprintf(&b, "- widejit's CPU kernels: %s\n", m.Kernels)
	}
	if p := rep.SgemmPeakGFLOPS; p != nil {
		fmt.Fprintf(&b, "- sgemm peak at %d threads, measured in this run: %.1f GFLOP/s (torch.mm 1024x1024 fp32, the faster of a measurement before and after the cells); GFLOP/s count the multiply-adds of Linear, matmul, convolution and attention (x2)\n", m.Threads, *p)
	} else {
		b.WriteString("- sgemm peak: n/a (measured through the PyTorch peer)\n")
	}
	switch t := rep.Torch.(type) {
	case map[string]any:
		coreType := "OPENBLAS_CORETYPE unset"
		if rep.TorchNote != "" {
			coreType = rep.TorchNote
		}
		fmt.Fprintf(&b, "- PyTorch %v, %v intra-op threads (%v inter-op, OMP_NUM_THREADS=%v), %s (bench/peers/torch_zoo.py, /usr/bin/python3); vmap: %v\n",
			t["torch"], t["threads"], orQ(t["interop_threads"]), orQ(t["omp_num_threads"]), coreType, orQ(t["vmap"]))
		fmt.Fprintf(&b, "- PyTorch's allocator: %v (tcmalloc preloaded when installed, as PyTorch's CPU tuning guide advises; else glibc's with its mmap and trim thresholds raised)\n", orQ(t["allocator"]))
		blas, _ := t["blas"].(map[string]any)
		fmt.Fprintf(&b, "- BLAS torch loaded: %v\n", orQ(blas["summary"]))
	default:
		fmt.Fprintf(&b, "- PyTorch: %v", t)
		if rep.TorchNote != "" {
			fmt.Fprintf(&b, " (%s)", rep.TorchNote)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "- up to %d repetitions per cell; a sample runs a contender back to back for at least %d ms after a quarter as many untimed calls; each sample is followed by a %d ms pause (every contender's alike), so that OpenMP's spinning idle workers do not hold a core during the next contender's sample\n",
		rep.Reps, m.MinSampleMS, peerSettle.Milliseconds())
	fmt.Fprintf(&b, "- every contender, widejit's and PyTorch's, is also timed standalone after the repetitions (%d samples back to back, nothing of the others' and no pause between them, as a user would run it alone); its figures are the faster of the two medians, and the notes say where they differ by more than 10%%\n\n", standaloneSamples)
	b.WriteString(markdownTable(rep))
	b.WriteString("\nFastest sample of each contender (ms per run; less sensitive to the load of a shared machine, ")
	b.WriteString("where PyTorch's OpenMP threads suffer most):\n\n")
	b.WriteString(minTable(rep))
	fmt.Fprintf(&b, "\n![%s chart](%s.png)\n\nChart: one panel per model, bars per N, log scale: ", rep.Section, rep.fileBase())
	b.WriteString("blue widejit wide, light blue widejit sequential, orange torch loop, red torch best batched.\n")
	var notes []string
	for _, cl := range rep.Cells {
		var extra []string
		if len(cl.TorchLoops)+len(cl.TorchBatched) > 0 {
			var vs []string
			for _, ts := range []map[string]*timing{cl.TorchLoops, cl.TorchBatched} {
				for _, n := range sortedKeys(ts) {
					vs = append(vs, fmt.Sprintf("%s %s ms", n, fmtMS(ts[n].MedianMS)))
				}
			}
			extra = append(extra, "torch medians: "+strings.Join(vs, ", "))
		}
		if cl.Wide != nil {
			extra = append(extra, fmt.Sprintf("widejit launches wide/seq %d/%d, compile seq %.1f ms, %d reps", cl.WideLaunches, cl.SeqLaunches, cl.SeqCompile, cl.Reps))
		}
		extra = append(extra, cl.Notes...)
		if len(extra) > 0 {
			notes = append(notes, fmt.Sprintf("- %s N=%d: %s", cl.Model, cl.N, strings.Join(extra, "; ")))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n## Per cell\n\n")
		b.WriteString(strings.Join(notes, "\n"))
		b.WriteString("\n")
	}
	return b.String()
}

func sortedKeys(m map[string]*timing) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// orQ prints a value of the peer's hello, "?" when the peer did not say.
func orQ(v any) any {
	if v == nil {
		return "?"
	}
	return v
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
