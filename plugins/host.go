package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/widejit/widejit/plugins/abi"
)

// Defaults of Options.
const (
	DefaultMemoryLimit      = 64 << 20
	DefaultDeadline         = 50 * time.Millisecond
	DefaultInitDeadline     = 2 * time.Second
	DefaultMaxResponseBytes = 1 << 20
	// DefaultMaxModuleBytes bounds a module file: a Go plugin is a few MiB.
	DefaultMaxModuleBytes = 64 << 20
	// DefaultCompileTimeout bounds compiling a module (wazero's compile time grows
	// quadratically with block nesting: 1.2 MB of nested blocks took minutes).
	DefaultCompileTimeout = 20 * time.Second
	guestOutputLimit      = 16 << 10
	wasmPageSize          = 64 << 10
)

// Options configure the sandbox. Zero values take the defaults.
type Options struct {
	// CacheDir holds wazero's compilation cache, so a module is compiled once across
	// processes; widejit puts it beside the kernel cache (<cache_dir>/wasm). Empty: compile in
	// memory for this process only.
	CacheDir string
	// MemoryLimit caps the guest's linear memory, in bytes (rounded down to 64 KiB pages).
	MemoryLimit uint64
	// Deadline bounds each Choose call, from writing the request to reading the response.
	Deadline time.Duration
	// InitDeadline bounds starting an instance (the module's _initialize: a Go guest's runtime
	// and package initialisers), which runs outside the per-call deadline.
	InitDeadline time.Duration
	// MaxResponseBytes bounds the response the host reads back.
	MaxResponseBytes uint32
	// PoolSize is how many idle instances are kept for reuse (default: min(GOMAXPROCS, 4)).
	PoolSize int
	// MaxModuleBytes bounds the module's size (default DefaultMaxModuleBytes).
	MaxModuleBytes int64
	// CompileTimeout bounds compiling the module (default DefaultCompileTimeout). wazero
	// cannot stop compiling one function, so a compile past it is abandoned to finish in the
	// background and the plugin is set aside (KindCompile).
	CompileTimeout time.Duration
	// Warn receives recoverable problems (a corrupt compilation cache, cleared and rebuilt);
	// nil prints "widejit: warning: ..." to standard error.
	Warn func(msg string)
}

func (o Options) withDefaults() Options {
	if o.MemoryLimit == 0 {
		o.MemoryLimit = DefaultMemoryLimit
	}
	if o.Deadline <= 0 {
		o.Deadline = DefaultDeadline
	}
	if o.InitDeadline <= 0 {
		o.InitDeadline = DefaultInitDeadline
	}
	if o.MaxResponseBytes == 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.PoolSize <= 0 {
		o.PoolSize = min(runtime.GOMAXPROCS(0), 4)
	}
	if o.MaxModuleBytes <= 0 {
		o.MaxModuleBytes = DefaultMaxModuleBytes
	}
	if o.CompileTimeout <= 0 {
		o.CompileTimeout = DefaultCompileTimeout
	}
	if o.Warn == nil {
		o.Warn = func(msg string) { fmt.Fprintf(os.Stderr, "widejit: warning: %s\n", msg) }
	}
	return o
}

// Plugin is a loaded, ABI-checked strategy plugin. It is safe for concurrent use.
type Plugin struct {
	name     string
	hash     string
	opts     Options
	runtime  wazero.Runtime
	cache    wazero.CompilationCache
	compiled wazero.CompiledModule
	starts   []string

	mu     sync.Mutex
	idle   []*instance
	closed bool
}

// instance is one initialised copy of the module; it is discarded after any error, since a
// failed call may leave the guest's state broken.
type instance struct {
	mod    api.Module
	alloc  api.Function
	choose api.Function
	output *boundedBuffer // the guest's stdout and stderr
}

// Load reads, compiles and checks the plugin at path.
func Load(ctx context.Context, path string, opts Options) (*Plugin, error) {
	name := filepath.Base(path)
	limit := opts.withDefaults().MaxModuleBytes
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO must not block the open
	if err != nil {
		return nil, &Error{Plugin: name, Kind: KindLoad, Reason: err.Error(), Err: err}
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, &Error{Plugin: name, Kind: KindLoad, Reason: fmt.Sprintf("%s is not a regular file", path), Err: err}
	} else if st.Size() > limit {
		return nil, &Error{Plugin: name, Kind: KindLoad, Reason: fmt.Sprintf("%s is %d bytes, more than the %d-byte limit for a module", path, st.Size(), limit)}
	}
	wasm, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &Error{Plugin: name, Kind: KindLoad, Reason: err.Error(), Err: err}
	}
	return LoadBytes(ctx, name, wasm, opts)
}

// LoadBytes compiles and checks a plugin given as bytes; name identifies it in errors.
func LoadBytes(ctx context.Context, name string, wasm []byte, opts Options) (*Plugin, error) {
	opts = opts.withDefaults()
	sum := sha256.Sum256(wasm)
	p := &Plugin{name: name, hash: hex.EncodeToString(sum[:]), opts: opts}
	fail := func(kind Kind, err error, format string, args ...any) (*Plugin, error) {
		p.closeRuntime(ctx)
		return nil, &Error{Plugin: name, Kind: kind, Reason: fmt.Sprintf(format, args...), Err: err}
	}

	if int64(len(wasm)) > opts.MaxModuleBytes {
		return fail(KindLoad, nil, "the module is %d bytes, more than the %d-byte limit", len(wasm), opts.MaxModuleBytes)
	}
	pages := opts.MemoryLimit / wasmPageSize
	if pages == 0 || pages > 65536 {
		return fail(KindLoad, nil, "memory limit %d bytes is outside 64 KiB .. 4 GiB", opts.MemoryLimit)
	}
	compiled, err := p.compile(ctx, wasm, uint32(pages), true)
	if err != nil {
		p.runtime, p.cache = nil, nil // compile closed them, or closes them when it ends
		var perr *Error
		if errors.As(err, &perr) {
			return nil, perr
		}
		return fail(KindLoad, err, "%v", err)
	}
	p.compiled = compiled
	for _, imp := range compiled.ImportedFunctions() {
		if mod, fn, _ := imp.Import(); mod != wasi_snapshot_preview1.ModuleName {
			return fail(KindLoad, nil, "imports %s.%s; a plugin may import only %s", mod, fn, wasi_snapshot_preview1.ModuleName)
		}
	}
	if err := checkExports(compiled); err != nil {
		if _, command := compiled.ExportedFunctions()["_start"]; command {
			return fail(KindABI, err, "%v; the module is a WASI command, build a reactor instead (Go: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared)", err)
		}
		return fail(KindABI, err, "%v", err)
	}
	if _, ok := compiled.ExportedFunctions()["_initialize"]; ok {
		p.starts = []string{"_initialize"}
	}

	inst, err := p.newInstance(ctx)
	if err != nil {
		p.closeRuntime(ctx)
		return nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, opts.Deadline)
	defer cancel()
	res, err := inst.mod.ExportedFunction(abi.ExportABI).Call(callCtx)
	if err != nil {
		perr := p.callError(callCtx, inst, abi.ExportABI, err)
		p.closeRuntime(ctx)
		return nil, perr
	}
	if v := int32(res[0]); v != abi.Version {
		return fail(KindABI, nil, "%s() returned %d; this widejit speaks ABI version %d", abi.ExportABI, v, abi.Version)
	}
	p.idle = append(p.idle, inst)
	return p, nil
}

// checkExports verifies the exports and signatures of ABI version 1.
func checkExports(m wazero.CompiledModule) error {
	if _, ok := m.ExportedMemories()[abi.ExportMemory]; !ok {
		return fmt.Errorf("missing export %q (linear memory)", abi.ExportMemory)
	}
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	want := []struct {
		name            string
		params, results []api.ValueType
		sig             string
	}{
		{abi.ExportAlloc, []api.ValueType{i32}, []api.ValueType{i32}, "(size i32) -> i32"},
		{abi.ExportABI, nil, []api.ValueType{i32}, "() -> i32"},
		{abi.ExportChoose, []api.ValueType{i32, i32}, []api.ValueType{i64}, "(ptr i32, len i32) -> i64"},
	}
	fns := m.ExportedFunctions()
	for _, w := range want {
		def, ok := fns[w.name]
		if !ok {
			return fmt.Errorf("missing export %q %s", w.name, w.sig)
		}
		if !sameTypes(def.ParamTypes(), w.params) || !sameTypes(def.ResultTypes(), w.results) {
			return fmt.Errorf("export %q has signature %s, want %s", w.name, signature(def), w.sig)
		}
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func signature(def api.FunctionDefinition) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("(%s) -> %s", names(def.ParamTypes()), names(def.ResultTypes()))
}

// Name is the plugin's file name, as warnings and decisions cite it.
func (p *Plugin) Name() string { return p.name }

// Hash is the hex SHA-256 of the module's bytes; decisions recorded from this plugin key on it.
func (p *Plugin) Hash() string { return p.hash }

// newInstance instantiates the module in the sandbox: no files, environment or arguments,
// wazero's fake clocks and sleep, a fixed-seed random source, output into a bounded buffer.
func (p *Plugin) newInstance(ctx context.Context) (*instance, error) {
	out := &boundedBuffer{limit: guestOutputLimit}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions(p.starts...).
		WithStdout(out).
		WithStderr(out).
		WithRandSource(rand.NewChaCha8([32]byte{'w', 'i', 'd', 'e', 'j', 'i', 't'}))
	initCtx, cancel := context.WithTimeout(ctx, p.opts.InitDeadline)
	defer cancel()
	mod, err := p.runtime.InstantiateModule(initCtx, p.compiled, cfg)
	if err != nil {
		inst := &instance{output: out}
		perr := p.callError(initCtx, inst, "instantiate", err)
		if perr.Kind == KindTrap || perr.Kind == KindExit {
			perr.Kind = KindLoad
		}
		return nil, perr
	}
	return &instance{
		mod:    mod,
		alloc:  mod.ExportedFunction(abi.ExportAlloc),
		choose: mod.ExportedFunction(abi.ExportChoose),
		output: out,
	}, nil
}

func (p *Plugin) get(ctx context.Context) (*instance, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, &Error{Plugin: p.name, Kind: KindClosed, Reason: "the plugin was closed"}
	}
	if n := len(p.idle); n > 0 {
		inst := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return inst, nil
	}
	p.mu.Unlock()
	return p.newInstance(ctx)
}

func (p *Plugin) put(ctx context.Context, inst *instance) {
	p.mu.Lock()
	if !p.closed && len(p.idle) < p.opts.PoolSize {
		p.idle = append(p.idle, inst)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	_ = inst.mod.Close(ctx)
}

// Choose asks the plugin to rank req's candidates. The response's ranking has been checked
// against the candidates (abi.CheckRanking); it may be partial. Every failure is an *Error.
func (p *Plugin) Choose(ctx context.Context, req abi.Request) (abi.Response, error) {
	if req.ABI == 0 {
		req.ABI = abi.Version
	}
	body, err := json.Marshal(req)
	if err != nil {
		return abi.Response{}, &Error{Plugin: p.name, Kind: KindRequest, Reason: err.Error(), Err: err}
	}
	inst, err := p.get(ctx)
	if err != nil {
		return abi.Response{}, err
	}
	callCtx, cancel := context.WithTimeout(ctx, p.opts.Deadline)
	defer cancel()
	resp, err := p.call(callCtx, inst, body, req.Candidates)
	if err != nil {
		_ = inst.mod.Close(ctx)
		return abi.Response{}, err
	}
	p.put(ctx, inst)
	return resp, nil
}

func (p *Plugin) call(ctx context.Context, inst *instance, body []byte, candidates []abi.Candidate) (abi.Response, error) {
	inst.output.Reset()
	res, err := inst.alloc.Call(ctx, uint64(len(body)))
	if err != nil {
		return abi.Response{}, p.callError(ctx, inst, abi.ExportAlloc, err)
	}
	ptr := uint32(res[0])
	if !inst.mod.Memory().Write(ptr, body) {
		return abi.Response{}, p.failf(KindMalformed, "alloc(%d) returned %#x, outside the module's %d-byte memory", len(body), ptr, inst.mod.Memory().Size())
	}
	res, err = inst.choose.Call(ctx, uint64(ptr), uint64(len(body)))
	if err != nil {
		return abi.Response{}, p.callError(ctx, inst, abi.ExportChoose, err)
	}
	outPtr, outLen := uint32(res[0]>>32), uint32(res[0])
	if outLen > p.opts.MaxResponseBytes {
		return abi.Response{}, p.failf(KindTooLarge, "response of %d bytes exceeds the %d-byte limit", outLen, p.opts.MaxResponseBytes)
	}
	view, ok := inst.mod.Memory().Read(outPtr, outLen)
	if !ok {
		return abi.Response{}, p.failf(KindMalformed, "response [%#x, +%d) lies outside the module's %d-byte memory", outPtr, outLen, inst.mod.Memory().Size())
	}
	var resp abi.Response
	if err := json.Unmarshal(view, &resp); err != nil {
		return abi.Response{}, &Error{Plugin: p.name, Kind: KindMalformed, Reason: fmt.Sprintf("response is not the expected JSON (%v): %s", err, excerpt(view)), Err: err}
	}
	if err := abi.CheckRanking(resp.Ranking, candidates); err != nil {
		return abi.Response{}, &Error{Plugin: p.name, Kind: KindRanking, Reason: Printable(err.Error(), 1000), Err: err}
	}
	// the note reaches terminals (--explain, plugin check): no escape sequences, bounded
	resp.Note = Printable(resp.Note, MaxNoteBytes)
	return resp, nil
}

func (p *Plugin) failf(kind Kind, format string, args ...any) *Error {
	return &Error{Plugin: p.name, Kind: kind, Reason: fmt.Sprintf(format, args...)}
}

// callError classifies an error from calling into the guest.
func (p *Plugin) callError(ctx context.Context, inst *instance, what string, err error) *Error {
	output := inst.output.String()
	var exit *sys.ExitError
	deadline := errors.Is(ctx.Err(), context.DeadlineExceeded)
	canceled := errors.Is(ctx.Err(), context.Canceled)
	if errors.As(err, &exit) {
		deadline = deadline || exit.ExitCode() == sys.ExitCodeDeadlineExceeded
		canceled = canceled || exit.ExitCode() == sys.ExitCodeContextCanceled
	}
	switch {
	case deadline:
		return &Error{Plugin: p.name, Kind: KindDeadline, Reason: fmt.Sprintf("%s did not return within the deadline (%v per call, %v to start an instance)", what, p.opts.Deadline, p.opts.InitDeadline), Err: err}
	case canceled:
		return &Error{Plugin: p.name, Kind: KindCanceled, Reason: fmt.Sprintf("%s: the caller canceled", what), Err: err}
	case strings.Contains(output, "out of memory") || strings.Contains(err.Error(), "out of memory"):
		return &Error{Plugin: p.name, Kind: KindMemory, Reason: fmt.Sprintf("%s ran out of memory (limit %d MiB): %s", what, p.opts.MemoryLimit>>20, firstLine(output, "out of memory")), Err: err}
	case strings.Contains(output, "panic: "):
		return &Error{Plugin: p.name, Kind: KindPanic, Reason: fmt.Sprintf("%s panicked: %s", what, strings.TrimPrefix(firstLine(output, "panic: "), "panic: ")), Err: err}
	case errors.As(err, &exit):
		reason := fmt.Sprintf("%s exited with code %d", what, exit.ExitCode())
		if output != "" {
			reason += ": " + excerpt([]byte(output))
		}
		return &Error{Plugin: p.name, Kind: KindExit, Reason: reason, Err: err}
	default:
		return &Error{Plugin: p.name, Kind: KindTrap, Reason: fmt.Sprintf("%s trapped: %v", what, err), Err: err}
	}
}

// Close releases the module and its instances; later calls fail with KindClosed.
func (p *Plugin) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.idle = nil
	p.mu.Unlock()
	return p.closeRuntime(ctx)
}

func (p *Plugin) closeRuntime(ctx context.Context) error {
	var err error
	if p.runtime != nil {
		err = p.runtime.Close(ctx)
	}
	if p.cache != nil {
		if cerr := p.cache.Close(ctx); err == nil {
			err = cerr
		}
	}
	return err
}

// KindCompile: compiling the module took longer than Options.CompileTimeout.
const KindCompile Kind = "compile-time"

// compile makes p's runtime (with the compilation cache when there is one) and compiles wasm
// within opts.CompileTimeout. A cache that cannot be opened is skipped with a warning; a
// cache entry wazero cannot read (its errors say "compilationcache") is cleared with a warning
// and the module compiled again, once: a corrupt cache never disables a plugin. On error the
// runtime is closed (at once, or when an abandoned compile ends).
func (p *Plugin) compile(ctx context.Context, wasm []byte, pages uint32, retry bool) (wazero.CompiledModule, error) {
	cfg := wazero.NewRuntimeConfig().
		WithMemoryLimitPages(pages).
		WithCloseOnContextDone(true)
	if dir := p.opts.CacheDir; dir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			p.opts.Warn(fmt.Sprintf("plugin %s: compilation cache %s is unusable (%v); compiling without it", p.name, dir, err))
		} else {
			p.cache = cache
			cfg = cfg.WithCompilationCache(cache)
		}
	}
	p.runtime = wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, p.runtime); err != nil {
		p.closeRuntime(ctx)
		return nil, &Error{Plugin: p.name, Kind: KindLoad, Reason: fmt.Sprintf("WASI host functions: %v", err), Err: err}
	}
	type result struct {
		m   wazero.CompiledModule
		err error
	}
	cctx, cancel := context.WithTimeout(ctx, p.opts.CompileTimeout)
	defer cancel()
	done := make(chan result, 1)
	rt, cache := p.runtime, p.cache
	go func() {
		m, err := rt.CompileModule(cctx, wasm)
		done <- result{m, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-cctx.Done():
		// wazero checks the context only between functions: let the compile finish in the
		// background and release its runtime then.
		go func() {
			<-done
			rt.Close(context.Background())
			if cache != nil {
				cache.Close(context.Background())
			}
		}()
		if ctx.Err() != nil {
			return nil, &Error{Plugin: p.name, Kind: KindCanceled, Reason: "compiling: the caller canceled", Err: ctx.Err()}
		}
		return nil, &Error{Plugin: p.name, Kind: KindCompile, Reason: fmt.Sprintf("compiling the %d-byte module took longer than %v; set aside (raise the compile timeout if it is legitimate)", len(wasm), p.opts.CompileTimeout)}
	}
	if r.err == nil {
		return r.m, nil
	}
	p.closeRuntime(ctx)
	if retry && p.cache != nil && strings.Contains(r.err.Error(), "compilationcache") {
		p.opts.Warn(fmt.Sprintf("plugin %s: the compilation cache %s is corrupt (%v); cleared it and compiling again", p.name, p.opts.CacheDir, firstLine(r.err.Error(), "")))
		if err := ClearCompilationCache(p.opts.CacheDir); err != nil {
			p.opts.Warn(fmt.Sprintf("plugin %s: clearing %s: %v; compiling without it", p.name, p.opts.CacheDir, err))
			p.opts.CacheDir = ""
		}
		p.cache = nil
		return p.compile(ctx, wasm, pages, false)
	}
	return nil, &Error{Plugin: p.name, Kind: KindLoad, Reason: fmt.Sprintf("not a valid WebAssembly module within the sandbox's limits: %v", r.err), Err: r.err}
}

// ClearCompilationCache removes what wazero keeps in dir (its wazero-<version>-<arch>-<os>
// directories) and nothing else.
func ClearCompilationCache(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "wazero-") {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}
