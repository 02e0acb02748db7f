package cpu

import (
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

// FuzzLoad feeds mutated encodings of real kernels to Device.Load: whatever decodes must be
// compiled or rejected with an error, never crash (the compiler's recover net reports
// "malformed IR", which the test counts as a missed check only when it is an internal bug).
func FuzzLoad(f *testing.F) {
	f.Add(ir.Encode(vecAdd(16, true)))
	f.Add(ir.Encode(dotKernel(2, 8, 16, 4)))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := NewDevice(1).Load(&jit.Artifact{Kind: ArtifactKind, Payload: data})
		if err != nil && strings.Contains(err.Error(), "malformed IR (runtime error") {
			t.Fatalf("unchecked IR reached the executor: %v", err)
		}
	})
}
