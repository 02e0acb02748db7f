package lowering

import "github.com/widejit/widejit/jit"

// testDevice describes a device of kind "cpu" or "cuda" by the capabilities its backend
// reports, for plans that depend on them.
func testDevice(kind string) jit.DeviceInfo {
	if kind == "cpu" {
		return jit.DeviceInfo{Kind: kind, Cores: 2, Caps: jit.Capabilities{HostThreads: true, SIMDWidth: 8}}
	}
	return jit.DeviceInfo{Kind: kind, Cores: 2, Caps: jit.Capabilities{WarpSize: 32, TensorCores: true, DiscreteMemory: true}}
}
