package ptx

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/widejit/widejit/graph"
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
				r, err := runner.New(plan, ptxemu.NewDevice(Target{Arch: "sm_90"}, ParamTypes), jit.NewCompiler(jit.CompilerOptions{}), g)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				outs, err := r.Run(testkit.ReadTensors(t, filepath.Join(dir, "inputs.safetensors")))
				if err != nil {
					t.Fatal(err)
				}
				testkit.CheckOutputs(t, outs, testkit.ReadTensors(t, filepath.Join(dir, "expected.safetensors")))
			})
		}
	}
}
