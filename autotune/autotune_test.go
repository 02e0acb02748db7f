package autotune

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/widejit/widejit/plugins/abi"
)

type memStore struct {
	m    map[string][]byte
	puts int
}

func newMemStore() *memStore { return &memStore{m: map[string][]byte{}} }

func (s *memStore) Get(key string) ([]byte, bool) { v, ok := s.m[key]; return v, ok }
func (s *memStore) Put(key string, v []byte) error {
	s.puts++
	s.m[key] = append([]byte(nil), v...)
	return nil
}

// fakeRanker answers with a fixed ranking or error and counts its calls.
type fakeRanker struct {
	name, hash string
	ranking    []string
	err        error
	calls      int
}

func (f *fakeRanker) Name() string { return f.name }
func (f *fakeRanker) Hash() string { return f.hash }
func (f *fakeRanker) Choose(_ context.Context, req abi.Request) (abi.Response, error) {
	f.calls++
	if req.ABI != abi.Version || len(req.Candidates) == 0 {
		return abi.Response{}, fmt.Errorf("bad request %+v", req)
	}
	return abi.Response{Ranking: f.ranking, Note: "fake"}, f.err
}

func linearProblem(batch, n int) Problem {
	return Problem{
		OpChain: []string{"linear", "gelu"},
		Shapes:  [][]int{{batch, 64}, {128, 64}, {128}},
		DTypes:  []string{"float32", "float32", "float32"},
		N:       n,
		Device:  DeviceInfo{Kind: "cpu", Name: "test-cpu", Cores: 2, Capabilities: abi.Capabilities{Version: abi.CapabilitiesVersion, HostThreads: true}},
	}
}

func candidates() []Candidate {
	return []Candidate{
		{ID: "seq", Strategy: "sequential"},
		{ID: "bat-32", Strategy: "batched", Params: map[string]int{"BLOCK_M": 32}},
		{ID: "bat-64", Strategy: "batched", Params: map[string]int{"BLOCK_M": 64}},
		{ID: "fused", Strategy: "fused", Params: map[string]int{"BLOCK_M": 32}},
	}
}

func TestBucketBatch(t *testing.T) {
	for in, want := range map[int]int{-3: 1, 0: 1, 1: 1, 2: 2, 3: 4, 64: 64, 65: 128, 128: 128, 1000: 1024} {
		if got := BucketBatch(in); got != want {
			t.Errorf("BucketBatch(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestKey(t *testing.T) {
	base := Key(linearProblem(100, 8), candidates())
	if want := "autotune/v1/ops=linear,gelu/shapes=b128x64,128x64,128/dtypes=float32,float32,float32/n=8/device=cpu:test-cpu:2cores/candidates="; !strings.HasPrefix(base, want) {
		t.Fatalf("key %q, want prefix %q", base, want)
	}
	reversed := candidates()
	for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	if Key(linearProblem(128, 8), reversed) != base || Key(linearProblem(65, 8), candidates()) != base {
		t.Fatal("batches 65..128 and candidate order must not change the key")
	}
	changedParams := candidates()
	changedParams[1].Params = map[string]int{"BLOCK_M": 16}
	gpu := linearProblem(100, 8)
	gpu.Device = DeviceInfo{Kind: "cuda", Name: "H100", ComputeCapability: "9.0"}
	optioned := linearProblem(100, 8)
	optioned.Device.BackendOptions = map[string]string{"fast_math": "1"}
	wider := linearProblem(100, 8)
	wider.Shapes[1] = []int{256, 64}
	for name, k := range map[string]string{
		"batch 129":     Key(linearProblem(129, 8), candidates()),
		"N 9":           Key(linearProblem(100, 9), candidates()),
		"params":        Key(linearProblem(100, 8), changedParams),
		"fewer":         Key(linearProblem(100, 8), candidates()[:3]),
		"device":        Key(gpu, candidates()),
		"backend opt":   Key(optioned, candidates()),
		"weight shape":  Key(wider, candidates()),
		"plugin answer": PluginKey(base, "abc"),
	} {
		if k == base {
			t.Errorf("%s: key unchanged", name)
		}
	}
}

func TestDecideHeuristicOnly(t *testing.T) {
	tu := &Tuner{Heuristic: func(p Problem, c []Candidate) []string { return []string{"fused"} }}
	d, err := tu.Decide(context.Background(), linearProblem(32, 8), candidates())
	if err != nil {
		t.Fatal(err)
	}
	if d.CandidateID != "fused" || d.Source != SourceHeuristic || strings.Join(d.Ranking, ",") != "fused,seq,bat-32,bat-64" {
		t.Fatalf("got %+v", d)
	}
	d, _ = (&Tuner{}).Decide(context.Background(), linearProblem(32, 8), candidates())
	if d.CandidateID != "seq" {
		t.Fatalf("with no heuristic the first candidate decides, got %s", d.CandidateID)
	}
}

func TestDecideBadInput(t *testing.T) {
	dup := append(candidates(), Candidate{ID: "seq"})
	tu := &Tuner{}
	for name, c := range map[string][]Candidate{"none": nil, "duplicate": dup, "empty id": {{Strategy: "fused"}}} {
		if _, err := tu.Decide(context.Background(), linearProblem(8, 2), c); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	bad := &Tuner{Heuristic: func(Problem, []Candidate) []string { return []string{"nope"} }}
	if _, err := bad.Decide(context.Background(), linearProblem(8, 2), candidates()); err == nil || !strings.Contains(err.Error(), `unknown candidate id "nope"`) {
		t.Fatalf("heuristic naming an unknown id: %v", err)
	}
}

func TestPluginChangesDecisionAndIsRecorded(t *testing.T) {
	store := newMemStore()
	plugin := &fakeRanker{name: "p.wasm", hash: "h1", ranking: []string{"bat-64"}}
	tu := &Tuner{Store: store, Plugins: []Ranker{plugin}, Heuristic: func(Problem, []Candidate) []string { return []string{"fused", "seq"} }}
	d, err := tu.Decide(context.Background(), linearProblem(32, 8), candidates())
	if err != nil {
		t.Fatal(err)
	}
	// The partial ranking is completed in the heuristic's order.
	if d.CandidateID != "bat-64" || d.Source != "plugin:p.wasm" || d.Reused || d.Note != "fake" || strings.Join(d.Ranking, ",") != "bat-64,fused,seq,bat-32" {
		t.Fatalf("got %+v", d)
	}
	d2, err := tu.Decide(context.Background(), linearProblem(32, 8), candidates())
	if err != nil || plugin.calls != 1 || !d2.Reused || d2.CandidateID != "bat-64" || d2.Source != "plugin:p.wasm" {
		t.Fatalf("second decision %+v (%v) after %d plugin calls: want the recorded answer, plugin asked once", d2, err, plugin.calls)
	}
	changed := &fakeRanker{name: "p.wasm", hash: "h2", ranking: []string{"seq"}}
	tu.Plugins = []Ranker{changed}
	d3, _ := tu.Decide(context.Background(), linearProblem(32, 8), candidates())
	if changed.calls != 1 || d3.CandidateID != "seq" {
		t.Fatalf("a plugin with another hash must be asked again: %+v, calls %d", d3, changed.calls)
	}
}

func TestPluginFailureFallsBackWithWarning(t *testing.T) {
	var warnings []string
	failing := &fakeRanker{name: "bad.wasm", hash: "b", err: errors.New("plugin bad.wasm: deadline: choose did not return")}
	unknown := &fakeRanker{name: "liar.wasm", hash: "l", ranking: []string{"fused", "ghost"}}
	tu := &Tuner{
		Store:     newMemStore(),
		Plugins:   []Ranker{failing, unknown},
		Heuristic: func(Problem, []Candidate) []string { return []string{"bat-32"} },
		Warn:      func(m string) { warnings = append(warnings, m) },
	}
	d, err := tu.Decide(context.Background(), linearProblem(32, 8), candidates())
	if err != nil {
		t.Fatal(err)
	}
	if d.CandidateID != "bat-32" || d.Source != SourceHeuristic {
		t.Fatalf("got %+v, want the heuristic's bat-32", d)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "bad.wasm") || !strings.Contains(warnings[0], "deadline") ||
		!strings.Contains(warnings[1], `unknown candidate id "ghost"`) {
		t.Fatalf("warnings %q", warnings)
	}
	// A second plugin is consulted when the first fails.
	good := &fakeRanker{name: "good.wasm", hash: "g", ranking: []string{"seq"}}
	tu.Plugins = []Ranker{failing, good}
	if d, _ := tu.Decide(context.Background(), linearProblem(32, 8), candidates()); d.CandidateID != "seq" || d.Source != "plugin:good.wasm" {
		t.Fatalf("got %+v, want good.wasm's seq", d)
	}
}

// script is a fake clock and runner: each run of a candidate advances the clock by the next of
// that candidate's scripted durations, and the order of runs is logged.
type script struct {
	now   time.Time
	times map[string][]time.Duration
	fail  map[string]bool
	order []string
}

func (s *script) clock() time.Time { return s.now }
func (s *script) run(c Candidate) error {
	s.order = append(s.order, c.ID)
	if s.fail[c.ID] {
		return fmt.Errorf("%s does not compile", c.ID)
	}
	ts := s.times[c.ID]
	s.now = s.now.Add(ts[0])
	s.times[c.ID] = ts[1:]
	return nil
}

func TestMeasureMediansAndRoundRobin(t *testing.T) {
	ms := time.Millisecond
	s := &script{now: time.Unix(0, 0), fail: map[string]bool{"bad": true}, times: map[string][]time.Duration{
		// warm-up first (100 ms, discarded), then 3 timed runs
		"a": {100 * ms, 5 * ms, 1 * ms, 3 * ms},
		"b": {100 * ms, 2 * ms, 9 * ms, 2 * ms},
	}}
	cands := []Candidate{{ID: "a"}, {ID: "b"}, {ID: "bad"}}
	var progress []int
	timings, err := Measure(context.Background(), cands, s.run, MeasureOptions{Warmup: 1, Reps: 3, Clock: s.clock}, func(done, total int) {
		progress = append(progress, done)
		if total != 12 {
			t.Errorf("total %d, want 12", total)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Timing{{"a", 3 * ms, 3, ""}, {"b", 2 * ms, 3, ""}, {"bad", 0, 0, "bad does not compile"}}
	for i := range want {
		if timings[i] != want[i] {
			t.Errorf("timings[%d] = %+v, want %+v", i, timings[i], want[i])
		}
	}
	// Round r starts at candidate r mod 3; the failed candidate is not run again.
	if got := strings.Join(s.order, " "); got != "a b bad b a a b a b" {
		t.Errorf("run order %q", got)
	}
	if len(progress) != 9 || progress[8] != 9 {
		t.Errorf("progress %v", progress)
	}
	if got := strings.Join(RankByTime(timings), ","); got != "b,a" {
		t.Errorf("RankByTime = %s, want b,a", got)
	}
}

func TestMeasureBudgetAndFailures(t *testing.T) {
	ms := time.Millisecond
	long := func() []time.Duration { return []time.Duration{10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms} }
	s := &script{now: time.Unix(0, 0), times: map[string][]time.Duration{"a": long(), "b": long()}}
	timings, err := Measure(context.Background(), []Candidate{{ID: "a"}, {ID: "b"}}, s.run, MeasureOptions{Warmup: 1, Reps: 5, Budget: 30 * ms, Clock: s.clock}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// warm-up 20 ms, first timed round 40 ms >= 30 ms: stop after one timed round.
	if timings[0].Samples != 1 || timings[1].Samples != 1 {
		t.Fatalf("timings %+v, want one timed sample each", timings)
	}

	s = &script{now: time.Unix(0, 0), fail: map[string]bool{"a": true, "b": true}}
	if _, err := Measure(context.Background(), []Candidate{{ID: "a"}, {ID: "b"}}, s.run, MeasureOptions{Clock: s.clock}, nil); err == nil || !strings.Contains(err.Error(), "every candidate failed") {
		t.Fatalf("error %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Measure(ctx, []Candidate{{ID: "a"}}, func(Candidate) error { return nil }, MeasureOptions{}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled context: %v", err)
	}
}

func TestMedianEvenCount(t *testing.T) {
	if got := median([]time.Duration{4, 1, 3, 2}); got != 2 {
		t.Fatalf("median = %v, want 2 (mean of 2 and 3, truncated)", got)
	}
}

// TestTuneRecordsAndNextDecisionReusesIt is the tune-then-run cycle: the measured winner is
// recorded, and the next Decide returns it without asking the plugin.
func TestTuneRecordsAndNextDecisionReusesIt(t *testing.T) {
	ms := time.Millisecond
	store := newMemStore()
	plugin := &fakeRanker{name: "p.wasm", hash: "h", ranking: []string{"seq"}}
	tu := &Tuner{Store: store, Plugins: []Ranker{plugin}}
	each := func(d time.Duration) []time.Duration { return []time.Duration{d, d, d, d} }
	s := &script{now: time.Unix(0, 0), times: map[string][]time.Duration{
		"seq": each(9 * ms), "bat-32": each(4 * ms), "bat-64": each(3 * ms), "fused": each(5 * ms),
	}}
	var finished []string
	records, err := tu.Tune(context.Background(), []Job{{Name: "mlp.0", Problem: linearProblem(32, 8), Candidates: candidates(), Run: s.run}},
		MeasureOptions{Warmup: 1, Reps: 3, Clock: s.clock}, func(p Progress) {
			if p.Finished {
				finished = append(finished, p.Record.Winner)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 || records[0].Winner != "bat-64" || strings.Join(records[0].Ranking, ",") != "bat-64,bat-32,fused,seq" || len(finished) != 1 {
		t.Fatalf("records %+v finished %v", records, finished)
	}
	// A batch in the same bucket (17..32) reuses the measurement.
	d, err := tu.Decide(context.Background(), linearProblem(20, 8), candidates())
	if err != nil {
		t.Fatal(err)
	}
	if d.CandidateID != "bat-64" || d.Source != SourceRecorded || !d.Reused || len(d.Timings) != 4 || plugin.calls != 0 {
		t.Fatalf("decision %+v, plugin calls %d: want the recorded bat-64 and no plugin call", d, plugin.calls)
	}

	var buf bytes.Buffer
	if err := WriteTimings(&buf, records, "test"); err != nil {
		t.Fatal(err)
	}
	back, err := ReadTimings(&buf)
	if err != nil || len(back) != 1 || back[0].Winner != "bat-64" || back[0].Timings[2].Median != 3*ms {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}

func TestCorruptRecordIsIgnored(t *testing.T) {
	store := newMemStore()
	var warnings []string
	tu := &Tuner{Store: store, Warn: func(m string) { warnings = append(warnings, m) }}
	p := linearProblem(32, 8)
	key := Key(p, candidates())
	for name, value := range map[string]string{
		"garbage":        "{not json",
		"other format":   `{"format": 99}`,
		"other key":      `{"format": 1, "key": "x", "winner": "seq", "ranking": ["seq"]}`,
		"unknown winner": fmt.Sprintf(`{"format": 1, "key": %q, "winner": "gone", "ranking": ["gone"]}`, key),
	} {
		warnings = nil
		store.m[key] = []byte(value)
		d, err := tu.Decide(context.Background(), p, candidates())
		if err != nil || d.Source != SourceHeuristic || len(warnings) != 1 || !strings.Contains(warnings[0], "ignoring the recorded decision") {
			t.Errorf("%s: decision %+v err %v warnings %q", name, d, err, warnings)
		}
	}
}

func TestReadTimingsRejectsBadFiles(t *testing.T) {
	for name, text := range map[string]string{
		"not json":     "[",
		"wrong format": `{"format": "other", "records": []}`,
		"bad record":   `{"format": "widejit-timings/1", "records": [{"format": 1, "key": "k", "source": "measured", "winner": "a", "ranking": ["b"]}]}`,
	} {
		if _, err := ReadTimings(strings.NewReader(text)); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestExplain(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		d    Decision
		want string
	}{
		{Decision{CandidateID: "bat-64", Source: SourceRecorded, Reused: true, Ranking: []string{"bat-64", "bat-32"},
			Timings: []Timing{{"bat-32", 4 * ms, 3, ""}, {"bat-64", 3 * ms, 3, ""}}},
			"bat-64 by recorded measurement: 3.00ms median of 3 runs (next: bat-32 4.00ms)"},
		{Decision{CandidateID: "fused", Source: SourcePlugin("rules.wasm"), Reused: true, Note: "fuse"}, "fused by plugin:rules.wasm (recorded answer): fuse"},
		{Decision{CandidateID: "seq", Source: SourceHeuristic}, "seq by heuristic"},
	}
	for _, c := range cases {
		if got := c.d.Explain(); got != c.want {
			t.Errorf("Explain() = %q, want %q", got, c.want)
		}
	}
}
