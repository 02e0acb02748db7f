package conformance

import (
	"testing"

	"github.com/widejit/widejit/jit/device"
)

// TestBuiltinBackends runs the suite on every backend registered in this binary: cpu, and
// cuda where a GPU opens (it skips otherwise).
func TestBuiltinBackends(t *testing.T) {
	for _, name := range device.Names() {
		t.Run(name, func(t *testing.T) { Run(t, name, nil) })
	}
}
