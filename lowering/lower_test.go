package lowering

import (
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
)

// loadGraphText parses a graph written inline.
func loadGraphText(t *testing.T, text string) *graph.Graph {
	t.Helper()
	g, err := graph.Parse("test.json", []byte(text), graph.Options{})
	if err != nil {
		t.Fatalf("graph: %v", err)
	}
	return g
}

// The plans of the examples have the shape the design promises: the MLP is one fused kernel
// for all N models, a deeper MLP pairs its Linears, the embedding bag is three kernels.
func TestExamplePlans(t *testing.T) {
	for _, tc := range []struct {
		path      string
		templates []string
		strategy  string
	}{
		{"../examples/mlp/graph.json", []string{"mlp.py"}, Fused},
		{"../examples/deep_mlp/graph.json", []string{"mlp.py", "mlp.py"}, Fused},
		{"../examples/embedding/graph.json", []string{"embedding.py", "reduce.py", "matmul.py"}, Batched},
	} {
		g, err := graph.Load(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := Lower(g, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range plan.Launches {
			got = append(got, l.Kernel.Template)
			if l.Grid[l.ModelAxis] != g.N {
				t.Errorf("%s: launch %d covers %d models, want %d", tc.path, l.Index, l.Grid[l.ModelAxis], g.N)
			}
		}
		if strings.Join(got, " ") != strings.Join(tc.templates, " ") {
			t.Errorf("%s: kernels %v, want %v\n%s", tc.path, got, tc.templates, plan)
		}
		if plan.Launches[0].Strategy != tc.strategy {
			t.Errorf("%s: first launch %s, want %s", tc.path, plan.Launches[0].Strategy, tc.strategy)
		}
		seq, err := Lower(g, Options{ModelMajor: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range seq.Launches {
			if l.Strategy != Sequential {
				t.Errorf("%s: --mode sequential launch %d is %s", tc.path, l.Index, l.Strategy)
			}
		}
	}
}
