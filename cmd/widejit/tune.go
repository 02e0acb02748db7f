package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/engine"
	"github.com/widejit/widejit/internal/outputs"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/lowering"
	"github.com/widejit/widejit/runner"
)

// tune.go: `widejit tune`, and the autotuner behind `run` and `graph explain` (recorded
// decisions from the kernel cache, then --plugin / config plugins, then lowering's heuristic).

func init() {
	register("tune", newTuneCmd)
	extend("run", func(_ *app, cmd *cobra.Command) { addPluginFlag(cmd) })
}

// addPluginFlag adds --plugin (repeatable); plugins from the config file come first.
func addPluginFlag(cmd *cobra.Command) {
	cmd.Flags().StringArray("plugin", nil, "strategy plugin P.wasm (repeatable; after the config file's plugins:)")
}

// pluginFlag reads --plugin from cmd (nil when cmd has no such flag).
func pluginFlag(cmd *cobra.Command) []string {
	if cmd == nil {
		return nil
	}
	ps, _ := cmd.Flags().GetStringArray("plugin")
	return ps
}

type tuneFlags struct {
	nList, budget, export string
	reps, warmup          int
	seed                  int64
	asJSON                bool
}

func newTuneCmd(a *app) *cobra.Command {
	var f tuneFlags
	cmd := &cobra.Command{
		Use:   "tune GRAPH.json",
		Short: "Time each kernel group's candidates (strategy x tunables) and record the fastest in the cache",
		Long: `Lower GRAPH.json for each N of --n and, for every decision lowering takes (fuse or not;
one batched launch or N sequential ones, each with a few tile-size / num_warps configurations
for the kernels that have them), time the plan with each candidate on the active
device (--device): warm-up runs, then repetitions interleaved across candidates, median.
Decisions are tuned in plan order, each with the earlier winners in place. The winner and every
timing are recorded in the kernel cache; the next 'widejit run' (and 'graph explain') uses
them and reports them as "recorded". --export writes the timings for autotune/cmd/fittree.
Init graphs take any N; a graph with a weights file only its own n.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runTune(cmd, a, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.nList, "n", "", "comma-separated model counts to tune for (default: the graph's n)")
	fl.String("device", "auto", "auto | cpu | cuda")
	fl.StringVar(&f.budget, "budget", "0", "time budget of the whole tuning, e.g. 30s (0: no limit; at least one timed round per candidate runs)")
	fl.StringVar(&f.export, "export", "", "write every measurement to this timings file (input of autotune/cmd/fittree)")
	fl.IntVar(&f.reps, "reps", 5, "timed runs per candidate")
	fl.IntVar(&f.warmup, "warmup", 1, "untimed runs per candidate first (at least 1: it also compiles the candidate)")
	fl.Int64Var(&f.seed, "seed", 0, "seed for the generated inputs")
	fl.BoolVar(&f.asJSON, "json", false, "print a JSON summary (no progress bar)")
	addPluginFlag(cmd)
	return cmd
}

// tunedDecision is one row of tune's report.
type tunedDecision struct {
	N         int               `json:"n"`
	Index     int               `json:"decision"`
	Label     string            `json:"label"`
	Winner    string            `json:"winner"`
	Timings   []autotune.Timing `json:"timings"`
	Key       string            `json:"key"`
	Error     string            `json:"error,omitempty"`
	Duplicate bool              `json:"duplicate_of_earlier,omitempty"`
}

func runTune(cmd *cobra.Command, a *app, path string, f tuneFlags) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	budget, err := time.ParseDuration(f.budget)
	if f.budget == "0" {
		budget, err = 0, nil
	}
	if err != nil || budget < 0 {
		return usagef("--budget: %q is not a duration >= 0 (e.g. 30s)", f.budget)
	}
	if f.reps < 1 || f.warmup < 0 {
		return usagef("--reps must be >= 1 and --warmup >= 0")
	}
	ns, err := parseNList(f.nList)
	if err != nil {
		return err
	}
	graphs, err := loadGraphsForNs(path, ns)
	if err != nil {
		return err
	}
	dev, err := openDevice(a, a.v.GetString("device"))
	if err != nil {
		return err
	}
	defer dev.Close()
	if a.v.GetBool("no_cache") {
		fmt.Fprintf(a.stderr, "widejit: warning: --no-cache: the timings are measured and shown but not recorded\n")
	}
	store := openCacheStore(a)
	defer func() {
		if err := store.Close(); err != nil {
			fmt.Fprintf(a.stderr, "widejit: warning: closing the kernel cache: %v\n", err)
		}
	}()
	tuning := engineConfig(a, pluginFlag(cmd)).NewTuning(ctx, store)
	defer tuning.Close()
	comp := jit.NewCompiler(jit.CompilerOptions{Store: store, Version: buildVersion(), Warn: cacheWarner(a)})
	lopts := lowering.Options{Device: engine.DeviceInfo(dev.Info())}
	bar := newProgressBar(a.stderr, !f.asJSON)
	start := time.Now()
	var rows []tunedDecision
	var records []autotune.Record
	for _, g := range graphs {
		inputs, err := g.GenerateInputs(f.seed)
		if err != nil {
			return err
		}
		tuned := map[string]bool{}
		for k := 0; ; k++ {
			_, points, err := lowering.LowerWithDecisions(g, lopts, tuning.Tuner, nil)
			if err != nil {
				return err
			}
			if k >= len(points) {
				break
			}
			p := points[k]
			row := tunedDecision{N: g.N, Index: k, Label: p.Label(), Key: p.Key()}
			if len(p.Candidates) < 2 || tuned[row.Key] {
				row.Winner, row.Duplicate = p.Decision.CandidateID, tuned[row.Key]
				rows = append(rows, row)
				continue
			}
			tuned[row.Key] = true
			opts := autotune.MeasureOptions{Warmup: max(f.warmup, 1), Reps: f.reps}
			if budget > 0 {
				// share what is left evenly among the decisions still to tune (an estimate:
				// the points of the current plan)
				left := budget - time.Since(start)
				opts.Budget = max(left/time.Duration(len(points)-k), time.Millisecond)
			}
			job, closeRunners := tuneJob(g, lopts, tuning.Tuner, comp, dev, inputs, p)
			label := fmt.Sprintf("n=%d %s", g.N, p.Label())
			recs, err := tuning.Tuner.Tune(ctx, []autotune.Job{job}, opts, func(pr autotune.Progress) {
				bar.show(pr.Runs, pr.Of, label)
			})
			closeRunners()
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			if err != nil {
				row.Error = err.Error()
				rows = append(rows, row)
				continue
			}
			rec := recs[0]
			row.Winner, row.Timings = rec.Winner, rec.Timings
			rows = append(rows, row)
			records = append(records, rec)
		}
	}
	bar.done()
	if f.export != "" {
		if err := writeTimingsFile(f.export, []string{path, graphs[0].WeightsPath}, records, fmt.Sprintf("widejit tune %s on %s", path, dev.Info().Name)); err != nil {
			return err
		}
	}
	return printTuneReport(a.stdout, path, dev.Info(), rows, f)
}

// tuneJob is the autotune job of decision point p: each candidate is the whole plan lowered
// with p forced to it (every other decision as the tuner takes it), run on dev. Runners are
// built on a candidate's first (warm-up) run; the returned func frees them.
func tuneJob(g *graph.Graph, lopts lowering.Options, tuner *autotune.Tuner, comp *jit.Compiler, dev jit.Device,
	inputs map[string]*safetensors.Tensor, p lowering.DecisionPoint) (autotune.Job, func()) {
	runners := map[string]*runner.Runner{}
	run := func(c autotune.Candidate) error {
		r := runners[c.ID]
		if r == nil {
			plan, points, err := lowering.LowerWithDecisions(g, lopts, tuner, map[int]string{p.Index: c.ID})
			if err != nil {
				return err
			}
			// the forced lowering must have asked the same question at p.Index
			if p.Index >= len(points) || points[p.Index].Key() != p.Key() {
				return fmt.Errorf("decision %d changed between lowerings (internal error)", p.Index)
			}
			if r, err = runner.New(plan, dev, comp, g); err != nil {
				return err
			}
			runners[c.ID] = r
		}
		_, err := r.Run(inputs)
		return err
	}
	return autotune.Job{Name: p.Label(), Problem: p.Problem, Candidates: p.Candidates, Run: run}, func() {
		for _, r := range runners {
			r.Close()
		}
	}
}

// writeTimingsFile writes the measured timings for a plugin's training (--export), never
// over one of inputs.
func writeTimingsFile(path string, inputs []string, records []autotune.Record, comment string) error {
	return outputs.Write("--export", path, inputs, func(w io.Writer) error { return autotune.WriteTimings(w, records, comment) })
}

func printTuneReport(w io.Writer, path string, info jit.DeviceInfo, rows []tunedDecision, f tuneFlags) error {
	if f.asJSON {
		if rows == nil {
			rows = []tunedDecision{}
		}
		return printJSON(w, map[string]any{"graph": path, "device": autotune.DeviceIdentity(engine.DeviceInfo(info)),
			"decisions": rows, "export": f.export})
	}
	fmt.Fprintf(w, "%s: tuned on %s\n", path, autotune.DeviceIdentity(engine.DeviceInfo(info)))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "N\t#\tDECISION\tWINNER\tTIMINGS (median)")
	recorded := 0
	for _, r := range rows {
		var timings []string
		for _, t := range r.Timings {
			if t.Err != "" {
				timings = append(timings, t.CandidateID+" failed")
				continue
			}
			timings = append(timings, fmt.Sprintf("%s %.3fms", t.CandidateID, float64(t.Median)/float64(time.Millisecond)))
		}
		note := strings.Join(timings, ", ")
		switch {
		case r.Error != "":
			note = "not tuned: " + r.Error
		case r.Duplicate:
			note = "same question as an earlier decision"
		case len(r.Timings) == 0:
			note = "one candidate, nothing to time"
		default:
			recorded++
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", r.N, r.Index, r.Label, r.Winner, note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "recorded %d decisions in the kernel cache", recorded)
	if f.export != "" {
		fmt.Fprintf(w, "; timings written to %s", f.export)
	}
	fmt.Fprintln(w)
	return nil
}

// progressBar draws `\r[####    ] 12/40 label` on a terminal; elsewhere it draws nothing.
type progressBar struct {
	w       io.Writer
	enabled bool
	drawn   bool
}

func newProgressBar(w io.Writer, wanted bool) *progressBar {
	return &progressBar{w: w, enabled: wanted && isTerminal(w)}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (b *progressBar) show(done, total int, label string) {
	if !b.enabled || total <= 0 {
		return
	}
	const width = 30
	filled := min(width*done/total, width)
	if len(label) > 50 {
		label = label[:47] + "..."
	}
	fmt.Fprintf(b.w, "\r[%s%s] %d/%d %-50s", strings.Repeat("#", filled), strings.Repeat(" ", width-filled), done, total, label)
	b.drawn = true
}

func (b *progressBar) done() {
	if b.drawn {
		fmt.Fprintln(b.w)
		b.drawn = false
	}
}

// parseNList parses --n "1,8,64"; empty means the graph's own n (a nil list).
func parseNList(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var ns []int
	for _, part := range strings.Split(s, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(part), &n); err != nil || n < 1 || fmt.Sprint(n) != strings.TrimSpace(part) {
			return nil, usagef("--n: %q is not a list of model counts >= 1 (e.g. 1,8,64)", s)
		}
		if !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	return ns, nil
}

// loadGraphsForNs loads path once per n (nil: once, with the file's n). Only init graphs take
// another n; a weights graph's error says so.
func loadGraphsForNs(path string, ns []int) ([]*graph.Graph, error) {
	if ns == nil {
		g, err := loadGraphArg(path, 0)
		if err != nil {
			return nil, err
		}
		return []*graph.Graph{g}, nil
	}
	var out []*graph.Graph
	for _, n := range ns {
		g, err := loadGraphArg(path, n)
		if err != nil {
			return nil, fmt.Errorf("--n %d: %w", n, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// explainTuning sets f's chooser and device for `graph explain`: the decisions a run on the
// --device would take (recorded in the kernel cache, plugins, heuristic). decisions lists
// them after lowering; done closes the cache and the plugins.
func explainTuning(cmd *cobra.Command, a *app, f *loweringFlags) (decisions func() string, done func(), err error) {
	dev, err := openDevice(a, a.v.GetString("device"))
	if err != nil {
		return nil, nil, err
	}
	f.device = engine.DeviceInfo(dev.Info())
	dev.Close()
	store := openCacheStore(a)
	tuning := engineConfig(a, pluginFlag(cmd)).NewTuning(cmd.Context(), store)
	f.chooser = tuning.Chooser("explain")
	return func() string { return tuning.Explain("explain") }, func() {
		tuning.Close()
		if err := store.Close(); err != nil {
			fmt.Fprintf(a.stderr, "widejit: warning: closing the kernel cache: %v\n", err)
		}
	}, nil
}
