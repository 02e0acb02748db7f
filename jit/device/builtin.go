package device

import (
	"fmt"
	"sort"
	"strings"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
	"github.com/widejit/widejit/jit/cuda"
	"github.com/widejit/widejit/jit/ptx"
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
var openCUDA = func(ordinal int, o cuda.Options) (jit.Device, error) { return cuda.OpenWith(ordinal, o) }

// cudaBackend is NVIDIA GPUs through the run-time-bound driver. Its one option, arch=ARCH,
// picks the PTX arch (sm_90a: wgmma on a compute capability 9.0 device, which otherwise loads
// sm_90 PTX until sm_90a has been verified on a GPU).
type cudaBackend struct{}

func (cudaBackend) Open(ordinal int, o Options) (jit.Device, error) {
	var co cuda.Options
	var unknown []string
	for k, v := range o.Backend {
		if k == "arch" {
			co.Arch = v
		} else {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("backend cuda: unknown option %s (expected arch=%s)", strings.Join(unknown, ", "), strings.Join(ptx.AllArchs, "|"))
	}
	if co.Arch != "" && !ptx.ValidArch(co.Arch) {
		return nil, fmt.Errorf("backend cuda: option arch=%s: expected one of %s", co.Arch, strings.Join(ptx.AllArchs, ", "))
	}
	return openCUDA(ordinal, co)
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
