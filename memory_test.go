package widejit_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/widejit/widejit"
	"github.com/widejit/widejit/graph/safetensors"
)

// TestLoadMemory: examples/mlp loaded from its bytes (graph.json and weights, the files then
// out of reach) equals the file's Model bit for bit, at the exported batch size and another,
// with the same identity; bad weights bytes are refused naming the graph.
func TestLoadMemory(t *testing.T) {
	graphJSON, err := os.ReadFile("examples/mlp/graph.json")
	if err != nil {
		t.Fatal(err)
	}
	weights, err := os.ReadFile("examples/mlp/weights.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	opts := []widejit.Option{widejit.WithDevice("cpu"), widejit.WithoutCache()}
	file, err := widejit.Load("examples/mlp/graph.json", opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	// a name whose weights file does not exist: only the bytes can serve
	mem, err := widejit.LoadMemory("/nonexistent/in-memory/graph.json", graphJSON, weights, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	for _, seed := range []int64{1, 2} {
		in, err := file.RandomInputs(seed)
		if err != nil {
			t.Fatal(err)
		}
		if seed == 2 { // batch 5 instead of the exported 32: the weights are read again
			x := in["x"]
			n, f := x.Shape[0], x.Shape[2]
			var rows []byte
			for m := range n {
				rows = append(rows, x.Data[m*32*f*4:(m*32+5)*f*4]...)
			}
			in["x"] = &widejit.Tensor{Name: "x", DType: x.DType, Shape: []int{n, 5, f}, Data: rows}
		}
		want, err := file.Run(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := mem.Run(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if string(got["fc2"].Data) != string(want["fc2"].Data) {
			t.Errorf("seed %d: the in-memory model's outputs differ from the file's", seed)
		}
	}
	a, err := file.GraphIdentity()
	if err != nil {
		t.Fatal(err)
	}
	b, err := mem.GraphIdentity()
	if err != nil || a != b {
		t.Errorf("identities %s and %s (%v): the same graph and weights", a, b, err)
	}
	if _, err := widejit.LoadMemory("mem/graph.json", graphJSON, []byte("not safetensors"), opts...); err == nil || !strings.Contains(err.Error(), "mem/") {
		t.Errorf("bad weights bytes: %v", err)
	}
	if _, err := safetensors.OpenMemory("w", weights[:20], safetensors.Options{}); err == nil {
		t.Errorf("a truncated file's bytes were accepted")
	}
}
