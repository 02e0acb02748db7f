package ptx

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/testkit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx/ptxemu"
	"github.com/widejit/widejit/lowering"
	"github.com/widejit/widejit/runner"
)

// slowExamples have convolutions whose emulation takes minutes.
var slowExamples = map[string]bool{"convnet": true, "resblock": true}

// TestExamplePlansOnEmulatedPTX runs every example's (and recurrent fixture's) default plan (with WIDEJIT_EMULATE_ALL=1
// also the unfused, sequential and model-major plans, and the slow convolution examples) through the PTX backend
// (on the emulator) and compares the outputs with PyTorch's (expected.safetensors), with the
// tolerance the lowering tests use for the CPU backend.
func TestExamplePlansOnEmulatedPTX(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: emulates every kernel of every example")
	}
	paths, _ := filepath.Glob("../../examples/*/graph.json")
	if len(paths) == 0 {
		t.Fatal("no example graphs")
	}
	// lowering's recurrent fixtures: rnn.py passes the hidden state between the threads of a
	// program through memory, a barrier per step
	rnn, _ := filepath.Glob("../../lowering/testdata/rnn/*_n3/graph.json")
	paths = append(paths, rnn...)
	// the bf16 MLP fixture: tensor-core dots whose accumulators stay in registers across the
	// K loops (acc += tl.dot(...), mmaloop.go)
	paths = append(paths, "../../lowering/testdata/idioms/halfmlp_bf16_n3/graph.json")
	variants := []struct {
		name string
		opts lowering.Options
	}{{"default", lowering.Options{}}}
	if os.Getenv("WIDEJIT_EMULATE_ALL") != "" {
		variants = append(variants, struct {
			name string
			opts lowering.Options
		}{"unfused", lowering.Options{NoFusion: true}}, struct {
			name string
			opts lowering.Options
		}{"sequential", lowering.Options{Strategy: lowering.Sequential}}, struct {
			name string
			opts lowering.Options
		}{"model-major", lowering.Options{ModelMajor: true}})
	}
	for _, p := range paths {
		dir := filepath.Dir(p)
		for _, v := range variants {
			t.Run(filepath.Base(dir)+"/"+v.name, func(t *testing.T) {
				if slowExamples[filepath.Base(dir)] && os.Getenv("WIDEJIT_EMULATE_ALL") == "" {
					t.Skip("takes minutes on the emulator: set WIDEJIT_EMULATE_ALL=1 (it passed when written)")
				}
				g, err := graph.Load(p)
				if err != nil {
					t.Fatal(err)
				}
				plan, err := lowering.Lower(g, v.opts)
				if err != nil {
					t.Skipf("lowering: %v", err)
				}
				outs := runOnEmulator(t, g, plan, "sm_90", dir)
				testkit.CheckOutputs(t, outs, testkit.ReadTensors(t, filepath.Join(dir, "expected.safetensors")))
			})
		}
	}
}

// TestTF32PlanOnEmulatedPTX runs the MLP example at --float32-matmul-precision high (its
// Linears' fp32 dots on TF32 tensor cores, the weight read as B^T through ldmatrix) on the
// emulator against PyTorch's fp32 outputs, within TF32's error (operands truncated to 10
// mantissa bits, each product up to 2^-9 of itself off: 1e-2 of the output's scale).
func TestTF32PlanOnEmulatedPTX(t *testing.T) {
	dir := "../../examples/mlp"
	g, err := graph.Load(filepath.Join(dir, "graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := lowering.Lower(g, lowering.Options{Float32MatmulPrecision: lowering.PrecisionHigh})
	if err != nil {
		t.Fatal(err)
	}
	outs := runOnEmulator(t, g, plan, "sm_80", dir)
	for name, w := range testkit.ReadTensors(t, filepath.Join(dir, "expected.safetensors")) {
		got, err := outs[name].Float64s()
		if err != nil {
			t.Fatal(err)
		}
		want, err := w.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		scale, maxd := 0.0, 0.0
		for i := range want {
			scale = math.Max(scale, math.Abs(want[i]))
			maxd = math.Max(maxd, math.Abs(got[i]-want[i]))
		}
		if maxd > 1e-2*scale || maxd == 0 {
			t.Errorf("%s: max |diff| %.3g against PyTorch, scale %.3g: want within TF32's 1e-2 of the scale (and not 0: TF32 truncates)", name, maxd, scale)
		}
	}
}

// runOnEmulator runs plan (lowered from g) through the PTX backend for arch on the emulator,
// on the inputs of the fixture directory dir, and returns its outputs.
func runOnEmulator(t *testing.T, g *graph.Graph, plan *lowering.Plan, arch, dir string) map[string]*safetensors.Tensor {
	t.Helper()
	r, err := runner.New(plan, ptxemu.NewDevice(Target{Arch: arch}, ParamTypes), jit.NewCompiler(jit.CompilerOptions{}), g)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	outs, err := r.Run(testkit.ReadTensors(t, filepath.Join(dir, "inputs.safetensors")))
	if err != nil {
		t.Fatal(err)
	}
	return outs
}
