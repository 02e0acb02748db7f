// Package widejit runs N models of one architecture as one wide model: the N copies of each
// layer become one kernel launch over N-first tensors [N, B, ...], on a GPU when one is
// present, else on the CPU, with outputs equal to N separate PyTorch runs.
//
// A graph (graph.json plus stacked safetensors weights, written by exporters/torch) is loaded
// once, compiled into kernels through the persistent kernel cache, and run as often as
// needed:
//
//	m, err := widejit.Load("examples/mlp/graph.json", widejit.WithDevice("cpu"))
//	...
//	defer m.Close()
//	out, err := m.Run(ctx, map[string]*widejit.Tensor{"x": x}) // x: [N, B, features]
//
// Everything behind this API (the graph format's parser, the lowering, the kernel compiler
// and its backends, the cache, the plugin sandbox) is internal to the module.
package widejit

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/widejit/widejit/cache"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/engine"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/lowering"
)

// Tensor is a named, typed, shaped block of little-endian data, as in a safetensors file.
// Build float32 ones with NewFloat32 and read them with Float32s.
type Tensor = safetensors.Tensor

// NewFloat32 makes a float32 tensor of shape holding data (row-major, copied).
func NewFloat32(shape []int, data []float32) (*Tensor, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("widejit: negative dimension in shape %v", shape)
		}
		n *= d
	}
	if n != len(data) {
		return nil, fmt.Errorf("widejit: shape %v holds %d values, got %d", shape, n, len(data))
	}
	return safetensors.FromFloat32s("", shape, data), nil
}

// Option configures Load.
type Option func(*settings)

type settings struct {
	engine.Config
	n        int
	mode     string
	dropout  string
	seed     int64
	profile  bool
	tuneName string
	models   modelRange // WithModels / WithShard
	trace    bool       // WithTrace
}

// WithDevice picks the device: "auto" (the default: the GPU when the CUDA driver finds one,
// else the CPU), "cpu" or "cuda"; or several devices of one kind, "cuda:0,cuda:1" or
// "cuda:all" (every GPU), over which the N models are split (see Model.Devices), or
// "cpu:0,cpu:1" (as many CPU executors sharing the cores, the CPU's stand-in for several
// GPUs). A lone "cuda:I" is GPU I.
func WithDevice(kind string) Option { return func(s *settings) { s.Device = kind } }

// WithThreads sets the CPU executor's worker count (0, the default: all cores).
func WithThreads(n int) Option { return func(s *settings) { s.Threads = n } }

// WithCacheDir keeps compiled kernels and tuning decisions in dir (default
// $XDG_CACHE_HOME/widejit).
func WithCacheDir(dir string) Option { return func(s *settings) { s.CacheDir = dir } }

// WithoutCache compiles every kernel in memory and records nothing.
func WithoutCache() Option { return func(s *settings) { s.NoCache = true } }

// WithPlugins ranks strategies with these WebAssembly plugins (a plugin that fails to load
// is a warning: the built-in ranking goes on).
func WithPlugins(paths ...string) Option {
	return func(s *settings) { s.Plugins = append(s.Plugins, paths...) }
}

// WithWarnings receives warnings (a damaged cache, a plugin set aside); by default they are
// dropped.
func WithWarnings(warn func(msg string)) Option { return func(s *settings) { s.Warn = warn } }

// WithN sets the number of models of a graph whose weights are initialised from a seed
// (graphs with a weights file fix N).
func WithN(n int) Option { return func(s *settings) { s.n = n } }

// WithSequential runs the N models one after another (N launches per kernel): the baseline
// that the wide mode is measured against.
func WithSequential() Option { return func(s *settings) { s.mode = "sequential" } }

// WithMonteCarloDropout applies dropout with independent per-model masks drawn from seed
// (by default dropout is the identity, as in eval mode).
func WithMonteCarloDropout(seed int64) Option {
	return func(s *settings) { s.dropout, s.seed = "mc", seed }
}

// WithProfile times every kernel launch (see Model.KernelTimes).
func WithProfile() Option { return func(s *settings) { s.profile = true } }

// WithPluginLimits bounds each plugin call: its deadline and its memory in MiB (defaults
// 50 ms and 64 MiB).
func WithPluginLimits(deadline time.Duration, memoryMiB int) Option {
	return func(s *settings) { s.PluginDeadline, s.PluginMemoryMiB = deadline, memoryMiB }
}

// Model is a loaded graph, compiled for one device, ready to run. A Model is not safe for
// concurrent use; load one per goroutine (they share the kernel cache).
type Model struct {
	g         *graph.Graph
	parts     []*Model // several devices: one Model per device, each a range of the models
	label     string   // the device as listed ("cuda:1"), for traces and Devices
	tracer    *lowering.Tracer
	plan      *lowering.Plan
	dev       jit.Device
	runner    *lowering.Runner
	decisions string
	cache     cache.RunReport
	compile   time.Duration
	device    string
	runs      int
}

// Load reads and validates the graph at path (with its weights), picks the device, and
// compiles every kernel the graph needs (from the kernel cache when it has them).
func Load(path string, opts ...Option) (*Model, error) {
	s := settings{mode: "wide", dropout: "eval"}
	for _, o := range opts {
		o(&s)
	}
	if s.n < 0 {
		return nil, fmt.Errorf("widejit: N must be > 0, got %d", s.n)
	}
	g, err := graph.LoadWithOptions(path, graph.Options{N: s.n})
	if err != nil {
		return nil, err
	}
	if g, err = s.models.apply(g); err != nil {
		return nil, err
	}
	if lo, hi, total := g.ModelRange(); s.dropout == "mc" && (lo != 0 || hi != total) {
		return nil, fmt.Errorf("widejit: Monte Carlo dropout draws masks over all %d models; it cannot run models [%d, %d) alone", total, lo, hi)
	}
	devs, err := engine.ParseDevices(s.Device)
	if err != nil {
		return nil, fmt.Errorf("widejit: %w", err)
	}
	var tracer *lowering.Tracer
	if s.trace {
		tracer = lowering.NewTracer()
	}
	if len(devs) > 1 {
		return loadParts(g, s, devs, tracer)
	}
	s.Device, s.Ordinal = devs[0].Kind, devs[0].Ordinal
	m, err := compile(context.Background(), g, s)
	if err == nil {
		m.traceTo(tracer, 0, devs[0].String())
	}
	return m, err
}

func compile(ctx context.Context, g *graph.Graph, s settings) (*Model, error) {
	start := time.Now()
	dev, err := s.OpenDevice()
	if err != nil {
		return nil, err
	}
	store := s.OpenCache()
	tuning := s.NewTuning(ctx, store)
	defer tuning.Close()
	info := engine.DeviceInfo(dev.Info())
	lopts := lowering.Options{Device: info, Dropout: s.dropout, Seed: s.seed,
		ModelMajor: s.mode == "sequential", Chooser: tuning.Chooser(s.mode)}
	plan, err := lowering.Lower(g, lopts)
	if err == nil {
		var r *lowering.Runner
		r, err = lowering.NewRunner(plan, dev, s.Compiler(store), g)
		if err == nil {
			report := store.RunReport()
			if cerr := store.Close(); cerr != nil {
				s.Warning(fmt.Sprintf("closing the kernel cache: %v", cerr))
			}
			r.Profile(s.profile)
			return &Model{g: g, plan: plan, dev: dev, runner: r, decisions: tuning.Explain(s.mode), cache: report,
				compile: time.Since(start), device: info.Kind}, nil
		}
	}
	store.Close()
	dev.Close()
	return nil, err
}

// N is the number of models.
func (m *Model) N() int { return m.g.N }

// Device is the kind of device the model runs on: "cpu" or "cuda".
func (m *Model) Device() string {
	if m.parts != nil {
		return m.parts[0].device
	}
	return m.device
}

// TensorSpec describes an input or output: its name, dtype and the shape of the tensor
// exchanged with Run ([N, ...] for per-model tensors).
type TensorSpec struct {
	Name  string
	DType string
	Shape []int
	// Shared is true for an input every model reads as is (no leading N).
	Shared bool
}

// Inputs describes the tensors Run expects.
func (m *Model) Inputs() []TensorSpec {
	var out []TensorSpec
	for _, in := range m.g.Inputs {
		out = append(out, TensorSpec{Name: in.Name, DType: string(in.Type.DType), Shape: m.g.InputTensorShape(in), Shared: !in.PerModel})
	}
	return out
}

// Outputs describes the tensors Run returns, each stacked [N, ...].
func (m *Model) Outputs() []TensorSpec {
	var out []TensorSpec
	for _, o := range m.g.Outputs {
		out = append(out, TensorSpec{Name: o.Name, DType: string(o.Type.DType), Shape: append([]int{m.g.N}, o.Type.Shape...)})
	}
	return out
}

// Run runs the N models on inputs (one tensor per graph input, by name) and returns every
// output stacked [N, ...], by name.
func (m *Model) Run(ctx context.Context, inputs map[string]*Tensor) (map[string]*Tensor, error) {
	return m.RunInto(ctx, inputs, nil)
}

// RunInto is Run writing each output into the tensor of the same name in reuse (say, the
// previous run's outputs) when it has the output's dtype and size, instead of new memory.
func (m *Model) RunInto(ctx context.Context, inputs, reuse map[string]*Tensor) (map[string]*Tensor, error) {
	if m.runner == nil && m.parts == nil {
		return nil, errors.New("widejit: run of a closed model")
	}
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	if m.parts != nil {
		return m.runParts(ctx, inputs)
	}
	out, err := m.runner.RunInto(inputs, reuse)
	if err == nil {
		m.runs++
	}
	return out, err
}

// ReadInputs reads every graph input from a safetensors file, checking names, dtypes and
// shapes.
func (m *Model) ReadInputs(path string) (map[string]*Tensor, error) { return m.g.ReadInputs(path) }

// RandomInputs generates inputs from seed: floats ~ N(0, 1), integers uniform below the
// consuming embedding's size.
func (m *Model) RandomInputs(seed int64) (map[string]*Tensor, error) { return m.g.GenerateInputs(seed) }

// Explain says which graph nodes went into which kernel, with which strategy, and why.
func (m *Model) Explain() string {
	if m.parts != nil {
		return m.explainParts()
	}
	return lowering.Explain(m.plan) + m.decisions
}

// Launches and Kernels count the plan's kernel launches per run and its distinct kernels
// (summed over the devices).
func (m *Model) Launches() int {
	if m.parts != nil {
		return sumParts(m.parts, (*Model).Launches)
	}
	return len(m.plan.Launches)
}

// Kernels counts the plan's distinct kernels.
func (m *Model) Kernels() int {
	if m.parts != nil {
		return sumParts(m.parts, (*Model).Kernels)
	}
	return len(m.plan.Kernels())
}

// Strategies counts the plan's launches per strategy (batched, sequential, fused, ...).
func (m *Model) Strategies() map[string]int {
	c := map[string]int{}
	for _, p := range m.parts {
		for k, v := range p.Strategies() {
			c[k] += v
		}
	}
	if m.plan == nil {
		return c
	}
	for _, l := range m.plan.Launches {
		c[l.Strategy]++
	}
	return c
}

// CompileTime is the time Load took to lower the graph, compile its kernels and upload the
// weights.
func (m *Model) CompileTime() time.Duration { return m.compile }

// CacheReport tells how many kernels came from the kernel cache and how many were compiled.
func (m *Model) CacheReport() cache.RunReport {
	r := m.cache
	for _, p := range m.parts {
		c := p.CacheReport()
		r.Hits, r.Misses, r.CompileMS, r.LoadMS = r.Hits+c.Hits, r.Misses+c.Misses, r.CompileMS+c.CompileMS, r.LoadMS+c.LoadMS
	}
	return r
}

// KernelTime is one launch's share of the runs (WithProfile).
type KernelTime struct {
	Kernel, Template string
	Prepare          bool          // ran once, at Load
	PerRun           time.Duration // mean over the runs
}

// KernelTimes lists every launch's mean time per run, slowest first; empty without
// WithProfile.
func (m *Model) KernelTimes() []KernelTime {
	var out []KernelTime
	for _, p := range m.parts {
		out = append(out, p.KernelTimes()...)
	}
	runs := max(m.runs, 1)
	for i, t := range m.kernelTimes() {
		l := m.plan.Launches[i]
		out = append(out, KernelTime{Kernel: l.Kernel.Source.Fn, Template: l.Kernel.Template, Prepare: l.Prepare,
			PerRun: t / time.Duration(runs)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].PerRun > out[j].PerRun })
	return out
}

// Close releases the device memory and the device.
func (m *Model) Close() error {
	if m.parts != nil {
		var errs []error
		for _, p := range m.parts {
			errs = append(errs, p.Close())
		}
		m.parts = nil
		return errors.Join(errs...)
	}
	if m.runner == nil {
		return nil
	}
	m.runner.Close()
	m.runner = nil
	return m.dev.Close()
}
