package lowering

import (
	"os"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
)

// TestGiantShapesAreRefusedByLowering: tensors whose N-stacked element count would overflow
// the plan's ints are refused by name.
func TestGiantShapesAreRefusedByLowering(t *testing.T) {
	src, err := os.ReadFile("testdata/hostile/init_mlp.json")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), `"shape": [32, 64]`, `"shape": [1048576, 64]`, 1)
	g, err := graph.Parse("giant.json", []byte(text), graph.Options{N: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Lower(g, Options{})
	if err == nil || !strings.Contains(err.Error(), `graph giant.json: input "x" is float32[1048576,64] for 1099511627776 models`) {
		t.Fatalf("got %v", err)
	}
}
