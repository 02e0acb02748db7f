package lowering

import (
	"slices"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx"
)

// Align16 claims only what holds for every launch: the backend vectorizes on it.
func TestSpecAlign16(t *testing.T) {
	f32 := &Buffer{DType: graph.Float32}
	args := []LaunchArg{
		{Name: "a", Kind: PtrArg, Buf: f32, Offset: 0, ModelStride: 8},  // 32-byte model steps
		{Name: "b", Kind: PtrArg, Buf: f32, Offset: 4, ModelStride: 5},  // 16-byte offset, 20-byte steps
		{Name: "c", Kind: PtrArg, Buf: f32, Offset: 2, ModelStride: 16}, // 8-byte offset
		{Name: "n", Kind: IntArg, Int: 64},
		{Name: "m", Kind: IntArg, Int: 20},
		{Name: "base", Kind: IntArg, ModelBase: true},
		{Name: "s", Kind: FloatArg, Float: 16},
	}
	for _, tc := range []struct {
		strategy string
		models   int
		want     []string
	}{
		{Batched, 3, []string{"a", "b", "n"}},    // one launch: offsets decide
		{Sequential, 3, []string{"a", "n"}},      // per model: b's 20-byte steps break alignment
		{Sequential, 1, []string{"a", "b", "n"}}, // one model: no steps
	} {
		l := &Launch{Kernel: &KernelSource{}, Args: args, Strategy: tc.strategy, ModelAxis: 2, Grid: [3]int{1, 1, tc.models}}
		if got := l.Spec().Align16; !slices.Equal(got, tc.want) {
			t.Errorf("%s N=%d: Align16 %v, want %v", tc.strategy, tc.models, got, tc.want)
		}
	}
}

// Integers equal to 1 are specialized (EqualTo1), those divisible by 16 are in Align16,
// unless NoIntSpecialization; a model base (different per launch) never is. The fp16 Linear
// of a plan passes its unit strides that way, and the specialized kernels are distinct
// kernels in the cache.
func TestSpecIntSpecialization(t *testing.T) {
	args := []LaunchArg{
		{Name: "one", Kind: IntArg, Int: 1},
		{Name: "n", Kind: IntArg, Int: 32},
		{Name: "m", Kind: IntArg, Int: 3},
		{Name: "base", Kind: IntArg, Int: 1, ModelBase: true},
		{Name: "p", Kind: PtrArg, Buf: &Buffer{DType: graph.Float16}},
	}
	l := &Launch{Kernel: &KernelSource{}, Args: args, Strategy: Batched, Grid: [3]int{1, 1, 1}}
	if s := l.Spec(); !slices.Equal(s.EqualTo1, []string{"one"}) || !slices.Equal(s.Align16, []string{"n", "p"}) {
		t.Errorf("specialized: EqualTo1 %v, Align16 %v; want [one], [n p]", s.EqualTo1, s.Align16)
	}
	l.NoIntSpecialization = true
	if s := l.Spec(); s.EqualTo1 != nil || !slices.Equal(s.Align16, []string{"p"}) {
		t.Errorf("NoIntSpecialization: EqualTo1 %v, Align16 %v; want none, [p]", s.EqualTo1, s.Align16)
	}

	g, err := graph.Parse("linear.json", []byte(`{"format": "widejit.graph/v1", "n": 2,
  "inputs": [{"name": "x", "shape": [64, 64], "dtype": "float16", "per_model": true}],
  "params": [{"name": "w", "shape": [64, 64], "dtype": "float16"}],
  "nodes": [{"name": "fc", "op": "linear", "inputs": ["x"], "params": {"weight": "w"}, "attrs": {"in_features": 64, "out_features": 64, "bias": false}}],
  "outputs": ["fc"], "init": {"seed": 1}}`), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, off := range []bool{false, true} {
		plan, err := Lower(g, Options{NoIntSpecialization: off})
		if err != nil {
			t.Fatal(err)
		}
		spec := plan.Launches[0].Spec()
		if want := !off; slices.Contains(spec.EqualTo1, "a_sk") != want || slices.Contains(spec.EqualTo1, "c_sn") != want {
			t.Errorf("NoIntSpecialization=%v: EqualTo1 %v", off, spec.EqualTo1)
		}
		k, err := jit.NewCompiler(jit.CompilerOptions{}).Key(plan.Launches[0].Kernel.Source, spec, ptx.Target{Arch: "sm_80"})
		if err != nil {
			t.Fatal(err)
		}
		keys[k.String()] = true
	}
	if len(keys) != 2 {
		t.Error("the specialized and the unspecialized kernel share a cache key")
	}
}
