package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/internal/engine"
)

// planFlags are the options that change a plan, shared by `graph explain` and `kernel dump`.
type planFlags struct{ engine.PlanOptions }

func (f *planFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&f.N, "n", 0, "override n (init graphs only)")
	fl.StringVar(&f.Mode, "mode", "wide", "wide | sequential (model by model)")
	fl.BoolVar(&f.NoFusion, "no-fusion", false, "one kernel per node (the unfused form)")
	fl.StringVar(&f.Strategy, "strategy", "", "force every kernel's strategy: batched | sequential")
	fl.StringVar(&f.Dropout, "dropout", "eval", "eval | mc")
	fl.Int64Var(&f.Seed, "seed", 0, "seed of Monte Carlo dropout masks")
}

func newGraphExplainCmd(a *app) *cobra.Command {
	var f planFlags
	var showPlan bool
	cmd := &cobra.Command{
		Use:   "explain GRAPH.json",
		Short: "Show which nodes go into which kernel, with which strategy and why",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := engineConfig(a, pluginFlag(cmd)).Explain(cmd.Context(), args[0], f.PlanOptions, showPlan)
			if err == nil {
				_, err = fmt.Fprint(a.stdout, text)
			}
			return err
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&showPlan, "plan", false, "also print the plan (buffers, launches, arguments)")
	cmd.Flags().String("device", "auto", "the device whose recorded decisions apply: auto or a backend (widejit info lists them)")
	addPluginFlag(cmd)
	return cmd
}
