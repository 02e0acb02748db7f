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

// OpenDevice opens the device a command names with --device (cpu, cuda, or auto: the GPU
// when the CUDA driver finds one, else the CPU); another name is errkind.Usage.
func OpenDevice(name string, threads int) (jit.Device, error) {
	if !slices.Contains(device.Kinds, name) && name != "" {
		return nil, errkind.Usagef("--device %q: expected one of %s", name, strings.Join(device.Kinds, ", "))
	}
	return device.Open(name, threads)
}

// CUDAStatus describes the CUDA backend in one line ("available: ..." or "not available:
// why").
func CUDAStatus() string { return device.CUDAStatus() }

// DeviceSpec is one device of a device list: a kind ("auto", "cpu", "cuda") and, for a list,
// an ordinal (the GPU's; a CPU's only names one of several CPU executors).
type DeviceSpec struct {
	Kind    string
	Ordinal int
	listed  bool // written KIND:I
}

func (d DeviceSpec) String() string {
	if !d.listed {
		return d.Kind
	}
	return d.Kind + ":" + strconv.Itoa(d.Ordinal)
}

// DeviceSyntax describes what ParseDevices accepts, for error messages and help.
const DeviceSyntax = "auto | cpu | cuda, or one or more KIND:I of one kind (cuda:0,cuda:1; cpu:0,cpu:1 runs several CPU executors), or cuda:all"

// ParseDevices reads a device setting: "", auto, cpu or cuda (one device); a comma-separated
// list of KIND:I of one kind (cuda:0,cuda:1: N is split across them in list order; cpu:0,cpu:1
// splits it across as many CPU executors, which share the cores; cuda:3 alone is GPU 3); or
// cuda:all (every GPU the driver sees).
func ParseDevices(spec string) ([]DeviceSpec, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "auto" || spec == "cpu" || spec == "cuda" {
		if spec == "" {
			spec = "auto"
		}
		return []DeviceSpec{{Kind: spec}}, nil
	}
	if spec == "cuda:all" {
		n, err := device.CUDACount()
		if err != nil {
			return nil, fmt.Errorf("device cuda:all: %w", err)
		}
		out := make([]DeviceSpec, n)
		for i := range out {
			out[i] = DeviceSpec{Kind: "cuda", Ordinal: i, listed: true}
		}
		return out, nil
	}
	var out []DeviceSpec
	for _, part := range strings.Split(spec, ",") {
		kind, ord, ok := strings.Cut(strings.TrimSpace(part), ":")
		i, err := strconv.Atoi(ord)
		switch {
		case !ok || (kind != "cpu" && kind != "cuda"):
			return nil, fmt.Errorf("device %q: %q is not a device (expected %s)", spec, part, DeviceSyntax)
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
