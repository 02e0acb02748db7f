package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/internal/outputs"
)

func newMergeCmd(a *app) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge PART.safetensors... --out ALL.safetensors",
		Short: "Stack the outputs of `run --shard` parts into the outputs of all N models",
		Long: `Merge the --out files of sharded runs (widejit run --shard I/K --out PART) into one file
holding every output stacked [N, ...] in model order, whatever the order of the parts: the
same bytes an unsharded run writes with --out. Each part's metadata says which models it
holds, out of how many, the identity of the graph and weights that computed it and that of
its inputs; merge refuses parts of another graph or other weights, parts computed on other
inputs (another inputs file, seed or batch size), another N, other outputs (names, dtypes or
shapes), parts that overlap (or a part given twice), and a missing range of models, naming
the files (exit 3). --out must not name a part. The parts are copied into --out piece by
piece, never held in memory.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("merge needs --out ALL.safetensors")
			}
			n, models, err := outputs.Merge(args, out)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "merged %d parts (%d models, %d outputs) into %s\n", len(args), n, models, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the merged outputs, stacked [N, ...], to this safetensors file")
	return cmd
}
