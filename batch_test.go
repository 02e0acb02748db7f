package widejit_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/widejit/widejit"
	"github.com/widejit/widejit/internal/testkit"
)

// loadBatchFixture loads lowering/testdata/batch/name on the CPU.
func loadBatchFixture(t *testing.T, name string) (string, *widejit.Model) {
	t.Helper()
	dir := filepath.Join("lowering", "testdata", "batch", name)
	m, err := widejit.Load(filepath.Join(dir, "graph.json"), widejit.WithDevice("cpu"), widejit.WithoutCache())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return dir, m
}

// One Model runs at several batch sizes: the exported one (4) and 7 and 1, each equal to the
// N PyTorch modules run at that batch size (lowering/testdata/batch/encoder: a batch-first
// transformer encoder layer and a [B*T, C] reshape and back), compiling a plan per batch size
// on first use and reusing it after.
func TestModelRunsAnyBatchSize(t *testing.T) {
	dir, m := loadBatchFixture(t, "encoder")
	if m.Batch() != 4 || m.BatchError() != nil {
		t.Fatalf("batch %d (%v), want 4", m.Batch(), m.BatchError())
	}
	for _, c := range []struct{ in, want string }{
		{"inputs_b7", "expected_b7"}, {"inputs", "expected"}, {"inputs_b1", "expected_b1"}, {"inputs_b7", "expected_b7"},
	} {
		in, err := m.ReadInputs(filepath.Join(dir, c.in+".safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Run(context.Background(), in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		testkit.CheckOutputs(t, out, testkit.ReadTensors(t, filepath.Join(dir, c.want+".safetensors")))
	}
	if got := m.Batches(); !reflect.DeepEqual(got, []int{1, 4, 7}) {
		t.Errorf("compiled batch sizes %v, want [1 4 7]", got)
	}
	// the model's inputs described at the exported batch size
	if s := m.Inputs()[0].Shape; !reflect.DeepEqual(s, []int{3, 4, 5, 16}) {
		t.Errorf("input spec %v, want [3 4 5 16]", s)
	}
}

// Shapes that cannot fit are refused naming the input and the dim: inputs that disagree on the
// batch size (seq-first: the batch is dim 1 of x, h0 and c0), a batch of 0, another feature
// size; a graph whose view splits the batch names the node.
func TestModelBatchRefusals(t *testing.T) {
	_, m := loadBatchFixture(t, "seqfirst")
	zeros := func(shape ...int) *widejit.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		x, _ := widejit.NewFloat32(shape, make([]float32, n))
		return x
	}
	cases := []struct {
		in   map[string]*widejit.Tensor
		want []string
	}{
		{map[string]*widejit.Tensor{"x": zeros(3, 5, 2, 6), "h0": zeros(3, 1, 3, 8), "c0": zeros(3, 1, 3, 8)}, []string{`"x"`, `"h0"`, "disagree", "2 in dim 2", "3 in dim 2"}},
		{map[string]*widejit.Tensor{"x": zeros(3, 5, 0, 6), "h0": zeros(3, 1, 0, 8), "c0": zeros(3, 1, 0, 8)}, []string{`"x"`, "is 0"}},
		{map[string]*widejit.Tensor{"x": zeros(3, 5, 2, 7), "h0": zeros(3, 1, 2, 8), "c0": zeros(3, 1, 2, 8)}, []string{`"x"`, "dim 3 is 7", "only the batch (dim 2) may change"}},
	}
	for _, c := range cases {
		_, err := m.Run(context.Background(), c.in)
		if err == nil {
			t.Errorf("no error, want one mentioning %q", c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not mention %q", err, w)
			}
		}
	}
	if got := m.Batches(); !reflect.DeepEqual(got, []int{4}) {
		t.Errorf("refused runs compiled batch sizes: %v", got)
	}
}

// One Model runs a nanoGPT LM exported at sequence length 16 (--dynamic idx:1) at lengths 20
// and 9 and another batch size, each equal to the N PyTorch modules
// (lowering/testdata/dynamic/gpt), with OutputsFor describing the outputs at the inputs'
// sizes; a sequence beyond the positional table is refused naming the node.
func TestModelRunsAnySequenceLength(t *testing.T) {
	dir := filepath.Join("lowering", "testdata", "dynamic", "gpt")
	m, err := widejit.Load(filepath.Join(dir, "graph.json"), widejit.WithDevice("cpu"), widejit.WithoutCache())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	for _, name := range []string{"b2_t20", "b2_t9", "b3_t20", "b2_t20"} {
		in, err := m.ReadInputs(filepath.Join(dir, "inputs_"+name+".safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		specs, err := m.OutputsFor(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Run(context.Background(), in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(specs[0].Shape, out["lm_head"].Shape) {
			t.Errorf("%s: OutputsFor says %v, Run gave %v", name, specs[0].Shape, out["lm_head"].Shape)
		}
		testkit.CheckOutputs(t, out, testkit.ReadTensors(t, filepath.Join(dir, "expected_"+name+".safetensors")))
	}
	if got := m.Batches(); !reflect.DeepEqual(got, []int{2, 3}) {
		t.Errorf("compiled batch sizes %v, want [2 3]", got)
	}
	long := &widejit.Tensor{Name: "idx", DType: "I64", Shape: []int{3, 2, 48}, Data: make([]byte, 3*2*48*8)} // token 0 everywhere
	_, err = m.Run(context.Background(), map[string]*widejit.Tensor{"idx": long})
	if err == nil || !strings.Contains(err.Error(), `node "wpe"`) || !strings.Contains(err.Error(), `dim 1 of input "idx", now 48`) {
		t.Errorf("a sequence of 48 (positional table of 32): %v", err)
	}
}
