package ptx

import (
	"path/filepath"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/testkit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/lowering"
)

// The recurrent fixtures' GPU plans (rnn.py: the hidden state exchanged through memory
// between the threads of a program, a barrier per step) through the PTX backend on the
// emulator, against PyTorch with the CPU backend's tolerance.
func TestRecurrentPlansOnEmulatedPTX(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: emulates every kernel of the recurrent fixtures")
	}
	dirs, _ := filepath.Glob("../../lowering/testdata/rnn/*_n3")
	if len(dirs) == 0 {
		t.Fatal("no recurrent fixtures under lowering/testdata/rnn")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			g, err := graph.Load(filepath.Join(dir, "graph.json"))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := lowering.Lower(g, lowering.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := lowering.NewRunner(plan, &emuDevice{}, jit.NewCompiler(jit.CompilerOptions{}), g)
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
