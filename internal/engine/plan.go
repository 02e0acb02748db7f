package engine

import (
	"context"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/errkind"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/lowering"
)

// LoadGraph loads the graph at path with o (o.N models, 0: the file's n); a bad file is an
// errkind.Input error, a bad n errkind.Usage.
func LoadGraph(path string, o graph.Options) (*graph.Graph, error) {
	if o.N < 0 {
		return nil, errkind.Usagef("--n must be >= 1, got %d", o.N)
	}
	g, err := graph.LoadWithOptions(path, o)
	if err != nil {
		return nil, errkind.Input{Err: err}
	}
	return g, nil
}

// PlanOptions are the settings that change a plan, as `graph explain` and `kernel dump`
// take them.
type PlanOptions struct {
	N        int    // models (0: the graph file's; another n for init graphs only)
	Mode     string // wide | sequential (model by model)
	NoFusion bool   // one kernel per node
	Strategy string // "", or every kernel's strategy forced: batched | sequential
	Dropout  string // eval | mc
	Seed     int64  // of Monte Carlo dropout masks
	// Chooser and Device, when set, decide strategies (recorded decisions, plugins,
	// heuristic); nil is lowering's heuristic for a generic device.
	Chooser        lowering.Chooser
	Device         jit.DeviceInfo
	BackendOptions map[string]string
	// AllowOutsidePaths lets the graph name files outside its directory (graph.Options).
	AllowOutsidePaths bool
	// Float32MatmulPrecision: lowering.Options' (Config.Plan sets it for its device).
	Float32MatmulPrecision string
	NoIntSpecialization    bool
}

// Lower loads the graph at path and plans it; bad options are errkind.Usage.
func (o PlanOptions) Lower(path string) (*lowering.Plan, error) {
	if o.Mode != "wide" && o.Mode != "sequential" {
		return nil, errkind.Usagef("--mode must be wide or sequential, got %q", o.Mode)
	}
	if o.Strategy != "" && o.Strategy != lowering.Batched && o.Strategy != lowering.Sequential {
		return nil, errkind.Usagef("--strategy must be batched or sequential, got %q", o.Strategy)
	}
	if o.Dropout != "eval" && o.Dropout != "mc" {
		return nil, errkind.Usagef("--dropout must be eval or mc, got %q", o.Dropout)
	}
	g, err := LoadGraph(path, graph.Options{N: o.N, AllowOutsidePaths: o.AllowOutsidePaths})
	if err != nil {
		return nil, err
	}
	return lowering.Lower(g, lowering.Options{NoFusion: o.NoFusion, Strategy: o.Strategy,
		ModelMajor: o.Mode == "sequential", Dropout: o.Dropout, Seed: o.Seed, Chooser: o.Chooser, Device: o.Device,
		BackendOptions: o.BackendOptions, Float32MatmulPrecision: o.Float32MatmulPrecision,
		NoIntSpecialization: o.NoIntSpecialization})
}

// Plan lowers the graph at path as a run on the configured device would (decisions recorded
// in the kernel cache, plugins, heuristic); why is the account of each decision's source.
func (c Config) Plan(ctx context.Context, path string, o PlanOptions) (plan *lowering.Plan, why string, err error) {
	dev, err := OpenDevice(c.Device, c.Threads, c.BackendOptions)
	if err != nil {
		return nil, "", err
	}
	o.Device, o.BackendOptions = dev.Info(), c.BackendOptions
	o.Float32MatmulPrecision = c.LoweringPrecision(o.Device.Caps)
	o.NoIntSpecialization = c.NoIntSpecialization
	dev.Close()
	store := c.OpenCache()
	defer c.closeCache(store)
	tuning := c.NewTuning(ctx, store)
	defer tuning.Close()
	o.Chooser = tuning.Chooser("explain")
	o.AllowOutsidePaths = o.AllowOutsidePaths || c.AllowOutsidePaths
	if plan, err = o.Lower(path); err != nil {
		return nil, "", err
	}
	return plan, tuning.Explain("explain"), nil
}

// Explain is `graph explain`: which nodes of the graph at path go into which kernel, with
// which strategy and why, as a run on the configured device would decide, and with showPlan
// the plan itself.
func (c Config) Explain(ctx context.Context, path string, o PlanOptions, showPlan bool) (string, error) {
	plan, why, err := c.Plan(ctx, path, o)
	if err != nil {
		return "", err
	}
	text := lowering.Explain(plan) + why
	if showPlan {
		text += "\n" + plan.String()
	}
	return text, nil
}
