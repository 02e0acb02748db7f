package widejit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/engine"
	"github.com/widejit/widejit/runner"
)

// models.go: model ranges (WithModels, WithShard), several devices in one Model
// (WithDevice("cuda:0,cuda:1")), several streams per GPU (WithStreams) and launch traces
// (WithTrace).

// modelRange is the models a Load keeps: [lo, hi), or shard i of k; set is false for all.
type modelRange struct {
	set, shard bool
	a, b       int
}

// apply restricts g to the range.
func (r modelRange) apply(g *graph.Graph) (*graph.Graph, error) {
	if !r.set {
		return g, nil
	}
	lo, hi := r.a, r.b
	if r.shard {
		i, k := r.a, r.b
		if i < 0 || k < 1 || i >= k || k > g.N {
			return nil, fmt.Errorf("shard %d/%d of %d models: need 0 <= I < K <= N", i, k, g.N)
		}
		lo, hi = graph.ShardRange(i, k, g.N)
	} else if lo < 0 || hi <= lo || hi > g.N {
		return nil, fmt.Errorf("models [%d, %d) are not a non-empty range of the graph's %d models", lo, hi, g.N)
	}
	return g.Models(lo, hi)
}

// WithModels loads models [lo, hi) of the graph's N only: their weights alone are read and
// uploaded, Run takes and returns [hi-lo, ...] per-model tensors (shared inputs as they are),
// and the outputs equal rows [lo, hi) of the whole graph's, bit for bit. Model.ReadInputs
// reads those rows of a file holding all N models.
func WithModels(lo, hi int) Option {
	return func(s *settings) { s.models = modelRange{set: true, a: lo, b: hi} }
}

// WithShard is WithModels for shard i of k: models [floor(i*N/k), floor((i+1)*N/k)), which
// tile the N models in order with sizes that differ by at most one (0 <= i < k <= N).
func WithShard(i, k int) Option {
	return func(s *settings) { s.models = modelRange{set: true, shard: true, a: i, b: k} }
}

// WithStreams splits each run's models over n streams of each GPU: every stream uploads its
// models' inputs from pinned host memory, launches the plan's kernels for them and downloads
// their outputs, so one stream's copies overlap another's kernels, with one synchronisation
// per run (Model.Explain shows the schedule). 0, the default, is 2 streams when a device has
// two models or more; 1 is one stream. The CPU runs launches one after another and ignores it,
// as does a run with a launch time limit (which synchronises after every launch).
func WithStreams(n int) Option { return func(s *settings) { s.Streams = n } }

// WithTrace records every kernel launch and host-device copy of every Run, with its device,
// stream, start and duration (see Model.WriteTrace). On one stream each launch is then followed
// by a device synchronisation, as with WithProfile, so traced runs are slower; on several
// (WithStreams) events around each copy and launch time them on the device instead.
func WithTrace() Option { return func(s *settings) { s.trace = true } }

// ModelRange says which of the graph's models this Model runs: [lo, hi) of total (all of
// them, [0, N) of N, unless loaded WithModels or WithShard).
func (m *Model) ModelRange() (lo, hi, total int) { return m.g.ModelRange() }

// GraphIdentity is a SHA-256 (hex) of the graph's graph.json and weights file content: equal
// for every shard of one graph and its weights, different for another graph or other weights.
func (m *Model) GraphIdentity() (string, error) { return m.g.Identity() }

// Devices lists the devices the models run on, in model order, with each one's range:
// one entry unless several devices were asked for.
func (m *Model) Devices() []DeviceRange {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.parts == nil {
		lo, hi, _ := m.g.ModelRange()
		return []DeviceRange{{Device: m.label, Lo: lo, Hi: hi}}
	}
	var out []DeviceRange
	for _, p := range m.parts {
		out = append(out, p.Devices()...)
	}
	return out
}

// DeviceRange is one device and the models [Lo, Hi) it runs (indices among all N).
type DeviceRange struct {
	Device string `json:"device"`
	Lo     int    `json:"lo"`
	Hi     int    `json:"hi"`
}

// WriteTrace writes the launches and copies of the runs so far as Chrome trace-event JSON,
// which Perfetto (ui.perfetto.dev) and chrome://tracing open: one track per device and
// stream. The model must have been loaded WithTrace.
func (m *Model) WriteTrace(w io.Writer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tracer == nil {
		return errors.New("the model was not loaded WithTrace")
	}
	return m.tracer.WriteJSON(w)
}

// loadParts compiles one Model per device, each for its share of g's models (balanced, in
// list order), and returns the Model that runs them all.
func loadParts(g *graph.Graph, s settings, devs []engine.DeviceSpec, tracer *runner.Tracer) (*Model, error) {
	start := time.Now()
	if len(devs) > g.N {
		return nil, fmt.Errorf("%d devices for %d models: each device needs at least one model", len(devs), g.N)
	}
	threads := s.Threads
	if threads > 0 {
		threads = max(1, threads/len(devs)) // executors on host threads share the cores; others ignore threads
	}
	parent := &Model{g: g, s: s, tracer: tracer}
	for i, d := range devs {
		lo, hi := graph.ShardRange(i, len(devs), g.N)
		sub, err := g.Models(lo, hi)
		if err == nil {
			ps := s
			ps.Threads = threads
			var m *Model
			if m, err = loadOne(sub, ps, d, i, tracer); err == nil {
				parent.parts = append(parent.parts, m)
				continue
			}
		}
		parent.Close()
		return nil, fmt.Errorf("device %s: %w", d, err)
	}
	parent.loadTime = time.Since(start)
	return parent, nil
}

// runParts splits the inputs by model range (shared inputs go to every device as they are),
// runs every device at once, and stacks the outputs in model order.
func (m *Model) runParts(ctx context.Context, inputs map[string]*Tensor) (map[string]*Tensor, error) {
	first, _, _ := m.g.ModelRange()
	outs := make([]map[string]*Tensor, len(m.parts))
	errs := make([]error, len(m.parts))
	var wg sync.WaitGroup
	for i, p := range m.parts {
		lo, hi, _ := p.g.ModelRange()
		in := map[string]*Tensor{}
		for _, spec := range m.g.Inputs {
			t := inputs[spec.Name]
			if t != nil && spec.PerModel {
				if len(t.Shape) == 0 || t.Shape[0] != m.g.N {
					return nil, fmt.Errorf("input %q is %s%v, expected %d models first", spec.Name, t.DType, t.Shape, m.g.N)
				}
				var err error
				if t, err = t.Rows(lo-first, hi-first); err != nil {
					return nil, err
				}
			}
			if t != nil {
				in[spec.Name] = t
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = p.RunInto(ctx, in, nil)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("device %s (models [%d, %d)): %w", p.label, lo, hi, errs[i])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	merged := map[string]*Tensor{}
	for _, o := range m.g.Outputs {
		rows := make([]*safetensors.Tensor, len(outs))
		for i := range outs {
			rows[i] = outs[i][o.Name]
		}
		t, err := safetensors.ConcatRows(o.Name, rows)
		if err != nil {
			return nil, err
		}
		merged[o.Name] = t
	}
	return merged, nil
}

// explainParts is every device's plan, headed by its device and models.
func (m *Model) explainParts() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d devices, run at once; inputs split by model, outputs stacked in model order:\n", len(m.parts))
	for _, p := range m.parts {
		lo, hi, total := p.g.ModelRange()
		fmt.Fprintf(&b, "\n== device %s: models [%d, %d) of %d ==\n", p.label, lo, hi, total)
		b.WriteString(p.Explain())
	}
	return b.String()
}

func sumParts(parts []*Model, f func(*Model) int) int {
	n := 0
	for _, p := range parts {
		n += f(p)
	}
	return n
}
