package lowering

import (
	"path/filepath"
	"strings"
	"testing"
)

// stridedSharedDir is the fixture of 1x1 strided convolutions beside a wider strided one of
// the same input (models_conv.py's ConvsStridedShared).
var stridedSharedDir = filepath.Join("testdata", "conv", "strided_shared_n3")

// padLaunches lists, for each convolution of dir's CPU plan that reads a copy of its input
// made by a conv_pad.py launch of its own, that launch's node.
func padLaunches(t *testing.T, dir string) map[string]bool {
	t.Helper()
	plan := lowerGraphFile(t, filepath.Join(dir, "graph.json"), "cpu")
	padded := map[string]bool{}
	for _, ln := range plan.Launches {
		if ln.Kernel.Template != "conv_pad.py" {
			continue
		}
		for _, n := range ln.Nodes {
			padded[strings.Fields(n)[0]] = true
		}
	}
	return padded
}

// A 1x1 strided convolution reads the stride phase planes copied for a wider strided
// convolution of the same input (sharePhases) wherever a phase holds every pixel it reads
// (unpadded, padded alike, inside a wider padding, an asymmetric stride), and copies its own
// where it does not (padded beyond the other); both give PyTorch's numbers, as with the
// sharing off.
func TestSharedStridePhases(t *testing.T) {
	padded := padLaunches(t, stridedSharedDir)
	for _, n := range []string{"down", "big", "asym", "short_far"} {
		if !padded[n] {
			t.Errorf("%s: no phase copy of its own, want one (CPU plan pads %v)", n, padded)
		}
	}
	for _, n := range []string{"short", "short_p", "short2", "short3"} {
		if padded[n] {
			t.Errorf("%s: copies its own stride phases, want it to read those of the wider convolution beside it", n)
		}
	}
	cpuPlan := Options{Device: testDevice("cpu")}
	checkFixtureCPU(t, stridedSharedDir, cpuPlan)
	convSharedPhases = false
	defer func() { convSharedPhases = true }()
	if padded := padLaunches(t, stridedSharedDir); !padded["short"] || !padded["short3"] {
		t.Errorf("with the sharing off, the shortcuts still read another convolution's phases (pads: %v)", padded)
	}
	checkFixtureCPU(t, stridedSharedDir, cpuPlan)
}

// TestSharedStridePhasesAVX2 is TestSharedStridePhases with AVX-512 off (checkFixturesAVX2).
func TestSharedStridePhasesAVX2(t *testing.T) {
	checkFixturesAVX2(t, "TestSharedStridePhasesAVX2", "^(TestSharedStridePhasesAVX2|TestSharedStridePhases|TestConvFixtures)$/^(strided_shared_n3)?$/^(cpu)?$",
		"--- PASS: TestSharedStridePhases", "--- PASS: TestConvFixtures/strided_shared_n3/cpu")
}

// phaseStoreDirs are the fixtures of strided convolutions reading a 1x1 convolution's output
// (models_conv.py's ConvsPhaseStore).
var phaseStoreDirs = []string{filepath.Join("testdata", "conv", "phase_store_n1"), filepath.Join("testdata", "conv", "phase_store_n3")}

// A strided convolution whose input a 1x1 convolution produces reads the stride phase planes
// that convolution stores (takePhasedInput): no pad kernel (a grouped, a dense 3x3 and a 5x5
// at stride 2, an asymmetric stride, stride 3, unpadded), but for a 1x1 stride-2 reader (one
// phase read); a depthwise one reads the channel blocks the 1x1 stores (takeBlockedInput, at
// stride 1 and 2), but for a channel multiplier of 2; PyTorch's numbers either way, as with
// those stores off.
func TestPhaseStore(t *testing.T) {
	cpuPlan := Options{Device: testDevice("cpu")}
	for _, dir := range phaseStoreDirs {
		padded := padLaunches(t, dir)
		for _, n := range []string{"ga", "cb", "c5", "asym", "s3", "unpadded", "dw3_s2", "dw5", "dw5_s2"} {
			if padded[n] {
				t.Errorf("%s: %s reads a pad kernel's phase copy, want the phases its 1x1 producer stores (pads: %v)", dir, n, padded)
			}
		}
		if !padded["down_1x1"] || !padded["mult"] {
			t.Errorf("%s: down_1x1 (one phase read) or mult (a channel multiplier) has no pad kernel's copy, want one each (pads: %v)", dir, padded)
		}
		checkFixtureCPU(t, dir, cpuPlan)
	}
	convPhaseStore, convBlockStore = false, false
	defer func() { convPhaseStore, convBlockStore = true, true }()
	for _, dir := range phaseStoreDirs {
		if padded := padLaunches(t, dir); !padded["ga"] || !padded["unpadded"] || !padded["dw5"] || !padded["dw3_s2"] {
			t.Errorf("%s: with the stores off, ga, unpadded, dw5 and dw3_s2 read no pad kernel's copy (pads: %v)", dir, padded)
		}
		checkFixtureCPU(t, dir, cpuPlan)
	}
}

// TestPhaseStoreAVX2 is TestPhaseStore with AVX-512 off (checkFixturesAVX2).
func TestPhaseStoreAVX2(t *testing.T) {
	checkFixturesAVX2(t, "TestPhaseStoreAVX2", "^(TestPhaseStoreAVX2|TestPhaseStore|TestConvFixtures)$/^(phase_store_n1|phase_store_n3)?$/^(cpu)?$",
		"--- PASS: TestPhaseStore", "--- PASS: TestConvFixtures/phase_store_n3/cpu")
}
