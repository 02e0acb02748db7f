package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/internal/config"
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

// engineConfig is the configuration for the engine, with the plugins of extra after the
// config file's, warnings to stderr.
func engineConfig(a *app, extra []string) engine.Config {
	return config.Engine(a.v, extra, buildVersion(), cacheWarner(a))
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
	samples := plugins.CheckSamples()
	failed, err := writePluginAnswers(a.stdout, plugins.Ask(ctx, p, samples, reps))
	if err != nil {
		return err
	}
	if failed > 0 {
		return exitCodeError{1, fmt.Errorf("plugin %s failed %d of %d sample requests; widejit would fall back to its built-in heuristic for them", p.Name(), failed, len(samples))}
	}
	fmt.Fprintf(a.stdout, "\nok: %d sample requests answered\n", len(samples))
	return nil
}

// writePluginAnswers writes one table row per answer; it returns how many failed.
func writePluginAnswers(out io.Writer, answers []plugins.CheckAnswer) (int, error) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SAMPLE\tMEDIAN\tMAX\tRANKING (best first)\tNOTE")
	failed := 0
	for _, s := range answers {
		med, worst := pluginDuration(s.Median), pluginDuration(s.Max)
		if s.Err != nil {
			failed++
			fmt.Fprintf(w, "%s\t%s\t%s\tFAILED\t%v\n", s.Sample.Label, med, worst, s.Err)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.Sample.Label, med, worst, strings.Join(s.Response.Ranking, " > "), s.Response.Note)
	}
	return failed, w.Flush()
}

func pluginDuration(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}
