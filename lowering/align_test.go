package lowering

import (
	"slices"
	"testing"

	"github.com/widejit/widejit/graph"
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
