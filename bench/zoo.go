package main

import (
	"embed"
	"fmt"
	"slices"
	"time"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/lowering"
	"github.com/widejit/widejit/runner"
)

// The zoo: init graphs (weights generated from a seed), so any N runs without weight files.
//
//go:embed zoo/*.json
var zooFiles embed.FS

// zooModels is the zoo in report order.
var zooModels = []string{"mlp", "deep_mlp", "resblock", "convnet",
	"linear256", "linear_odd", "linear1024", "mlp1024", "conv3x3", "conv64", "transformer", "norm_softmax"}

// zooDefaultNs is each case's N sweep when --n is not given: 1 to 128 where a run of all
// contenders stays cheap enough for the default --budget on 2 cores, fewer and smaller Ns for
// the convolutions and the transformer block, and the N of issue #11 for its cases (linear256
// and linear_odd at 33, mlp1024 at 16, conv3x3 at 12).
var zooDefaultNs = map[string][]int{
	"mlp":          {1, 8, 32, 128},
	"deep_mlp":     {1, 8, 32, 128},
	"resblock":     {1, 8, 32},
	"convnet":      {1, 8, 32},
	"linear256":    {1, 8, 33, 128},
	"linear_odd":   {1, 8, 33, 128},
	"linear1024":   {1, 8, 32},
	"mlp1024":      {1, 4, 16, 32},
	"conv3x3":      {1, 4, 12},
	"conv64":       {1, 4, 16},
	"transformer":  {1, 4, 16},
	"norm_softmax": {1, 8, 32, 128},
}

func isZooModel(name string) bool { return slices.Contains(zooModels, name) }

// loadZooModel parses bench/zoo/NAME.json with n models.
func loadZooModel(name string, n int) (*graph.Graph, error) {
	path := "zoo/" + name + ".json"
	data, err := zooFiles.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("zoo model %q: %w", name, err)
	}
	return graph.Parse("bench/"+path, data, graph.Options{N: n})
}

// widejitPlan is one compiled plan (wide or sequential) ready to run.
type widejitPlan struct {
	mode    string
	runner  *runner.Runner
	plan    *lowering.Plan
	inputs  map[string]*safetensors.Tensor
	compile time.Duration                  // lowering + kernel compilation + weight upload
	last    map[string]*safetensors.Tensor // the previous call's outputs, whose memory the next reuses
}

// newWidejitPlan lowers g for dev ("wide" or "sequential", as `widejit run --mode`) and
// compiles it with a fresh in-memory compiler, so compile time is a cold compile.
func newWidejitPlan(g *graph.Graph, dev jit.Device, mode string, inputs map[string]*safetensors.Tensor) (*widejitPlan, error) {
	opts := lowering.Options{ModelMajor: mode == "sequential", Device: dev.Info()}
	start := time.Now()
	plan, err := lowering.Lower(g, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: lowering (%s): %w", g.File, mode, err)
	}
	comp := jit.NewCompiler(jit.CompilerOptions{Version: "bench"})
	r, err := runner.New(plan, dev, comp, g)
	if err != nil {
		return nil, fmt.Errorf("%s: compiling (%s): %w", g.File, mode, err)
	}
	return &widejitPlan{mode: mode, runner: r, plan: plan, inputs: inputs, compile: time.Since(start)}, nil
}

func (p *widejitPlan) Name() string { return "widejit " + p.mode }

// Time runs the plan calls times (inputs uploaded, outputs read back each time, as a user of
// Runner.Run sees it).
func (p *widejitPlan) Time(calls int) (time.Duration, error) {
	start := time.Now()
	for i := 0; i < calls; i++ {
		// the outputs' memory is reused from call to call, as PyTorch's caching allocator does
		outs, err := p.runner.RunInto(p.inputs, p.last)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", p.Name(), err)
		}
		p.last = outs
	}
	return time.Since(start), nil
}

func (p *widejitPlan) Close() { p.runner.Close() }

// maxRelDiff is max|a-b| / max|b| over every output both maps hold (b is the reference).
func maxRelDiff(a, b map[string]*safetensors.Tensor) (float64, error) {
	worst := 0.0
	for name, tb := range b {
		ta := a[name]
		if ta == nil {
			return 0, fmt.Errorf("output %q is missing", name)
		}
		va, err := ta.Float64s()
		if err != nil {
			return 0, err
		}
		vb, err := tb.Float64s()
		if err != nil {
			return 0, err
		}
		if len(va) != len(vb) {
			return 0, fmt.Errorf("output %q: %d values against %d", name, len(va), len(vb))
		}
		diff, scale := 0.0, 0.0
		for i := range va {
			d := va[i] - vb[i]
			if d != d { // NaN
				return 0, fmt.Errorf("output %q has NaN at %d", name, i)
			}
			diff = max(diff, abs(d))
			scale = max(scale, abs(vb[i]))
		}
		if scale == 0 {
			scale = 1
		}
		worst = max(worst, diff/scale)
	}
	return worst, nil
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
