package widejit_test

import (
	"strings"
	"testing"

	"github.com/widejit/widejit"
)

// The CPU computes IEEE fp32 whatever precision is asked for, and says so; an unknown
// precision is refused before anything is loaded.
func TestFloat32MatmulPrecisionOnTheCPU(t *testing.T) {
	var warnings []string
	m, err := widejit.Load("examples/mlp/graph.json", widejit.WithDevice("cpu"), widejit.WithoutCache(),
		widejit.WithFloat32MatmulPrecision("high"), widejit.WithWarnings(func(s string) { warnings = append(warnings, s) }))
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "IEEE") || !strings.Contains(warnings[0], `"high"`) {
		t.Errorf("warnings %q: want one saying the CPU stays IEEE", warnings)
	}
	warnings = nil
	m, err = widejit.Load("examples/mlp/graph.json", widejit.WithDevice("cpu"), widejit.WithoutCache(),
		widejit.WithFloat32MatmulPrecision("highest"), widejit.WithWarnings(func(s string) { warnings = append(warnings, s) }))
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if len(warnings) != 0 {
		t.Errorf("warnings at the default precision: %q", warnings)
	}
	if _, err := widejit.Load("examples/mlp/graph.json", widejit.WithDevice("cpu"), widejit.WithFloat32MatmulPrecision("fast")); err == nil ||
		!strings.Contains(err.Error(), "highest, high, medium") {
		t.Errorf("precision \"fast\": %v", err)
	}
}
