// Package backend is an example out-of-tree backend: "recording" runs every kernel on the
// CPU executor and records each launch (kernel name and grid), for tests and for seeing what
// a plan launches. It is registered through the public API alone:
//
//	widejit.RegisterBackend("recording", backend.New())
//	m, err := widejit.Load("graph.json", widejit.WithDevice("recording"))
//
// Nothing in lowering, the runner, the autotuner or the plugins names it: they read its
// devices' capabilities (the CPU's: programs on host threads, buffers in host memory).
//
// Options (widejit.WithBackendOptions, --backend-opt): max_launches=N refuses a launch past
// the Nth of a device, a budget for runaway plans. Like every backend option it is part of
// the cache keys of everything compiled for the device.
package backend

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/widejit/widejit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
)

// Launch is one recorded kernel launch.
type Launch struct {
	Kernel string
	Grid   [3]int
}

// Backend opens recording devices; Launches lists what all of them launched.
type Backend struct {
	mu       sync.Mutex
	launches []Launch
}

var _ widejit.Backend = (*Backend)(nil)

// New returns a Backend with nothing recorded.
func New() *Backend { return &Backend{} }

// Launches returns the launches recorded so far, in order.
func (b *Backend) Launches() []Launch {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Launch(nil), b.launches...)
}

// Count is one: the host.
func (b *Backend) Count() (int, error) { return 1, nil }

// Open opens a recording device over a CPU executor of o.Threads workers.
func (b *Backend) Open(ordinal int, o widejit.OpenOptions) (jit.Device, error) {
	limit := -1
	var unknown []string
	for k, v := range o.Backend {
		switch k {
		case "max_launches":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("recording: max_launches %q: expected an integer >= 0", v)
			}
			limit = n
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("recording: unknown options %s (known: max_launches)", strings.Join(unknown, ", "))
	}
	return &device{Device: cpu.NewDevice(o.Threads), b: b, ordinal: ordinal, limit: limit}, nil
}

// device is a CPU device whose kernels record their launches.
type device struct {
	*cpu.Device
	b       *Backend
	ordinal int
	limit   int // launches allowed, -1: no limit

	mu   sync.Mutex
	done int
}

func (d *device) Info() jit.DeviceInfo {
	info := d.Device.Info()
	info.Kind, info.Name = "recording", fmt.Sprintf("recording %d over %s", d.ordinal, info.Name)
	return info
}

func (d *device) Load(a *jit.Artifact) (jit.Kernel, error) {
	k, err := d.Device.Load(a)
	if err != nil {
		return nil, err
	}
	return &kernel{Kernel: k, d: d}, nil
}

type kernel struct {
	jit.Kernel
	d *device
}

func (k *kernel) Launch(grid [3]int, args []jit.Arg) error {
	d := k.d
	d.mu.Lock()
	if d.limit >= 0 && d.done >= d.limit {
		d.mu.Unlock()
		return fmt.Errorf("recording: launch of %s past max_launches=%d", k.Name(), d.limit)
	}
	d.done++
	d.mu.Unlock()
	d.b.mu.Lock()
	d.b.launches = append(d.b.launches, Launch{Kernel: k.Name(), Grid: grid})
	d.b.mu.Unlock()
	return k.Kernel.Launch(grid, args)
}
