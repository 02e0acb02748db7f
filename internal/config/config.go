package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cast"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/widejit/widejit"
	"github.com/widejit/widejit/internal/engine"
	"github.com/widejit/widejit/internal/errkind"
	"github.com/widejit/widejit/lowering"
)

// Defaults are the configuration keys and their defaults. Layering (lowest first): defaults
// < config file < WIDEJIT_* environment < flags. A key's flag, where it has one, carries the
// same name with '_' as '-'.
var Defaults = map[string]any{
	"device":            "auto",              // auto | cpu | cuda | a registered backend's name
	"backend_options":   map[string]string{}, // the device's backend's options (also --backend-opt k=v)
	"cache_dir":         "",                  // empty: $XDG_CACHE_HOME/widejit
	"no_cache":          false,
	"plugins":           []string{},
	"threads":           0, // CPU executor workers; 0: all cores
	"plugin_memory_mib": 64,
	"plugin_deadline":   "50ms",
	"cache_read_only":   false, // read a shared, pre-populated cache; never write it
	"launch_timeout":    "0s",  // stop a run whose kernel launch takes longer; 0: no limit
	"memory_limit_mib":  0,     // what a run may allocate; 0: 80% of physical memory, -1: none
	// a graph may name files outside its directory (absolute, "..", symbolic links out)
	"allow_outside_paths": false,
	// fp32 products of every matmul-like kernel on a GPU: highest (IEEE) | high (TF32, operands truncated) | medium (bf16)
	"float32_matmul_precision": "highest",
	// compile integer kernel arguments as run-time values (no unit-stride / multiple-of-16 kernels)
	"no_int_specialization": false,
}

// Load layers the defaults, the config file (--config, else DefaultPath), the WIDEJIT_*
// environment and flags (every flag but --config sets the key of its name, '-' as '_') into
// v, and checks the values (Check) unless check is false. A config file that cannot be read
// is errkind.Usage, and so are bad values; a missing default file is not an error.
func Load(v *viper.Viper, flags *pflag.FlagSet, check bool) error {
	for k, d := range Defaults {
		v.SetDefault(k, d)
	}
	v.SetEnvPrefix("WIDEJIT")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	path, _ := flags.GetString("config")
	explicit := path != ""
	if !explicit {
		path = DefaultPath()
	}
	if path != "" {
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			var notFound *os.PathError
			if explicit || !errors.As(err, &notFound) {
				return errkind.Usagef("config file %s: %w", path, err)
			}
		}
	}
	var bindErr error
	flags.VisitAll(func(fl *pflag.Flag) {
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
	if !check {
		return nil
	}
	var probs []string
	for _, p := range Problems(v, flags) {
		if !strings.Contains(p, ": unknown key in ") {
			probs = append(probs, p)
		}
	}
	if len(probs) > 0 {
		return errkind.Usagef("invalid configuration (see widejit config):\n  %s", strings.Join(probs, "\n  "))
	}
	return nil
}

// DefaultPath is $XDG_CONFIG_HOME/widejit/config.yaml (~/.config when unset).
func DefaultPath() string {
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

// Entry is one key's effective value and where it came from.
type Entry struct {
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Source string `json:"source"` // "default", "file PATH", "env WIDEJIT_X", "flag --x"
}

// Sources resolves every known key the way viper does (flag > env > file > default) and
// says which layer won.
func Sources(v *viper.Viper, flags *pflag.FlagSet) []Entry {
	keys := make([]string, 0, len(Defaults))
	for k := range Defaults {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Entry, 0, len(keys))
	for _, k := range keys {
		flagName := strings.ReplaceAll(k, "_", "-")
		env := "WIDEJIT_" + strings.ToUpper(k)
		src := "default"
		switch {
		case flags.Lookup(flagName) != nil && flags.Changed(flagName):
			src = "flag --" + flagName
		case os.Getenv(env) != "":
			src = "env " + env
		case v.InConfig(k):
			src = "file " + v.ConfigFileUsed()
		}
		var val any = v.Get(k)
		switch k {
		case "plugins":
			val = v.GetStringSlice(k)
		case "backend_options":
			val, _ = BackendOptions(v)
			if flags.Lookup(backendOptFlag) != nil && flags.Changed(backendOptFlag) {
				src = "flag --" + backendOptFlag
			}
		}
		out = append(out, Entry{Key: k, Value: val, Source: src})
	}
	return out
}

// Problems checks the effective values, each named with the layer it came from (flag,
// environment, file), and flags unknown keys in the file.
func Problems(v *viper.Viper, flags *pflag.FlagSet) []string {
	source := map[string]string{}
	for _, e := range Sources(v, flags) {
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
	if d := v.GetString("device"); CheckDevice(d) != nil {
		_, why := engine.ParseDevices(d)
		bad("device", "%q is not auto, a backend's name or a list of devices of one backend (cuda:0,cuda:1, cuda:all, cpu:0,cpu:1): %v", d, why)
	}
	if _, err := BackendOptions(v); err != nil {
		bad("backend_options", "%v", err)
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
	for _, k := range []string{"cache_read_only", "allow_outside_paths", "no_int_specialization"} {
		if _, err := cast.ToBoolE(v.Get(k)); err != nil {
			bad(k, "%q is not true or false", fmt.Sprint(v.Get(k)))
		}
	}
	if err := lowering.CheckFloat32MatmulPrecision(v.GetString("float32_matmul_precision")); err != nil {
		bad("float32_matmul_precision", "%v", err)
	}
	known := make([]string, 0, len(Defaults))
	for k := range Defaults {
		known = append(known, k)
	}
	sort.Strings(known)
	if v.ConfigFileUsed() != "" {
		for _, k := range v.AllKeys() {
			if _, ok := Defaults[k]; !ok && v.InConfig(k) && !strings.HasPrefix(k, "backend_options.") {
				probs = append(probs, fmt.Sprintf("%s: unknown key in %s (known: %s)", k, v.ConfigFileUsed(), strings.Join(known, ", ")))
			}
		}
	}
	sort.Strings(probs)
	return probs
}

// backendOptFlag is the flag that adds to backend_options, one k=v each time.
const backendOptFlag = "backend-opt"

// BackendOptions are the backend's options: the backend_options map (config file, or
// WIDEJIT_BACKEND_OPTIONS as JSON), with each --backend-opt k=v set over it.
func BackendOptions(v *viper.Viper) (map[string]string, error) {
	file, err := cast.ToStringMapStringE(v.Get("backend_options"))
	if err != nil {
		return nil, fmt.Errorf("%q is not a map of option names to values", fmt.Sprint(v.Get("backend_options")))
	}
	out := maps.Clone(file) // file may be Defaults' own map
	if out == nil {
		out = map[string]string{}
	}
	for _, kv := range v.GetStringSlice(strings.ReplaceAll(backendOptFlag, "-", "_")) {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: expected NAME=VALUE", backendOptFlag, kv)
		}
		out[k] = val
	}
	for k := range out {
		if k == "" {
			return nil, fmt.Errorf("an option with an empty name")
		}
	}
	return out, nil
}

// CheckDevice accepts what engine.ParseDevices does (NAME:all without asking the backend how
// many devices it has: that is the run's business).
func CheckDevice(device string) error {
	if name, ok := strings.CutSuffix(device, ":all"); ok && !strings.Contains(name, ",") {
		device = name
	}
	if _, err := engine.ParseDevices(device); err != nil {
		return errkind.Usagef("device (--device, WIDEJIT_DEVICE or the config file): %v", err)
	}
	return nil
}

// Engine is the configuration in v for the engine: device, threads, cache, limits and the
// plugins (the config file's 'plugins:' followed by extra); version names the build in
// cache keys, warn gets the warnings.
func Engine(v *viper.Viper, extra []string, version string, warn func(string)) engine.Config {
	deadline, _ := time.ParseDuration(v.GetString("plugin_deadline")) // checked by Load
	launch, _ := time.ParseDuration(v.GetString("launch_timeout"))
	return engine.Config{Device: v.GetString("device"), Threads: v.GetInt("threads"), CacheDir: v.GetString("cache_dir"),
		NoCache: v.GetBool("no_cache"), CacheReadOnly: v.GetBool("cache_read_only"),
		Plugins:        append(slices.Clone(v.GetStringSlice("plugins")), extra...),
		PluginDeadline: deadline, PluginMemoryMiB: v.GetInt("plugin_memory_mib"), Version: version, Warn: warn,
		LaunchTimeout: launch, MemoryLimit: memoryLimit(v), BackendOptions: backendOptions(v),
		AllowOutsidePaths:      v.GetBool("allow_outside_paths"),
		Float32MatmulPrecision: v.GetString("float32_matmul_precision"), NoIntSpecialization: v.GetBool("no_int_specialization")}
}

// backendOptions is BackendOptions after Load checked them.
func backendOptions(v *viper.Viper) map[string]string {
	opts, _ := BackendOptions(v)
	return opts
}

// ModelOptions are the public API's options for the configuration in v: device, threads,
// cache, limits, plugins (the config file's, then extra), warnings to warn.
func ModelOptions(v *viper.Viper, extra []string, warn func(string)) []widejit.Option {
	opts := []widejit.Option{widejit.WithDevice(v.GetString("device")), widejit.WithThreads(v.GetInt("threads")),
		widejit.WithCacheDir(v.GetString("cache_dir")), widejit.WithWarnings(warn), widejit.WithBackendOptions(backendOptions(v)),
		widejit.WithPlugins(append(v.GetStringSlice("plugins"), extra...)...)}
	if v.GetBool("no_cache") {
		opts = append(opts, widejit.WithoutCache())
	}
	if v.GetBool("cache_read_only") {
		opts = append(opts, widejit.WithCacheReadOnly())
	}
	if v.GetBool("allow_outside_paths") {
		opts = append(opts, widejit.WithOutsidePaths())
	}
	launch, _ := time.ParseDuration(v.GetString("launch_timeout")) // checked by Load
	opts = append(opts, widejit.WithLaunchTimeout(launch), widejit.WithMemoryLimit(memoryLimit(v)),
		widejit.WithFloat32MatmulPrecision(v.GetString("float32_matmul_precision")))
	if v.GetBool("no_int_specialization") {
		opts = append(opts, widejit.WithoutIntSpecialization())
	}
	deadline, _ := time.ParseDuration(v.GetString("plugin_deadline"))
	return append(opts, widejit.WithPluginLimits(deadline, v.GetInt("plugin_memory_mib")))
}

// memoryLimit is memory_limit_mib in bytes (0: the default, negative: no limit).
func memoryLimit(v *viper.Viper) int64 {
	if m := v.GetInt64("memory_limit_mib"); m != 0 {
		return m << 20
	}
	return 0
}
