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
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/widejit/widejit/cache"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/engine"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/device"
	"github.com/widejit/widejit/lowering"
	"github.com/widejit/widejit/runner"
)

// Tensor is a named, typed, shaped block of little-endian data, as in a safetensors file.
// Build float32 ones with NewFloat32 and read them with Float32s.
type Tensor = safetensors.Tensor

// NewFloat32 makes a float32 tensor of shape holding data (row-major, copied).
func NewFloat32(shape []int, data []float32) (*Tensor, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d > 0 && n > math.MaxInt/4/d { // 4 bytes per float32 must fit an int too
			return nil, fmt.Errorf("shape %v holds more float32 values than memory can", shape)
		}
		n *= d
	}
	if n != len(data) {
		return nil, fmt.Errorf("shape %v holds %d values, got %d", shape, n, len(data))
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
// else the CPU), "cpu", "cuda" or another registered backend (RegisterBackend); or several
// devices of one backend, "cuda:0,cuda:1" or "cuda:all" (every GPU), over which the N models
// are split (see Model.Devices), or "cpu:0,cpu:1" (as many CPU executors sharing the cores,
// the CPU's stand-in for several GPUs). A lone "cuda:I" is GPU I.
func WithDevice(kind string) Option { return func(s *settings) { s.Device = kind } }

// WithBackendOptions gives the device's backend these options (a backend refuses ones it
// does not know); they are part of every kernel and decision key made for it.
func WithBackendOptions(opts map[string]string) Option {
	return func(s *settings) { s.BackendOptions = maps.Clone(opts) }
}

// Backend opens the devices of one kind; RegisterBackend makes one available by name.
type Backend = device.Backend

// OpenOptions are what a Backend's Open gets: the host worker count (WithThreads) and the
// user's options for the backend (WithBackendOptions, --backend-opt).
type OpenOptions = device.Options

// RegisterBackend makes b the backend called name: WithDevice(name), WithDevice("name:1"),
// and, in a binary that registers it, --device name and `widejit info`. The built-in cpu
// and cuda backends are registered the same way. Its devices are planned for by their
// Info().Caps, never by name. Names are lower-case letters, digits and _; each once.
func RegisterBackend(name string, b Backend) error { return device.Register(name, b) }

// Backends lists the registered backends' names, sorted.
func Backends() []string { return device.Names() }

// WithFloat32MatmulPrecision sets the precision of fp32 products in every matmul-like kernel
// (Linear, matmul, fused MLP, convolutions, attention, recurrent layers) on a GPU, as
// torch.set_float32_matmul_precision spells it: "highest" (the default: IEEE fp32), "high"
// (TF32 tensor cores, each operand truncated to 10 mantissa bits as Triton's kernels do;
// cuBLAS rounds to nearest) or "medium" (operands rounded to bf16, fp32 accumulation). The CPU
// always computes IEEE fp32 and warns (WithWarnings) when another precision is asked for.
func WithFloat32MatmulPrecision(p string) Option {
	return func(s *settings) { s.Float32MatmulPrecision = p }
}

// WithoutIntSpecialization compiles integer kernel arguments as run-time values, as Triton's
// do_not_specialize does. By default, like Triton, kernels are specialized for the integer
// arguments their launches pass that equal 1 (unit strides) or are multiples of 16, which
// gives 16-byte vector loads and stores on GPUs; the specialization is in the cache key.
func WithoutIntSpecialization() Option { return func(s *settings) { s.NoIntSpecialization = true } }

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

// WithCacheReadOnly reads a shared, pre-populated kernel cache (a cluster's) without ever
// writing to it: hits are served, misses compiled in memory. A directory that is not
// writable is read this way anyway.
func WithCacheReadOnly() Option { return func(s *settings) { s.CacheReadOnly = true } }

// WithLaunchTimeout stops a run whose kernel launch takes longer than d, with an error naming
// the kernel (0, the default: no limit).
func WithLaunchTimeout(d time.Duration) Option { return func(s *settings) { s.LaunchTimeout = d } }

// WithMemoryLimit bounds the bytes a model may allocate (weights, activations, outputs):
// Load refuses a larger plan with the figures (0, the default: 80% of physical memory;
// negative: no limit).
func WithMemoryLimit(bytes int64) Option { return func(s *settings) { s.MemoryLimit = bytes } }

// WithOutsidePaths lets the graph name files (its weights) outside its own directory: an
// absolute path, one with "..", or a symbolic link that leads out. Without it they are
// refused, so that a graph from elsewhere reads nothing but its own files.
func WithOutsidePaths() Option { return func(s *settings) { s.AllowOutsidePaths = true } }

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

// Model is a loaded graph, compiled for one device, ready to run. A Model is safe for
// concurrent use: its runs take turns (one device, one set of buffers: a run in progress
// holds them), so goroutines sharing a Model get the results of sequential runs, and Close
// waits for the run in progress. For runs at once, load one Model per goroutine (they share
// the kernel cache; each holds its own copy of the weights).
//
// The batch size is dynamic (docs/graph-format.md, "Batch size"): Run takes inputs at any
// batch size, and the Model keeps one compiled plan per batch size it has seen, compiled on
// first use (from the kernel cache when it has the kernels). Each plan holds its own copy of
// the weights on the device.
type Model struct {
	// mu serialises runs, Close and the methods that read the latest run's plan.
	mu    sync.Mutex
	g     *graph.Graph // at the exported batch size
	s     settings
	dev   jit.Device
	plans map[planKey]*plan // by batch size (0: a graph whose batch size is fixed) and dynamic sizes
	cur   *plan             // the plan of the latest run (at first, the exported batch size's)

	// Several devices (models.go): one Model per device, each for its share of the models,
	// run at once; this Model holds no device or plan of its own.
	parts    []*Model
	loadTime time.Duration
	// label names the device (cpu, cuda:1); tracer, when tracing, records every plan's
	// launches and copies on track tracePID.
	label    string
	tracer   *runner.Tracer
	tracePID int
}

// plan is the model compiled for one batch size.
type plan struct {
	g         *graph.Graph
	plan      *lowering.Plan
	runner    *runner.Runner
	decisions string
	cache     cache.RunReport
	compile   time.Duration
	runs      int
}

// Load reads and validates the graph at path (with its weights), picks the device, and
// compiles every kernel the graph needs at its exported batch size (from the kernel cache
// when it has them).
func Load(path string, opts ...Option) (*Model, error) {
	return load(func(o graph.Options) (*graph.Graph, error) { return graph.LoadWithOptions(path, o) }, opts)
}

// LoadMemory is Load for a graph held in memory: graphJSON is a graph.json's content and
// weights the content of the weights file it names, so that nothing is read from disk (with
// weights nil, that file is read, relative to file's directory). file names the graph in
// messages. The Model keeps weights (it reads them again for each new batch size).
func LoadMemory(file string, graphJSON, weights []byte, opts ...Option) (*Model, error) {
	return load(func(o graph.Options) (*graph.Graph, error) {
		o.Weights = weights
		return graph.Parse(file, graphJSON, o)
	}, opts)
}

// load is Load with the graph read by read.
func load(read func(graph.Options) (*graph.Graph, error), opts []Option) (*Model, error) {
	s := settings{mode: "wide", dropout: "eval"}
	for _, o := range opts {
		o(&s)
	}
	if s.n < 0 {
		return nil, fmt.Errorf("N must be > 0, got %d", s.n)
	}
	if s.Streams < 0 {
		return nil, fmt.Errorf("streams must be >= 0 (0: the default), got %d", s.Streams)
	}
	if err := lowering.CheckFloat32MatmulPrecision(s.Float32MatmulPrecision); err != nil {
		return nil, err
	}
	g, err := read(s.GraphOptions(s.n))
	if err != nil {
		return nil, err
	}
	if g, err = s.models.apply(g); err != nil {
		return nil, err
	}
	if lo, hi, total := g.ModelRange(); s.dropout == "mc" && (lo != 0 || hi != total) {
		return nil, fmt.Errorf("Monte Carlo dropout draws masks over all %d models; it cannot run models [%d, %d) alone", total, lo, hi)
	}
	devs, err := engine.ParseDevices(s.Device)
	if err != nil {
		return nil, err
	}
	var tracer *runner.Tracer
	if s.trace {
		tracer = runner.NewTracer()
	}
	if len(devs) > 1 {
		return loadParts(g, s, devs, tracer)
	}
	return loadOne(g, s, devs[0], 0, tracer)
}

// loadOne opens dev and compiles g for it at g's batch size.
func loadOne(g *graph.Graph, s settings, dev engine.DeviceSpec, pid int, tracer *runner.Tracer) (*Model, error) {
	s.Device, s.Ordinal = dev.Kind, dev.Ordinal
	d, err := s.OpenDevice()
	if err != nil {
		return nil, err
	}
	s.Float32MatmulPrecision = s.LoweringPrecision(d.Info().Caps)
	m := &Model{g: g, s: s, dev: d, plans: map[planKey]*plan{}, label: dev.String(), tracer: tracer, tracePID: pid}
	p, err := m.compile(context.Background(), g)
	if err != nil {
		d.Close()
		return nil, err
	}
	m.plans[planKey{batch: g.Batch()}], m.cur = p, p
	return m, nil
}

// compile lowers g and compiles its kernels for the model's device.
func (m *Model) compile(ctx context.Context, g *graph.Graph) (*plan, error) {
	start := time.Now()
	s := m.s
	store := s.OpenCache()
	tuning := s.NewTuning(ctx, store)
	defer tuning.Close()
	lopts := s.LoweringOptions(m.dev)
	lopts.Dropout, lopts.Seed, lopts.ModelMajor, lopts.Chooser = s.dropout, s.seed, s.mode == "sequential", tuning.Chooser(s.mode)
	lp, err := lowering.Lower(g, lopts)
	var r *runner.Runner
	if err == nil {
		r, err = runner.NewWithOptions(lp, m.dev, s.Compiler(store), g,
			runner.Options{LaunchTimeout: s.LaunchTimeout, MemoryLimit: s.MemoryLimit, Streams: s.Streams})
	}
	if err != nil {
		store.Close()
		return nil, err
	}
	report := store.RunReport()
	if cerr := store.Close(); cerr != nil {
		s.Warning(fmt.Sprintf("closing the kernel cache: %v", cerr))
	}
	r.Profile(s.profile)
	if m.tracer != nil {
		r.Trace(m.tracer, m.tracePID, m.label)
	}
	return &plan{g: g, plan: lp, runner: r, decisions: tuning.Explain(s.mode), cache: report,
		compile: time.Since(start)}, nil
}

// planKey names a specialisation of the graph: its batch size and the sizes of its dynamic
// dims where they differ from the export (graph.Sizes.Key).
type planKey struct {
	batch int
	sizes string
}

// planFor is the plan for the batch size and dynamic sizes inputs carry, compiled on first use.
func (m *Model) planFor(ctx context.Context, inputs map[string]*Tensor) (*plan, error) {
	b, err := m.g.InputBatch(inputs)
	if err != nil {
		return nil, err
	}
	sizes, err := m.g.InputSizes(inputs)
	if err != nil {
		return nil, err
	}
	key := planKey{b, sizes.Key()}
	p := m.plans[key]
	if p == nil {
		gb, err := m.g.WithSizes(b, sizes)
		if err != nil {
			return nil, err
		}
		if err := gb.CheckInputs(inputs); err != nil {
			return nil, err
		}
		if p, err = m.compile(ctx, gb); err != nil {
			if key.sizes != "" {
				return nil, fmt.Errorf("batch size %d, %s: %w", b, key.sizes, err)
			}
			return nil, fmt.Errorf("batch size %d: %w", b, err)
		}
		m.plans[key] = p
	}
	if err := p.g.CheckInputs(inputs); err != nil {
		return nil, err
	}
	return p, nil
}

// Batch is the batch size the graph was exported at, or 0 when its batch size is fixed
// (BatchError says why); Run takes inputs at any batch size otherwise.
func (m *Model) Batch() int { return m.g.Batch() }

// BatchError says why the model's batch size is fixed, nil when Run takes any.
func (m *Model) BatchError() error { return m.g.BatchError() }

// Batches lists the batch sizes the model has compiled a plan for, in increasing order.
func (m *Model) Batches() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.parts != nil {
		return m.parts[0].Batches()
	}
	out := make([]int, 0, len(m.plans))
	for k := range m.plans {
		if !slices.Contains(out, k.batch) {
			out = append(out, k.batch)
		}
	}
	sort.Ints(out)
	return out
}

// N is the number of models.
func (m *Model) N() int { return m.g.N }

// Device is the name of the backend the model runs on: "cpu", "cuda" or a registered one's.
func (m *Model) Device() string {
	if m.parts != nil {
		return m.parts[0].Device()
	}
	return m.dev.Info().Kind
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

// Inputs describes the tensors Run expects, at the exported batch size (Batch); Run takes
// another batch size in each input's batch dim.
func (m *Model) Inputs() []TensorSpec {
	var out []TensorSpec
	for _, in := range m.g.Inputs {
		out = append(out, TensorSpec{Name: in.Name, DType: string(in.Type.DType), Shape: m.g.InputTensorShape(in), Shared: !in.PerModel})
	}
	return out
}

// Outputs describes the tensors Run returns, each stacked [N, ...], at the exported batch
// size.
func (m *Model) Outputs() []TensorSpec { return outputSpecs(m.g) }

func outputSpecs(g *graph.Graph) []TensorSpec {
	var out []TensorSpec
	for _, o := range g.Outputs {
		out = append(out, TensorSpec{Name: o.Name, DType: string(o.Type.DType), Shape: append([]int{g.N}, o.Type.Shape...)})
	}
	return out
}

// OutputsFor describes the outputs Run returns for inputs: Outputs at the batch size the
// inputs carry (see Run). It compiles nothing; callers that write outputs into memory of
// their own (RunInto) size it with this.
func (m *Model) OutputsFor(inputs map[string]*Tensor) ([]TensorSpec, error) {
	b, err := m.g.InputBatch(inputs)
	if err != nil {
		return nil, fmt.Errorf("widejit: %w", err)
	}
	sizes, err := m.g.InputSizes(inputs)
	if err != nil {
		return nil, fmt.Errorf("widejit: %w", err)
	}
	g := m.g
	if len(sizes) > 0 || b != 0 && b != g.Batch() {
		if g, err = m.g.WithSizes(b, sizes); err != nil {
			return nil, fmt.Errorf("widejit: %w", err)
		}
	}
	return outputSpecs(g), nil
}

// Run runs the N models on inputs (one tensor per graph input, by name) and returns every
// output stacked [N, ...], by name. The inputs may have any batch size (all the same); a
// batch size seen for the first time is compiled first.
func (m *Model) Run(ctx context.Context, inputs map[string]*Tensor) (map[string]*Tensor, error) {
	return m.RunInto(ctx, inputs, nil)
}

// RunInto is Run writing each output into the tensor of the same name in reuse (say, the
// previous run's outputs) when it has the output's dtype and size, instead of new memory.
// When reuse is the previous run's outputs the result may be reuse itself: on the CPU such
// a run allocates nothing. A run that fails may have written part of its results into
// reuse's tensors already: keep a copy of any you still need.
//
// A run checks ctx before every kernel launch (and the CPU stops a launch in progress
// soon after ctx is done): a run stopped by ctx returns ctx.Err(). Runs of one Model take
// turns; a run waiting for its turn starts even if ctx is done meanwhile, and stops at its
// first check.
func (m *Model) RunInto(ctx context.Context, inputs, reuse map[string]*Tensor) (map[string]*Tensor, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out, err := m.runLocked(ctx, inputs, reuse)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err() // stopped by ctx, whatever the launch it stopped said
	}
	return out, err
}

// runLocked is RunInto, with m.mu held.
func (m *Model) runLocked(ctx context.Context, inputs, reuse map[string]*Tensor) (map[string]*Tensor, error) {
	if m.plans == nil && m.parts == nil {
		return nil, errors.New("run of a closed model")
	}
	if m.parts != nil {
		return m.runParts(ctx, inputs)
	}
	p, err := m.planFor(ctx, inputs)
	if err != nil {
		return nil, err
	}
	m.cur = p
	out, err := p.runner.RunContext(ctx, inputs, reuse)
	if err == nil {
		p.runs++
	}
	return out, err
}

// ReadInputs reads every graph input from a safetensors file, checking names, dtypes and
// shapes (at any batch size).
func (m *Model) ReadInputs(path string) (map[string]*Tensor, error) {
	_, in, err := m.g.ReadInputsAnyBatch(path)
	return in, err
}

// RandomInputs generates inputs from seed: floats ~ N(0, 1), integers uniform below the
// consuming embedding's size.
func (m *Model) RandomInputs(seed int64) (map[string]*Tensor, error) { return m.g.GenerateInputs(seed) }

// Explain says which graph nodes went into which kernel, with which strategy, and why.
// It, and the plan facts below, describe the plan of the latest run (before any, the
// exported batch size's).
func (m *Model) Explain() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.parts != nil {
		return m.explainParts()
	}
	return lowering.Explain(m.cur.plan) + m.cur.decisions + m.cur.runner.ExplainStreams()
}

// Launches and Kernels count the plan's kernel launches per run and its distinct kernels
// (summed over the devices).
func (m *Model) Launches() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.parts != nil {
		return sumParts(m.parts, (*Model).Launches)
	}
	return len(m.cur.plan.Launches)
}

// Kernels counts the plan's distinct kernels.
func (m *Model) Kernels() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.parts != nil {
		return sumParts(m.parts, (*Model).Kernels)
	}
	return len(m.cur.plan.Kernels())
}

// Strategies counts the plan's launches per strategy (batched, sequential, fused, ...).
func (m *Model) Strategies() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := map[string]int{}
	for _, p := range m.parts {
		for k, v := range p.Strategies() {
			c[k] += v
		}
	}
	if m.cur != nil {
		for _, l := range m.cur.plan.Launches {
			c[l.Strategy]++
		}
	}
	return c
}

// CompileTime is the time Load (or the first run at the latest run's batch size) took to
// lower the graph, compile its kernels and upload the weights.
func (m *Model) CompileTime() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.parts != nil {
		return m.loadTime
	}
	return m.cur.compile
}

// CacheReport tells how many kernels came from the kernel cache and how many were compiled
// (summed over the devices).
func (m *Model) CacheReport() cache.RunReport {
	m.mu.Lock()
	defer m.mu.Unlock()
	var r cache.RunReport
	if m.cur != nil {
		r = m.cur.cache
	}
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
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []KernelTime
	for _, p := range m.parts {
		out = append(out, p.KernelTimes()...)
	}
	if m.cur != nil {
		runs := max(m.cur.runs, 1)
		for i, t := range m.cur.runner.KernelTimes() {
			l := m.cur.plan.Launches[i]
			out = append(out, KernelTime{Kernel: l.Kernel.Source.Fn, Template: l.Kernel.Template, Prepare: l.Prepare,
				PerRun: t / time.Duration(runs)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].PerRun > out[j].PerRun })
	return out
}

// Close waits for the run in progress, if any, and releases the device memory and the
// device; later runs fail.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.parts != nil {
		var errs []error
		for _, p := range m.parts {
			errs = append(errs, p.Close())
		}
		m.parts = nil
		return errors.Join(errs...)
	}
	if m.plans == nil {
		return nil
	}
	for _, p := range m.plans {
		p.runner.Close()
	}
	m.plans = nil
	return m.dev.Close()
}
