package runner

import (
	"encoding/json"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/widejit/widejit/lowering"
)

// A Tracer records what runners did, when and where, as Chrome trace events (the JSON that
// Perfetto and chrome://tracing open): one complete event ("ph": "X") per kernel launch and
// per host-device copy, on a track per device (pid) and stream (tid). Several runners (one
// per device) may share a Tracer; it is safe for concurrent use.
type Tracer struct {
	origin  time.Time
	mu      sync.Mutex
	events  []TraceEvent
	procs   map[int]string
	threads map[[2]int]string // (pid, tid) -> name, for the streams of streams.go
}

// TraceEvent is one recorded span.
type TraceEvent struct {
	Name     string         `json:"name"`
	Cat      string         `json:"cat"` // "kernel" or "copy"
	Ph       string         `json:"ph"`  // "X": a complete event
	TS       float64        `json:"ts"`  // start, µs since the tracer was made
	Dur      float64        `json:"dur"` // µs
	PID      int            `json:"pid"` // the device's index
	TID      int            `json:"tid"` // the stream on that device
	Args     map[string]any `json:"args,omitempty"`
	sequence int
}

// NewTracer starts a trace; its clock starts now.
func NewTracer() *Tracer {
	return &Tracer{origin: time.Now(), procs: map[int]string{}, threads: map[[2]int]string{}}
}

// Events returns a copy of the events recorded so far, in start order.
func (t *Tracer) Events() []TraceEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]TraceEvent(nil), t.events...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].TS != out[j].TS {
			return out[i].TS < out[j].TS
		}
		return out[i].sequence < out[j].sequence
	})
	return out
}

func (t *Tracer) device(pid int, name string) {
	t.mu.Lock()
	t.procs[pid] = name
	t.mu.Unlock()
}

// thread names track tid of device pid (tid 0 is "stream 0" unless named).
func (t *Tracer) thread(pid, tid int, name string) {
	t.mu.Lock()
	t.threads[[2]int{pid, tid}] = name
	t.mu.Unlock()
}

func (t *Tracer) record(e TraceEvent, start time.Time, dur time.Duration) {
	e.Ph = "X"
	e.TS = float64(start.Sub(t.origin).Nanoseconds()) / 1e3
	e.Dur = float64(dur.Nanoseconds()) / 1e3
	t.mu.Lock()
	e.sequence = len(t.events)
	t.events = append(t.events, e)
	t.mu.Unlock()
}

// WriteJSON writes the trace in the Chrome trace-event format: {"traceEvents": [...]}, with
// metadata events naming each device's process and stream's thread.
func (t *Tracer) WriteJSON(w io.Writer) error {
	events := t.Events()
	t.mu.Lock()
	pids := make([]int, 0, len(t.procs))
	for pid := range t.procs {
		pids = append(pids, pid)
	}
	names := map[int]string{}
	for pid, name := range t.procs {
		names[pid] = name
	}
	threads := map[[2]int]string{}
	for k, name := range t.threads {
		threads[k] = name
	}
	t.mu.Unlock()
	sort.Ints(pids)
	all := make([]any, 0, len(events)+2*len(pids)+len(threads))
	for _, pid := range pids {
		all = append(all, map[string]any{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": map[string]any{"name": "device " + names[pid]}})
		if _, ok := threads[[2]int{pid, 0}]; !ok {
			threads[[2]int{pid, 0}] = "stream 0"
		}
	}
	tracks := make([][2]int, 0, len(threads))
	for k := range threads {
		tracks = append(tracks, k)
	}
	sort.Slice(tracks, func(i, j int) bool {
		return tracks[i][0] < tracks[j][0] || tracks[i][0] == tracks[j][0] && tracks[i][1] < tracks[j][1]
	})
	for _, k := range tracks {
		all = append(all, map[string]any{"name": "thread_name", "ph": "M", "pid": k[0], "tid": k[1], "args": map[string]any{"name": threads[k]}})
	}
	for _, e := range events {
		all = append(all, e)
	}
	enc := json.NewEncoder(w)
	return enc.Encode(map[string]any{"traceEvents": all, "displayTimeUnit": "ms"})
}

// runTrace is a runner's place in a trace.
type runTrace struct {
	t      *Tracer
	pid    int
	device string
}

// Trace records the runner's launches and copies into t from now on, on the track of device
// pid (named device, as "cuda:1"); nil turns tracing off. Each traced launch is followed by a
// device synchronisation so that its span is the kernel's own time, as with Profile; runs on
// several streams time their copies and launches with events instead, on a track per stream.
func (r *Runner) Trace(t *Tracer, pid int, device string) {
	if t == nil {
		r.trace = nil
		return
	}
	t.device(pid, device)
	r.trace = &runTrace{t: t, pid: pid, device: device}
}

// traceCopy records a copy (what: upload or download) of bytes of a plan buffer when
// tracing; the span's details are built only then.
func (r *Runner) traceCopy(what, buf string, start time.Time, bytes int, direction string) {
	if r.trace != nil {
		r.traceSpan("copy", what+" "+buf, start, map[string]any{"bytes": bytes, "direction": direction})
	}
}

// traceSpan records one span that began at start and ends now (after a device sync for a
// launch); it returns the sync's error.
func (r *Runner) traceSpan(cat, name string, start time.Time, args map[string]any) error {
	if r.trace == nil {
		return nil
	}
	var err error
	if cat == "kernel" {
		err = r.dev.Sync()
	}
	if args == nil {
		args = map[string]any{}
	}
	args["device"] = r.trace.device
	args["stream"] = 0
	r.trace.t.record(TraceEvent{Name: name, Cat: cat, PID: r.trace.pid, Args: args}, start, time.Since(start))
	return err
}

// traceLaunch records launch i (of model, or all models when model < 0).
func (r *Runner) traceLaunch(i int, l *lowering.Launch, grid [3]int, model int, start time.Time) error {
	args := map[string]any{"launch": i, "template": l.Kernel.Template, "strategy": l.Strategy,
		"grid": grid[:], "nodes": l.Nodes}
	if model >= 0 {
		args["model"] = model
	}
	return r.traceSpan("kernel", l.Kernel.Source.Fn, start, args)
}
