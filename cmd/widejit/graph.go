package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/engine"
)

func newGraphCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "Inspect graph files (widejit.graph/v1)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("graph needs a subcommand (%s)", strings.Join(subNames(cmd), ", "))
		},
	}
	cmd.AddCommand(newGraphCheckCmd(a), newGraphExplainCmd(a))
	return cmd
}

func subNames(cmd *cobra.Command) []string {
	var out []string
	for _, c := range cmd.Commands() {
		out = append(out, c.Name())
	}
	return out
}

func newGraphCheckCmd(a *app) *cobra.Command {
	var asJSON bool
	var n int
	cmd := &cobra.Command{
		Use:   "check GRAPH.json",
		Short: "Validate a graph (and its weights) and print every node's output shapes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g, err := engine.LoadGraph(args[0], engineConfig(a, nil).GraphOptions(n))
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, graph.Describe(g))
			}
			return writeGraphTable(a.stdout, g)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&n, "n", 0, "override n (init graphs only)")
	return cmd
}

func outputsString(n *graph.Node) string {
	parts := make([]string, len(n.Outputs))
	for i, t := range n.Outputs {
		parts[i] = t.String()
	}
	if n.Tuple {
		return "(" + strings.Join(parts, ", ") + ")"
	}
	return parts[0]
}

func inputsString(n *graph.Node) string {
	parts := make([]string, len(n.Inputs))
	for i, in := range n.Inputs {
		parts[i] = in.String()
	}
	return strings.Join(parts, ", ")
}

func writeGraphTable(w io.Writer, g *graph.Graph) error {
	source := "weights " + g.WeightsPath
	if g.Init != nil {
		source = fmt.Sprintf("init seed %d", g.Init.Seed)
	}
	fmt.Fprintf(w, "%s: ok: n=%d, %d inputs, %d params, %d nodes, %d outputs, %s\n",
		g.File, g.N, len(g.Inputs), len(g.Params), len(g.Nodes), len(g.Outputs), source)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tOP\tINPUTS\tOUTPUT")
	for _, in := range g.Inputs {
		kind := "input"
		if !in.PerModel {
			kind = "input (shared)"
		}
		fmt.Fprintf(tw, "%s\t%s\t\t%s\n", in.Name, kind, in.Type)
	}
	for _, n := range g.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n.Name, n.Op, inputsString(n), outputsString(n))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	outs := make([]string, len(g.Outputs))
	for i, o := range g.Outputs {
		outs[i] = fmt.Sprintf("%s %s", o.Name, o.Type)
	}
	_, err := fmt.Fprintf(w, "outputs (each [n, ...]): %s\n", strings.Join(outs, ", "))
	return err
}
