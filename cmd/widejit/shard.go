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

func init() {
	extend("run", func(_ *app, cmd *cobra.Command) {
		fl := cmd.Flags()
		fl.String("shard", "", "run shard I of K only: models [floor(I*N/K), floor((I+1)*N/K)), 0 <= I < K <= N (merge the parts with `widejit merge`)")
		fl.String("trace", "", "write every kernel launch and host-device copy as Chrome trace-event JSON (Perfetto, chrome://tracing) to this file")
		cmd.Long += `

--shard I/K runs shard I of K: models [floor(I*N/K), floor((I+1)*N/K)) only, reading only
those models' weights and rows of --inputs (which holds all N; shared inputs as they are);
--check compares with the same rows of a file holding all N outputs. --out then holds those
models' outputs, and its metadata says which models (widejit.models LO:HI, widejit.n) of
which graph (widejit.graph_sha256: graph.json and the weights' content); ` + "`widejit merge`" + `
stacks the parts back into the [N, ...] outputs, bit for bit those of an unsharded run.

--device takes a list of devices of one kind (cuda:0,cuda:1, or cuda:all for every GPU):
the N models are split across them in list order and run at once, and the outputs are
stacked in model order; cpu:0,cpu:1 does the same with CPU executors sharing the cores.`
	})
}

func init() {
	extend("cache populate", func(_ *app, cmd *cobra.Command) {
		cmd.Flags().String("shards", "", "also compile for the shard sizes of each K in this comma-separated list (run --shard I/K, or --device with K devices: kernels depend on the models per shard)")
	})
}

// shardGraphsFor adds to graphs (`cache populate`) one model range of each shard size of
// each K of --shards (floor(N/K) and ceil(N/K) models): kernels are specialized for the
// models they serve, so a cache that every shard hits needs those sizes.
func shardGraphsFor(cmd *cobra.Command, graphs []*graph.Graph) ([]*graph.Graph, error) {
	list, _ := cmd.Flags().GetString("shards")
	ks, err := parseNList(list)
	if err != nil {
		return nil, usagef("--shards: %q is not a list of shard counts >= 1 (e.g. 4,8)", list)
	}
	out := graphs
	for _, g := range graphs {
		seen := map[int]bool{g.N: true}
		for _, k := range ks {
			if k > g.N {
				return nil, usagef("--shards %d: K=%d shards of N=%d models would leave some empty; need K <= N", k, k, g.N)
			}
			for i := range k {
				lo, hi := graph.ShardRange(i, k, g.N)
				if seen[hi-lo] {
					continue
				}
				seen[hi-lo] = true
				sub, err := g.Models(lo, hi)
				if err != nil {
					return nil, err
				}
				out = append(out, sub)
			}
		}
	}
	return out, nil
}

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
