package lowering

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/testkit"
)

// Dynamic dims beyond the batch against PyTorch: the fixtures of testdata/dynamic (made by
// make_dynamic_fixtures.py from testdata/models_batch.py) are exported at batch size 2 and
// sequence length 16 with --dynamic NAME:1 and re-specialised for the sizes their inputs
// carry, where they must equal the same N PyTorch modules run at those sizes: a nanoGPT LM
// (a learned positional table indexed by arange(T), a tril buffer sliced to [:T, :T], q, k, v
// viewed as [B, T, heads, C/heads]) and a ViT-like encoder (a positional table sliced to T, the
// class token expanded to the batch). Every plan variant at batch 3, length 20.
func TestDynamicFixtures(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/dynamic/*")
	if len(dirs) == 0 {
		t.Fatal("no fixtures: run /usr/bin/python3 lowering/testdata/make_dynamic_fixtures.py")
	}
	for _, dir := range dirs {
		g, err := graph.Load(filepath.Join(dir, "graph.json"))
		if err != nil {
			t.Fatal(err)
		}
		name := g.Inputs[0].Name
		if d := g.DynamicDims(name); len(d) != 1 || d[0] != 1 {
			t.Fatalf("%s: dynamic dims of %q are %v, want [1]", dir, name, d)
		}
		for _, c := range []struct{ b, t int }{{2, 16}, {2, 20}, {2, 9}, {3, 20}, {1, 32}} {
			in, want := "inputs.safetensors", "expected.safetensors"
			if c.b != 2 || c.t != 16 {
				in, want = fmt.Sprintf("inputs_b%d_t%d.safetensors", c.b, c.t), fmt.Sprintf("expected_b%d_t%d.safetensors", c.b, c.t)
			}
			inputs := testkit.ReadTensors(t, filepath.Join(dir, in))
			gs, err := g.ForInputs(inputs)
			if err != nil {
				t.Fatalf("%s at batch %d, length %d: %v", dir, c.b, c.t, err)
			}
			if got := gs.Input(name).Type.Shape; got[0] != c.b || got[1] != c.t || (gs == g) != (c.b == 2 && c.t == 16) {
				t.Fatalf("%s: re-specialised for batch %d, length %d, input %q is %v", dir, c.b, c.t, name, got)
			}
			for _, v := range exampleVariants {
				if (c.b != 3 || c.t != 20) && v.name != "fused-batched" {
					continue
				}
				t.Run(fmt.Sprintf("%s/b%d_t%d/%s", filepath.Base(dir), c.b, c.t, v.name), func(t *testing.T) {
					outs := runPlanCPU(t, gs, v.opts, inputs)
					testkit.CheckOutputs(t, outs, testkit.ReadTensors(t, filepath.Join(dir, want)))
				})
			}
		}
	}
}

// A sequence longer than a learned positional table (32 rows) is refused, naming the node that
// slices the table and the dynamic dim.
func TestDynamicBeyondPositionalTable(t *testing.T) {
	for dir, node := range map[string]string{"gpt": `node "wpe"`, "seqvit": `node "getitem_3"`} {
		g, err := graph.Load(filepath.Join("testdata/dynamic", dir, "graph.json"))
		if err != nil {
			t.Fatal(err)
		}
		name := g.Inputs[0].Name
		_, err = g.WithSizes(0, graph.Sizes{name: {1: 40}})
		if err == nil {
			t.Fatalf("%s at length 40: no error", dir)
		}
		for _, part := range []string{"graph.json", node, fmt.Sprintf("dim 1 of input %q, now 40", name), "(size 32)", "baked in at 32"} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("%s at length 40: error %q does not mention %q", dir, err, part)
			}
		}
	}
}
