package device

import (
	"errors"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
)

func withCUDA(t *testing.T, open func() (jit.Device, error)) {
	saved := openCUDA
	openCUDA = open
	t.Cleanup(func() { openCUDA = saved })
}

func TestAutoFallsBackToCPUWithReason(t *testing.T) {
	withCUDA(t, func() (jit.Device, error) { return nil, errors.New("cuda: libcuda.so.1 not found (no NVIDIA driver)") })
	s, err := Select("auto", 2)
	if err != nil {
		t.Fatal(err)
	}
	if s.Device.Info().Kind != "cpu" || !strings.Contains(s.Fallback, "no NVIDIA driver") {
		t.Fatalf("auto without a GPU: %s device, fallback %q", s.Device.Info().Kind, s.Fallback)
	}
	if _, err := Select("cuda", 2); err == nil || !strings.Contains(err.Error(), "no NVIDIA driver") {
		t.Fatalf("cuda without a GPU: %v, want the driver error", err)
	}
	if st := CUDAStatus(); st != "not available: cuda: libcuda.so.1 not found (no NVIDIA driver)" {
		t.Fatalf("status %q", st)
	}
}

func TestCPUAndBadNames(t *testing.T) {
	d, err := Open("cpu", 3)
	if err != nil || d.Info().Kind != "cpu" || d.Info().Cores != 3 {
		t.Fatalf("cpu: %v %+v", err, d)
	}
	if _, err := Open("tpu", 1); err == nil || !strings.Contains(err.Error(), `"tpu": expected auto, cpu or cuda`) {
		t.Fatalf("tpu: %v", err)
	}
}
