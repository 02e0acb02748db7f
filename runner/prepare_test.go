package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/jit/cpu"
	"github.com/widejit/widejit/lowering"
)

// Conv weight relayouts read parameters only: they are prepare launches, their outputs keep
// slots of their own, and the Runner runs them once: after New, zeroing a conv weight
// changes nothing in Run (a per-run relayout would read the zeros).
func TestPrepareLaunchesRunOnce(t *testing.T) {
	path := filepath.Join("..", "bench", "zoo", "resblock.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Parse(path, data, graph.Options{N: 2})
	if err != nil {
		t.Fatal(err)
	}
	inputs, err := g.GenerateInputs(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, modelMajor := range []bool{false, true} {
		plan, err := lowering.Lower(g, lowering.Options{ModelMajor: modelMajor})
		if err != nil {
			t.Fatal(err)
		}
		prepared := map[*lowering.Buffer]bool{}
		for _, l := range plan.Launches {
			if want := l.Kernel.Template == "conv_weight.py"; l.Prepare != want {
				t.Fatalf("launch %d (%s): Prepare = %v, want %v", l.Index, l.Kernel.Template, l.Prepare, want)
			}
			for _, a := range l.Args {
				if l.Prepare && a.Kind == lowering.PtrArg && a.Buf.Kind == lowering.TempBuffer {
					prepared[a.Buf] = true
				}
			}
		}
		if len(prepared) != 2 {
			t.Fatalf("%d prepared buffers, want the 2 relayouts", len(prepared))
		}
		for _, b := range plan.Buffers {
			for p := range prepared {
				if b != p && b.Kind == lowering.TempBuffer && b.Slot == p.Slot {
					t.Fatalf("prepared %s shares slot s%d with %s", p, p.Slot, b)
				}
			}
		}

		want := runFresh(t, plan, g, inputs)
		r, err := New(plan, cpu.NewDevice(2), testCompiler, g)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range plan.Params {
			if b.Name == "conv1.weight" || b.Name == "conv2.weight" {
				if err := r.dev.Upload(r.bufs[b], make([]byte, b.Elems*b.DType.Size())); err != nil {
					t.Fatal(err)
				}
			}
		}
		for run := range 2 {
			got, err := r.Run(inputs)
			if err != nil {
				t.Fatal(err)
			}
			for name, w := range want {
				if !bytes.Equal(got[name].Data, w.Data) {
					t.Fatalf("model major %v, run %d: output %s differs from a fresh runner's", modelMajor, run, name)
				}
			}
		}
		r.Close()
	}
}
