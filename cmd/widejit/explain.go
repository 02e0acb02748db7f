package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/lowering"
)

func init() { extend("graph", func(a *app, c *cobra.Command) { c.AddCommand(newGraphExplainCmd(a)) }) }

// loweringFlags are the options that change a plan, shared by `graph explain` and `kernel dump`.
type loweringFlags struct {
	n        int
	mode     string
	noFusion bool
	strategy string
	dropout  string
	seed     int64
	// chooser and device, when set, decide strategies (graph explain: recorded decisions,
	// plugins, heuristic; see tune.go)
	chooser lowering.Chooser
	device  autotune.DeviceInfo
}

func (f *loweringFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&f.n, "n", 0, "override n (init graphs only)")
	fl.StringVar(&f.mode, "mode", "wide", "wide | sequential (model by model)")
	fl.BoolVar(&f.noFusion, "no-fusion", false, "one kernel per node (the unfused form)")
	fl.StringVar(&f.strategy, "strategy", "", "force every kernel's strategy: batched | sequential")
	fl.StringVar(&f.dropout, "dropout", "eval", "eval | mc")
	fl.Int64Var(&f.seed, "seed", 0, "seed of Monte Carlo dropout masks")
}

func (f *loweringFlags) lower(path string) (*lowering.Plan, error) {
	if f.mode != "wide" && f.mode != "sequential" {
		return nil, usagef("--mode must be wide or sequential, got %q", f.mode)
	}
	if f.strategy != "" && f.strategy != lowering.Batched && f.strategy != lowering.Sequential {
		return nil, usagef("--strategy must be batched or sequential, got %q", f.strategy)
	}
	if f.dropout != "eval" && f.dropout != "mc" {
		return nil, usagef("--dropout must be eval or mc, got %q", f.dropout)
	}
	g, err := loadGraphArg(path, f.n)
	if err != nil {
		return nil, err
	}
	return lowering.Lower(g, lowering.Options{NoFusion: f.noFusion, Strategy: f.strategy,
		ModelMajor: f.mode == "sequential", Dropout: f.dropout, Seed: f.seed, Chooser: f.chooser, Device: f.device})
}

func newGraphExplainCmd(a *app) *cobra.Command {
	var f loweringFlags
	var showPlan bool
	cmd := &cobra.Command{
		Use:   "explain GRAPH.json",
		Short: "Show which nodes go into which kernel, with which strategy and why",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			decisions, done, err := explainTuning(cmd, a, &f)
			if err != nil {
				return err
			}
			defer done()
			plan, err := f.lower(args[0])
			if err != nil {
				return err
			}
			if _, err := fmt.Fprint(a.stdout, lowering.Explain(plan), decisions()); err != nil {
				return err
			}
			if showPlan {
				_, err = fmt.Fprint(a.stdout, "\n", plan.String())
			}
			return err
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&showPlan, "plan", false, "also print the plan (buffers, launches, arguments)")
	cmd.Flags().String("device", "auto", "the device whose recorded decisions apply: auto | cpu | cuda")
	addPluginFlag(cmd)
	return cmd
}
