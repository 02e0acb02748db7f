package lowering_test

import (
	"os"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/lowering"
	"github.com/widejit/widejit/runner"
)

// TestMain gives lowering's tests (package lowering) a runner to execute their plans with:
// an external test file may import package runner, which imports lowering.
func TestMain(m *testing.M) {
	lowering.NewTestRunner = func(plan *lowering.Plan, dev jit.Device, comp *jit.Compiler, g *graph.Graph) (lowering.TestRunner, error) {
		r, err := runner.New(plan, dev, comp, g)
		if err != nil {
			return nil, err // not a nil *runner.Runner in a non-nil interface
		}
		return r, nil
	}
	os.Exit(m.Run())
}
