package backend_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/widejit/widejit"
	"github.com/widejit/widejit/cache"
	"github.com/widejit/widejit/examples/backend"
	"github.com/widejit/widejit/internal/conformance"
	"github.com/widejit/widejit/internal/testkit"
)

var (
	registerOnce sync.Once
	recording    = backend.New()
)

// register adds the recording backend through the public API, once per process.
func register(t *testing.T) {
	registerOnce.Do(func() {
		if err := widejit.RegisterBackend("recording", recording); err != nil {
			t.Fatal(err)
		}
	})
}

const mlp = "../mlp"

// The recording backend runs PyTorch's MLP fixture through the public API and sees every
// launch of the run; nothing in widejit names it.
func TestRecordingRunsAGraph(t *testing.T) {
	register(t)
	before := len(recording.Launches())
	m, err := widejit.Load(filepath.Join(mlp, "graph.json"), widejit.WithDevice("recording"), widejit.WithoutCache())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Device() != "recording" {
		t.Fatalf("model on %q", m.Device())
	}
	in, err := m.ReadInputs(filepath.Join(mlp, "inputs.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckOutputs(t, out, testkit.ReadTensors(t, filepath.Join(mlp, "expected.safetensors")))
	got := recording.Launches()[before:]
	if len(got) != m.Launches() || len(got) == 0 { // prepare launches (at Load) and the run's
		t.Fatalf("recorded %d launches, the plan has %d", len(got), m.Launches())
	}
	for _, l := range got {
		if l.Kernel == "" || l.Grid[0] < 1 {
			t.Fatalf("bad launch record %+v", l)
		}
	}
}

func TestRecordingConformance(t *testing.T) {
	register(t)
	conformance.Run(t, "recording", nil)
}

// Its options reach it, refused when unknown, and max_launches stops a run past its budget.
func TestRecordingOptions(t *testing.T) {
	register(t)
	load := func(opts map[string]string) (*widejit.Model, error) {
		return widejit.Load(filepath.Join(mlp, "graph.json"), widejit.WithDevice("recording"), widejit.WithoutCache(), widejit.WithBackendOptions(opts))
	}
	if _, err := load(map[string]string{"colour": "blue"}); err == nil || !strings.Contains(err.Error(), "unknown options colour") {
		t.Fatalf("unknown option: %v", err)
	}
	m, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	in, err := m.ReadInputs(filepath.Join(mlp, "inputs.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	budget := strconv.Itoa(m.Launches() - 1) // one short of the prepare launches and a run
	short, err := load(map[string]string{"max_launches": budget})
	if err == nil {
		defer short.Close()
		_, err = short.Run(context.Background(), in)
	}
	if err == nil || !strings.Contains(err.Error(), "past max_launches="+budget) {
		t.Fatalf("a run past the budget: %v", err)
	}
}

// A backend option is part of every cache key: the same graph compiled again hits the cache,
// and with an option changed misses it, and its decisions are keyed apart too.
func TestBackendOptionChangesCacheKeys(t *testing.T) {
	register(t)
	dir := t.TempDir()
	load := func(opts map[string]string) cache.RunReport {
		t.Helper()
		m, err := widejit.Load(filepath.Join(mlp, "graph.json"), widejit.WithDevice("recording"), widejit.WithCacheDir(dir), widejit.WithBackendOptions(opts))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		return m.CacheReport()
	}
	first := load(nil)
	again := load(nil)
	optioned := load(map[string]string{"max_launches": "1000"})
	if first.Misses == 0 || again.Misses != 0 || again.Hits != first.Misses {
		t.Fatalf("first %+v, again %+v: want every kernel compiled once, then served", first, again)
	}
	if optioned.Misses != first.Misses || optioned.Hits != 0 {
		t.Fatalf("with max_launches=1000: %+v, want every kernel compiled again (first: %+v)", optioned, first)
	}
}
