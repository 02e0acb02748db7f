package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/config"
	"github.com/widejit/widejit/internal/outputs"
	"github.com/widejit/widejit/internal/runjob"
	"github.com/widejit/widejit/jit/cpu"
)

// runFlags are run's flags: the job's (runjob.Request) and the check's and printing's.
type runFlags struct {
	runjob.Request
	rtol, atol   float64
	rtolPerDType bool // --rtol not given: each output's dtype sets it
	device       string
	asJSON       bool
	streams      int
	cpuProfile   string
}

func newRunCmd(a *app) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run GRAPH.json",
		Short: "Run the N models of a graph on its inputs",
		Long: `Run the N models of GRAPH.json. Inputs come from --inputs (a safetensors file holding every
graph input, [N, ...] per model or the bare shape when shared, at any batch size: the graph is
re-specialised for it, and --check's file must have the matching batch) or are generated, at
--batch, from --seed
(floats ~ N(0,1), integers uniform below the consuming embedding's num_embeddings, else in
[0, 2)). --check compares every output with EXPECTED.safetensors and fails (exit 4) when
|got - expected| > atol + rtol * max|expected| anywhere in an output. Without --rtol, rtol
depends on the output's dtype: 1e-4, but 1.6e-2 for bfloat16 and 1e-3 for float16 outputs
(torch.testing's defaults: a half-precision reference rounds every op's result, widejit's
fused kernels round once).

--shard I/K runs shard I of K: models [floor(I*N/K), floor((I+1)*N/K)) only, reading only
those models' weights and rows of --inputs (which holds all N; shared inputs as they are);
--check compares with the same rows of a file holding all N outputs. --out then holds those
models' outputs, and its metadata says which models (widejit.models LO:HI, widejit.n) of
which graph (widejit.graph_sha256: graph.json and the weights' content) on which inputs
(widejit.inputs: the --inputs file's SHA-256, or the seed and batch size); ` + "`widejit merge`" + `
stacks the parts back into the [N, ...] outputs, bit for bit those of an unsharded run.

--device takes a list of devices of one kind (cuda:0,cuda:1, or cuda:all for every GPU):
the N models are split across them in list order and run at once, and the outputs are
stacked in model order; cpu:0,cpu:1 does the same with CPU executors sharing the cores. On
each GPU, --streams S splits the device's models again over S streams (default 1), whose
copies overlap each other's kernels (for copy-heavy runs); --explain shows that schedule, --trace a track per stream.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runGraph(cmd, a, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Inputs, "inputs", "", "inputs safetensors file (default: generated from --seed)")
	fl.StringVar(&f.Out, "out", "", "write the outputs, stacked [N, ...], to this safetensors file")
	fl.StringVar(&f.Check, "check", "", "compare the outputs with this safetensors file")
	fl.Float64Var(&f.rtol, "rtol", 1e-4, "relative tolerance, times the output's max |expected| (default per dtype: 1e-4; bfloat16 1.6e-2, float16 1e-3)")
	fl.Float64Var(&f.atol, "atol", 1e-5, "absolute tolerance")
	fl.StringVar(&f.device, "device", "auto", "auto or a backend (cpu, cuda, ...: widejit info lists them), or several devices of one backend: cuda:0,cuda:1 | cuda:all | cpu:0,cpu:1 (N split across them)")
	fl.StringVar(&f.Mode, "mode", "wide", "wide (one launch serves all N) | sequential (N launches, the baseline)")
	fl.BoolVar(&f.asJSON, "json", false, "print a JSON summary")
	fl.Int64Var(&f.Seed, "seed", 0, "seed for generated inputs")
	fl.IntVar(&f.N, "n", 0, "override n (init graphs only)")
	fl.String("launch-timeout", "0s", "stop the run when one kernel launch takes longer, naming the kernel (0: no limit; config launch_timeout)")
	fl.Int("memory-limit-mib", 0, "refuse a run that would allocate more (0: 80% of physical memory, -1: no limit; config memory_limit_mib)")
	fl.IntVar(&f.Batch, "batch", 0, "batch size of the generated inputs (default: the graph's; --inputs carry their own)")
	fl.IntVar(&f.Repeat, "repeat", 0, "run the plan R more times after the first and report the median time")
	fl.BoolVar(&f.Compare, "compare", false, "run both modes (wide and sequential) and report the speedup")
	fl.StringVar(&f.Dropout, "dropout", "eval", "eval (dropout is the identity) | mc (Monte Carlo: independent per-model masks from --seed)")
	fl.BoolVar(&f.Explain, "explain", false, "print which nodes went into which kernel, with which strategy and why")
	fl.BoolVar(&f.Profile, "profile", false, "time every kernel over the runs (--repeat) and print where the time goes")
	fl.StringVar(&f.Shard, "shard", "", "run shard `I/K` only, I of K: models [floor(I*N/K), floor((I+1)*N/K)), 0 <= I < K <= N (merge the parts with widejit merge)")
	fl.StringVar(&f.Trace, "trace", "", "write every kernel launch and host-device copy as Chrome trace-event JSON (Perfetto, chrome://tracing) to this file")
	fl.IntVar(&f.streams, "streams", 0, "split each run's models over this many streams per GPU, copies overlapping kernels (0 or 1: one stream; the CPU ignores it)")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the whole command (compile and every run) to `FILE` (read it with go tool pprof; its samples carry the labels kernel and line, the kernel source line: -tags, -tagfocus kernel=NAME)")
	addPluginFlag(cmd)
	return cmd
}

func runGraph(cmd *cobra.Command, a *app, path string, f runFlags) error {
	device := a.v.GetString("device") // --device, WIDEJIT_DEVICE, the config file or "auto"
	if err := config.CheckDevice(device); err != nil {
		return err
	}
	if f.Mode != "wide" && f.Mode != "sequential" {
		return usagef("--mode must be wide or sequential, got %q", f.Mode)
	}
	if f.rtol < 0 || f.atol < 0 || math.IsNaN(f.rtol) || math.IsNaN(f.atol) {
		return usagef("--rtol and --atol must be >= 0")
	}
	if f.streams < 0 {
		return usagef("--streams must be >= 0 (0: the default), got %d", f.streams)
	}
	f.GraphFile, f.Options = path, append(config.ModelOptions(a.v, pluginFlag(cmd), cacheWarner(a)), widejit.WithStreams(f.streams))
	f.Graph = engineConfig(a, nil).GraphOptions(0)
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	job, err := runjob.Prepare(f.Request)
	if err != nil {
		return err
	}
	res, err := job.Execute(cmd.Context())
	if err != nil {
		return err
	}
	if f.Explain {
		w := a.stdout
		if f.asJSON {
			w = a.stderr
		}
		if _, err := io.WriteString(w, res.Explain); err != nil {
			return err
		}
	}
	if !f.asJSON {
		if f.Compare {
			fmt.Fprintf(a.stdout, "compare: wide %.3f ms, sequential %.3f ms (median of %d), speedup %.2fx\n",
				runjob.Millis(res.WideMedian), runjob.Millis(res.SeqMedian), res.Repeats, res.Speedup)
		}
		if f.Profile {
			writeKernelProfile(a.stdout, res.KernelTimes)
		}
		fmt.Fprintf(a.stdout, "timing: compile %.1f ms, first run %.3f ms, median %.3f ms over %d runs; %d launches, %d kernels\n",
			runjob.Millis(res.Compile), runjob.Millis(res.First), runjob.Millis(res.Median), res.Repeats, res.Launches, res.Kernels)
	}
	if err := outputs.CheckPresent(job.Graph, res.Outputs); err != nil {
		return err
	}
	if f.Out != "" {
		if err := job.WriteOut(res); err != nil {
			return err
		}
	}
	rtol := f.rtol
	if f.rtolPerDType = !cmd.Flags().Changed("rtol"); f.rtolPerDType {
		rtol = -1 // the output dtype's default
	}
	diffs := job.Diffs(res, rtol, f.atol)
	if err := printRunSummary(a.stdout, job.Graph, device, f, res, diffs); err != nil {
		return err
	}
	var failed, rtols []string
	for _, d := range diffs {
		if !d.OK {
			failed = append(failed, d.Name)
			if r := fmt.Sprintf("rtol=%g", d.RTol); !slices.Contains(rtols, r) {
				rtols = append(rtols, r)
			}
		}
	}
	if len(failed) > 0 {
		return exitCodeError{exitCheck, fmt.Errorf("check failed: %s differ from %s beyond atol=%g + %s * max|expected|", strings.Join(failed, ", "), f.Check, f.atol, strings.Join(rtols, "/"))}
	}
	return nil
}

func printRunSummary(w io.Writer, g *graph.Graph, device string, f runFlags, res *runjob.Result, diffs []outputs.Diff) error {
	type jsonOut struct {
		Name   string  `json:"name"`
		Shape  []int   `json:"shape"`
		DType  string  `json:"dtype"`
		Sum    float64 `json:"sum"`
		SHA256 string  `json:"sha256_prefix"`
	}
	var outs []jsonOut
	for _, o := range g.Outputs {
		t := res.Outputs[o.Name]
		sum, digest := outputs.Checksum(t)
		outs = append(outs, jsonOut{o.Name, t.Shape, string(o.Type.DType), sum, digest})
	}
	if f.asJSON {
		doc := map[string]any{"graph": g.File, "n": g.N, "device": device, "mode": f.Mode, "outputs": outs}
		if diffs != nil {
			ok := true
			for _, d := range diffs {
				ok = ok && d.OK
			}
			var rtol any = f.rtol
			if f.rtolPerDType {
				rtol = nil // per output, in outputs[].rtol
			}
			doc["check"] = map[string]any{"file": f.Check, "rtol": rtol, "atol": f.atol, "outputs": outputs.JSONSafe(diffs), "ok": ok}
		}
		keys := make([]string, 0, len(res.Extra))
		for k := range res.Extra {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if _, taken := doc[k]; !taken {
				doc[k] = res.Extra[k]
			}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	fmt.Fprintf(w, "%s: ran %s (device %s, mode %s)\n", g.File, describeModels(g), device, f.Mode)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OUTPUT\tSHAPE\tDTYPE\tSUM\tSHA256")
	for _, o := range outs {
		fmt.Fprintf(tw, "%s\t%v\t%s\t%.6g\t%s\n", o.Name, o.Shape, o.DType, o.Sum, o.SHA256)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if diffs != nil {
		fmt.Fprintf(w, "check against %s (|got-exp| <= atol %g + rtol * max|exp|):\n", f.Check, f.atol)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "OUTPUT\tMAX ABS\tMAX REL\tRTOL\tBOUND\tRESULT")
		for _, d := range diffs {
			result := "ok"
			switch {
			case d.Err != "":
				result = "FAIL: " + d.Err
			case d.NaNs > 0:
				result = fmt.Sprintf("FAIL: %d NaN mismatches", d.NaNs)
			case !d.OK:
				result = "FAIL"
			}
			fmt.Fprintf(tw, "%s\t%.3g\t%.3g\t%g\t%.3g\t%s\n", d.Name, d.MaxAbs, d.MaxRel, d.RTol, d.Bound, result)
		}
		return tw.Flush()
	}
	return nil
}

// describeModels is "n=8 models", or "models [3, 6) of n=8" for a model range.
func describeModels(g *graph.Graph) string {
	lo, hi, total := g.ModelRange()
	if lo == 0 && hi == total {
		return fmt.Sprintf("n=%d models", total)
	}
	return fmt.Sprintf("models [%d, %d) of n=%d", lo, hi, total)
}

// writeKernelProfile prints where a run's time goes, kernel by kernel, slowest first.
func writeKernelProfile(w io.Writer, kt []widejit.KernelTime) {
	var total time.Duration
	for _, k := range kt {
		if !k.Prepare {
			total += k.PerRun
		}
	}
	fmt.Fprintf(w, "kernel times (mean per run, %.3f ms in all):\n", runjob.Millis(total))
	for _, k := range kt {
		if k.Prepare {
			continue // ran once, when the model was loaded
		}
		share := 0.0
		if total > 0 {
			share = 100 * float64(k.PerRun) / float64(total)
		}
		fmt.Fprintf(w, "  %8.3f ms %5.1f%%  %s (%s)\n", runjob.Millis(k.PerRun), share, k.Kernel, k.Template)
	}
}

// startCPUProfile profiles the process into path (which must not exist: nothing a user has is
// overwritten) until the returned stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(file); err != nil {
		file.Close()
		return nil, fmt.Errorf("--cpuprofile %s: %w", path, err)
	}
	cpu.ProfileLabels(true) // samples split by kernel and line: go tool pprof -tags, -tagfocus kernel=NAME
	return func() { pprof.StopCPUProfile(); cpu.ProfileLabels(false); file.Close() }, nil
}
