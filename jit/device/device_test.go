package device

import (
	"errors"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cuda"
)

func withCUDA(t *testing.T, open func(int) (jit.Device, error)) {
	saved := openCUDA
	openCUDA = func(ordinal int, _ cuda.Options) (jit.Device, error) { return open(ordinal) }
	t.Cleanup(func() { openCUDA = saved })
}

func TestAutoFallsBackToCPUWithReason(t *testing.T) {
	withCUDA(t, func(int) (jit.Device, error) {
		return nil, errors.New("cuda: libcuda.so.1 not found (no NVIDIA driver)")
	})
	s, err := Select("auto", 0, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Device.Info().Caps.HostThreads || !strings.Contains(s.Fallback, "no NVIDIA driver") {
		t.Fatalf("auto without a GPU: %+v device, fallback %q", s.Device.Info(), s.Fallback)
	}
	if _, err := Select("cuda", 0, Options{}); err == nil || !strings.Contains(err.Error(), "no NVIDIA driver") {
		t.Fatalf("cuda without a GPU: %v, want the driver error", err)
	}
	if st := Status("cuda", Options{}); st != "not available: cuda: libcuda.so.1 not found (no NVIDIA driver)" {
		t.Fatalf("status %q", st)
	}
}

func TestCPUAndBadNames(t *testing.T) {
	d, err := Open("cpu", 0, Options{Threads: 3})
	if err != nil || d.Info().Kind != "cpu" || d.Info().Cores != 3 {
		t.Fatalf("cpu: %v %+v", err, d)
	}
	if _, err := Open("tpu", 0, Options{}); err == nil || !strings.Contains(err.Error(), `"tpu": no such backend (expected auto, cpu, cuda`) {
		t.Fatalf("tpu: %v", err)
	}
	if _, err := Open("cpu", 0, Options{Backend: map[string]string{"b": "1", "a": "2"}}); err == nil || !strings.Contains(err.Error(), "backend cpu takes no options; got a, b") {
		t.Fatalf("cpu with options: %v", err)
	}
	if st := Status("cpu", Options{Threads: 3}); !strings.HasPrefix(st, "available: ") || !strings.Contains(st, "3 workers") || !strings.Contains(st, "host memory") {
		t.Fatalf("cpu status %q", st)
	}
}

type nullBackend struct{}

func (nullBackend) Open(int, Options) (jit.Device, error) {
	return nil, errors.New("null: nothing to open")
}
func (nullBackend) Count() (int, error) { return 0, errors.New("null: none") }

func TestRegister(t *testing.T) {
	for _, name := range []string{"", "auto", "Cap", "1x", "a-b", "a:b"} {
		if err := Register(name, nullBackend{}); err == nil {
			t.Errorf("Register(%q) accepted", name)
		}
	}
	if err := Register("cpu", nullBackend{}); err == nil || !strings.Contains(err.Error(), `"cpu" is already registered`) {
		t.Fatalf("a second cpu: %v", err)
	}
	if err := Register("null_test", nullBackend{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mu.Lock(); delete(backends, "null_test"); mu.Unlock() })
	if names := strings.Join(Names(), ","); names != "cpu,cuda,null_test" {
		t.Fatalf("names %s", names)
	}
	if _, err := Open("null_test", 0, Options{}); err == nil || err.Error() != "null: nothing to open" {
		t.Fatalf("null: %v", err)
	}
	if _, err := Count("null_test"); err == nil {
		t.Fatal("null counted devices")
	}
}

// The cuda backend takes one option, arch, validated before any driver is loaded and handed
// to the device it opens; anything else is refused by name.
func TestCUDAArchOption(t *testing.T) {
	var got []cuda.Options
	saved := openCUDA
	openCUDA = func(_ int, o cuda.Options) (jit.Device, error) {
		got = append(got, o)
		return nil, errors.New("no GPU here")
	}
	t.Cleanup(func() { openCUDA = saved })
	if _, err := Open("cuda", 0, Options{Backend: map[string]string{"arch": "sm_90a"}}); err == nil || err.Error() != "no GPU here" {
		t.Fatalf("arch=sm_90a: %v", err)
	}
	if len(got) != 1 || got[0].Arch != "sm_90a" {
		t.Fatalf("the device was opened with %+v, want arch sm_90a", got)
	}
	for opts, want := range map[string]map[string]string{
		"backend cuda: option arch=sm_75: expected one of sm_80, sm_90, sm_90a":         {"arch": "sm_75"},
		"backend cuda: unknown option streams, tf32 (expected arch=sm_80|sm_90|sm_90a)": {"arch": "sm_90", "tf32": "1", "streams": "2"},
	} {
		if _, err := Open("cuda", 0, Options{Backend: want}); err == nil || err.Error() != opts {
			t.Errorf("%v: %v, want %q", want, err, opts)
		}
	}
	if len(got) != 1 {
		t.Fatalf("a refused option still opened the device: %+v", got)
	}
}
