package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/internal/config"
)

func addGlobalFlags(a *app, root *cobra.Command) {
	f := root.PersistentFlags()
	f.String("config", "", "config file (default $XDG_CONFIG_HOME/widejit/config.yaml)")
	f.String("cache-dir", "", "kernel cache directory (default $XDG_CACHE_HOME/widejit)")
	f.Bool("no-cache", false, "do not read or write the kernel cache")
	f.Int("threads", 0, "CPU executor worker count (0: all cores)")
	f.Bool("cache-read-only", false, "read the kernel cache without writing it (a shared, pre-populated cache)")
	f.Bool("allow-outside-paths", false, "let a graph name files outside its directory (absolute paths, '..', symbolic links out); refused by default")
	f.StringArray("backend-opt", nil, "an option `NAME=VALUE` for the device's backend (repeatable; over the config's backend_options); part of every cache key")
	f.Bool("no-int-specialization", false, "compile integer kernel arguments as run-time values (Triton's do_not_specialize); by default kernels are specialized for arguments equal to 1 or divisible by 16")
	f.String("float32-matmul-precision", "highest", "fp32 products of every matmul-like kernel on a GPU, as torch spells it: highest (IEEE fp32) | high (TF32: operands truncated to 10 mantissa bits, as Triton does) | medium (operands rounded to bf16); the CPU always computes highest")
}

// loadConfig layers the configuration into a.v for cmd (internal/config); `widejit config`
// prints every value before its problems, so it checks them itself.
func loadConfig(a *app, cmd *cobra.Command) error {
	return config.Load(a.v, cmd.Flags(), cmd.Name() != "config")
}

func newConfigCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration and where each value comes from",
		Long: `Print every configuration key, its effective value and its source. Layering, lowest
first: defaults < $XDG_CONFIG_HOME/widejit/config.yaml (or --config) < WIDEJIT_* environment
variables (WIDEJIT_CACHE_DIR, ...) < flags (--cache-dir, ...).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			entries := config.Sources(a.v, cmd.Flags())
			probs := config.Problems(a.v, cmd.Flags())
			file := a.v.ConfigFileUsed()
			_, statErr := os.Stat(file)
			found := file != "" && statErr == nil
			if asJSON {
				if err := printJSON(a.stdout, map[string]any{"config_file": file, "config_file_found": found, "keys": entries, "problems": probs}); err != nil {
					return err
				}
			} else {
				state := "not found"
				if found {
					state = "read"
				}
				fmt.Fprintf(a.stdout, "config file: %s (%s)\n", file, state)
				w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "KEY\tVALUE\tSOURCE")
				for _, e := range entries {
					val := fmt.Sprint(e.Value)
					if s, ok := e.Value.([]string); ok {
						val = "[" + strings.Join(s, ",") + "]"
					}
					if val == "" {
						val = `""`
					}
					fmt.Fprintf(w, "%s\t%s\t%s\n", e.Key, val, e.Source)
				}
				if err := w.Flush(); err != nil {
					return err
				}
			}
			if len(probs) > 0 {
				return usagef("invalid configuration:\n  %s", strings.Join(probs, "\n  "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
