package device

import (
	"fmt"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
	"github.com/widejit/widejit/jit/cuda"
)

// Kinds are the accepted device names.
var Kinds = []string{"auto", "cpu", "cuda"}

// Selection is an opened device and, when "auto" fell back to the CPU, why.
type Selection struct {
	Device   jit.Device
	Fallback string // empty unless auto chose the CPU: e.g. "cuda: libcuda.so.1 not found (no NVIDIA driver)"
}

// openCUDA is swapped by tests.
var openCUDA = func() (jit.Device, error) { return cuda.Open(0) }

// Select opens the device named kind; threads sizes the CPU worker pool (0: all cores).
func Select(kind string, threads int) (Selection, error) {
	switch kind {
	case "cpu":
		return Selection{Device: cpu.NewDevice(threads)}, nil
	case "cuda":
		d, err := openCUDA()
		if err != nil {
			return Selection{}, err
		}
		return Selection{Device: d}, nil
	case "", "auto":
		d, err := openCUDA()
		if err == nil {
			return Selection{Device: d}, nil
		}
		return Selection{Device: cpu.NewDevice(threads), Fallback: err.Error()}, nil
	}
	return Selection{}, fmt.Errorf("device %q: expected auto, cpu or cuda", kind)
}

// Open is Select without the fallback reason.
func Open(kind string, threads int) (jit.Device, error) {
	s, err := Select(kind, threads)
	return s.Device, err
}

// CUDAStatus is one line for `widejit info`: "available: NAME (compute capability X, N SMs,
// M GiB, driver V, PTX target T)" or "not available: why".
func CUDAStatus() string {
	d, err := openCUDA()
	if err != nil {
		return "not available: " + err.Error()
	}
	defer d.Close()
	i := d.Info()
	return fmt.Sprintf("available: %s (compute capability %s, %d SMs, %.1f GiB, driver %s, target %s)",
		i.Name, i.ComputeCapability, i.Cores, float64(i.MemoryBytes)/(1<<30), i.DriverVersion, d.Target().Key())
}
