package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/lowering"
)

// run_exec.go plugs lowering into `widejit run`: it sets executeGraph and adds the execution
// flags (--repeat, --compare, --dropout, --explain) to the run command.

type execFlags struct {
	repeat  int
	compare bool
	dropout string
	explain bool
	profile bool
	cmd     *cobra.Command
}

func init() {
	executeGraph = executeLowered
	extend("run", func(_ *app, cmd *cobra.Command) {
		fl := cmd.Flags()
		fl.Int("repeat", 0, "run the plan R more times after the first and report the median time")
		fl.Bool("compare", false, "run both modes (wide and sequential) and report the speedup")
		fl.String("dropout", "eval", "eval (dropout is the identity) | mc (Monte Carlo: independent per-model masks from --seed)")
		fl.Bool("explain", false, "print which nodes went into which kernel, with which strategy and why")
		fl.Bool("profile", false, "time every kernel over the runs (--repeat) and print where the time goes")
	})
}

// flagsOf reads the execution flags from the run command (defaults when cmd is nil).
func flagsOf(cmd *cobra.Command) *execFlags {
	f := &execFlags{dropout: "eval", cmd: cmd}
	if cmd == nil {
		return f
	}
	fl := cmd.Flags()
	f.repeat, _ = fl.GetInt("repeat")
	f.compare, _ = fl.GetBool("compare")
	f.dropout, _ = fl.GetString("dropout")
	f.explain, _ = fl.GetBool("explain")
	f.profile, _ = fl.GetBool("profile")
	return f
}

// modeRun is one mode's execution: outputs and timings.
type modeRun struct {
	outputs map[string]*safetensors.Tensor
	plan    *lowering.Plan
	compile time.Duration // lowering + kernel compilation + weight upload: all before the first launch
	first   time.Duration
	median  time.Duration
	repeats int
	runner  *lowering.Runner
	extra   int // runs after the first (--repeat)
}

func executeLowered(ctx context.Context, g *graph.Graph, inputs map[string]*safetensors.Tensor, opts runOptions) (*runResult, error) {
	f := flagsOf(opts.Cmd)
	if f.repeat < 0 {
		return nil, usagef("--repeat must be >= 0, got %d", f.repeat)
	}
	if f.dropout != "eval" && f.dropout != "mc" {
		return nil, usagef("--dropout must be eval or mc, got %q", f.dropout)
	}
	var seed int64
	if f.cmd != nil {
		if fl := f.cmd.Flags().Lookup("seed"); fl != nil {
			fmt.Sscan(fl.Value.String(), &seed)
		}
	}
	dev, err := openDevice(opts.Config, opts.Device)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	info := dev.Info()
	lopts := lowering.Options{Dropout: f.dropout, Seed: seed,
		Device: autotune.DeviceInfo{Kind: info.Kind, Name: info.Name, ComputeCapability: info.ComputeCapability,
			MemoryBytes: info.MemoryBytes, Cores: info.Cores}}
	modes := []string{opts.Mode}
	if f.compare {
		modes = []string{"wide", "sequential"}
	}
	// compile every mode first, so the kernel cache is closed (and free for other processes)
	// before anything runs
	store := openCacheStore(opts.Config)
	comp := jit.NewCompiler(jit.CompilerOptions{Store: store, Version: buildVersion(),
		Warn: func(msg string) { fmt.Fprintf(opts.Config.stderr, "widejit: warning: %s\n", msg) }})
	// strategy decisions: recorded (widejit tune), then plugins, then the heuristic (tune.go)
	tuning := newDecisionTuning(ctx, opts.Config, store, pluginFlag(f.cmd))
	defer tuning.close()
	runs := map[string]*modeRun{}
	var runners []*lowering.Runner
	defer func() {
		for _, r := range runners {
			r.Close()
		}
	}()
	for _, mode := range modes {
		o := lopts
		o.ModelMajor = mode == "sequential"
		o.Chooser = tuning.chooser(mode)
		start := time.Now()
		plan, err := lowering.Lower(g, o)
		if err != nil {
			store.Close()
			return nil, err
		}
		r, err := lowering.NewRunner(plan, dev, comp, g)
		if err != nil {
			store.Close()
			return nil, fmt.Errorf("mode %s: %w", mode, err)
		}
		runners = append(runners, r)
		r.Profile(f.profile)
		runs[mode] = &modeRun{plan: plan, compile: time.Since(start), runner: r}
	}
	cacheReport := store.RunReport()
	if err := store.Close(); err != nil {
		fmt.Fprintf(opts.Config.stderr, "widejit: warning: closing the kernel cache: %v\n", err)
	}
	for _, mode := range modes {
		if err := runs[mode].execute(ctx, inputs, f.repeat); err != nil {
			return nil, fmt.Errorf("mode %s: %w", mode, err)
		}
	}
	main := runs[opts.Mode]
	if main == nil {
		main = runs["wide"]
	}
	if f.explain {
		w := opts.Config.stdout
		if jsonFlag(f.cmd) {
			w = opts.Config.stderr
		}
		if err := writeExplain(w, main.plan); err != nil {
			return nil, err
		}
		mainMode := opts.Mode
		if runs[mainMode] == nil {
			mainMode = "wide"
		}
		if _, err := io.WriteString(w, tuning.explain(mainMode)); err != nil {
			return nil, err
		}
	}
	timing := map[string]any{
		"compile_ms":   ms(main.compile),
		"first_run_ms": ms(main.first),
		"median_ms":    ms(main.median),
		"repeats":      main.repeats,
	}
	extra := map[string]any{
		"device": info.Kind,
		"timing": timing,
		"plan": map[string]any{"launches": len(main.plan.Launches), "kernels": len(main.plan.Kernels()),
			"strategies": strategyCounts(main.plan)},
		"cache": cacheReport,
	}
	if f.dropout == "mc" {
		extra["dropout"] = map[string]any{"mode": "mc", "seed": seed}
	}
	if f.compare {
		wide, seq := runs["wide"], runs["sequential"]
		speedup := 0.0
		if wide.median > 0 {
			speedup = float64(seq.median) / float64(wide.median)
		}
		extra["compare"] = map[string]any{
			"wide_median_ms":       ms(wide.median),
			"sequential_median_ms": ms(seq.median),
			"speedup":              speedup,
			"max_abs_diff":         maxAbsDiff(wide.outputs, seq.outputs),
		}
		if !jsonFlag(f.cmd) {
			fmt.Fprintf(opts.Config.stdout, "compare: wide %.3f ms, sequential %.3f ms (median of %d), speedup %.2fx\n",
				ms(wide.median), ms(seq.median), wide.repeats, speedup)
		}
	}
	if f.profile {
		extra["kernel_ms"] = kernelProfile(main)
		if !jsonFlag(f.cmd) {
			writeKernelProfile(opts.Config.stdout, main)
		}
	}
	if !jsonFlag(f.cmd) {
		fmt.Fprintf(opts.Config.stdout, "timing: compile %.1f ms, first run %.3f ms, median %.3f ms over %d runs; %d launches, %d kernels\n",
			ms(main.compile), ms(main.first), ms(main.median), main.repeats, len(main.plan.Launches), len(main.plan.Kernels()))
	}
	return &runResult{Outputs: main.outputs, Extra: extra}, nil
}

func jsonFlag(cmd *cobra.Command) bool {
	if cmd == nil {
		return false
	}
	fl := cmd.Flags().Lookup("json")
	return fl != nil && fl.Value.String() == "true"
}

// execute runs the prepared plan once, then repeat more times, and records the timings.
func (res *modeRun) execute(ctx context.Context, inputs map[string]*safetensors.Tensor, repeat int) error {
	t0 := time.Now()
	var err error
	res.outputs, err = res.runner.Run(inputs)
	if err != nil {
		return err
	}
	res.first = time.Since(t0)
	times := []time.Duration{res.first}
	if repeat > 0 {
		times = times[:0]
	}
	for i := 0; i < repeat; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		t := time.Now()
		// a repeat writes into the outputs' memory, as a serving loop would; the values are equal
		var err error
		if res.outputs, err = res.runner.RunInto(inputs, res.outputs); err != nil {
			return err
		}
		times = append(times, time.Since(t))
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	res.median = times[len(times)/2]
	res.repeats = len(times)
	res.extra = repeat
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func strategyCounts(p *lowering.Plan) map[string]int {
	m := map[string]int{}
	for _, l := range p.Launches {
		m[l.Strategy]++
	}
	return m
}

func maxAbsDiff(a, b map[string]*safetensors.Tensor) float64 {
	worst := 0.0
	for name, ta := range a {
		tb := b[name]
		if tb == nil {
			continue
		}
		va, err1 := ta.Float64s()
		vb, err2 := tb.Float64s()
		if err1 != nil || err2 != nil || len(va) != len(vb) {
			continue
		}
		for i := range va {
			if d := va[i] - vb[i]; d > worst {
				worst = d
			} else if -d > worst {
				worst = -d
			}
		}
	}
	return worst
}

// writeExplain prints, per launch, the nodes it serves, its strategy and why.
func writeExplain(w io.Writer, p *lowering.Plan) error {
	_, err := io.WriteString(w, lowering.Explain(p))
	return err
}

// kernelProfile is each launch's mean time per run (ms), in plan order.
func kernelProfile(res *modeRun) []map[string]any {
	runs := float64(1 + res.extra) // the first run and the repeats
	var out []map[string]any
	for i, t := range res.runner.KernelTimes() {
		l := res.plan.Launches[i]
		out = append(out, map[string]any{"launch": i, "kernel": l.Kernel.Source.Fn, "template": l.Kernel.Template,
			"prepare": l.Prepare, "ms": ms(t) / runs})
	}
	return out
}

// writeKernelProfile prints where a run's time goes, kernel by kernel, slowest first.
func writeKernelProfile(w io.Writer, res *modeRun) {
	rows := kernelProfile(res)
	total := 0.0
	for _, r := range rows {
		total += r["ms"].(float64)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i]["ms"].(float64) > rows[j]["ms"].(float64) })
	fmt.Fprintf(w, "kernel times (mean per run, %.3f ms in all):\n", total)
	for _, r := range rows {
		if r["prepare"].(bool) {
			continue // ran once, when the runner was made
		}
		share := 0.0
		if total > 0 {
			share = 100 * r["ms"].(float64) / total
		}
		fmt.Fprintf(w, "  %8.3f ms %5.1f%%  %s (%s)\n", r["ms"], share, r["kernel"], r["template"])
	}
}
