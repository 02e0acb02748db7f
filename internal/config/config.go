package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cast"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/widejit/widejit/internal/engine"
)

// Configuration keys. Layering (lowest first): defaults < config file < WIDEJIT_* environment
// < flags. A key's flag, where it has one, carries the same name with '_' as '-'.
var configDefaults = map[string]any{
	"device":            "auto", // auto | cpu | cuda
	"cache_dir":         "",     // empty: $XDG_CACHE_HOME/widejit
	"no_cache":          false,
	"plugins":           []string{},
	"threads":           0, // CPU executor workers; 0: all cores
	"plugin_memory_mib": 64,
	"plugin_deadline":   "50ms",
	"cache_read_only":   false, // read a shared, pre-populated cache; never write it
	"launch_timeout":    "0s",  // stop a run whose kernel launch takes longer; 0: no limit
	"memory_limit_mib":  0,     // what a run may allocate; 0: 80% of physical memory, -1: none
}

func addGlobalFlags(a *app, root *cobra.Command) {
	f := root.PersistentFlags()
	f.String("config", "", "config file (default $XDG_CONFIG_HOME/widejit/config.yaml)")
	f.String("cache-dir", "", "kernel cache directory (default $XDG_CACHE_HOME/widejit)")
	f.Bool("no-cache", false, "do not read or write the kernel cache")
	f.Int("threads", 0, "CPU executor worker count (0: all cores)")
	f.Bool("cache-read-only", false, "read the kernel cache without writing it (a shared, pre-populated cache)")
}

// loadConfig layers defaults, the config file, the environment and the flags of cmd into a.v.
func loadConfig(a *app, cmd *cobra.Command) error {
	v := a.v
	for k, d := range configDefaults {
		v.SetDefault(k, d)
	}
	v.SetEnvPrefix("WIDEJIT")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	path, _ := cmd.Flags().GetString("config")
	explicit := path != ""
	if !explicit {
		path = defaultConfigPath()
	}
	if path != "" {
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			var notFound *os.PathError
			if explicit || !errors.As(err, &notFound) {
				return usagef("config file %s: %w", path, err)
			}
		}
	}
	var bindErr error
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		key := strings.ReplaceAll(fl.Name, "-", "_")
		if key == "config" {
			return
		}
		if err := v.BindPFlag(key, fl); err != nil && bindErr == nil {
			bindErr = err
		}
	})
	if bindErr != nil {
		return bindErr
	}
	if cmd.Name() == "config" {
		return nil // it prints every value and then the problems
	}
	var probs []string
	for _, p := range configProblems(v, cmd) {
		if !strings.Contains(p, ": unknown key in ") {
			probs = append(probs, p)
		}
	}
	if len(probs) > 0 {
		return usagef("invalid configuration (see widejit config):\n  %s", strings.Join(probs, "\n  "))
	}
	return nil
}

func defaultConfigPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "widejit", "config.yaml")
}

// configEntry is one key's effective value and where it came from.
type configEntry struct {
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Source string `json:"source"` // "default", "file PATH", "env WIDEJIT_X", "flag --x"
}

// configSources resolves every known key the way viper does (flag > env > file > default)
// and says which layer won.
func configSources(v *viper.Viper, cmd *cobra.Command) []configEntry {
	keys := make([]string, 0, len(configDefaults))
	for k := range configDefaults {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]configEntry, 0, len(keys))
	for _, k := range keys {
		flagName := strings.ReplaceAll(k, "_", "-")
		env := "WIDEJIT_" + strings.ToUpper(k)
		src := "default"
		switch {
		case cmd.Flags().Lookup(flagName) != nil && cmd.Flags().Changed(flagName):
			src = "flag --" + flagName
		case os.Getenv(env) != "":
			src = "env " + env
		case v.InConfig(k):
			src = "file " + v.ConfigFileUsed()
		}
		var val any = v.Get(k)
		if k == "plugins" {
			val = v.GetStringSlice(k)
		}
		out = append(out, configEntry{Key: k, Value: val, Source: src})
	}
	return out
}

// configProblems checks the effective values, each named with the layer it came from (flag,
// environment, file), and flags unknown keys in the file.
func configProblems(v *viper.Viper, cmd *cobra.Command) []string {
	source := map[string]string{}
	for _, e := range configSources(v, cmd) {
		source[e.Key] = e.Source
	}
	var probs []string
	bad := func(key, format string, args ...any) {
		probs = append(probs, fmt.Sprintf("%s: %s (from %s)", key, fmt.Sprintf(format, args...), source[key]))
	}
	// integers and booleans given as text (environment, file) must parse: viper would read
	// "abc" as 0
	ints := map[string]int{}
	for _, k := range []string{"threads", "plugin_memory_mib"} {
		n, err := cast.ToIntE(v.Get(k))
		if err != nil {
			bad(k, "%q is not an integer", fmt.Sprint(v.Get(k)))
			continue
		}
		ints[k] = n
	}
	if _, err := cast.ToBoolE(v.Get("no_cache")); err != nil {
		bad("no_cache", "%q is not true or false", fmt.Sprint(v.Get("no_cache")))
	}
	if d := v.GetString("device"); checkDeviceSetting(d) != nil {
		_, why := engine.ParseDevices(d)
		bad("device", "%q is not one of auto, cpu, cuda or a list of devices of one kind (cuda:0,cuda:1, cuda:all, cpu:0,cpu:1): %v", d, why)
	}
	if t, ok := ints["threads"]; ok && t < 0 {
		bad("threads", "%d must be >= 0 (0: all cores)", t)
	}
	if m, ok := ints["plugin_memory_mib"]; ok && (m <= 0 || m > 4096) {
		bad("plugin_memory_mib", "%d is outside 1..4096", m)
	}
	if d, err := time.ParseDuration(v.GetString("plugin_deadline")); err != nil || d <= 0 {
		bad("plugin_deadline", "%q is not a positive duration (e.g. 50ms)", v.GetString("plugin_deadline"))
	}
	if d, err := time.ParseDuration(v.GetString("launch_timeout")); err != nil || d < 0 {
		bad("launch_timeout", "%q is not a duration >= 0 (e.g. 30s; 0: no limit)", v.GetString("launch_timeout"))
	}
	if m, err := cast.ToIntE(v.Get("memory_limit_mib")); err != nil || m < -1 {
		bad("memory_limit_mib", "%q is not an integer >= -1 (0: 80%% of physical memory, -1: no limit)", fmt.Sprint(v.Get("memory_limit_mib")))
	}
	if _, err := cast.ToBoolE(v.Get("cache_read_only")); err != nil {
		bad("cache_read_only", "%q is not true or false", fmt.Sprint(v.Get("cache_read_only")))
	}
	known := make([]string, 0, len(configDefaults))
	for k := range configDefaults {
		known = append(known, k)
	}
	sort.Strings(known)
	if v.ConfigFileUsed() != "" {
		for _, k := range v.AllKeys() {
			if _, ok := configDefaults[k]; !ok && v.InConfig(k) {
				probs = append(probs, fmt.Sprintf("%s: unknown key in %s (known: %s)", k, v.ConfigFileUsed(), strings.Join(known, ", ")))
			}
		}
	}
	sort.Strings(probs)
	return probs
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
			entries := configSources(a.v, cmd)
			probs := configProblems(a.v, cmd)
			file := a.v.ConfigFileUsed()
			_, statErr := os.Stat(file)
			found := file != "" && statErr == nil
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"config_file": file, "config_file_found": found, "keys": entries, "problems": probs}); err != nil {
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
