package runjob

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/widejit/widejit"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/engine"
	"github.com/widejit/widejit/internal/errkind"
	"github.com/widejit/widejit/internal/outputs"
)

// Request is one `widejit run`, its flags as given.
type Request struct {
	GraphFile                 string
	N, Batch                  int    // models (0: the graph's; init graphs only); batch of generated inputs (0: the graph's)
	Shard                     string // "I/K": models [floor(I*N/K), floor((I+1)*N/K)) only; "" for all
	Inputs, Out, Check, Trace string // files ("" for none; no Inputs: generated from Seed)
	Seed                      int64
	Mode                      string // wide | sequential: the mode whose outputs count
	Compare                   bool   // run both modes and compare their times and outputs
	Repeat                    int    // runs after the first, for the median time
	Dropout                   string // eval | mc (Monte Carlo masks from Seed)
	Explain, Profile          bool
	Options                   []widejit.Option // device, threads, cache, plugins, limits
	// Graph loads the graph, and bounds the inputs read or generated: the memory limit and
	// the paths the graph may name (its N is N above).
	Graph graph.Options
}

// Job is a Request made ready: its graph (restricted to the shard), inputs and expected
// outputs.
type Job struct {
	Request
	Graph            *graph.Graph
	shard            *[2]int
	inputs, expected map[string]*safetensors.Tensor
	inputsID         string // the inputs' identity in Out's metadata (outputs.InputsFile, InputsGenerated)
}

// Result is what a Job's runs produced.
type Result struct {
	Outputs map[string]*safetensors.Tensor // the main mode's, every graph output stacked [N, ...]
	// Extra are the facts (models, devices, timings, plan, cache, compare, profile) that
	// `run --json` merges into its summary.
	Extra                  map[string]any
	Explain                string // the main mode's plan explained (Request.Explain)
	Compile, First, Median time.Duration
	Repeats                int // runs in Median
	Launches, Kernels      int
	WideMedian, SeqMedian  time.Duration // Request.Compare
	Speedup                float64
	KernelTimes            []widejit.KernelTime // Request.Profile
}

// Prepare loads the graph, restricts it to the shard, refuses an output that would replace
// an input, reads or generates the inputs and reads the expected outputs. A file in error
// is errkind.Input, a bad flag errkind.Usage.
func Prepare(r Request) (*Job, error) {
	gopts := r.Graph
	gopts.N = r.N
	g, err := engine.LoadGraph(r.GraphFile, gopts)
	if err != nil {
		return nil, err
	}
	if r.Batch < 0 || r.Batch != 0 && r.Inputs != "" {
		return nil, errkind.Usagef("--batch must be >= 1, and only for generated inputs (--inputs carry their batch size)")
	}
	j := &Job{Request: r}
	if j.shard, err = ParseShard(r.Shard, g.N); err != nil {
		return nil, err
	}
	if j.shard != nil {
		if r.Dropout == "mc" {
			return nil, errkind.Usagef("--shard with --dropout mc: Monte Carlo masks are drawn over all N models; run them unsharded")
		}
		if g, err = g.Models(graph.ShardRange(j.shard[0], j.shard[1], g.N)); err != nil {
			return nil, err
		}
	}
	j.Graph = g
	// before the work: an output that would replace an input is refused at once
	for _, w := range [][2]string{{"--out", r.Out}, {"--trace", r.Trace}} {
		if err := outputs.RefuseInput(w[0], w[1], j.inputFiles()); err != nil {
			return nil, err
		}
	}
	if r.Inputs != "" {
		j.Graph, j.inputs, err = g.ReadInputsAnyBatch(r.Inputs) // at the inputs' batch size
	} else {
		if r.Batch != 0 {
			j.Graph, err = g.WithBatch(r.Batch)
		}
		if err == nil {
			j.inputs, err = j.Graph.GenerateInputs(r.Seed)
		}
	}
	if err == nil && r.Out != "" {
		if r.Inputs != "" {
			j.inputsID, err = outputs.InputsFile(r.Inputs)
		} else {
			j.inputsID = outputs.InputsGenerated(r.Seed, j.Graph.Batch())
		}
	}
	if err != nil {
		return nil, errkind.Input{Err: err}
	}
	if r.Check != "" {
		if j.expected, err = outputs.ReadExpected(j.Graph, r.Check); err != nil {
			return nil, errkind.Input{Err: err}
		}
	}
	return j, nil
}

// ParseShard reads --shard I/K ("" is nil) and checks it against n models.
func ParseShard(s string, n int) (*[2]int, error) {
	if s == "" {
		return nil, nil
	}
	is, ks, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	k, err2 := strconv.Atoi(strings.TrimSpace(ks))
	switch {
	case !ok || err1 != nil || err2 != nil:
		return nil, errkind.Usagef("--shard %q: expected I/K (shard I of K, counting from 0), e.g. --shard 0/4", s)
	case k < 1 || i < 0 || i >= k:
		return nil, errkind.Usagef("--shard %s: need 0 <= I < K (shards are numbered 0 to K-1)", s)
	case k > n:
		return nil, errkind.Usagef("--shard %s: K=%d shards of N=%d models would leave some empty; need K <= N", s, k, n)
	}
	return &[2]int{i, k}, nil
}

// inputFiles are the files the run reads: the graph, its weights, --inputs and --check.
func (j *Job) inputFiles() []string {
	return []string{j.GraphFile, j.Graph.WeightsPath, j.Inputs, j.Check}
}

// modeRun is one mode's execution: outputs and timings.
type modeRun struct {
	model   *widejit.Model
	outputs map[string]*safetensors.Tensor
	first   time.Duration
	median  time.Duration
	repeats int
}

// Execute loads the model in each mode (every mode compiled before anything runs: each Load
// closes the kernel cache, freeing it for other processes), runs each once and Repeat more
// times, and writes the trace.
func (j *Job) Execute(ctx context.Context) (*Result, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if j.Repeat < 0 {
		return nil, errkind.Usagef("--repeat must be >= 0, got %d", j.Repeat)
	}
	if j.Dropout != "eval" && j.Dropout != "mc" {
		return nil, errkind.Usagef("--dropout must be eval or mc, got %q", j.Dropout)
	}
	lo, hi, total := j.Graph.ModelRange()
	opts := append(append([]widejit.Option(nil), j.Options...), widejit.WithN(total))
	if lo != 0 || hi != total {
		opts = append(opts, widejit.WithModels(lo, hi))
	}
	if j.Trace != "" {
		opts = append(opts, widejit.WithTrace())
	}
	if j.Dropout == "mc" {
		opts = append(opts, widejit.WithMonteCarloDropout(j.Seed))
	}
	if j.Profile {
		opts = append(opts, widejit.WithProfile())
	}
	modes := []string{j.Mode}
	if j.Compare {
		modes = []string{"wide", "sequential"}
	}
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
		m, err := widejit.Load(j.GraphFile, o...)
		if err != nil {
			return nil, err
		}
		runs[mode] = &modeRun{model: m}
	}
	for _, mode := range modes {
		if err := runs[mode].execute(ctx, j.inputs, j.Repeat); err != nil {
			if len(modes) == 1 { // the Go API's error, word for word (the Python package's too)
				return nil, err
			}
			return nil, fmt.Errorf("mode %s: %w", mode, err)
		}
	}
	main := runs[j.Mode]
	if main == nil {
		main = runs["wide"]
	}
	m := main.model
	res := &Result{Outputs: main.outputs, Compile: m.CompileTime(), First: main.first, Median: main.median,
		Repeats: main.repeats, Launches: m.Launches(), Kernels: m.Kernels()}
	if j.Explain {
		res.Explain = m.Explain()
	}
	if j.Trace != "" {
		if err := outputs.Write("--trace", j.Trace, j.inputFiles(), m.WriteTrace); err != nil {
			return nil, err
		}
	}
	res.Extra = map[string]any{
		"models":  map[string]any{"lo": lo, "hi": hi, "n": total},
		"devices": m.Devices(),
		"device":  m.Device(),
		"timing": map[string]any{"compile_ms": Millis(res.Compile), "first_run_ms": Millis(main.first),
			"median_ms": Millis(main.median), "repeats": main.repeats},
		"plan":  map[string]any{"launches": m.Launches(), "kernels": m.Kernels(), "strategies": m.Strategies()},
		"cache": m.CacheReport(),
	}
	if j.Dropout == "mc" {
		res.Extra["dropout"] = map[string]any{"mode": "mc", "seed": j.Seed}
	}
	if j.Compare {
		wide, seq := runs["wide"], runs["sequential"]
		res.WideMedian, res.SeqMedian = wide.median, seq.median
		if wide.median > 0 {
			res.Speedup = float64(seq.median) / float64(wide.median)
		}
		res.Extra["compare"] = map[string]any{"wide_median_ms": Millis(wide.median), "sequential_median_ms": Millis(seq.median),
			"speedup": res.Speedup, "max_abs_diff": outputs.MaxAbsDiff(wide.outputs, seq.outputs)}
	}
	if j.Profile {
		res.KernelTimes = m.KernelTimes()
		var profile []map[string]any
		for _, k := range res.KernelTimes {
			profile = append(profile, map[string]any{"kernel": k.Kernel, "template": k.Template, "prepare": k.Prepare, "ms": Millis(k.PerRun)})
		}
		res.Extra["kernel_ms"] = profile
	}
	return res, nil
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

// WriteOut writes the outputs, in graph order, to Out with the metadata that says which
// models of which graph they are (never over an input).
func (j *Job) WriteOut(res *Result) error {
	ts := make([]*safetensors.Tensor, 0, len(j.Graph.Outputs))
	for _, o := range j.Graph.Outputs {
		ts = append(ts, res.Outputs[o.Name])
	}
	meta, err := outputs.Metadata(j.Graph, j.shard, j.inputsID)
	if err != nil {
		return err
	}
	return outputs.Write("--out", j.Out, j.inputFiles(), func(w io.Writer) error { return safetensors.Encode(w, ts, meta) })
}

// Diffs compares the outputs with the expected ones (nil without Check); rtol < 0 takes
// each output dtype's default.
func (j *Job) Diffs(res *Result, rtol, atol float64) []outputs.Diff {
	if j.expected == nil {
		return nil
	}
	return outputs.Compare(j.Graph, res.Outputs, j.expected, rtol, atol)
}

// Millis is d in milliseconds, to the microsecond.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
