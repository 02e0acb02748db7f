package abi

import "testing"

// A device from before capabilities gets those its kind implied then; one with capabilities,
// whatever its kind, keeps its own.
func TestLegacyDevice(t *testing.T) {
	if c := (Device{Kind: "cpu"}).Legacy().Capabilities; !c.HostThreads || c.WarpSize != 0 || c.Version != CapabilitiesVersion {
		t.Errorf("legacy cpu: %+v", c)
	}
	if c := (Device{Kind: "cuda"}).Legacy().Capabilities; c.HostThreads || c.WarpSize != 32 || !c.DiscreteMemory {
		t.Errorf("legacy cuda: %+v", c)
	}
	own := Capabilities{Version: 1, WarpSize: 64}
	if c := (Device{Kind: "cpu", Capabilities: own}).Legacy().Capabilities; c != own {
		t.Errorf("a device with capabilities changed: %+v", c)
	}
}
