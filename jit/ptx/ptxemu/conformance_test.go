package ptxemu_test

import (
	"testing"

	"github.com/widejit/widejit/internal/conformance"
	"github.com/widejit/widejit/jit/ptx"
	"github.com/widejit/widejit/jit/ptx/ptxemu"
)

// The conformance suite's kernels, compiled to PTX for sm_80 and sm_90 and run on the
// emulator, against the suite's Go references.
func TestConformanceKernels(t *testing.T) {
	for _, arch := range ptx.Archs {
		t.Run(arch, func(t *testing.T) {
			conformance.Kernels(t, ptxemu.NewDevice(ptx.Target{Arch: arch}, ptx.ParamTypes))
		})
	}
}
