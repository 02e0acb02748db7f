package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/outputs"
)

// run_exec.go runs `widejit run` through the public API (package widejit) and adds the
// execution flags (--repeat, --compare, --dropout, --explain, --profile).

type execFlags struct {
	repeat                    int
	compare, explain, profile bool
	dropout                   string
}

// modeRun is one mode's execution: outputs and timings.
type modeRun struct {
	model   *widejit.Model
	outputs map[string]*safetensors.Tensor
	first   time.Duration
	median  time.Duration
	repeats int
}

// modelOptions are the public API's options for the configuration of a (device, threads,
// cache, plugins, warnings to stderr).
func modelOptions(a *app, cmd *cobra.Command, device string) ([]widejit.Option, error) {
	opts := []widejit.Option{widejit.WithDevice(device), widejit.WithThreads(a.v.GetInt("threads")),
		widejit.WithCacheDir(a.v.GetString("cache_dir")),
		widejit.WithWarnings(func(msg string) { fmt.Fprintf(a.stderr, "widejit: warning: %s\n", msg) }),
		widejit.WithPlugins(append(a.v.GetStringSlice("plugins"), pluginFlag(cmd)...)...)}
	if a.v.GetBool("no_cache") {
		opts = append(opts, widejit.WithoutCache())
	}
	if a.v.GetBool("cache_read_only") {
		opts = append(opts, widejit.WithCacheReadOnly())
	}
	launch, _ := time.ParseDuration(a.v.GetString("launch_timeout")) // checked with the configuration
	opts = append(opts, widejit.WithLaunchTimeout(launch), widejit.WithMemoryLimit(memoryLimit(a)))
	deadline, err := time.ParseDuration(a.v.GetString("plugin_deadline"))
	if err != nil || deadline <= 0 {
		return nil, fmt.Errorf("plugin_deadline: %q is not a positive duration (e.g. 50ms)", a.v.GetString("plugin_deadline"))
	}
	return append(opts, widejit.WithPluginLimits(deadline, a.v.GetInt("plugin_memory_mib"))), nil
}

func executeRun(ctx context.Context, a *app, cmd *cobra.Command, path string, g *graph.Graph, inputs map[string]*safetensors.Tensor, rf runFlags) (*runResult, error) {
	fl := cmd.Flags()
	var f execFlags
	f.repeat, _ = fl.GetInt("repeat")
	f.compare, _ = fl.GetBool("compare")
	f.dropout, _ = fl.GetString("dropout")
	f.explain, _ = fl.GetBool("explain")
	f.profile, _ = fl.GetBool("profile")
	if f.repeat < 0 {
		return nil, usagef("--repeat must be >= 0, got %d", f.repeat)
	}
	if f.dropout != "eval" && f.dropout != "mc" {
		return nil, usagef("--dropout must be eval or mc, got %q", f.dropout)
	}
	opts, err := modelOptions(a, cmd, a.v.GetString("device"))
	if err != nil {
		return nil, err
	}
	opts = append(opts, rangeOptions(g)...)
	trace, _ := fl.GetString("trace")
	if trace != "" {
		opts = append(opts, widejit.WithTrace())
	}
	if f.dropout == "mc" {
		opts = append(opts, widejit.WithMonteCarloDropout(rf.seed))
	}
	if f.profile {
		opts = append(opts, widejit.WithProfile())
	}
	modes := []string{rf.mode}
	if f.compare {
		modes = []string{"wide", "sequential"}
	}
	// compile every mode first: each Load closes the kernel cache (freeing it for other
	// processes) before anything runs
	runs := map[string]*modeRun{}
	defer func() {
		for _, r := range runs {
			r.model.Close()
		}
	}()
	for _, mode := range modes {
		o := opts
		if mode == "sequential" {
			o = append(o, widejit.WithSequential())
		}
		m, err := widejit.Load(path, o...)
		if err != nil {
			return nil, err
		}
		runs[mode] = &modeRun{model: m}
	}
	for _, mode := range modes {
		if err := runs[mode].execute(ctx, inputs, f.repeat); err != nil {
			return nil, fmt.Errorf("mode %s: %w", mode, err)
		}
	}
	main := runs[rf.mode]
	if main == nil {
		main = runs["wide"]
	}
	m := main.model
	if f.explain {
		w := a.stdout
		if rf.asJSON {
			w = a.stderr
		}
		if _, err := io.WriteString(w, m.Explain()); err != nil {
			return nil, err
		}
	}
	if trace != "" {
		if err := writeTrace(m, trace, runInputFiles(path, g, rf)); err != nil {
			return nil, err
		}
	}
	lo, hi, total := g.ModelRange()
	extra := map[string]any{
		"models":  map[string]any{"lo": lo, "hi": hi, "n": total},
		"devices": m.Devices(),
		"device":  m.Device(),
		"timing": map[string]any{"compile_ms": ms(m.CompileTime()), "first_run_ms": ms(main.first),
			"median_ms": ms(main.median), "repeats": main.repeats},
		"plan":  map[string]any{"launches": m.Launches(), "kernels": m.Kernels(), "strategies": m.Strategies()},
		"cache": m.CacheReport(),
	}
	if f.dropout == "mc" {
		extra["dropout"] = map[string]any{"mode": "mc", "seed": rf.seed}
	}
	if f.compare {
		wide, seq := runs["wide"], runs["sequential"]
		speedup := 0.0
		if wide.median > 0 {
			speedup = float64(seq.median) / float64(wide.median)
		}
		extra["compare"] = map[string]any{"wide_median_ms": ms(wide.median), "sequential_median_ms": ms(seq.median),
			"speedup": speedup, "max_abs_diff": outputs.MaxAbsDiff(wide.outputs, seq.outputs)}
		if !rf.asJSON {
			fmt.Fprintf(a.stdout, "compare: wide %.3f ms, sequential %.3f ms (median of %d), speedup %.2fx\n",
				ms(wide.median), ms(seq.median), wide.repeats, speedup)
		}
	}
	if f.profile {
		extra["kernel_ms"] = kernelProfile(m)
		if !rf.asJSON {
			writeKernelProfile(a.stdout, m)
		}
	}
	if !rf.asJSON {
		fmt.Fprintf(a.stdout, "timing: compile %.1f ms, first run %.3f ms, median %.3f ms over %d runs; %d launches, %d kernels\n",
			ms(m.CompileTime()), ms(main.first), ms(main.median), main.repeats, m.Launches(), m.Kernels())
	}
	return &runResult{Outputs: main.outputs, Extra: extra}, nil
}

// execute runs the model once, then repeat more times, and records the timings.
func (res *modeRun) execute(ctx context.Context, inputs map[string]*safetensors.Tensor, repeat int) error {
	t0 := time.Now()
	var err error
	if res.outputs, err = res.model.Run(ctx, inputs); err != nil {
		return err
	}
	res.first = time.Since(t0)
	times := []time.Duration{res.first}
	if repeat > 0 {
		times = times[:0]
	}
	for range repeat {
		t := time.Now()
		// a repeat writes into the outputs' memory, as a serving loop would; the values are equal
		if res.outputs, err = res.model.RunInto(ctx, inputs, res.outputs); err != nil {
			return err
		}
		times = append(times, time.Since(t))
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	res.median = times[len(times)/2]
	res.repeats = len(times)
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// kernelProfile is each launch's mean time per run (ms), slowest first.
func kernelProfile(m *widejit.Model) []map[string]any {
	var out []map[string]any
	for _, k := range m.KernelTimes() {
		out = append(out, map[string]any{"kernel": k.Kernel, "template": k.Template, "prepare": k.Prepare, "ms": ms(k.PerRun)})
	}
	return out
}

// writeKernelProfile prints where a run's time goes, kernel by kernel, slowest first.
func writeKernelProfile(w io.Writer, m *widejit.Model) {
	kt := m.KernelTimes()
	var total time.Duration
	for _, k := range kt {
		if !k.Prepare {
			total += k.PerRun
		}
	}
	fmt.Fprintf(w, "kernel times (mean per run, %.3f ms in all):\n", ms(total))
	for _, k := range kt {
		if k.Prepare {
			continue // ran once, when the model was loaded
		}
		share := 0.0
		if total > 0 {
			share = 100 * float64(k.PerRun) / float64(total)
		}
		fmt.Fprintf(w, "  %8.3f ms %5.1f%%  %s (%s)\n", ms(k.PerRun), share, k.Kernel, k.Template)
	}
}
