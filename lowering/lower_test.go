package lowering

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
)

// loadGraphText parses a graph written inline (init weights unless it names a file).
func loadGraphText(t *testing.T, text string) *graph.Graph {
	t.Helper()
	g, err := graph.Parse("test.json", []byte(text), graph.Options{})
	if err != nil {
		t.Fatalf("graph: %v", err)
	}
	return g
}

func TestLowerExamplesPrint(t *testing.T) {
	paths, _ := filepath.Glob("../examples/*/graph.json")
	if len(paths) == 0 {
		t.Skip("no examples/ yet")
	}
	for _, p := range paths {
		g, err := graph.Load(p)
		if err != nil {
			t.Logf("%s: %v", p, err)
			continue
		}
		plan, err := Lower(g, Options{})
		if err != nil {
			t.Logf("%s: %v", p, err)
			continue
		}
		if os.Getenv("SHOW") != "" {
			t.Log(plan.String())
			for _, k := range plan.Kernels() {
				if strings.Contains(os.Getenv("SHOW"), "k") {
					t.Log(k.Source.Text)
				}
			}
		}
	}
}
