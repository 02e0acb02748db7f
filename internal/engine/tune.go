package engine

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/lowering"
	"github.com/widejit/widejit/runner"
)

// LoadGraphs loads the graph at path once per n of ns (nil: once, with the file's n). Only
// init graphs take another n; a weights graph's error says so.
func LoadGraphs(path string, ns []int) ([]*graph.Graph, error) {
	if ns == nil {
		g, err := LoadGraph(path, 0)
		if err != nil {
			return nil, err
		}
		return []*graph.Graph{g}, nil
	}
	var out []*graph.Graph
	for _, n := range ns {
		g, err := LoadGraph(path, n)
		if err != nil {
			return nil, fmt.Errorf("--n %d: %w", n, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// TuneOptions are what `widejit tune` measures.
type TuneOptions struct {
	Ns     []int         // model counts to tune for (nil: the graph's n)
	Budget time.Duration // of the whole tuning (0: no limit; every candidate runs at least one round)
	Reps   int           // timed runs per candidate
	Warmup int           // untimed runs per candidate first (at least 1: it compiles the candidate)
	Seed   int64         // of the generated inputs
	// Progress, if set, is told of every run: done of total for the decision labelled.
	Progress func(done, total int, label string)
}

// TunedDecision is one decision point of a tuned plan and its outcome.
type TunedDecision struct {
	N         int               `json:"n"`
	Index     int               `json:"decision"`
	Label     string            `json:"label"`
	Winner    string            `json:"winner"`
	Timings   []autotune.Timing `json:"timings"`
	Key       string            `json:"key"`
	Error     string            `json:"error,omitempty"`
	Duplicate bool              `json:"duplicate_of_earlier,omitempty"`
}

// TuneReport is what Tune measured and recorded.
type TuneReport struct {
	Device     string // the device's identity (autotune.DeviceIdentity), as the cache keys it
	DeviceName string
	Decisions  []TunedDecision
	Records    []autotune.Record
	Weights    string // the graph's weights file ("" for an init graph)
}

// WriteTimings writes every measurement as a timings file (autotune/cmd/fittree's input).
func (r *TuneReport) WriteTimings(w io.Writer, comment string) error {
	return autotune.WriteTimings(w, r.Records, comment)
}

// Tune is `widejit tune`: for each N, lower the graph at path and, for every decision lowering
// takes, time the plan with each candidate on the configured device (warm-up runs, then
// repetitions interleaved across candidates, median), in plan order, each with the earlier
// winners in place. Winners and timings are recorded in the kernel cache.
func (c Config) Tune(ctx context.Context, path string, o TuneOptions) (*TuneReport, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	graphs, err := LoadGraphs(path, o.Ns)
	if err != nil {
		return nil, err
	}
	dev, err := OpenDevice(c.Device, c.Threads)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	if c.NoCache {
		c.Warning("--no-cache: the timings are measured and shown but not recorded")
	}
	store := c.OpenCache()
	defer c.closeCache(store)
	tuning := c.NewTuning(ctx, store)
	defer tuning.Close()
	comp := c.Compiler(store)
	lopts := c.loweringOptions(DeviceInfo(dev.Info()))
	report := &TuneReport{Device: autotune.DeviceIdentity(lopts.Device), DeviceName: dev.Info().Name, Weights: graphs[0].WeightsPath}
	progress := o.Progress
	if progress == nil {
		progress = func(int, int, string) {}
	}
	start := time.Now()
	for _, g := range graphs {
		inputs, err := g.GenerateInputs(o.Seed)
		if err != nil {
			return nil, err
		}
		tuned := map[string]bool{}
		for k := 0; ; k++ {
			_, points, err := lowering.LowerWithDecisions(g, lopts, tuning.Tuner, nil)
			if err != nil {
				return nil, err
			}
			if k >= len(points) {
				break
			}
			p := points[k]
			row := TunedDecision{N: g.N, Index: k, Label: p.Label(), Key: p.Key()}
			if len(p.Candidates) < 2 || tuned[row.Key] {
				row.Winner, row.Duplicate = p.Decision.CandidateID, tuned[row.Key]
				report.Decisions = append(report.Decisions, row)
				continue
			}
			tuned[row.Key] = true
			opts := autotune.MeasureOptions{Warmup: max(o.Warmup, 1), Reps: o.Reps}
			if o.Budget > 0 {
				// share what is left evenly among the decisions still to tune (an estimate:
				// the points of the current plan)
				left := o.Budget - time.Since(start)
				opts.Budget = max(left/time.Duration(len(points)-k), time.Millisecond)
			}
			job, closeRunners := tuneJob(g, lopts, tuning.Tuner, comp, dev, inputs, p)
			label := fmt.Sprintf("n=%d %s", g.N, p.Label())
			recs, err := tuning.Tuner.Tune(ctx, []autotune.Job{job}, opts, func(pr autotune.Progress) {
				progress(pr.Runs, pr.Of, label)
			})
			closeRunners()
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, ctxErr
			}
			if err != nil {
				row.Error = err.Error()
				report.Decisions = append(report.Decisions, row)
				continue
			}
			rec := recs[0]
			row.Winner, row.Timings = rec.Winner, rec.Timings
			report.Decisions = append(report.Decisions, row)
			report.Records = append(report.Records, rec)
		}
	}
	return report, nil
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
