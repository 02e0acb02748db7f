package lowering

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/testkit"
)

// The dynamic batch size against PyTorch: the fixtures of testdata/batch (made by
// make_batch_fixtures.py from testdata/models_batch.py) are exported at batch size 4 and
// re-specialised with graph.WithBatch for 1 and 7, where they must equal the same N PyTorch
// modules run at those batch sizes: a view with a literal batch, flatten, a [B*T, C] reshape
// and back, a batch-first transformer encoder layer, a time-major LSTM with initial states and
// a seq-first MultiheadAttention (batch in dim 1), a ViT whose class token is expand(B, -1, -1)
// (expand's batch_dims) and a nanoGPT LM. Every plan variant at batch 7.
func TestBatchFixtures(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/batch/*")
	if len(dirs) == 0 {
		t.Fatal("no fixtures: run /usr/bin/python3 lowering/testdata/make_batch_fixtures.py")
	}
	for _, dir := range dirs {
		g, err := graph.Load(filepath.Join(dir, "graph.json"))
		if err != nil {
			t.Fatal(err)
		}
		if g.Batch() != 4 {
			t.Fatalf("%s: batch %d, want 4 (%v)", dir, g.Batch(), g.BatchError())
		}
		for _, b := range []int{4, 1, 7} {
			in, want := "inputs.safetensors", "expected.safetensors"
			if b != 4 {
				in, want = fmt.Sprintf("inputs_b%d.safetensors", b), fmt.Sprintf("expected_b%d.safetensors", b)
			}
			gb, err := g.WithBatch(b)
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			if gb.Batch() != b || (b == 4) != (gb == g) {
				t.Fatalf("%s: WithBatch(%d) has batch %d (same graph: %v)", dir, b, gb.Batch(), gb == g)
			}
			inputs := testkit.ReadTensors(t, filepath.Join(dir, in))
			if err := gb.CheckInputs(inputs); err != nil {
				t.Fatalf("%s at batch %d: %v", dir, b, err)
			}
			for _, v := range exampleVariants {
				if b != 7 && v.name != "fused-batched" {
					continue
				}
				t.Run(fmt.Sprintf("%s/b%d/%s", filepath.Base(dir), b, v.name), func(t *testing.T) {
					outs := runPlanCPU(t, gb, v.opts, inputs)
					testkit.CheckOutputs(t, outs, testkit.ReadTensors(t, filepath.Join(dir, want)))
				})
			}
		}
	}
}
