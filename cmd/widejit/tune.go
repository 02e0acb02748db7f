package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/internal/engine"
	"github.com/widejit/widejit/internal/outputs"
)

// tune.go: `widejit tune`, and the --plugin flag of the commands that choose strategies
// (recorded decisions from the kernel cache, then --plugin / config plugins, then lowering's
// heuristic).

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
	fl.String("device", "auto", "auto or a backend: cpu, cuda, ... (widejit info lists them)")
	fl.StringVar(&f.budget, "budget", "0", "time budget of the whole tuning, e.g. 30s (0: no limit; at least one timed round per candidate runs)")
	fl.StringVar(&f.export, "export", "", "write every measurement to this timings file (input of autotune/cmd/fittree)")
	fl.IntVar(&f.reps, "reps", 5, "timed runs per candidate")
	fl.IntVar(&f.warmup, "warmup", 1, "untimed runs per candidate first (at least 1: it also compiles the candidate)")
	fl.Int64Var(&f.seed, "seed", 0, "seed for the generated inputs")
	fl.BoolVar(&f.asJSON, "json", false, "print a JSON summary (no progress bar)")
	addPluginFlag(cmd)
	return cmd
}

func runTune(cmd *cobra.Command, a *app, path string, f tuneFlags) error {
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
	bar := newProgressBar(a.stderr, !f.asJSON)
	rep, err := engineConfig(a, pluginFlag(cmd)).Tune(cmd.Context(), path, engine.TuneOptions{Ns: ns, Budget: budget,
		Reps: f.reps, Warmup: f.warmup, Seed: f.seed, Progress: bar.show})
	bar.done()
	if err != nil {
		return err
	}
	if f.export != "" {
		comment := fmt.Sprintf("widejit tune %s on %s", path, rep.DeviceName)
		err := outputs.Write("--export", f.export, []string{path, rep.Weights}, func(w io.Writer) error { return rep.WriteTimings(w, comment) })
		if err != nil {
			return err
		}
	}
	return printTuneReport(a.stdout, path, rep, f)
}

func printTuneReport(w io.Writer, path string, rep *engine.TuneReport, f tuneFlags) error {
	rows := rep.Decisions
	if f.asJSON {
		if rows == nil {
			rows = []engine.TunedDecision{}
		}
		recorded := 0
		if rep.NotRecorded == "" {
			recorded = countRecorded(rows)
		}
		return printJSON(w, map[string]any{"graph": path, "device": rep.Device, "decisions": rows, "export": f.export,
			"recorded": recorded, "not_recorded": rep.NotRecorded})
	}
	fmt.Fprintf(w, "%s: tuned on %s\n", path, rep.Device)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "N\t#\tDECISION\tWINNER\tTIMINGS (median)")
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
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", r.N, r.Index, r.Label, r.Winner, note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.NotRecorded != "" {
		fmt.Fprintf(w, "%d decisions tuned, none recorded (%s)", countRecorded(rows), rep.NotRecorded)
	} else {
		fmt.Fprintf(w, "recorded %d decisions in the kernel cache", countRecorded(rows))
	}
	if f.export != "" {
		fmt.Fprintf(w, "; timings written to %s", f.export)
	}
	fmt.Fprintln(w)
	return nil
}

// countRecorded counts the decisions tune records: those it measured.
func countRecorded(rows []engine.TunedDecision) int {
	n := 0
	for _, r := range rows {
		if r.Error == "" && !r.Duplicate && len(r.Timings) > 0 {
			n++
		}
	}
	return n
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
