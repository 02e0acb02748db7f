package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/widejit/widejit"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/errkind"
)

const mlp = "../../examples/mlp/graph.json"

// TestGuard: errors become the CLI's text and exit code; a panic becomes an error instead of
// unwinding into the C caller.
func TestGuard(t *testing.T) {
	cases := []struct {
		f    func() error
		code int
		msg  string
	}{
		{func() error { return nil }, 0, ""},
		{func() error { return errors.New("boom") }, codeFailure, "widejit: boom"},
		{func() error { return errkind.Usagef("bad flag") }, codeUsage, "widejit: bad flag"},
		{func() error { return errkind.Input{Err: errors.New("bad file")} }, codeInput, "widejit: bad file"},
	}
	for _, c := range cases {
		code, msg := guard(c.f)
		if code != c.code || msg != c.msg {
			t.Errorf("guard = %d %q, want %d %q", code, msg, c.code, c.msg)
		}
	}
	code, msg := guard(func() error {
		var s []int
		_ = s[3] // an index out of range: a runtime panic
		return nil
	})
	if code != codeFailure || !strings.HasPrefix(msg, "widejit: internal error") || !strings.Contains(msg, "index out of range") {
		t.Errorf("a panic gave %d %q", code, msg)
	}
}

func TestOptions(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no configuration file of the user's
	for _, bad := range []struct{ json, want string }{
		{`{"no_such": 1}`, `unknown option "no_such"`},
		{`{"threads": -1}`, "threads: -1 must be >= 0"},
		{`{"device": "tpu"}`, `device "tpu": no such backend`},
		{`{"models": [1]}`, "models is [lo, hi)"},
		{`{"models": [0, 1], "shard": [0, 2]}`, "models or shard, not both"},
		{`{"threads": {"a": 1}}`, "expected a string, number, boolean or list of strings"},
		{`[1]`, "options:"},
		{`{"backend_options": 3}`, "backend_options: expected an object of option names to string values"},
	} {
		_, _, err := parseOptions(bad.json)
		if err == nil || !strings.Contains(err.Error(), bad.want) || !errors.As(err, new(errkind.Usage)) {
			t.Errorf("%s: got %v, want a usage error containing %q", bad.json, err, bad.want)
		}
	}
	if _, _, err := parseOptions(`{"device": "cpu", "threads": 2, "no_cache": true, "plugins": [], "models": [0, 2], "profile": true}`); err != nil {
		t.Errorf("valid options: %v", err)
	} // backend_options reach the backend as --backend-opt does: cpu takes none and says so.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	if _, err := load(mlp, `{"device": "cpu", "no_cache": true, "backend_options": {"x": "1"}}`); err == nil || !strings.Contains(err.Error(), "backend cpu takes no options; got x") {
		t.Errorf("backend_options {x: 1} on the cpu: got %v, want the backend's refusal", err)
	}
}

// TestLoadRunClose runs models [2, 5) of examples/mlp through the library's functions, with
// outputs in caller memory: written in place, equal to the Go API's results; close waits for
// the run in flight, and the handle is then refused.
func TestLoadRunClose(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	h, err := load(mlp, `{"device": "cpu", "no_cache": true, "models": [2, 5]}`)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := widejit.Load(mlp, widejit.WithDevice("cpu"), widejit.WithoutCache(), widejit.WithModels(2, 5))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	in, err := ref.RandomInputs(1)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var specs []widejit.TensorSpec
	if err := with(h, func(m *widejit.Model) (e error) { specs, e = m.OutputsFor(in); return }); err != nil {
		t.Fatal(err)
	}
	out := map[string]*widejit.Tensor{}
	mem := map[string][]byte{} // the caller's memory for each output
	for _, s := range specs {
		mem[s.Name] = make([]byte, safetensors.F32.Size()*numel(s.Shape))
		if out[s.Name], err = tensorAt("output", s.Name, s.DType, s.Shape, unsafe.Pointer(&mem[s.Name][0]), true); err != nil {
			t.Fatal(err)
		}
	}
	// the tensors are fit for the runner to write in place: RunInto returns them
	var got map[string]*widejit.Tensor
	if err := with(h, func(m *widejit.Model) (e error) { got, e = m.RunInto(context.Background(), in, out); return }); err != nil {
		t.Fatal(err)
	}
	if &got["fc2"].Data[0] != &mem["fc2"][0] {
		t.Errorf("the output was not written in place into the caller's memory")
	}
	clear(mem["fc2"])
	if err := with(h, func(m *widejit.Model) error { return run(m, in, out) }); err != nil {
		t.Fatal(err)
	}
	if string(mem["fc2"]) != string(want["fc2"].Data) {
		t.Errorf("run's output differs from Model.Run's")
	}
	// memory the runner cannot take (another dtype's size) is refused, naming the output
	small, _ := tensorAt("output", "fc2", "float32", []int{1}, unsafe.Pointer(&mem["fc2"][0]), true)
	if err := with(h, func(m *widejit.Model) error { return run(m, in, map[string]*widejit.Tensor{"fc2": small}) }); err == nil ||
		!strings.Contains(err.Error(), `output "fc2" is F32[3 32 64], the buffer given F32[1]`) {
		t.Errorf("a buffer too small: %v", err)
	}
	if _, err := tensorAt("input", "x", "complex64", nil, nil, false); err == nil || !strings.Contains(err.Error(), `input "x" has dtype "complex64"`) {
		t.Errorf("an unknown dtype: %v", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	started := make(chan struct{})
	var inFlight error
	go func() {
		defer wg.Done()
		inFlight = with(h, func(m *widejit.Model) error {
			close(started)
			time.Sleep(50 * time.Millisecond)
			return run(m, in, out)
		})
	}()
	<-started
	if err := closeModel(h); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if inFlight != nil {
		t.Errorf("the run in flight when close was called: %v", inFlight)
	}
	if err := with(h, func(*widejit.Model) error { return nil }); err == nil || !strings.Contains(err.Error(), "no open model has handle") {
		t.Errorf("a closed handle gave %v", err)
	}
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// TestLoadMemoryErrors: a graph in memory that the CLI would refuse as a file is an input
// error (exit code 3) naming the graph by the name given.
func TestLoadMemoryErrors(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	_, err := loadMemory("mem/graph.json", []byte(`{"format": "widejit.graph/v1"}`), nil, `{"no_cache": true}`)
	code, msg := guard(func() error { return err })
	if code != codeInput || !strings.Contains(msg, "mem/graph.json") {
		t.Errorf("a bad graph in memory: %d %q", code, msg)
	}
	_, err = loadMemory("mem/graph.json", []byte("{"), nil, `{"no_cache": true}`)
	if code, msg := guard(func() error { return err }); code != codeInput || !strings.Contains(msg, "malformed JSON") {
		t.Errorf("malformed JSON in memory: %d %q", code, msg)
	}
}
