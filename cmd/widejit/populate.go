package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/internal/engine"
)

type populateFlags struct {
	nList, archList string
	shards          string
	allStrategies   bool
	cubin, asJSON   bool
}

func newCachePopulateCmd(a *app) *cobra.Command {
	var f populateFlags
	cmd := &cobra.Command{
		Use:   "populate GRAPH.json",
		Short: "Compile every kernel a graph needs into the cache, ahead of time (no GPU needed)",
		Long: `Lower GRAPH.json for each N of --n and compile every kernel of the plan into the kernel cache
for each target: PTX for each --arch (sm_80, sm_90, sm_90a; no GPU needed), else the CPU. A later
'widejit run' on that target then only loads them. The plan is the one a run would make:
strategy decisions recorded by 'widejit tune' for this machine's CPU (GPU archs: decisions are
device-specific, so the plugins and the heuristic decide for a generic GPU of that arch), then
--plugin / config plugins, then the heuristic. --all-strategies also compiles every kernel of
every alternative a run could choose instead (each decision flipped to each other candidate,
and the unfused plan), so any recorded or plugin decision on the target finds its kernels.
sm_90, which a compute capability 9.0 GPU (sm_90a by default) loads only with --backend-opt
arch=sm_90, is compiled under that option's keys. --cubin also assembles each PTX kernel with ptxas (found on
PATH or in .tools/bin; for sm_90a's PTX ISA 8.0, CUDA 12's: on PATH or in .tools/cuda12/bin)
and stores the cubin (kind "cubin", the ptxas version in its key and target).
Init graphs take any N; a graph with a weights file only its own n.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runPopulate(cmd, a, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.nList, "n", "", "comma-separated model counts (default: the graph's n)")
	fl.StringVar(&f.archList, "arch", "", "comma-separated GPU archs to generate PTX for: "+strings.Join(engine.PTXArchs, ", ")+" (default: the CPU)")
	fl.BoolVar(&f.allStrategies, "all-strategies", false, "also compile the kernels of every alternative strategy")
	fl.BoolVar(&f.cubin, "cubin", false, "also assemble cubins with ptxas")
	fl.BoolVar(&f.asJSON, "json", false, "print a JSON summary (no progress bar)")
	fl.StringVar(&f.shards, "shards", "", "also compile for the shard sizes of each K in this comma-separated list (run --shard I/K, or --device with K devices: kernels depend on the models per shard)")
	addPluginFlag(cmd)
	return cmd
}

func runPopulate(cmd *cobra.Command, a *app, path string, f populateFlags) error {
	if a.v.GetBool("no_cache") {
		return usagef("cache populate: --no-cache (or WIDEJIT_NO_CACHE) leaves nothing to populate")
	}
	ns, err := parseNList(f.nList)
	if err != nil {
		return err
	}
	targets, err := engine.PopulateTargets(f.archList, a.v.GetInt("threads"))
	if err != nil {
		return err
	}
	graphs, err := engine.LoadGraphs(path, ns, engineConfig(a, nil).GraphOptions(0))
	if err != nil {
		return err
	}
	ks, err := parseNList(f.shards)
	if err != nil {
		return usagef("--shards: %q is not a list of shard counts >= 1 (e.g. 4,8)", f.shards)
	}
	if graphs, err = engine.AddShardSizes(graphs, ks); err != nil {
		return err
	}
	bar := newProgressBar(a.stderr, !f.asJSON)
	rep, err := engineConfig(a, pluginFlag(cmd)).Populate(cmd.Context(), graphs, targets,
		engine.PopulateOptions{AllStrategies: f.allStrategies, Cubin: f.cubin, Progress: bar.show})
	bar.done()
	if err != nil {
		return err
	}
	if f.asJSON {
		t := rep.Total
		err = printJSON(a.stdout, map[string]any{"graph": path, "cache_dir": rep.CacheDir, "targets": rep.Targets,
			"kernels": t.Kernels, "hits": t.Hits, "misses": t.Misses, "failed": t.Failed,
			"failures": rep.Failures, "ptxas": rep.PtxasVersion})
	} else {
		err = printPopulateTable(a, path, rep.CacheDir, rep.Targets, rep.PtxasVersion != "")
	}
	if err != nil {
		return err
	}
	if len(rep.Failures) > 0 {
		return exitCodeError{1, fmt.Errorf("%d kernels could not be compiled:\n  %s", len(rep.Failures), strings.Join(rep.Failures, "\n  "))}
	}
	return nil
}

func printPopulateTable(a *app, path, dir string, summary []engine.PopulateCount, cubins bool) error {
	fmt.Fprintf(a.stdout, "%s: kernels compiled into %s\n", path, dir)
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	header := "TARGET\tN\tKERNELS\tHITS\tMISSES\tFAILED"
	if cubins {
		header += "\tCUBIN HITS\tCUBIN MISSES"
	}
	fmt.Fprintln(tw, header)
	for _, c := range summary {
		ns := make([]string, len(c.Ns))
		for i, n := range c.Ns {
			ns[i] = fmt.Sprint(n)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d", c.Target, strings.Join(ns, ","), c.Kernels, c.Hits, c.Misses, c.Failed)
		if cubins {
			fmt.Fprintf(tw, "\t%d\t%d", c.CubinHits, c.CubinMisses)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
