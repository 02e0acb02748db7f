package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/engine"
	"github.com/widejit/widejit/internal/outputs"
)

// shard.go: `widejit run --shard I/K` (models [floor(I*N/K), floor((I+1)*N/K)) only), the
// metadata that says which models an output file holds, several devices (--device
// cuda:0,cuda:1) and --trace.

// checkDeviceSetting accepts what engine.ParseDevices does (cuda:all without asking the
// driver: that is the run's business).
func checkDeviceSetting(device string) error {
	if device == "cuda:all" {
		return nil
	}
	if _, err := engine.ParseDevices(device); err != nil {
		return usagef("device (--device, WIDEJIT_DEVICE or the config file): %v", err)
	}
	return nil
}

// shardOf reads --shard I/K (nil when not given) and checks it against n models.
func shardOf(cmd *cobra.Command, n int) (*[2]int, error) {
	s, _ := cmd.Flags().GetString("shard")
	if s == "" {
		return nil, nil
	}
	is, ks, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	k, err2 := strconv.Atoi(strings.TrimSpace(ks))
	switch {
	case !ok || err1 != nil || err2 != nil:
		return nil, usagef("--shard %q: expected I/K (shard I of K, counting from 0), e.g. --shard 0/4", s)
	case k < 1 || i < 0 || i >= k:
		return nil, usagef("--shard %s: need 0 <= I < K (shards are numbered 0 to K-1)", s)
	case k > n:
		return nil, usagef("--shard %s: K=%d shards of N=%d models would leave some empty; need K <= N", s, k, n)
	}
	return &[2]int{i, k}, nil
}

// shardGraph restricts g to the models of --shard, if given.
func shardGraph(cmd *cobra.Command, g *graph.Graph) (*graph.Graph, error) {
	sh, err := shardOf(cmd, g.N)
	if err != nil || sh == nil {
		return g, err
	}
	if mc, _ := cmd.Flags().GetString("dropout"); mc == "mc" {
		return nil, usagef("--shard with --dropout mc: Monte Carlo masks are drawn over all N models; run them unsharded")
	}
	return g.Models(graph.ShardRange(sh[0], sh[1], g.N))
}

// rangeOptions are the public API's options for g's models: WithN for the whole graph's N,
// and WithModels when g is a model range.
func rangeOptions(g *graph.Graph) []widejit.Option {
	lo, hi, total := g.ModelRange()
	opts := []widejit.Option{widejit.WithN(total)}
	if lo != 0 || hi != total {
		opts = append(opts, widejit.WithModels(lo, hi))
	}
	return opts
}

// describeModels is "n=8 models", or "models [3, 6) of n=8" for a model range.
func describeModels(g *graph.Graph) string {
	lo, hi, total := g.ModelRange()
	if lo == 0 && hi == total {
		return fmt.Sprintf("n=%d models", total)
	}
	return fmt.Sprintf("models [%d, %d) of n=%d", lo, hi, total)
}

// outputMetadata is the metadata of an output file holding g's models (and --shard's I/K).
func outputMetadata(cmd *cobra.Command, g *graph.Graph) (map[string]string, error) {
	_, _, total := g.ModelRange()
	sh, err := shardOf(cmd, total)
	if err != nil {
		sh = nil // checked before the run
	}
	return outputs.Metadata(g, sh)
}

// runInputFiles are the files `run` reads: the graph, its weights, --inputs and --check.
func runInputFiles(path string, g *graph.Graph, f runFlags) []string {
	return []string{path, g.WeightsPath, f.inputs, f.check}
}

// writeTrace writes m's trace to path (--trace), atomically, never over an input.
func writeTrace(m *widejit.Model, path string, inputs []string) error {
	return outputs.Write("--trace", path, inputs, m.WriteTrace)
}
