package runner

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/memlimit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/lowering"
)

// streams.go: a run split over several streams of one device (a jit.StreamDevice: CUDA).
// Stream k runs models [Lo, Hi) of the plan's N: it uploads those models' rows of every
// per-model input from its pinned staging, launches every kernel of the plan for its models
// (a batched launch's grid covers them and its pointers start at the first one's slice, as a
// sequential launch's start at its model's), and downloads their rows of every output into
// its staging. So one stream's copies overlap another's kernels.
//
// Weights, and the buffers prepare launches wrote, are shared: uploaded once, at load. Every
// other temporary buffer has a copy per stream (stream 0 uses the runner's), so two streams
// never write the same memory and need no event between their launches. Shared inputs are
// uploaded once, on stream 0, which records an event that the other streams wait for before
// their first launch. At the end of a run stream 0 waits for an event of every other stream
// and the host synchronises once, with stream 0: no launch is followed by a synchronisation.
// Traced and profiled runs time every copy and launch with events read after that one
// synchronisation.

// StreamSchedule is how a runner splits its runs over the streams of its device.
type StreamSchedule struct {
	Device string       // the device, as Explain names it
	Parts  []StreamPart // one per stream; a single one runs on the device's own queue
	Why    string       // why this many streams
	// Extra is the device memory the streams after the first take: their temporaries.
	Extra int64
}

// StreamPart is one stream's share of a run.
type StreamPart struct {
	Lo, Hi    int // models, among the plan's N
	Uploads   []StreamCopy
	Downloads []StreamCopy
}

// StreamCopy is one copy between a tensor (an input or an output) and a buffer, through the
// stream's pinned staging.
type StreamCopy struct {
	Name    string
	Buf     *lowering.Buffer
	Offset  int  // elements into Buf
	Elems   int  // elements copied
	From    int  // elements into the tensor
	Staging int  // bytes into the stream's staging
	Shared  bool // a shared input: all of it, once, on stream 0
}

// Streams is the runner's schedule (nil before New has finished).
func (r *Runner) Streams() *StreamSchedule {
	if r.streams == nil {
		return nil
	}
	return r.streams.sched
}

// streamRun is the state of a runner whose runs use several streams.
type streamRun struct {
	sched   *StreamSchedule
	dev     jit.StreamDevice
	streams []jit.Stream
	bufs    []map[*lowering.Buffer]jit.Buffer // per stream
	extra   []jit.Buffer                      // the temporaries of streams 1, 2, ...
	staging []jit.Pinned                      // per stream
	shared  jit.Event                         // stream 0 uploaded the shared inputs (nil: there are none)
	done    []jit.Event                       // per stream: its work is queued (stream 0's unused)
	timing  []jit.Event                       // pool for timed runs
	named   bool                              // trace tracks named
}

// on reports whether runs go through the streams (else through the device's own queue).
func (s *streamRun) on() bool { return s != nil && len(s.streams) > 1 }

// startStreams decides the streams of the runner's runs and, for more than one, makes them,
// their events, staging and temporaries.
func (r *Runner) startStreams() error {
	want, why := r.wantStreams()
	sched := planStreams(r.plan, want, why)
	sched.Device = r.dev.Info().Name
	r.streams = &streamRun{sched: sched}
	if len(sched.Parts) < 2 {
		return nil
	}
	if r.fitStreams(sched); len(sched.Parts) < 2 {
		return nil
	}
	sr := r.streams
	sr.dev = r.dev.(jit.StreamDevice)
	perStream := perStreamSlots(r.plan)
	for k, part := range sched.Parts {
		s, err := sr.dev.NewStream()
		if err != nil {
			return err
		}
		sr.streams = append(sr.streams, s)
		done, err := sr.dev.NewEvent(false)
		if err != nil {
			return err
		}
		sr.done = append(sr.done, done)
		n := 0
		for _, c := range slices.Concat(part.Uploads, part.Downloads) {
			n = max(n, c.Staging+c.Elems*c.Buf.DType.Size())
		}
		pin, err := sr.dev.AllocPinned(n)
		if err != nil {
			return fmt.Errorf("stream %d's staging: %w", k, err)
		}
		sr.staging = append(sr.staging, pin)
		bufs := map[*lowering.Buffer]jit.Buffer{}
		for b, jb := range r.bufs {
			bufs[b] = jb
		}
		if k > 0 {
			slots := make([]jit.Buffer, len(r.plan.Slots))
			for i, sl := range r.plan.Slots {
				if !perStream[i] {
					continue
				}
				t, err := lowering.DeviceDType(sl.DType)
				if err != nil {
					return err
				}
				if slots[i], err = r.dev.Alloc(t, max(sl.Elems, 1)); err != nil {
					return fmt.Errorf("stream %d's temporaries: %w", k, err)
				}
				sr.extra = append(sr.extra, slots[i])
			}
			for _, b := range r.plan.Buffers {
				if b.Kind == lowering.TempBuffer && b.Slot >= 0 && perStream[b.Slot] {
					bufs[b] = slots[b.Slot]
				}
			}
		}
		sr.bufs = append(sr.bufs, bufs)
	}
	for _, c := range sched.Parts[0].Uploads {
		if c.Shared {
			e, err := sr.dev.NewEvent(false)
			if err != nil {
				return err
			}
			sr.shared = e
			break
		}
	}
	return nil
}

// wantStreams is how many streams the runs should use, before the plan and the memory have
// their say, and why.
func (r *Runner) wantStreams() (int, string) {
	if _, ok := r.dev.(jit.StreamDevice); !ok {
		return 1, "the " + r.dev.Info().Kind + " device runs each launch on the calling goroutine, one after another (streams are a GPU driver's)"
	}
	switch want := r.opts.Streams; {
	case want == 1:
		return 1, "asked for"
	case r.opts.LaunchTimeout > 0:
		return 1, "a launch time limit synchronises the device after every launch"
	case want > 1:
		return want, "asked for"
	}
	// Measured on an H200 (bench/gpu/results/streams_h200.txt): on the zoo, N = 8 to 100, more
	// streams gained at most 13% (a 0.06 ms MLP) and lost up to 1.8x on convolutions (conv64
	// at N = 100: 10.1 ms on one, 18.5 on two): each stream launches every kernel for its share,
	// smaller grids and more launches, and the copies it could hide are small next to kernels.
	return 1, "the default: more streams are for copy-heavy runs, ask with --streams"
}

// planStreams splits p's N models over up to want streams (balanced shares, in order).
func planStreams(p *lowering.Plan, want int, why string) *StreamSchedule {
	single := func(why string) *StreamSchedule {
		return &StreamSchedule{Parts: []StreamPart{{Lo: 0, Hi: p.N}}, Why: why}
	}
	if want < 2 {
		return single(why)
	}
	if p.N < 2 {
		return single("one model")
	}
	if err := checkModelAxes(p); err != nil {
		return single(err.Error())
	}
	if want > p.N {
		why = fmt.Sprintf("%s (%d), at most N=%d", why, want, p.N)
		want = p.N
	}
	sched := &StreamSchedule{Why: why}
	shared := sharedInputs(p)
	for k := range want {
		lo, hi := k*p.N/want, (k+1)*p.N/want
		part := StreamPart{Lo: lo, Hi: hi}
		at := 0
		add := func(list *[]StreamCopy, c StreamCopy) {
			c.Staging = at
			at += (c.Elems*c.Buf.DType.Size() + 63) / 64 * 64 // cache-line aligned copies
			*list = append(*list, c)
		}
		for _, b := range p.Inputs {
			switch {
			case !shared[b]:
				per := b.Elems / p.N
				add(&part.Uploads, StreamCopy{Name: b.Name, Buf: b, Offset: lo * per, Elems: (hi - lo) * per, From: lo * per})
			case k == 0:
				add(&part.Uploads, StreamCopy{Name: b.Name, Buf: b, Elems: b.Elems, Shared: true})
			}
		}
		for _, o := range p.Outputs {
			n := o.View.Numel()
			add(&part.Downloads, StreamCopy{Name: o.Name, Buf: o.View.Buf, Offset: o.View.Offset + lo*n, Elems: (hi - lo) * n, From: lo * n})
		}
		sched.Parts = append(sched.Parts, part)
	}
	return sched
}

// checkModelAxes checks that every launch a stream runs over a range of models can: a
// batched or fused launch's grid must walk the N models on its model axis (none fails; the
// check keeps a future family from being split wrongly). Its pointers then start lo model
// strides further. That keeps what the PTX generator assumed of their alignment
// (lowering.Launch.Spec's Align16): the kernel reaches model m at pointer + m*stride, so the
// alignment it derives for any address is at most that of the stride, which lo*stride keeps.
func checkModelAxes(p *lowering.Plan) error {
	for i, l := range p.Launches {
		if !l.Prepare && l.Strategy != lowering.Sequential && !p.ModelMajor && l.Grid[l.ModelAxis] != p.N {
			return fmt.Errorf("launch %d (%s) has grid %v, which does not walk the %d models on axis %d", i, l.Kernel.Source.Fn, l.Grid, p.N, l.ModelAxis)
		}
	}
	return nil
}

// sharedInputs are the inputs every stream reads whole: shared inputs (model stride 0), and
// any input some launch reads other than as N rows of Elems/N.
func sharedInputs(p *lowering.Plan) map[*lowering.Buffer]bool {
	out := map[*lowering.Buffer]bool{}
	for _, b := range p.Inputs {
		out[b] = b.Elems%p.N != 0
	}
	read := map[*lowering.Buffer]bool{}
	for _, l := range p.Launches {
		for _, a := range l.Args {
			if a.Kind == lowering.PtrArg && a.Buf.Kind == lowering.InputBuffer {
				read[a.Buf] = true
				if a.ModelStride != a.Buf.Elems/p.N || a.Buf.Elems%p.N != 0 {
					out[a.Buf] = true
				}
			}
		}
	}
	for _, b := range p.Inputs {
		if !read[b] {
			out[b] = true
		}
	}
	return out
}

// perStreamSlots marks the slots each stream has a copy of: all but those of the buffers
// prepare launches touch (written once, at load, then only read).
func perStreamSlots(p *lowering.Plan) []bool {
	out := make([]bool, len(p.Slots))
	for i := range out {
		out[i] = true
	}
	for _, l := range p.Launches {
		if !l.Prepare {
			continue
		}
		for _, a := range l.Args {
			if a.Kind == lowering.PtrArg && a.Buf.Kind == lowering.TempBuffer && a.Buf.Slot >= 0 {
				out[a.Buf.Slot] = false
			}
		}
	}
	return out
}

// fitStreams lowers the number of streams until their temporaries fit the device's memory and
// their staging the host memory limit.
func (r *Runner) fitStreams(sched *StreamSchedule) {
	m := r.plan.Memory()
	perStream := perStreamSlots(r.plan)
	var temps memlimit.Tally
	for i, s := range r.plan.Slots {
		if perStream[i] {
			temps.Add(int64(max(s.Elems, 1)), int64(s.DType.Size()))
		}
	}
	var staging memlimit.Tally
	for _, part := range sched.Parts {
		for _, c := range slices.Concat(part.Uploads, part.Downloads) {
			staging.Add(int64(c.Elems), int64(c.Buf.DType.Size()))
		}
	}
	info := r.dev.Info()
	n := len(sched.Parts)
	for ; n > 1; n-- {
		var t memlimit.Tally
		t.Add(temps.Bytes(), int64(n-1))
		t.Add(m.Device(), 1)
		if info.MemoryBytes <= 0 || t.Bytes() <= info.MemoryBytes {
			break
		}
	}
	if n < len(sched.Parts) {
		*sched = *planStreams(r.plan, n, fmt.Sprintf("%s; fewer than %d: one more set of temporaries (%s) per stream would not fit %s's %s",
			sched.Why, len(sched.Parts), memlimit.Format(temps.Bytes()), info.Name, memlimit.Format(info.MemoryBytes)))
	}
	if len(sched.Parts) > 1 {
		var host memlimit.Tally
		host.Add(m.Host(), 1)
		host.Add(staging.Bytes(), 1)
		if err := memlimit.Check("the plan's host copies and pinned staging", host.Bytes(), r.opts.MemoryLimit); err != nil {
			*sched = *planStreams(r.plan, 1, err.Error())
		}
	}
	sched.Device = info.Name
	var extra memlimit.Tally
	extra.Add(temps.Bytes(), int64(len(sched.Parts)-1))
	sched.Extra = extra.Bytes()
}

// stopStreams releases the streams and what they hold.
func (r *Runner) stopStreams() {
	sr := r.streams
	if sr == nil {
		return
	}
	for _, s := range sr.streams {
		s.Sync()
		s.Close()
	}
	for _, e := range append(append(sr.done, sr.timing...), sr.shared) {
		if e != nil {
			e.Close()
		}
	}
	for _, p := range sr.staging {
		p.Free()
	}
	for _, b := range sr.extra {
		r.dev.Free(b)
	}
	r.streams = nil
}

// runStreams is RunInto over the streams.
func (r *Runner) runStreams(inputs, reuse map[string]*safetensors.Tensor) (_ map[string]*safetensors.Tensor, err error) {
	p, sr := r.plan, r.streams
	for _, b := range p.Inputs {
		if _, err := inputFor(b, inputs); err != nil {
			return nil, err
		}
	}
	for _, c := range p.IndexChecks {
		if err := checkIndices(inputs[c.Input], c); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil { // leave nothing queued that reads the staging the next run writes
			for _, s := range sr.streams {
				s.Sync()
			}
		}
	}()
	var tm *streamTimer
	if r.trace != nil || r.kernelTimes != nil {
		tm = &streamTimer{r: r, host: time.Now()}
	}
	for k := range sr.sched.Parts {
		if err := r.canceled(); err != nil {
			return nil, err
		}
		if err := sr.issue(r, k, inputs, tm); err != nil {
			return nil, err
		}
	}
	s0 := sr.streams[0]
	for k := 1; k < len(sr.streams); k++ {
		if err := s0.Wait(sr.done[k]); err != nil {
			return nil, err
		}
	}
	// The streams have joined s0: reads of the launches' assert flags queued there follow
	// every launch, and the one synchronisation of the run covers them.
	checkAsserts := func() error { return nil }
	if c, ok := r.dev.(jit.AssertReader); ok {
		if checkAsserts, err = c.ReadAsserts(s0); err != nil {
			return nil, err
		}
	}
	if err := s0.Sync(); err != nil {
		return nil, err
	}
	if err := checkAsserts(); err != nil {
		return nil, r.syncErr(err)
	}
	if err := tm.report(); err != nil {
		return nil, err
	}
	return sr.outputs(p, reuse), nil
}

// issue queues stream k's share of a run: its uploads (and, on stream 0, the shared inputs'),
// its launches, its downloads.
func (sr *streamRun) issue(r *Runner, k int, inputs map[string]*safetensors.Tensor, tm *streamTimer) error {
	s, part, stage, bufs := sr.streams[k], sr.sched.Parts[k], sr.staging[k].Bytes(), sr.bufs[k]
	if err := tm.begin(k); err != nil {
		return err
	}
	for _, c := range part.Uploads {
		size := c.Buf.DType.Size()
		dst := stage[c.Staging : c.Staging+c.Elems*size]
		copy(dst, inputs[c.Name].Data[c.From*size:])
		if err := tm.span(k, copySpan("upload", c, part), -1, func() error { return s.Upload(bufs[c.Buf], c.Offset, dst) }); err != nil {
			return fmt.Errorf("input %q: %w", c.Name, err)
		}
	}
	if sr.shared != nil {
		wait := s.Wait
		if k == 0 {
			wait = s.Record
		}
		if err := wait(sr.shared); err != nil {
			return err
		}
	}
	one := func(i int, l *lowering.Launch, lo, n int) error {
		grid := l.Grid
		grid[l.ModelAxis] = n
		args := launchArgs(l, bufs, lo)
		ev := TraceEvent{Name: l.Kernel.Source.Fn, Cat: "kernel", Args: map[string]any{"launch": i, "template": l.Kernel.Template,
			"strategy": l.Strategy, "grid": grid[:], "nodes": l.Nodes, "models": []int{lo, lo + n}}}
		if err := tm.span(k, ev, i, func() error { return s.Launch(r.kernels[i], grid, args) }); err != nil {
			return fmt.Errorf("launch %d (%s, nodes %v, models [%d, %d)): %w", i, l.Kernel.Source.Fn, l.Nodes, lo, lo+n, err)
		}
		return nil
	}
	p := r.plan
	for _, step := range streamSteps(p, part) {
		if err := one(step.launch, p.Launches[step.launch], step.lo, step.n); err != nil {
			return err
		}
	}
	for _, c := range part.Downloads {
		dst := stage[c.Staging : c.Staging+c.Elems*c.Buf.DType.Size()]
		if err := tm.span(k, copySpan("download", c, part), -1, func() error { return s.Download(bufs[c.Buf], c.Offset, dst) }); err != nil {
			return fmt.Errorf("output %q: %w", c.Name, err)
		}
	}
	if k > 0 {
		return s.Record(sr.done[k])
	}
	return nil
}

// streamStep is one launch of a stream: plan launch launch over models [lo, lo+n).
type streamStep struct{ launch, lo, n int }

// streamSteps are the launches of part in issue order: model by model for a model-major
// plan, else the plan's order, sequential launches once per model.
func streamSteps(p *lowering.Plan, part StreamPart) []streamStep {
	var out []streamStep
	if p.ModelMajor {
		for m := part.Lo; m < part.Hi; m++ {
			for i, l := range p.Launches {
				if !l.Prepare {
					out = append(out, streamStep{i, m, 1})
				}
			}
		}
		return out
	}
	for i, l := range p.Launches {
		switch {
		case l.Prepare:
		case l.Strategy == lowering.Sequential:
			for m := part.Lo; m < part.Hi; m++ {
				out = append(out, streamStep{i, m, 1})
			}
		default:
			out = append(out, streamStep{i, part.Lo, part.Hi - part.Lo})
		}
	}
	return out
}

func copySpan(dir string, c StreamCopy, part StreamPart) TraceEvent {
	name, direction := dir+" "+c.Name, "host to device"
	if dir == "download" {
		direction = "device to host"
	}
	args := map[string]any{"bytes": c.Elems * c.Buf.DType.Size(), "direction": direction, "pinned": true}
	if !c.Shared {
		args["models"] = []int{part.Lo, part.Hi}
	}
	return TraceEvent{Name: name, Cat: "copy", Args: args}
}

// outputs assembles the outputs from the streams' staging (after the run's synchronisation),
// into the tensors of reuse that fit.
func (sr *streamRun) outputs(p *lowering.Plan, reuse map[string]*safetensors.Tensor) map[string]*safetensors.Tensor {
	outs := map[string]*safetensors.Tensor{}
	for _, o := range p.Outputs {
		dt := o.View.DType
		n := p.N * o.View.Numel() * dt.Size()
		var data []byte
		if t := reuse[o.Name]; t != nil && len(t.Data) == n && t.DType == dt.Safetensors() {
			data = t.Data
		} else {
			data = make([]byte, n)
		}
		outs[o.Name] = &safetensors.Tensor{Name: o.Name, DType: dt.Safetensors(), Shape: append([]int{p.N}, o.Shape...), Data: data}
	}
	for k, part := range sr.sched.Parts {
		stage := sr.staging[k].Bytes()
		for _, c := range part.Downloads {
			size := c.Buf.DType.Size()
			copy(outs[c.Name].Data[c.From*size:], stage[c.Staging:c.Staging+c.Elems*size])
		}
	}
	return outs
}

// streamTimer times a run's copies and launches with events on their streams, read after the
// run's synchronisation, for the trace and the profile.
type streamTimer struct {
	r      *Runner
	host   time.Time // when the run began, on the host
	origin jit.Event
	used   int
	spans  []timedSpan
}

type timedSpan struct {
	stream        int
	launch        int // -1: a copy
	ev            TraceEvent
	before, after jit.Event
}

func (tm *streamTimer) event() (jit.Event, error) {
	sr := tm.r.streams
	if tm.used == len(sr.timing) {
		e, err := sr.dev.NewEvent(true)
		if err != nil {
			return nil, err
		}
		sr.timing = append(sr.timing, e)
	}
	tm.used++
	return sr.timing[tm.used-1], nil
}

// begin starts stream k's timed work: stream 0 records the run's origin, the others wait for
// it, so every time is measured from one point.
func (tm *streamTimer) begin(k int) error {
	if tm == nil {
		return nil
	}
	s := tm.r.streams.streams[k]
	if k == 0 {
		var err error
		if tm.origin, err = tm.event(); err != nil {
			return err
		}
		return s.Record(tm.origin)
	}
	return s.Wait(tm.origin)
}

// span issues one operation on stream k, between two timing events when timing.
func (tm *streamTimer) span(k int, ev TraceEvent, launch int, issue func() error) error {
	if tm == nil {
		return issue()
	}
	s := tm.r.streams.streams[k]
	before, err := tm.event()
	if err != nil {
		return err
	}
	after, err := tm.event()
	if err != nil {
		return err
	}
	if err := s.Record(before); err != nil {
		return err
	}
	if err := issue(); err != nil {
		return err
	}
	tm.spans = append(tm.spans, timedSpan{stream: k, launch: launch, ev: ev, before: before, after: after})
	return s.Record(after)
}

// report reads the event times into the trace and the profile.
func (tm *streamTimer) report() error {
	if tm == nil {
		return nil
	}
	r := tm.r
	sched := r.streams.sched
	if r.trace != nil && !r.streams.named {
		for k, part := range sched.Parts {
			r.trace.t.thread(r.trace.pid, k, fmt.Sprintf("stream %d: models [%d, %d)", k, part.Lo, part.Hi))
		}
		r.streams.named = true
	}
	var errs []error
	for _, sp := range tm.spans {
		start, err1 := sp.before.Since(tm.origin)
		dur, err2 := sp.after.Since(sp.before)
		if err := errors.Join(err1, err2); err != nil {
			errs = append(errs, err)
			continue
		}
		if sp.launch >= 0 && r.kernelTimes != nil {
			r.kernelTimes[sp.launch] += dur
		}
		if r.trace != nil {
			sp.ev.PID, sp.ev.TID = r.trace.pid, sp.stream
			sp.ev.Args["device"], sp.ev.Args["stream"] = r.trace.device, sp.stream
			r.trace.t.record(sp.ev, tm.host.Add(start), dur)
		}
	}
	return errors.Join(errs...)
}

// ExplainStreams describes the runner's schedule: how many streams and why, and each stream's
// models, copies and launches, and the events between the streams.
func (r *Runner) ExplainStreams() string {
	if r.streams == nil {
		return ""
	}
	return r.streams.sched.Explain(r.plan)
}

// Explain describes the schedule of plan p.
func (s *StreamSchedule) Explain(p *lowering.Plan) string {
	var b strings.Builder
	if len(s.Parts) < 2 {
		fmt.Fprintf(&b, "streams on %s: 1 (%s): copies and launches in order on the device's own queue\n", s.Device, s.Why)
		return b.String()
	}
	fmt.Fprintf(&b, "streams on %s: %d (%s): the models split by stream; each stream's copies (through pinned staging) overlap the other streams' kernels; no synchronisation between launches, one at the end of a run\n",
		s.Device, len(s.Parts), s.Why)
	fmt.Fprintf(&b, "  shared: the weights and prepared buffers, uploaded once at load; each stream after the first has its own temporaries (%s in all)\n", memlimit.Format(s.Extra))
	shared := false
	for _, c := range s.Parts[0].Uploads {
		shared = shared || c.Shared
	}
	size := func(c StreamCopy) string {
		var t memlimit.Tally
		t.Add(int64(c.Elems), int64(c.Buf.DType.Size()))
		return memlimit.Format(t.Bytes())
	}
	var done []string
	for k, part := range s.Parts {
		fmt.Fprintf(&b, "  stream %d: models [%d, %d)\n", k, part.Lo, part.Hi)
		for _, c := range part.Uploads {
			if c.Shared {
				fmt.Fprintf(&b, "    upload   %s (shared by every model), %s, from pinned staging\n", c.Name, size(c))
			} else {
				fmt.Fprintf(&b, "    upload   %s rows [%d, %d), %s, from pinned staging\n", c.Name, part.Lo, part.Hi, size(c))
			}
		}
		switch {
		case shared && k == 0:
			b.WriteString("    record   event shared-inputs\n")
		case shared:
			b.WriteString("    wait     event shared-inputs (stream 0's upload of the shared inputs) before the first launch\n")
		}
		explainSteps(&b, p, part)
		for _, c := range part.Downloads {
			fmt.Fprintf(&b, "    download %s rows [%d, %d), %s, into pinned staging\n", c.Name, part.Lo, part.Hi, size(c))
		}
		if k > 0 {
			fmt.Fprintf(&b, "    record   event stream-%d-done\n", k)
			done = append(done, fmt.Sprintf("stream-%d-done", k))
		}
	}
	fmt.Fprintf(&b, "  end of run: stream 0 waits for event %s; the host synchronises once, with stream 0, and copies the outputs out of the staging\n",
		strings.Join(done, ", "))
	return b.String()
}

// explainSteps lists a stream's launches, a model-major plan's as one line per model range.
func explainSteps(b *strings.Builder, p *lowering.Plan, part StreamPart) {
	if p.ModelMajor {
		var names []string
		for _, l := range p.Launches {
			if !l.Prepare {
				names = append(names, l.Kernel.Source.Fn)
			}
		}
		fmt.Fprintf(b, "    launch   model by model, for each of models [%d, %d): %s\n", part.Lo, part.Hi, strings.Join(names, ", "))
		return
	}
	for _, l := range p.Launches {
		grid := l.Grid
		switch {
		case l.Prepare:
		case l.Strategy == lowering.Sequential:
			grid[l.ModelAxis] = 1
			fmt.Fprintf(b, "    launch   %s (sequential, grid %v) x %d, one per model\n", l.Kernel.Source.Fn, grid, part.Hi-part.Lo)
		default:
			grid[l.ModelAxis] = part.Hi - part.Lo
			fmt.Fprintf(b, "    launch   %s (%s, grid %v)\n", l.Kernel.Source.Fn, l.Strategy, grid)
		}
	}
}
