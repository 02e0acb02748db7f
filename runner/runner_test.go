package runner

import (
	"bytes"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/testkit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
	"github.com/widejit/widejit/lowering"
)

// The plans these tests run are lowering's; lowering's own tests compare them with PyTorch
// through this package (lowering/exec_test.go). These tests cover what the runner adds:
// output memory reuse, index checks, limits and prepare launches.

var testCompiler = jit.NewCompiler(jit.CompilerOptions{Version: "test"})

// runFresh runs plan once on a runner of its own, on the CPU.
func runFresh(t *testing.T, plan *lowering.Plan, g *graph.Graph, inputs map[string]*safetensors.Tensor) map[string]*safetensors.Tensor {
	t.Helper()
	r, err := New(plan, cpu.NewDevice(2), testCompiler, g)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	outs, err := r.Run(inputs)
	if err != nil {
		t.Fatal(err)
	}
	return outs
}

// load lowers g with the default options and loads the plan on a CPU device.
func load(t *testing.T, g *graph.Graph, threads int) *Runner {
	t.Helper()
	plan, err := lowering.Lower(g, lowering.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(plan, cpu.NewDevice(threads), testCompiler, g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// RunInto writes into the tensors it is given when they fit, and the values are Run's.
func TestRunIntoReusesOutputMemory(t *testing.T) {
	g, err := graph.Load("../lowering/testdata/hostile/init_mlp.json")
	if err != nil {
		t.Fatal(err)
	}
	ins, _ := g.GenerateInputs(1)
	r := load(t, g, 2)
	first, err := r.Run(ins)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), first["fc2"].Data...)
	clear(first["fc2"].Data)
	again, err := r.RunInto(ins, first)
	if err != nil {
		t.Fatal(err)
	}
	if &again["fc2"].Data[0] != &first["fc2"].Data[0] {
		t.Error("RunInto did not write into the given tensor")
	}
	if !bytes.Equal(again["fc2"].Data, want) {
		t.Error("RunInto's outputs differ from Run's")
	}
	small := map[string]*safetensors.Tensor{"fc2": {DType: "F32", Data: make([]byte, 4)}}
	if out, err := r.RunInto(ins, small); err != nil || len(out["fc2"].Data) != len(want) || &out["fc2"].Data[0] == &small["fc2"].Data[0] {
		t.Error("RunInto reused a tensor of the wrong size")
	}
}

// An embedding index outside the table is refused before any kernel reads another model's
// rows with it.
func TestEmbeddingIndexOutOfRange(t *testing.T) {
	const dir = "../lowering/testdata/fixtures/blocks_n3/"
	g, err := graph.Load(dir + "graph.json")
	if err != nil {
		t.Fatal(err)
	}
	ins := testkit.ReadTensors(t, dir+"inputs.safetensors")
	tok := ins["tok"]
	bad := *tok
	bad.Data = append([]byte(nil), tok.Data...)
	bad.Data[8*5] = 23 // element [0, 0, 5] (int64 little-endian): one past the 23 rows
	ins["tok"] = &bad
	_, err = load(t, g, 1).Run(ins)
	if err == nil || !strings.Contains(err.Error(), `input "tok": index 23 at [0 0 5] is out of range for emb (23 rows)`) {
		t.Fatalf("got %v", err)
	}
}
