package device

import (
	"fmt"
	"sort"
	"strings"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
	"github.com/widejit/widejit/jit/cuda"
)

// The built-in backends, registered through Register like any other.
func init() {
	must(Register("cpu", cpuBackend{}))
	must(Register("cuda", cudaBackend{}))
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// cpuBackend is the reference executor; its devices all share the host's cores (cpu:0,cpu:1
// are several executors, the CPU's stand-in for several GPUs).
type cpuBackend struct{}

func (cpuBackend) Open(_ int, o Options) (jit.Device, error) {
	if err := noOptions("cpu", o.Backend); err != nil {
		return nil, err
	}
	return cpu.NewDevice(o.Threads), nil
}

func (cpuBackend) Count() (int, error) { return 1, nil }

// openCUDA is swapped by tests.
var openCUDA = func(ordinal int) (jit.Device, error) { return cuda.Open(ordinal) }

// cudaBackend is NVIDIA GPUs through the run-time-bound driver.
type cudaBackend struct{}

func (cudaBackend) Open(ordinal int, o Options) (jit.Device, error) {
	if err := noOptions("cuda", o.Backend); err != nil {
		return nil, err
	}
	return openCUDA(ordinal)
}

func (cudaBackend) Count() (int, error) { return cuda.Count() }

// noOptions refuses options given to a backend that takes none.
func noOptions(name string, opts map[string]string) error {
	if len(opts) == 0 {
		return nil
	}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return fmt.Errorf("backend %s takes no options; got %s", name, strings.Join(keys, ", "))
}
