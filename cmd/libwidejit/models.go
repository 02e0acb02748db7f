package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/widejit/widejit"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/config"
	"github.com/widejit/widejit/internal/engine"
	"github.com/widejit/widejit/internal/errkind"
)

// models.go: the library's work in plain Go (the C conversions are in cabi.go): the table of
// loaded models, their options, and the error and panic handling at the boundary.

// The CLI's exit codes, which the C ABI returns.
const (
	codeFailure = 1
	codeUsage   = 2
	codeInput   = 3
)

// loaded is one handle's model; mu serialises its runs (a widejit.Model is not safe for
// concurrent use) and makes close wait for the run in flight.
type loaded struct {
	mu sync.Mutex
	m  *widejit.Model
}

var (
	tableMu sync.Mutex
	table   = map[int64]*loaded{}
	last    int64
)

// guard runs f and returns the CLI's exit code and message for its error, or for a panic
// (which must not unwind into the C caller: the interpreter would die with it).
func guard(f func() error) (code int, msg string) {
	defer func() {
		if r := recover(); r != nil {
			code, msg = codeFailure, fmt.Sprintf("widejit: internal error (a bug; please report it): %v\n%s", r, debug.Stack())
		}
	}()
	err := f()
	switch {
	case err == nil:
		return 0, ""
	case errors.As(err, new(errkind.Usage)):
		code = codeUsage
	case errors.As(err, new(errkind.Input)):
		code = codeInput
	default:
		code = codeFailure
	}
	return code, fmt.Sprintf("widejit: %v", err)
}

// options are load's settings beyond the configuration keys (config.Defaults, which the
// CLI's configuration file and WIDEJIT_* environment also set): the model range, the mode and
// profiling.
type options struct {
	Models     []int `json:"models"` // [lo, hi)
	Shard      []int `json:"shard"`  // [i, k]
	Sequential bool  `json:"sequential"`
	Profile    bool  `json:"profile"`
	Streams    int   `json:"streams"`
	N          int   `json:"n"`
}

// parseOptions reads the JSON object of load's options: configuration keys, layered over the
// configuration file and WIDEJIT_* environment as the CLI's flags are, and options' fields.
func parseOptions(text string) ([]widejit.Option, graph.Options, error) {
	raw := map[string]json.RawMessage{}
	if text != "" {
		d := json.NewDecoder(strings.NewReader(text))
		d.UseNumber()
		if err := d.Decode(&raw); err != nil {
			return nil, graph.Options{}, errkind.Usagef("options: %v", err)
		}
	}
	flags := pflag.NewFlagSet("options", pflag.ContinueOnError)
	flags.String("config", "", "")
	for k, d := range config.Defaults {
		name := strings.ReplaceAll(k, "_", "-")
		switch d := d.(type) {
		case []string:
			flags.StringSlice(name, d, "")
		case map[string]string: // backend_options: set as the CLI's --backend-opt NAME=VALUE
			flags.StringArray("backend-opt", nil, "")
		default:
			flags.String(name, fmt.Sprint(d), "")
		}
	}
	lib := map[string]json.RawMessage{}
	var known []string
	for k := range config.Defaults {
		known = append(known, k)
	}
	known = append(known, "config", "models", "shard", "sequential", "profile", "streams", "n")
	sort.Strings(known)
	for k, v := range raw {
		if k == "backend_options" {
			var opts map[string]string
			if err := json.Unmarshal(v, &opts); err != nil {
				return nil, graph.Options{}, errkind.Usagef("options: backend_options: expected an object of option names to string values, got %s", v)
			}
			for _, name := range slices.Sorted(maps.Keys(opts)) {
				if err := flags.Set("backend-opt", name+"="+opts[name]); err != nil {
					return nil, graph.Options{}, errkind.Usagef("options: backend_options: %v", err)
				}
			}
			continue
		}
		fl := flags.Lookup(strings.ReplaceAll(k, "_", "-"))
		if fl == nil {
			if !contains(known, k) {
				return nil, graph.Options{}, errkind.Usagef("options: unknown option %q (known: %s)", k, strings.Join(known, ", "))
			}
			lib[k] = v
			continue
		}
		val, err := flagValue(v)
		if err != nil {
			return nil, graph.Options{}, errkind.Usagef("options: %s: %v", k, err)
		}
		if err := flags.Set(fl.Name, val); err != nil {
			return nil, graph.Options{}, errkind.Usagef("options: %s: %v", k, err)
		}
	}
	v := viper.New()
	if err := config.Load(v, flags, true); err != nil {
		return nil, graph.Options{}, err
	}
	opts := config.ModelOptions(v, nil, func(msg string) { fmt.Fprintf(os.Stderr, "widejit: warning: %s\n", msg) })
	var o options
	if len(lib) > 0 {
		b, _ := json.Marshal(lib)
		d := json.NewDecoder(bytes.NewReader(b))
		if err := d.Decode(&o); err != nil {
			return nil, graph.Options{}, errkind.Usagef("options: %v", err)
		}
	}
	switch {
	case o.Models != nil && o.Shard != nil:
		return nil, graph.Options{}, errkind.Usagef("options: give models or shard, not both")
	case o.Models != nil && len(o.Models) != 2:
		return nil, graph.Options{}, errkind.Usagef("options: models is [lo, hi), got %v", o.Models)
	case o.Shard != nil && len(o.Shard) != 2:
		return nil, graph.Options{}, errkind.Usagef("options: shard is [i, k], got %v", o.Shard)
	case o.Models != nil:
		opts = append(opts, widejit.WithModels(o.Models[0], o.Models[1]))
	case o.Shard != nil:
		opts = append(opts, widejit.WithShard(o.Shard[0], o.Shard[1]))
	}
	if o.Sequential {
		opts = append(opts, widejit.WithSequential())
	}
	if o.Profile {
		opts = append(opts, widejit.WithProfile())
	}
	if o.N != 0 {
		opts = append(opts, widejit.WithN(o.N))
	}
	return append(opts, widejit.WithStreams(o.Streams)), config.Engine(v, nil, "", nil).GraphOptions(o.N), nil
}

// flagValue is a JSON scalar or list of strings as a flag's text.
func flagValue(v json.RawMessage) (string, error) {
	var list []string
	if json.Unmarshal(v, &list) == nil {
		return strings.Join(list, ","), nil
	}
	var scalar any
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	if err := d.Decode(&scalar); err != nil {
		return "", err
	}
	switch s := scalar.(type) {
	case string, json.Number, bool:
		return fmt.Sprint(s), nil
	}
	return "", fmt.Errorf("expected a string, number, boolean or list of strings, got %s", v)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// load loads the graph at path with the options (JSON) and returns its handle. The graph is
// checked first as the CLI checks it, so that a bad file gets the CLI's message and code.
func load(path, optionsJSON string) (int64, error) {
	return open(optionsJSON, func(o graph.Options) error {
		_, err := engine.LoadGraph(path, o)
		return err
	}, func(opts []widejit.Option) (*widejit.Model, error) { return widejit.Load(path, opts...) })
}

// loadMemory is load for a graph.json's content and its weights file's, held in memory
// (widejit.LoadMemory); name names the graph in messages.
func loadMemory(name string, graphJSON, weights []byte, optionsJSON string) (int64, error) {
	return open(optionsJSON, func(o graph.Options) error {
		o.Weights = weights
		if _, err := graph.Parse(name, graphJSON, o); err != nil {
			return errkind.Input{Err: err}
		}
		return nil
	}, func(opts []widejit.Option) (*widejit.Model, error) {
		return widejit.LoadMemory(name, graphJSON, weights, opts...)
	})
}

// open parses the options, checks the graph, loads it and files the model under a new handle.
func open(optionsJSON string, check func(graph.Options) error, load func([]widejit.Option) (*widejit.Model, error)) (int64, error) {
	opts, graphOpts, err := parseOptions(optionsJSON)
	if err != nil {
		return 0, err
	}
	if err := check(graphOpts); err != nil {
		return 0, err
	}
	m, err := load(opts)
	if err != nil {
		return 0, err
	}
	tableMu.Lock()
	defer tableMu.Unlock()
	last++
	table[last] = &loaded{m: m}
	return last, nil
}

// lookup is the open model of handle h, locked; the caller unlocks it.
func lookup(h int64) (*loaded, error) {
	tableMu.Lock()
	l := table[h]
	tableMu.Unlock()
	if l == nil {
		return nil, errkind.Usagef("no open model has handle %d (closed already?)", h)
	}
	l.mu.Lock()
	if l.m == nil {
		l.mu.Unlock()
		return nil, errkind.Usagef("the model of handle %d is closed", h)
	}
	return l, nil
}

// with runs f on handle h's model, one call at a time per model.
func with(h int64, f func(m *widejit.Model) error) error {
	l, err := lookup(h)
	if err != nil {
		return err
	}
	defer l.mu.Unlock()
	return f(l.m)
}

// closeModel closes handle h's model once the run in flight, if any, has finished.
func closeModel(h int64) error {
	l, err := lookup(h)
	if err != nil {
		return err
	}
	defer l.mu.Unlock()
	tableMu.Lock()
	delete(table, h)
	tableMu.Unlock()
	err = l.m.Close()
	l.m = nil
	return err
}

// info describes a loaded model as JSON: N, the model range, the device, the batch size and
// the inputs and outputs at it.
func info(m *widejit.Model) string {
	lo, hi, total := m.ModelRange()
	batchErr := ""
	if err := m.BatchError(); err != nil {
		batchErr = err.Error()
	}
	return jsonText(map[string]any{"n": m.N(), "models": []int{lo, hi, total}, "device": m.Device(),
		"batch": m.Batch(), "batch_fixed": batchErr, "inputs": specs(m.Inputs()), "outputs": specs(m.Outputs())})
}

func specs(ts []widejit.TensorSpec) []map[string]any {
	out := make([]map[string]any, len(ts))
	for i, t := range ts {
		out[i] = map[string]any{"name": t.Name, "dtype": t.DType, "shape": t.Shape, "shared": t.Shared}
	}
	return out
}

// profile is the model's kernel times (WithProfile) as JSON, slowest first.
func profile(m *widejit.Model) string {
	out := []map[string]any{}
	for _, k := range m.KernelTimes() {
		out = append(out, map[string]any{"kernel": k.Kernel, "template": k.Template, "prepare": k.Prepare,
			"ms": float64(k.PerRun.Nanoseconds()) / 1e6})
	}
	return jsonText(map[string]any{"kernels": out, "launches": m.Launches(), "compile_ms": float64(m.CompileTime().Nanoseconds()) / 1e6,
		"strategies": m.Strategies(), "cache": m.CacheReport(), "batches": m.Batches()})
}

// jsonText is v as JSON (maps of plain values: it cannot fail).
func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// tensorAt is the tensor name of dtype (graph.json's name) and shape whose data is at p, in
// the caller's memory (none without data); what ("input", "output") names it in errors.
func tensorAt(what, name, dtype string, shape []int, p unsafe.Pointer, data bool) (*widejit.Tensor, error) {
	dt := graph.DType(dtype)
	if !dt.Valid() {
		return nil, errkind.Usagef("%s %q has dtype %q, which widejit does not take", what, name, dtype)
	}
	size := dt.Size()
	for _, d := range shape {
		if d < 0 || d > 0 && size > (1<<62)/d {
			return nil, errkind.Usagef("%s %q has shape %v", what, name, shape)
		}
		size *= d
	}
	t := &widejit.Tensor{Name: name, DType: dt.Safetensors(), Shape: shape}
	if data {
		if size > 0 && p == nil {
			return nil, errkind.Usagef("%s %q: no data", what, name)
		}
		t.Data = bytesAt(p, size)
	}
	return t, nil
}

// bytesAt views n bytes of caller memory at p.
func bytesAt(p unsafe.Pointer, n int) []byte {
	if n == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(p), n)
}

// run runs m on inputs, writing every output into out's tensor of its name (caller memory):
// in place where the device can, else copied there.
func run(m *widejit.Model, inputs, out map[string]*widejit.Tensor) error {
	got, err := m.RunInto(context.Background(), inputs, out)
	if err != nil {
		return err
	}
	for name, dst := range out {
		t := got[name]
		if t == nil {
			return fmt.Errorf("the model has no output %q", name)
		}
		if len(t.Data) != len(dst.Data) {
			return errkind.Usagef("output %q is %s%v, the buffer given %s%v", name, t.DType, t.Shape, dst.DType, dst.Shape)
		}
		if len(t.Data) > 0 && &t.Data[0] != &dst.Data[0] {
			copy(dst.Data, t.Data)
		}
	}
	return nil
}
