package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/memlimit"
	"github.com/widejit/widejit/internal/testkit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
	"github.com/widejit/widejit/jit/cuda/cudatest"
	"github.com/widejit/widejit/lowering"
)

// hostStreams makes the CPU backend a jit.StreamDevice whose streams run every call at once:
// a run through it takes the streams' path (the split of the models, launches over a range
// of models, per-stream temporaries, staging) on the CPU, so that every fixture checks that
// path against the one-stream run, bit for bit.
type hostStreams struct{ *cpu.Device }

type hostStream struct{ dev *cpu.Device }

type hostEvent struct{ at time.Time }

type hostPinned []byte

func (h hostStreams) NewStream() (jit.Stream, error)      { return hostStream{h.Device}, nil }
func (hostStreams) NewEvent(bool) (jit.Event, error)      { return &hostEvent{}, nil }
func (hostStreams) AllocPinned(n int) (jit.Pinned, error) { return hostPinned(make([]byte, n)), nil }
func (p hostPinned) Bytes() []byte                        { return p }
func (hostPinned) Free() error                            { return nil }
func (e *hostEvent) Sync() error                          { return nil }
func (e *hostEvent) Close() error                         { return nil }
func (e *hostEvent) Since(s jit.Event) (time.Duration, error) {
	return e.at.Sub(s.(*hostEvent).at), nil
}

// patch copies host bytes into or out of part of a buffer, through the whole-buffer copies
// the CPU device has.
func (s hostStream) patch(b jit.Buffer, offset int, host []byte, in bool) error {
	all := make([]byte, b.Len()*b.DType().Size())
	if err := s.dev.Download(b, all); err != nil {
		return err
	}
	at := all[offset*b.DType().Size():]
	if !in {
		copy(host, at)
		return nil
	}
	copy(at, host)
	return s.dev.Upload(b, all)
}

func (s hostStream) Upload(dst jit.Buffer, offset int, src []byte) error {
	return s.patch(dst, offset, src, true)
}
func (s hostStream) Download(src jit.Buffer, offset int, dst []byte) error {
	return s.patch(src, offset, dst, false)
}
func (s hostStream) Launch(k jit.Kernel, grid [3]int, args []jit.Arg) error {
	return k.Launch(grid, args)
}
func (hostStream) Record(e jit.Event) error { e.(*hostEvent).at = time.Now(); return nil }
func (hostStream) Wait(jit.Event) error     { return nil }
func (hostStream) Sync() error              { return nil }
func (hostStream) Close() error             { return nil }

// runOnce builds a runner for plan on dev and runs it on inputs.
func runOnce(t *testing.T, plan *lowering.Plan, dev jit.Device, g *graph.Graph, opts Options, inputs map[string]*safetensors.Tensor) (*Runner, map[string]*safetensors.Tensor) {
	t.Helper()
	r, err := NewWithOptions(plan, dev, testCompiler, g, opts)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	t.Cleanup(r.Close)
	outs, err := r.Run(inputs)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, r.ExplainStreams())
	}
	return r, outs
}

func sameOutputs(t *testing.T, what string, got, want map[string]*safetensors.Tensor) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d outputs, want %d", what, len(got), len(want))
	}
	for name, w := range want {
		g := got[name]
		if g == nil || g.DType != w.DType || fmt.Sprint(g.Shape) != fmt.Sprint(w.Shape) || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("%s: output %s differs from the one-stream run's", what, name)
		}
	}
}

// Every fixture with N > 1 and every example, each plan shape (GPU-shaped batched and fused,
// sequential, model-major, CPU-shaped, Monte Carlo dropout), split over 2 and 3 streams: the
// outputs are those of the one-stream run, bit for bit.
func TestStreamSplitMatchesOneStream(t *testing.T) {
	var dirs []string
	for _, pattern := range []string{"../lowering/testdata/*/*_n3", "../lowering/testdata/*/*_n8", "../examples/*"} {
		m, _ := filepath.Glob(pattern)
		dirs = append(dirs, m...)
	}
	variants := []struct {
		name    string
		opts    lowering.Options
		streams []int
	}{
		{"gpu", lowering.Options{}, []int{2, 3}},
		{"sequential", lowering.Options{Strategy: lowering.Sequential}, []int{2}},
		{"model-major", lowering.Options{ModelMajor: true}, []int{3}},
		{"cpu", lowering.Options{Device: cpu.NewDevice(2).Info()}, []int{2}},
		// random numbers follow the model index (the model base of a launch over a range)
		{"mc-dropout", lowering.Options{Dropout: "mc", Seed: 5}, []int{3}},
	}
	ran := 0
	for _, dir := range dirs {
		g, err := graph.Load(filepath.Join(dir, "graph.json"))
		if err != nil || g.N < 2 {
			continue
		}
		inputs, err := g.ReadInputs(filepath.Join(dir, "inputs.safetensors"))
		if err != nil {
			continue // a fixture of another kind (batch sizes)
		}
		dropout := false
		for _, n := range g.Nodes {
			dropout = dropout || n.Op == "dropout"
		}
		for _, v := range variants {
			if testing.Short() && v.name != "gpu" || v.name == "mc-dropout" && !dropout {
				continue
			}
			t.Run(filepath.Base(dir)+"/"+v.name, func(t *testing.T) {
				plan, err := lowering.Lower(g, v.opts)
				if err != nil {
					if strings.Contains(err.Error(), "not lowered yet") {
						t.Skip(err)
					}
					t.Fatal(err)
				}
				_, want := runOnce(t, plan, cpu.NewDevice(2), g, Options{}, inputs)
				for _, s := range v.streams {
					r, got := runOnce(t, plan, hostStreams{cpu.NewDevice(2)}, g, Options{Streams: s}, inputs)
					// CPU-shaped plans have launches that cannot be split (their grids
					// do not walk the models); every GPU-shaped plan is split
					if n := len(r.Streams().Parts); n != min(s, plan.N) && !(v.name == "cpu" && strings.Contains(r.Streams().Why, "does not walk")) {
						t.Errorf("%d streams asked for, %d used: %s", s, n, r.Streams().Why)
					}
					sameOutputs(t, fmt.Sprintf("%d streams", s), got, want)
				}
			})
			ran++
		}
	}
	if ran < 40 {
		t.Fatalf("only %d plans ran: fixtures missing?", ran)
	}
}

// stubRun lowers a graph for the stub GPU and builds a runner on it with streams streams.
func stubRun(t *testing.T, g *graph.Graph, cfg cudatest.StubConfig, opts Options) (*cudatest.Stub, *lowering.Plan, *Runner) {
	t.Helper()
	if cfg.Host == nil {
		cfg.Host = cpu.NewDevice(2)
	}
	stub := cudatest.NewStub(cfg)
	dev, err := stub.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	plan, err := lowering.Lower(g, lowering.Options{Device: dev.Info()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewWithOptions(plan, dev, jit.NewCompiler(jit.CompilerOptions{Version: "test"}), g, opts)
	if err != nil {
		t.Fatalf("prepare on the stub: %v", err)
	}
	t.Cleanup(r.Close)
	return stub, plan, r
}

func loadFixture(t *testing.T, dir string) (*graph.Graph, map[string]*safetensors.Tensor) {
	t.Helper()
	g, err := graph.Load(filepath.Join(dir, "graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	return g, testkit.ReadTensors(t, filepath.Join(dir, "inputs.safetensors"))
}

// firstStubRun runs the fixture in dir once on the stub GPU, on 2 streams, and
// checks its outputs: those of the CPU backend for the same plan (bit for bit) and PyTorch's.
// It returns the index of the run's first operation in the stub's log.
func firstStubRun(t *testing.T, dir string) (*cudatest.Stub, *lowering.Plan, *Runner, int) {
	t.Helper()
	g, inputs := loadFixture(t, dir)
	stub, plan, r := stubRun(t, g, cudatest.StubConfig{}, Options{Streams: 2})
	if n := len(r.Streams().Parts); n != 2 {
		t.Fatalf("%d streams asked for 2 on a GPU with N=%d: %s", n, g.N, r.Streams().Why)
	}
	_, want := runOnce(t, plan, cpu.NewDevice(2), g, Options{}, inputs)
	first := len(stub.Ops())
	got, err := r.Run(inputs)
	if err != nil {
		t.Fatal(err)
	}
	sameOutputs(t, "stub, 2 streams", got, want)
	testkit.CheckOutputs(t, got, testkit.ReadTensors(t, filepath.Join(dir, "expected.safetensors")))
	if f := stub.Failures(); len(f) > 0 {
		t.Fatalf("stub failures: %q", f)
	}
	return stub, plan, r, first
}

// stubOps are the operations the stub recorded from first on, by stream, and the host's
// synchronisations among them.
func stubOps(stub *cudatest.Stub, first int) (byStream map[int][]cudatest.StubOp, lanes []int, syncs []cudatest.StubOp) {
	byStream = map[int][]cudatest.StubOp{}
	for _, op := range stub.Ops()[first:] {
		if op.Kind == "sync" {
			syncs = append(syncs, op)
			continue
		}
		if byStream[op.Stream] == nil {
			lanes = append(lanes, op.Stream)
		}
		byStream[op.Stream] = append(byStream[op.Stream], op)
	}
	sort.Ints(lanes)
	return byStream, lanes, syncs
}

// A plan through the stub GPU on 2 streams: the outputs are the CPU backend's (the same plan
// on the CPU device, on one stream), every copy of the run goes through pinned staging
// asynchronously, each stream issues its share's launches, stream 1's uploads overlap stream
// 0's kernels (unordered, and at the same time on the stub's clock), and the host
// synchronises once per run.
func TestStreamsOnStubGPU(t *testing.T) {
	stub, plan, r, first := firstStubRun(t, "../examples/transformer")
	byStream, lanes, syncs := stubOps(stub, first)
	if len(syncs) != 1 || syncs[0].Sync != "stream" || syncs[0].Stream != lanes[0] {
		t.Errorf("the host synchronised %d times in a run (%+v), want once, with stream 0", len(syncs), syncs)
	}
	if len(lanes) != 2 {
		t.Fatalf("a run used streams %v", lanes)
	}
	for k, lane := range lanes {
		part := r.Streams().Parts[k]
		kinds := map[string]int{}
		for _, op := range byStream[lane] {
			kinds[op.Kind]++
			if op.Ran < 0 {
				t.Errorf("%+v never ran", op)
			}
			if (op.Kind == "upload" || op.Kind == "download") && !op.Pinned {
				t.Errorf("%+v: a copy from pageable memory", op)
			}
		}
		if kinds["launch"] != len(streamSteps(plan, part)) || kinds["upload"] != len(part.Uploads) || kinds["download"] != len(part.Downloads) ||
			kinds["upload"] == 0 || kinds["memset"]+kinds["copy"] > 0 || lane == 0 {
			t.Errorf("stream %d (models [%d, %d)) issued %v", k, part.Lo, part.Hi, kinds)
		}
	}
	overlap := false
	for _, c := range byStream[lanes[1]] {
		for _, l := range byStream[lanes[0]] {
			if c.Kind == "upload" && l.Kind == "launch" && !stub.HappensBefore(c.Seq, l.Seq) && !stub.HappensBefore(l.Seq, c.Seq) &&
				c.Start < l.End && l.Start < c.End {
				overlap = true
			}
		}
	}
	if !overlap {
		t.Error("no upload of stream 1 overlaps a launch of stream 0")
	}
}

// Shared inputs are uploaded once, on stream 0, and an event orders them before stream 1's
// launches; every order the stub may pick, over runs and 3 streams, gives the same outputs.
func TestStreamsSharedInputsAndOrders(t *testing.T) {
	stub, plan, _, first := firstStubRun(t, "../lowering/testdata/fixtures/blocks_shared_n3")
	byStream, lanes, _ := stubOps(stub, first)
	var uploads []cudatest.StubOp
	for _, op := range byStream[lanes[0]] {
		if op.Kind == "upload" {
			uploads = append(uploads, op)
		}
	}
	if len(uploads) != len(plan.Inputs) {
		t.Fatalf("stream 0 uploaded %d of the %d shared inputs", len(uploads), len(plan.Inputs))
	}
	for _, op := range byStream[lanes[1]] {
		if op.Kind == "upload" {
			t.Errorf("stream 1 uploads %+v", op)
		}
		for _, u := range uploads {
			if op.Kind == "launch" && !stub.HappensBefore(u.Seq, op.Seq) {
				t.Errorf("stream 1's launch %d is not ordered after the shared input's upload %d", op.Seq, u.Seq)
			}
		}
	}
	for _, cfg := range []cudatest.StubConfig{{Order: cudatest.LastStreamFirst}, {Order: cudatest.Random, Seed: 1}, {Order: cudatest.Random, Seed: 7}} {
		for _, dir := range []string{"../lowering/testdata/fixtures/blocks_shared_n3", "../examples/transformer"} {
			g, inputs := loadFixture(t, dir)
			stub, plan, r := stubRun(t, g, cfg, Options{Streams: 3})
			_, want := runOnce(t, plan, cpu.NewDevice(2), g, Options{}, inputs)
			for run := range 2 {
				got, err := r.Run(inputs)
				if err != nil {
					t.Fatalf("%s, order %+v, run %d: %v", dir, cfg, run, err)
				}
				sameOutputs(t, fmt.Sprintf("%s, order %+v, 3 streams, run %d", dir, cfg, run), got, want)
			}
			if f := stub.Failures(); len(f) > 0 {
				t.Errorf("%s, order %+v: stub failures %q", dir, cfg, f)
			}
		}
	}
}

// The stub catches the schedule's mistakes: without the shared-input event, stream 1's first
// launch reads what stream 0's upload writes; with one set of temporaries for both streams,
// a slot that holds buffers of different sizes is written by both.
func TestStubCatchesBrokenStreamSchedules(t *testing.T) {
	g, inputs := loadFixture(t, "../lowering/testdata/fixtures/blocks_shared_n3")
	_, _, r := stubRun(t, g, cudatest.StubConfig{}, Options{Streams: 2})
	r.streams.shared = nil
	if _, err := r.Run(inputs); err == nil || !strings.Contains(err.Error(), "STUB_UNORDERED_ACCESS") || !strings.Contains(err.Error(), "upload") {
		t.Errorf("a run without the shared-input event: %v", err)
	}
	g, inputs = loadFixture(t, "../examples/patterns")
	_, _, r = stubRun(t, g, cudatest.StubConfig{}, Options{Streams: 2})
	if _, err := r.Run(inputs); err != nil {
		t.Fatal(err)
	}
	r.streams.bufs[1] = r.streams.bufs[0]
	if _, err := r.Run(inputs); err == nil || !strings.Contains(err.Error(), "STUB_UNORDERED_ACCESS") {
		t.Errorf("a run with one set of temporaries for two streams: %v", err)
	}
}

// --explain's schedule: the streams, their models, copies, launches and events.
func TestExplainStreams(t *testing.T) {
	g, _ := loadFixture(t, "../lowering/testdata/fixtures/blocks_shared_n3")
	_, plan, r := stubRun(t, g, cudatest.StubConfig{}, Options{Streams: 2})
	text := r.ExplainStreams()
	for _, want := range []string{
		"streams on widejit stub GPU: 2 (asked for)",
		"stream 0: models [0, 1)", "stream 1: models [1, 3)",
		"record   event shared-inputs", "wait     event shared-inputs",
		"rows [1, 3)", "from pinned staging", "into pinned staging",
		"record   event stream-1-done", "stream 0 waits for event stream-1-done; the host synchronises once",
		"launch   " + plan.Launches[len(plan.Launches)-1].Kernel.Source.Fn,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("explain lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "\n    launch   "); n != 2*(len(plan.Launches)-countPrepare(plan)) {
		t.Errorf("%d launch lines for %d launches a stream:\n%s", n, len(plan.Launches), text)
	}
	for _, c := range []struct {
		dev  jit.Device
		opts Options
		want string
	}{
		{cpu.NewDevice(1), Options{Streams: 2}, "streams on " + cpu.NewDevice(1).Info().Name + ": 1 (the cpu device runs each launch on the calling goroutine"},
		{hostStreams{cpu.NewDevice(1)}, Options{}, ": 1 (the default: more streams are for copy-heavy runs"},
		{hostStreams{cpu.NewDevice(1)}, Options{Streams: 1}, ": 1 (asked for)"},
		{hostStreams{cpu.NewDevice(1)}, Options{LaunchTimeout: time.Minute}, ": 1 (a launch time limit synchronises the device after every launch)"},
		{hostStreams{cpu.NewDevice(1)}, Options{Streams: 5}, ": 3 (asked for (5), at most N=3)"},
	} {
		r, err := NewWithOptions(plan, c.dev, testCompiler, g, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.ExplainStreams(); !strings.Contains(got, c.want) {
			t.Errorf("%T %+v: %q, want %q", c.dev, c.opts, got, c.want)
		}
		r.Close()
	}
}

func countPrepare(p *lowering.Plan) (n int) {
	for _, l := range p.Launches {
		if l.Prepare {
			n++
		}
	}
	return n
}

// Shares are balanced and in order; per-model inputs are uploaded by rows, shared inputs
// whole, once; outputs downloaded by rows; a launch whose grid does not walk the models keeps
// the plan on one stream.
func TestPlanStreamsSplit(t *testing.T) {
	in := &lowering.Buffer{Kind: lowering.InputBuffer, Name: "x", DType: graph.Float32, Elems: 8 * 6}
	shared := &lowering.Buffer{Kind: lowering.InputBuffer, Name: "s", DType: graph.Float32, Elems: 5}
	out := &lowering.Buffer{Kind: lowering.TempBuffer, Name: "y", DType: graph.Float32, Elems: 8*6 + 3, Slot: 0}
	p := &lowering.Plan{N: 8, Inputs: []*lowering.Buffer{in, shared}, Buffers: []*lowering.Buffer{in, shared, out}, Slots: []lowering.Slot{{DType: graph.Float32, Elems: 51}},
		Launches: []*lowering.Launch{{Kernel: &lowering.KernelSource{Source: jit.Source{Fn: "k"}}, Grid: [3]int{8, 1, 1}, Strategy: lowering.Batched, Args: []lowering.LaunchArg{
			{Name: "x", Kind: lowering.PtrArg, Buf: in, ModelStride: 6},
			{Name: "s", Kind: lowering.PtrArg, Buf: shared},
			{Name: "y", Kind: lowering.PtrArg, Buf: out, Offset: 3, ModelStride: 6}}}},
		Outputs: []lowering.Output{{Name: "y", View: lowering.View{Buf: out, Offset: 3, Shape: []int{6}, Strides: []int{1}, ModelStride: 6}, Shape: []int{6}}}}
	s := planStreams(p, 3, "asked for")
	if len(s.Parts) != 3 || s.Parts[0].Hi != 2 || s.Parts[1].Lo != 2 || s.Parts[1].Hi != 5 || s.Parts[2].Hi != 8 {
		t.Fatalf("shares %+v", s.Parts)
	}
	up := s.Parts[0].Uploads
	if len(up) != 2 || up[0].Name != "x" || up[0].Elems != 12 || up[1].Name != "s" || !up[1].Shared || up[1].Elems != 5 || up[1].Staging != 64 {
		t.Errorf("stream 0's uploads %+v", up)
	}
	if up := s.Parts[1].Uploads; len(up) != 1 || up[0].Offset != 12 || up[0].From != 12 || up[0].Elems != 18 {
		t.Errorf("stream 1's uploads %+v", up)
	}
	if d := s.Parts[2].Downloads; len(d) != 1 || d[0].Offset != 3+5*6 || d[0].From != 5*6 || d[0].Elems != 3*6 {
		t.Errorf("stream 2's downloads %+v", d)
	}
	if s := planStreams(p, 12, "asked for"); len(s.Parts) != 8 || s.Why != "asked for (12), at most N=8" {
		t.Errorf("12 streams for 8 models: %d, %q", len(s.Parts), s.Why)
	}
	p.Launches[0].Args[0].ModelStride = 3 // x read as something other than its 8 rows: shared
	if up := planStreams(p, 2, "").Parts[1].Uploads; len(up) != 0 {
		t.Errorf("an input read with another stride is uploaded by rows: %+v", up)
	}
	p.Launches[0].Grid[0] = 4
	if s := planStreams(p, 2, "asked for"); len(s.Parts) != 1 || !strings.Contains(s.Why, "does not walk the 8 models") {
		t.Errorf("a grid that is not N on the model axis: %+v", s)
	}
}

// A traced run on 2 streams writes a Chrome trace with a track per stream, named for its
// models, and a copy or kernel slice per operation, timed by events on the stub's clock.
func TestTraceStreamTracks(t *testing.T) {
	g, inputs := loadFixture(t, "../examples/transformer")
	_, plan, r := stubRun(t, g, cudatest.StubConfig{}, Options{Streams: 2})
	tracer := NewTracer()
	r.Trace(tracer, 1, "cuda:1")
	r.Profile(true)
	if _, err := r.Run(inputs); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tracer.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Name, Cat, Ph string
			PID, TID      int
			TS, Dur       float64
			Args          map[string]any
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("trace is not JSON: %v\n%s", err, buf.String())
	}
	names := map[int]string{}
	kernels, copies := map[int]int{}, map[int]int{}
	type span struct{ lo, hi float64 }
	var launches0, copies1 []span
	for _, e := range doc.TraceEvents {
		switch {
		case e.Ph == "M" && e.Name == "thread_name":
			names[e.TID] = fmt.Sprint(e.Args["name"])
		case e.Ph == "X":
			if e.PID != 1 || e.Args["device"] != "cuda:1" || e.Args["stream"] != float64(e.TID) || e.Dur <= 0 || e.TS < 0 {
				t.Errorf("event %+v", e)
			}
			if e.Cat == "kernel" {
				kernels[e.TID]++
				if e.TID == 0 {
					launches0 = append(launches0, span{e.TS, e.TS + e.Dur})
				}
			} else {
				copies[e.TID]++
				if e.TID == 1 {
					copies1 = append(copies1, span{e.TS, e.TS + e.Dur})
				}
			}
		}
	}
	for k, part := range r.Streams().Parts {
		if want := fmt.Sprintf("stream %d: models [%d, %d)", k, part.Lo, part.Hi); names[k] != want {
			t.Errorf("track %d is named %q, want %q", k, names[k], want)
		}
		if kernels[k] != len(streamSteps(plan, part)) || copies[k] != len(part.Uploads)+len(part.Downloads) {
			t.Errorf("stream %d: %d kernel and %d copy slices", k, kernels[k], copies[k])
		}
	}
	overlap := false
	for _, c := range copies1 {
		for _, l := range launches0 {
			overlap = overlap || c.lo < l.hi && l.lo < c.hi
		}
	}
	if !overlap {
		t.Error("no copy slice of stream 1 overlaps a kernel slice of stream 0 in the trace")
	}
	var total time.Duration
	for _, d := range r.KernelTimes() {
		total += d
	}
	if total <= 0 {
		t.Errorf("profile over streams: %v", r.KernelTimes())
	}
}

// Fewer streams run when one more set of temporaries would not fit the GPU's memory, or the
// pinned staging the host memory limit; the runs are then still right.
func TestStreamsFitMemory(t *testing.T) {
	g, inputs := loadFixture(t, "../examples/transformer")
	_, plan, r := stubRun(t, g, cudatest.StubConfig{}, Options{Streams: 3})
	_, want := runOnce(t, plan, cpu.NewDevice(2), g, Options{}, inputs)
	dev, temps := plan.Memory().Device(), r.Streams().Extra/2
	for _, c := range []struct {
		gpu     int64
		opts    Options
		streams int
		why     string
	}{
		{dev + 2*temps, Options{Streams: 3}, 3, "asked for"},
		{dev + temps + temps/2, Options{Streams: 3}, 2, "fewer than 3: one more set of temporaries (" + memlimit.Format(temps) + ") per stream would not fit widejit stub GPU's"},
		{dev + temps - 1, Options{Streams: 2}, 1, "fewer than 2"},
		{0, Options{Streams: 2, MemoryLimit: plan.Memory().Host() + 1}, 1, "the plan's host copies and pinned staging need"},
	} {
		_, _, r := stubRun(t, g, cudatest.StubConfig{MemoryBytes: c.gpu}, c.opts)
		if s := r.Streams(); len(s.Parts) != c.streams || !strings.Contains(s.Why, c.why) {
			t.Errorf("GPU memory %d, %+v: %d streams (%s), want %d (%s)", c.gpu, c.opts, len(s.Parts), s.Why, c.streams, c.why)
		}
		got, err := r.Run(inputs)
		if err != nil {
			t.Fatal(err)
		}
		sameOutputs(t, fmt.Sprintf("%d streams", c.streams), got, want)
	}
}
