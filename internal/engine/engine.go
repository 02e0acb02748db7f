package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/cache"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/errkind"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/device"
	"github.com/widejit/widejit/lowering"
	"github.com/widejit/widejit/plugins"
)

// Config is what a run needs besides the graph and its inputs. The zero value is usable:
// device auto, all cores, the default cache directory, no plugins.
type Config struct {
	Device  string // auto or a registered backend's name: cpu, cuda, ... ("" = auto)
	Ordinal int    // which of the backend's devices (0: the first)
	Threads int    // CPU executor workers; 0: all cores
	// BackendOptions go to the device's backend (--backend-opt k=v, config backend_options)
	// and into every kernel and decision key made for it.
	BackendOptions map[string]string
	CacheDir       string // "" = cache.DefaultDir()
	NoCache        bool   // compile everything in memory, record nothing
	// CacheReadOnly reads a shared, pre-populated cache without writing to it (misses are
	// compiled in memory); also chosen when the directory is not writable.
	CacheReadOnly bool
	// LaunchTimeout stops a run whose kernel launch takes longer (0: no limit).
	LaunchTimeout time.Duration
	// MemoryLimit bounds what a graph and its plan allocate, in bytes (0: 80% of physical
	// memory, negative: no limit).
	MemoryLimit int64
	// AllowOutsidePaths lets a graph name files outside its directory (graph.Options).
	AllowOutsidePaths bool
	// Streams splits each run's models over this many streams of a GPU (0 or 1: one
	// stream); the CPU ignores it.
	Streams int
	Plugins []string
	// PluginDeadline and PluginMemoryMiB bound each plugin call (0: 50 ms and 64 MiB).
	PluginDeadline  time.Duration
	PluginMemoryMiB int
	// Float32MatmulPrecision is torch's float32_matmul_precision for every fp32 tl.dot on a
	// GPU: "" or "highest" (IEEE fp32), "high" (TF32), "medium" (bf16); see LoweringPrecision.
	Float32MatmulPrecision string
	// NoIntSpecialization compiles integer kernel arguments as run-time values (Triton's
	// do_not_specialize): no kernel specialized for unit strides or multiples of 16.
	NoIntSpecialization bool
	Version             string       // compiler version in cache keys ("" = BuildVersion())
	Warn                func(string) // warnings (nil: dropped)
}

// GraphOptions are the options a graph is loaded with, with n models (0: the file's): the
// memory limit and the paths it may name.
func (c Config) GraphOptions(n int) graph.Options {
	return graph.Options{N: n, MemoryLimit: c.MemoryLimit, AllowOutsidePaths: c.AllowOutsidePaths}
}

// Warning reports msg through Warn, if set.
func (c Config) Warning(msg string) {
	if c.Warn != nil {
		c.Warn(msg)
	}
}

// LoweringPrecision is the float32 matmul precision to lower with for a device with caps: the
// configured one on a GPU; where programs run on host threads (the CPU executor multiplies fp32
// in IEEE whatever is asked), highest, with a warning when another precision was asked for.
func (c Config) LoweringPrecision(caps jit.Capabilities) string {
	p := c.Float32MatmulPrecision
	if caps.HostThreads && p != "" && p != lowering.PrecisionHighest {
		c.Warning(fmt.Sprintf("float32 matmul precision %q applies to GPUs only: the CPU computes fp32 products in IEEE fp32 (highest)", p))
		return lowering.PrecisionHighest
	}
	return p
}

// loweringOptions are the lowering options of the configuration for a device described by
// info: the backend options and the precision and specialization settings.
func (c Config) loweringOptions(info jit.DeviceInfo) lowering.Options {
	return lowering.Options{Device: info, BackendOptions: c.BackendOptions,
		Float32MatmulPrecision: c.LoweringPrecision(info.Caps), NoIntSpecialization: c.NoIntSpecialization}
}

// OpenDevice opens the configured device: auto uses the GPU when the CUDA driver finds one
// and the CPU otherwise.
func (c Config) OpenDevice() (jit.Device, error) {
	if c.Threads < 0 {
		return nil, fmt.Errorf("threads must be >= 0 (0: all cores), got %d", c.Threads)
	}
	return device.Open(c.Device, c.Ordinal, device.Options{Threads: c.Threads, Backend: c.BackendOptions})
}

// OpenCache opens the kernel cache for compiling: cache.Off() when NoCache is set or the
// directory is unusable (with a warning). It never fails; close it as soon as compiling is
// done, so that other processes get the directory.
func (c Config) OpenCache() *cache.Store {
	if c.NoCache {
		return cache.Off()
	}
	s, err := cache.Open(c.CacheDir, cache.Options{Warn: c.Warn, ReadOnly: c.CacheReadOnly})
	if err != nil {
		c.Warning(fmt.Sprintf("%v; running without a kernel cache", err))
		return cache.Off()
	}
	return s
}

// closeCache closes a store OpenCache opened; a failure is a warning, the work being done.
func (c Config) closeCache(store *cache.Store) {
	if err := store.Close(); err != nil {
		c.Warning(fmt.Sprintf("closing the kernel cache: %v", err))
	}
}

// OpenCacheForMaintenance opens the cache directory dir ("": the default) itself, for a
// maintenance command, waiting up to wait for a busy one. A command that writes (gc, clear)
// is refused under readOnly (cache_read_only), and a directory it cannot write is an error
// (it would otherwise act on an empty in-memory store). One that only reads (stats, ls,
// verify) opens the directory read-only under readOnly, or when it is not writable, and then
// writes nothing to it; one that cannot be read (busy, damaged) is an error. A directory
// whose filesystem is full opens read-only for every command (clear can still empty it).
func OpenCacheForMaintenance(dir string, warn func(string), wait time.Duration, readOnly, writes bool) (*cache.Store, error) {
	if readOnly && writes {
		return nil, errkind.Usagef("the cache is read-only (--cache-read-only, WIDEJIT_CACHE_READ_ONLY or cache_read_only in the config): this command would write it; nothing was changed")
	}
	s, err := cache.Open(dir, cache.Options{Warn: warn, LockWait: wait, ReadOnly: readOnly})
	if err != nil {
		return nil, err
	}
	switch s.Mode() {
	case cache.ModeReadWrite:
	case cache.ModeReadOnly:
		dir, why := s.Dir(), s.ReadError()
		if writes && !s.OutOfSpace() { // a full one may still be cleared
			s.Close()
			return nil, fmt.Errorf("cache dir %s cannot be written (see the warning above); this command needs write access", dir)
		}
		if why != nil {
			s.Close()
			return nil, fmt.Errorf("cannot read cache dir %s: %v", dir, why)
		}
	default:
		dir := s.Dir()
		s.Close()
		return nil, fmt.Errorf("cache dir %s is in use by another widejit process or unusable; try again later", dir)
	}
	return s, nil
}

// Compiler makes the kernel compiler that reads and fills store.
func (c Config) Compiler(store *cache.Store) *jit.Compiler {
	v := c.Version
	if v == "" {
		v = BuildVersion()
	}
	return jit.NewCompiler(jit.CompilerOptions{Store: store, Version: v, Warn: c.Warn, BackendOptions: c.BackendOptions})
}

// PluginOptions are the sandbox limits of the configuration.
func (c Config) PluginOptions() (plugins.Options, error) {
	deadline, mib := c.PluginDeadline, c.PluginMemoryMiB
	if deadline == 0 {
		deadline = 50 * time.Millisecond
	}
	if mib == 0 {
		mib = 64
	}
	if deadline < 0 {
		return plugins.Options{}, fmt.Errorf("plugin deadline %v is not positive", deadline)
	}
	if mib < 0 || mib > 4096 {
		return plugins.Options{}, fmt.Errorf("plugin memory %d MiB is outside 1..4096", mib)
	}
	opts := plugins.Options{Deadline: deadline, MemoryLimit: uint64(mib) << 20, Warn: func(msg string) { c.Warning(plugins.Printable(msg, 2000)) }}
	if !c.NoCache {
		opts.CacheDir = c.PluginCacheDir()
	}
	return opts, nil
}

// PluginCacheDir is where wazero keeps compiled plugins: <cache_dir>/wasm, a part of the
// cache directory that `cache verify/clear/gc` cover.
func (c Config) PluginCacheDir() string { return cache.WasmDir(c.CacheDir) }

// LoadPlugins loads the configured plugins. One that fails to load is a warning, not an
// error: the run goes on with the others and the built-in heuristic. The returned func
// closes them.
func (c Config) LoadPlugins(ctx context.Context) ([]autotune.Ranker, func()) {
	if len(c.Plugins) == 0 {
		return nil, func() {}
	}
	opts, err := c.PluginOptions()
	if err != nil {
		c.Warning(fmt.Sprintf("strategy plugins disabled: %v", err))
		return nil, func() {}
	}
	var loaded []*plugins.Plugin
	var rankers []autotune.Ranker
	for _, path := range c.Plugins {
		p, err := plugins.Load(ctx, path, opts)
		if err != nil {
			c.Warning(fmt.Sprintf("%v; continuing without it", err))
			continue
		}
		loaded = append(loaded, p)
		rankers = append(rankers, p)
	}
	return rankers, func() {
		for _, p := range loaded {
			p.Close(context.Background())
		}
	}
}

// LoweringOptions are the options that plan for dev: its description, the backend options it
// was opened with, and the precision and specialization settings.
func (c Config) LoweringOptions(dev jit.Device) lowering.Options {
	return c.loweringOptions(dev.Info())
}
