package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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
}

func addGlobalFlags(a *app, root *cobra.Command) {
	f := root.PersistentFlags()
	f.String("config", "", "config file (default $XDG_CONFIG_HOME/widejit/config.yaml)")
	f.String("cache-dir", "", "kernel cache directory (default $XDG_CACHE_HOME/widejit)")
	f.Bool("no-cache", false, "do not read or write the kernel cache")
	f.Int("threads", 0, "CPU executor worker count (0: all cores)")
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
				return fmt.Errorf("config file %s: %w", path, err)
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
	return bindErr
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
