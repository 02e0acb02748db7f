package ptx

import (
	"path/filepath"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/testkit"
	"github.com/widejit/widejit/lowering"
)

// TestRealCodeFixturesOnEmulatedPTX runs the GPU plans of lowering's idiom fixtures for the
// ops of issue 28 (hard activations and clamps, functional pools, sin/cos, casts, einsum,
// pad in every mode, expand, matmuls of parameters) on the PTX emulator against PyTorch.
// Outputs computed from a convolution are left out: the GPU plan's convolutions multiply in
// TF32, as cuDNN does by default, which is further from PyTorch's CPU result than the bound.
func TestRealCodeFixturesOnEmulatedPTX(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		outputs []string // nil: every output
	}{
		{"hardacts_n3", []string{"add_1", "add_3", "add_4"}},
		{"functionalpools_n3", nil},
		{"ropeeinsum_n3", nil},
		{"padinterp_n3", []string{"sub", "mul", "pad_5", "interpolate_4"}},
		{"matmulparams_n3", nil},
		// attention over heads read in place from the QKV projection (two batch strides)
		{"../models/bench_gpt_n3", nil},
		// token-mixing Linears computed as their transposes (its 3x3 patch embedding, 27
		// products a sum, stays within the bound in TF32)
		{"../models/bench_mixer_n3", nil},
	} {
		dir := filepath.Join("../../lowering/testdata/idioms", tc.fixture)
		t.Run(tc.fixture, func(t *testing.T) {
			g, err := graph.Load(filepath.Join(dir, "graph.json"))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := lowering.Lower(g, lowering.Options{})
			if err != nil {
				t.Fatal(err)
			}
			outs := runOnEmulator(t, g, plan, "sm_90", dir)
			want := testkit.ReadTensors(t, filepath.Join(dir, "expected.safetensors"))
			if tc.outputs != nil {
				kept := map[string]*safetensors.Tensor{}
				for _, name := range tc.outputs {
					if want[name] == nil {
						t.Fatalf("the fixture has no output %s", name)
					}
					kept[name] = want[name]
				}
				want = kept
			}
			testkit.CheckOutputs(t, outs, want)
		})
	}
}
