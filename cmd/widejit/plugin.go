package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/internal/engine"
	"github.com/widejit/widejit/plugins"
	"github.com/widejit/widejit/plugins/abi"
)

func newPluginCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Check strategy plugins (WebAssembly modules that rank candidate kernels)",
		Long: `Strategy plugins rank the candidate kernels of each kernel group; see docs/plugins.md.
Configure them with 'plugins:' in the config file or --plugin on run, tune and cache populate.`,
	}
	cmd.AddCommand(newPluginCheckCmd(a))
	return cmd
}

func newPluginCheckCmd(a *app) *cobra.Command {
	var reps int
	cmd := &cobra.Command{
		Use:   "check PLUGIN.wasm",
		Short: "Load a plugin, check its ABI, and show its rankings and latency on sample requests",
		Long: `Load PLUGIN.wasm in the sandbox the autotuner uses (memory cap plugin_memory_mib, per-call
deadline plugin_deadline), check that it speaks ABI version 1, send it sample requests (a linear
layer and an MLP block at N = 1, 8 and 64, on a CPU and on an H100) and report the ranking it
gave, its note, and the per-call latency. Exits 1 if the plugin fails to load or fails any call.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if reps < 1 {
				return usagef("--reps must be at least 1, got %d", reps)
			}
			opts, err := engineConfig(a, nil).PluginOptions() // the values were checked with the configuration
			if err != nil {
				return usagef("%v", err)
			}
			return pluginCheck(cmd.Context(), a, args[0], opts, reps)
		},
	}
	cmd.Flags().String("plugin-deadline", "50ms", "per-call deadline of a plugin")
	cmd.Flags().Int("plugin-memory-mib", 64, "memory cap of a plugin, in MiB")
	cmd.Flags().IntVar(&reps, "reps", 3, "calls per sample request (latency is their median)")
	return cmd
}

// engineConfig is the configuration's device, threads, cache and plugins (the config file's
// 'plugins:' followed by extra) for the engine, warnings to stderr.
func engineConfig(a *app, extra []string) engine.Config {
	deadline, _ := time.ParseDuration(a.v.GetString("plugin_deadline")) // checked by loadConfig
	launch, _ := time.ParseDuration(a.v.GetString("launch_timeout"))
	return engine.Config{Device: a.v.GetString("device"), Threads: a.v.GetInt("threads"), CacheDir: cacheDir(a),
		NoCache: a.v.GetBool("no_cache"), CacheReadOnly: a.v.GetBool("cache_read_only"),
		Plugins:        append(slices.Clone(a.v.GetStringSlice("plugins")), extra...),
		PluginDeadline: deadline, PluginMemoryMiB: a.v.GetInt("plugin_memory_mib"), Version: buildVersion(), Warn: cacheWarner(a),
		LaunchTimeout: launch, MemoryLimit: memoryLimit(a)}
}

// memoryLimit is memory_limit_mib in bytes (0: the default, negative: no limit).
func memoryLimit(a *app) int64 {
	if m := a.v.GetInt64("memory_limit_mib"); m != 0 {
		return m << 20
	}
	return 0
}

// pluginCheckSample is one sample request of `plugin check`.
type pluginCheckSample struct {
	label string
	req   abi.Request
}

func pluginCheckSamples() []pluginCheckSample {
	devices := []abi.Device{
		{Kind: "cpu", Name: runtime.GOARCH + " CPU", MemoryBytes: 16 << 30, Cores: runtime.NumCPU()},
		{Kind: "cuda", Name: "NVIDIA H100 80GB HBM3", ComputeCapability: "9.0", MemoryBytes: 80 << 30, Cores: 132},
	}
	blocks := func(strategy, prefix string, ms ...int) []abi.Candidate {
		var out []abi.Candidate
		for _, m := range ms {
			out = append(out, abi.Candidate{ID: fmt.Sprintf("%s-m%d", prefix, m), Strategy: strategy,
				Params: map[string]int{"BLOCK_M": m, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2}})
		}
		return out
	}
	groups := []struct {
		label  string
		ops    []string
		shapes [][]int
	}{
		{"linear 64x256->256", []string{"linear"}, [][]int{{64, 256}, {256, 256}, {256}}},
		{"mlp 64x1024->4096->1024", []string{"linear", "gelu", "linear"}, [][]int{{64, 1024}, {4096, 1024}, {4096}, {1024, 4096}, {1024}}},
	}
	var samples []pluginCheckSample
	for _, g := range groups {
		dtypes := make([]string, len(g.shapes))
		for i := range dtypes {
			dtypes[i] = "float32"
		}
		for _, dev := range devices {
			for _, n := range []int{1, 8, 64} {
				cands := []abi.Candidate{{ID: "sequential", Strategy: abi.StrategySequential}}
				cands = append(cands, blocks(abi.StrategyBatched, "batched", 32, 64)...)
				cands = append(cands, blocks(abi.StrategyFused, "fused", 32, 64)...)
				samples = append(samples, pluginCheckSample{
					label: fmt.Sprintf("%s N=%d %s", g.label, n, dev.Kind),
					req:   abi.Request{ABI: abi.Version, OpChain: g.ops, Shapes: g.shapes, DTypes: dtypes, N: n, Device: dev, Candidates: cands},
				})
			}
		}
	}
	return samples
}

func pluginCheck(ctx context.Context, a *app, path string, opts plugins.Options, reps int) error {
	if ctx == nil {
		ctx = context.Background()
	}
	start := time.Now()
	p, err := plugins.Load(ctx, path, opts)
	if err != nil {
		return err
	}
	defer p.Close(context.Background())
	cacheNote := "compilation cache: " + opts.CacheDir
	if opts.CacheDir == "" {
		cacheNote = "no compilation cache"
	}
	fmt.Fprintf(a.stdout, "plugin %s: ABI %d, sha256 %s, loaded in %s (%s)\n", p.Name(), abi.Version, p.Hash()[:16], pluginDuration(time.Since(start)), cacheNote)
	fmt.Fprintf(a.stdout, "sandbox: memory %d MiB, deadline %s per call\n\n", opts.MemoryLimit>>20, opts.Deadline)
	samples := pluginCheckSamples()
	failed, err := pluginCheckReport(ctx, a.stdout, p, samples, reps)
	if err != nil {
		return err
	}
	if failed > 0 {
		return exitCodeError{1, fmt.Errorf("plugin %s failed %d of %d sample requests; widejit would fall back to its built-in heuristic for them", p.Name(), failed, len(samples))}
	}
	fmt.Fprintf(a.stdout, "\nok: %d sample requests answered\n", len(samples))
	return nil
}

// pluginChooser is what `plugin check` calls; *plugins.Plugin implements it.
type pluginChooser interface {
	Choose(ctx context.Context, req abi.Request) (abi.Response, error)
}

// pluginCheckReport sends each sample reps times (stopping at a failure) and writes one table
// row per sample; it returns how many samples failed.
func pluginCheckReport(ctx context.Context, out io.Writer, p pluginChooser, samples []pluginCheckSample, reps int) (int, error) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SAMPLE\tMEDIAN\tMAX\tRANKING (best first)\tNOTE")
	failed := 0
	for _, s := range samples {
		var latencies []time.Duration
		var resp abi.Response
		var callErr error
		for i := 0; i < reps && callErr == nil; i++ {
			t0 := time.Now()
			resp, callErr = p.Choose(ctx, s.req)
			latencies = append(latencies, time.Since(t0))
		}
		slices.Sort(latencies)
		med, worst := pluginDuration(latencies[len(latencies)/2]), pluginDuration(latencies[len(latencies)-1])
		if callErr != nil {
			failed++
			fmt.Fprintf(w, "%s\t%s\t%s\tFAILED\t%v\n", s.label, med, worst, callErr)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.label, med, worst, strings.Join(resp.Ranking, " > "), resp.Note)
	}
	return failed, w.Flush()
}

func pluginDuration(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}
