package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cuda/cudatest"
)

// TestDeviceAssertOnGPU runs an embedding whose indices a kernel computes on the stub GPU
// (jit/cuda with the PTX's assert flag, kernels run by the CPU backend): an index in range
// runs, an index past the table fails the run when the device synchronises, with the assert's
// message and the launch's node, on one stream and on two; the next run in range passes
// (the flag was cleared).
func TestDeviceAssertOnGPU(t *testing.T) {
	g, err := graph.Load("../lowering/testdata/embedding_cat/graph.json")
	if err != nil {
		t.Fatal(err)
	}
	inputs := func(last int64) map[string]*safetensors.Tensor {
		a := make([]int64, 3*2*3)
		b := make([]int64, 3*2*2)
		for i := range a {
			a[i] = int64(i % 6)
		}
		b[len(b)-1] = last // model 2's last index
		ta, _ := safetensors.FromInt64s("a", safetensors.I64, []int{3, 2, 3}, a)
		tb, _ := safetensors.FromInt64s("b", safetensors.I64, []int{3, 2, 2}, b)
		return map[string]*safetensors.Tensor{"a": ta, "b": tb}
	}
	for _, streams := range []int{1, 2} {
		_, _, r := stubRun(t, g, cudatest.StubConfig{}, Options{Streams: streams})
		if _, err := r.Run(inputs(5)); err != nil {
			t.Fatalf("%d streams, in range: %v", streams, err)
		}
		_, err := r.Run(inputs(6))
		var ae *jit.AssertError
		if !errors.As(err, &ae) || ae.Msg != "embedding index out of range" || !strings.Contains(err.Error(), "nodes [emb]") {
			t.Errorf("%d streams, index 6 of 6 rows: err = %v", streams, err)
		}
		if _, err := r.Run(inputs(0)); err != nil {
			t.Errorf("%d streams, in range after a failure: %v", streams, err)
		}
	}
}
