package device

import (
	"errors"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
)

func withCUDA(t *testing.T, open func(int) (jit.Device, error)) {
	saved := openCUDA
	openCUDA = open
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
