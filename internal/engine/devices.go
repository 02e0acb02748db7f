package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/widejit/widejit/internal/errkind"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/device"
)

// OpenDevice opens the device a command names with --device (a registered backend's name,
// or auto: the GPU when the CUDA driver finds one, else the CPU) with the backend's options;
// an unknown name is errkind.Usage.
func OpenDevice(name string, threads int, backendOptions map[string]string) (jit.Device, error) {
	if name != "" && name != device.Auto {
		if _, err := device.Lookup(name); err != nil {
			return nil, errkind.Usagef("--device: %v", err)
		}
	}
	return device.Open(name, 0, device.Options{Threads: threads, Backend: backendOptions})
}

// BackendStatus describes each registered backend in one line ("NAME: available: ..." or
// "NAME: not available: why"), device 0 opened with threads workers.
func BackendStatus(threads int, backendOptions map[string]string) []string {
	var out []string
	for _, name := range device.Names() {
		out = append(out, name+": "+device.Status(name, device.Options{Threads: threads, Backend: backendOptions}))
	}
	return out
}

// DeviceSpec is one device of a device list: a backend name (or "auto") and, for a list, an
// ordinal (the GPU's; a CPU's only names one of several CPU executors).
type DeviceSpec struct {
	Kind    string
	Ordinal int
	listed  bool // written NAME:I
}

func (d DeviceSpec) String() string {
	if !d.listed {
		return d.Kind
	}
	return d.Kind + ":" + strconv.Itoa(d.Ordinal)
}

// DeviceSyntax describes what ParseDevices accepts, for error messages and help.
const DeviceSyntax = "auto | cpu | cuda | another registered backend's NAME, or one or more NAME:I of one backend (cuda:0,cuda:1; cpu:0,cpu:1 runs several CPU executors), or NAME:all"

// ParseDevices reads a device setting: "", auto or a backend's name (one device); a
// comma-separated list of NAME:I of one backend (cuda:0,cuda:1: N is split across them in
// list order; cpu:0,cpu:1 splits it across as many CPU executors, which share the cores;
// cuda:3 alone is GPU 3); or NAME:all (every device the backend counts).
func ParseDevices(spec string) ([]DeviceSpec, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == device.Auto {
		return []DeviceSpec{{Kind: device.Auto}}, nil
	}
	if !strings.ContainsAny(spec, ":,") {
		if _, err := device.Lookup(spec); err != nil {
			return nil, err
		}
		return []DeviceSpec{{Kind: spec}}, nil
	}
	if name, ok := strings.CutSuffix(spec, ":all"); ok && !strings.Contains(name, ",") {
		n, err := device.Count(name)
		if err != nil {
			return nil, fmt.Errorf("device %s: %w", spec, err)
		}
		out := make([]DeviceSpec, n)
		for i := range out {
			out[i] = DeviceSpec{Kind: name, Ordinal: i, listed: true}
		}
		return out, nil
	}
	var out []DeviceSpec
	for _, part := range strings.Split(spec, ",") {
		kind, ord, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("device %q: %q is not a device (expected %s)", spec, part, DeviceSyntax)
		}
		if _, err := device.Lookup(kind); err != nil {
			return nil, fmt.Errorf("device %q: %q: %w", spec, part, err)
		}
		i, err := strconv.Atoi(ord)
		switch {
		case err != nil || i < 0:
			return nil, fmt.Errorf("device %q: %q: the index must be an integer >= 0", spec, part)
		case len(out) > 0 && out[0].Kind != kind:
			return nil, fmt.Errorf("device %q: mixes %s and %s devices; a list holds devices of one kind", spec, out[0].Kind, kind)
		}
		d := DeviceSpec{Kind: kind, Ordinal: i, listed: true}
		if slices.Contains(out, d) {
			return nil, fmt.Errorf("device %q: %s is listed twice", spec, d)
		}
		out = append(out, d)
	}
	return out, nil
}
