package device

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/widejit/widejit/jit"
)

// Backend opens the devices of one kind. cpu and cuda are registered as any other backend
// is; nothing outside this package tells backends apart by name.
type Backend interface {
	// Open opens device ordinal (0: the default one). A backend refuses options it does not
	// know, with an error naming them.
	Open(ordinal int, o Options) (jit.Device, error)
	// Count is how many devices the backend can open (NAME:all opens them all), or why it
	// can open none.
	Count() (int, error)
}

// Options are what a backend is opened with.
type Options struct {
	// Threads is the host worker count of backends that run programs on host threads (0:
	// all cores); others ignore it.
	Threads int
	// Backend are the user's options for the backend (--backend-opt k=v, config
	// backend_options); they are part of every cache key made for its devices.
	Backend map[string]string
}

var (
	mu       sync.RWMutex
	backends = map[string]Backend{}
)

// Auto is the name that picks a device: the first of autoOrder that opens.
const Auto = "auto"

// autoOrder is what "auto" tries, in order: the GPU, then the CPU (which always opens).
var autoOrder = []string{"cuda", "cpu"}

var validName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Register makes b the backend called name. Names are lower-case letters, digits and
// underscores, starting with a letter; "auto" is reserved and a name is registered once.
func Register(name string, b Backend) error {
	if !validName.MatchString(name) || name == Auto {
		return fmt.Errorf("backend name %q: expected lower-case letters, digits and _, starting with a letter, and not %q", name, Auto)
	}
	if b == nil {
		return fmt.Errorf("backend %q: nil Backend", name)
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := backends[name]; dup {
		return fmt.Errorf("backend %q is already registered", name)
	}
	backends[name] = b
	return nil
}

// Names lists the registered backends, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := slices.Collect(maps.Keys(backends))
	sort.Strings(names)
	return names
}

// Lookup returns the backend called name.
func Lookup(name string) (Backend, error) {
	mu.RLock()
	b, ok := backends[name]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("device %q: no such backend (expected %s)", name, strings.Join(append([]string{Auto}, Names()...), ", "))
	}
	return b, nil
}

// Selection is an opened device and, when "auto" passed over a backend, why.
type Selection struct {
	Device   jit.Device
	Fallback string // empty unless auto passed one by: e.g. "cuda: libcuda.so.1 not found (no NVIDIA driver)"
}

// Select opens device ordinal of the backend called name; "auto" (or "") opens the first of
// the GPU and the CPU that opens, with the options that backend gets.
func Select(name string, ordinal int, o Options) (Selection, error) {
	if name != "" && name != Auto {
		b, err := Lookup(name)
		if err != nil {
			return Selection{}, err
		}
		d, err := b.Open(ordinal, o)
		return Selection{Device: d}, err
	}
	var why []string
	for _, n := range autoOrder {
		b, err := Lookup(n)
		if err != nil {
			continue
		}
		d, err := b.Open(ordinal, o)
		if err == nil {
			return Selection{Device: d, Fallback: strings.Join(why, "; ")}, nil
		}
		why = append(why, err.Error())
	}
	return Selection{}, fmt.Errorf("device auto: no backend opened: %s", strings.Join(why, "; "))
}

// Open is Select without the fallback reason.
func Open(name string, ordinal int, o Options) (jit.Device, error) {
	s, err := Select(name, ordinal, o)
	return s.Device, err
}

// Count is how many devices the backend called name can open, or why none.
func Count(name string) (int, error) {
	b, err := Lookup(name)
	if err != nil {
		return 0, err
	}
	return b.Count()
}

// Status is one line per registered backend for `widejit info`: "available: DESCRIPTION"
// (device 0 opened with o, described by its Info and capabilities) or "not available: why".
func Status(name string, o Options) string {
	d, err := Open(name, 0, o)
	if err != nil {
		return "not available: " + err.Error()
	}
	defer d.Close()
	return "available: " + Describe(d)
}

// Describe is a device's name, size and capabilities in one line.
func Describe(d jit.Device) string {
	i := d.Info()
	parts := []string{}
	if i.ComputeCapability != "" {
		parts = append(parts, "compute capability "+i.ComputeCapability)
	}
	c := i.Caps
	if c.HostThreads {
		parts = append(parts, fmt.Sprintf("%d workers", i.Cores), fmt.Sprintf("host threads, %d fp32 SIMD lanes", c.SIMDWidth))
	} else {
		parts = append(parts, fmt.Sprintf("%d SMs", i.Cores), fmt.Sprintf("warps of %d", c.WarpSize))
	}
	if c.SharedMemoryBytes > 0 {
		parts = append(parts, fmt.Sprintf("%d KiB shared memory", c.SharedMemoryBytes>>10))
	}
	if c.TensorCores {
		parts = append(parts, "tensor cores")
	}
	if c.WarpgroupMMA {
		parts = append(parts, "warpgroup MMA (wgmma)")
	}
	if c.DiscreteMemory {
		parts = append(parts, fmt.Sprintf("%.1f GiB device memory", float64(i.MemoryBytes)/(1<<30)))
	} else {
		parts = append(parts, "host memory")
	}
	if i.DriverVersion != "" {
		parts = append(parts, "driver "+i.DriverVersion)
	}
	parts = append(parts, "target "+d.Target().Key())
	return fmt.Sprintf("%s (%s)", i.Name, strings.Join(parts, ", "))
}
