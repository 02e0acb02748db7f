package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func init() { extend("kernel", func(a *app, c *cobra.Command) { c.AddCommand(newKernelDumpCmd(a)) }) }

func newKernelDumpCmd(a *app) *cobra.Command {
	var f loweringFlags
	var dir string
	cmd := &cobra.Command{
		Use:   "dump GRAPH.json --dir DIR",
		Short: "Write every kernel a graph needs (.py), its plan (plan.txt) and plan.json",
		Long: `Lowers GRAPH.json and writes into DIR every rendered kernel as <name>.py (standalone Triton
kernels), the readable plan as plan.txt and the machine-readable plan as plan.json (buffers,
launches with grids and arguments, outputs).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return usagef("kernel dump: --dir is required")
			}
			plan, err := f.lower(args[0])
			if err != nil {
				return err
			}
			files, err := plan.WriteDump(dir)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "wrote %d files to %s (%d kernels, %d launches)\n", len(files), dir, len(plan.Kernels()), len(plan.Launches))
			return err
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&dir, "dir", "", "output directory")
	return cmd
}
