package widejit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit"
)

// runExample loads an example's graph with opts (CPU, no cache) and runs it on rows of the
// example's inputs file (ReadInputs takes the model range's rows).
func runExample(t *testing.T, dir string, opts ...widejit.Option) (*widejit.Model, map[string]*widejit.Tensor) {
	t.Helper()
	m, err := widejit.Load(filepath.Join(dir, "graph.json"), append([]widejit.Option{widejit.WithDevice("cpu"), widejit.WithoutCache()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	in, err := m.ReadInputs(filepath.Join(dir, "inputs.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return m, out
}

// sameRows fails unless got holds rows [lo, hi) of every output of want, bit for bit.
func sameRows(t *testing.T, what string, want, got map[string]*widejit.Tensor, lo, hi int) {
	t.Helper()
	for name, w := range want {
		g := got[name]
		if g == nil {
			t.Errorf("%s: no output %q", what, name)
			continue
		}
		rows, err := w.Rows(lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(g.Shape) != fmt.Sprint(rows.Shape) || g.DType != rows.DType || !bytes.Equal(g.Data, rows.Data) {
			t.Errorf("%s: output %q (%s%v) differs from rows [%d, %d) of the whole run's", what, name, g.DType, g.Shape, lo, hi)
		}
	}
}

// Every shard of every example, at several K (one that does not divide N, and K = N),
// equals its rows of the unsharded run bit for bit, and so does a run split over several
// CPU executors; the shards tile [0, N).
func TestShardsAndDevicesBitIdentical(t *testing.T) {
	dirs, _ := filepath.Glob("examples/*/graph.json")
	if len(dirs) == 0 {
		t.Fatal("no examples")
	}
	for _, g := range dirs {
		dir := filepath.Dir(g)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			whole, want := runExample(t, dir)
			n := whole.N()
			ks := []int{3, n}
			if testing.Short() {
				ks = []int{3}
			}
			for _, k := range ks {
				next := 0
				for i := range k {
					m, got := runExample(t, dir, widejit.WithShard(i, k))
					lo, hi, total := m.ModelRange()
					if lo != next || hi <= lo || total != n || m.N() != hi-lo || hi-lo < n/k || hi-lo > n/k+1 {
						t.Fatalf("shard %d/%d of %d: models [%d, %d) of %d, N %d", i, k, n, lo, hi, total, m.N())
					}
					next = hi
					sameRows(t, fmt.Sprintf("shard %d/%d", i, k), want, got, lo, hi)
				}
				if next != n {
					t.Fatalf("the %d shards end at model %d of %d", k, next, n)
				}
			}
			m, got := runExample(t, dir, widejit.WithDevice("cpu:0,cpu:1"))
			sameRows(t, "cpu:0,cpu:1", want, got, 0, n)
			if d := m.Devices(); len(d) != 2 || d[0].Lo != 0 || d[0].Hi != d[1].Lo || d[1].Hi != n {
				t.Errorf("devices %+v", d)
			}
		})
	}
}

// A model range of several devices splits the range, not all N.
func TestShardOverDevices(t *testing.T) {
	_, want := runExample(t, "examples/mlp")
	m, got := runExample(t, "examples/mlp", widejit.WithModels(1, 7), widejit.WithDevice("cpu:0,cpu:1,cpu:2"))
	sameRows(t, "models [1, 7) over 3 devices", want, got, 1, 7)
	d := m.Devices()
	if len(d) != 3 || d[0].Lo != 1 || d[2].Hi != 7 || d[0].Device != "cpu:0" || d[2].Device != "cpu:2" {
		t.Errorf("devices %+v", d)
	}
	if !strings.Contains(m.Explain(), "device cpu:1: models [3, 5) of 8") {
		t.Errorf("explain does not show the split:\n%s", m.Explain())
	}
	// each device's plan says on how many streams it runs, and why (the CPU: one)
	if n := strings.Count(m.Explain(), ": 1 (the cpu device runs each launch on the calling goroutine"); n != 3 {
		t.Errorf("explain shows the streams of %d devices of 3:\n%s", n, m.Explain())
	}
}

// The trace is Chrome trace-event JSON with one kernel event per launch per run, on a
// track per device, plus the copies.
func TestTraceHasEveryLaunch(t *testing.T) {
	for _, dev := range []string{"cpu", "cpu:0,cpu:1"} {
		m, _ := runExample(t, "examples/transformer", widejit.WithDevice(dev), widejit.WithTrace(), widejit.WithProfile())
		perRun := 0 // the prepare launches ran once, at Load, before the trace
		for _, k := range m.KernelTimes() {
			if !k.Prepare {
				perRun++
			}
		}
		var buf bytes.Buffer
		if err := m.WriteTrace(&buf); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			TraceEvents []struct {
				Name, Cat, Ph string
				TS, Dur       float64
				PID, TID      int
				Args          map[string]any
			}
		}
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatalf("%s: trace is not JSON: %v", dev, err)
		}
		kernels, copies, procs := 0, 0, map[int]bool{}
		for _, e := range doc.TraceEvents {
			switch {
			case e.Ph == "M":
				procs[e.PID] = true
			case e.Ph == "X" && e.Cat == "kernel":
				kernels++
				if e.Name == "" || e.Dur < 0 || e.TS < 0 || e.Args["device"] == nil || e.Args["stream"] == nil {
					t.Errorf("%s: bad kernel event %+v", dev, e)
				}
			case e.Ph == "X" && e.Cat == "copy":
				copies++
			default:
				t.Errorf("%s: unexpected event %+v", dev, e)
			}
		}
		// The CPU reads inputs and writes outputs in place (jit.HostBinder): a run copies
		// nothing (runner's TestInputsReadInPlace traces the copy of an input it cannot).
		if kernels != perRun || kernels == 0 || copies != 0 || len(procs) != len(m.Devices()) {
			t.Errorf("%s: %d kernel events for %d launches per run, %d copies (want none), %d device tracks for %d devices", dev, kernels, perRun, copies, len(procs), len(m.Devices()))
		}
	}
	m, _ := runExample(t, "examples/mlp")
	if err := m.WriteTrace(&bytes.Buffer{}); err == nil {
		t.Error("WriteTrace without WithTrace: no error")
	}
}

// Bad ranges, shards and device lists are errors that say what is wrong.
func TestModelRangeErrors(t *testing.T) {
	for _, c := range []struct {
		opts []widejit.Option
		want string
	}{
		{[]widejit.Option{widejit.WithShard(8, 8)}, "need 0 <= I < K <= N"},
		{[]widejit.Option{widejit.WithShard(0, 9)}, "shard 0/9 of 8 models"},
		{[]widejit.Option{widejit.WithShard(-1, 2)}, "need 0 <= I < K <= N"},
		{[]widejit.Option{widejit.WithModels(3, 3)}, "models [3, 3) are not a non-empty range"},
		{[]widejit.Option{widejit.WithModels(0, 9)}, "of the graph's 8 models"},
		{[]widejit.Option{widejit.WithShard(0, 2), widejit.WithMonteCarloDropout(1)}, "Monte Carlo dropout"},
		{[]widejit.Option{widejit.WithDevice("cpu:0,cuda:1")}, "mixes cpu and cuda"},
		{[]widejit.Option{widejit.WithDevice("cpu:0,cpu:0")}, "cpu:0 is listed twice"},
		{[]widejit.Option{widejit.WithDevice("cuda:x")}, "integer >= 0"},
		{[]widejit.Option{widejit.WithModels(0, 2), widejit.WithDevice("cpu:0,cpu:1,cpu:2")}, "3 devices for 2 models"},
		{[]widejit.Option{widejit.WithStreams(-1)}, "streams must be >= 0"},
	} {
		_, err := widejit.Load("examples/mlp/graph.json", append([]widejit.Option{widejit.WithDevice("cpu"), widejit.WithoutCache()}, c.opts...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error with %q, got %v", c.want, err)
		}
	}
}
