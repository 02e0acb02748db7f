package runner

import (
	"bytes"
	"slices"
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

// copyingDevice is a CPU device without jit.HostBinder: every input is uploaded.
type copyingDevice struct{ jit.Device }

// countingDevice is the CPU device, counting uploads and downloads.
type countingDevice struct {
	*cpu.Device
	uploads, downloads int
}

func (d *countingDevice) Download(b jit.Buffer, dst []byte) error {
	d.downloads++
	return d.Device.Download(b, dst)
}

func (d *countingDevice) Upload(b jit.Buffer, src []byte) error {
	d.uploads++
	return d.Device.Upload(b, src)
}

// hostMemoryCase is the MLP of lowering/testdata/hostile on two runners: one on a device
// that copies inputs and outputs (want: its outputs), one on the CPU device, counted.
type hostMemoryCase struct {
	ins, want map[string]*safetensors.Tensor
	plan      *lowering.Plan
	copying   *Runner
	dev       *countingDevice
	r         *Runner
}

func newHostMemoryCase(t *testing.T) *hostMemoryCase {
	t.Helper()
	g, err := graph.Load("../lowering/testdata/hostile/init_mlp.json")
	if err != nil {
		t.Fatal(err)
	}
	h := &hostMemoryCase{dev: &countingDevice{Device: cpu.NewDevice(2)}}
	h.ins, _ = g.GenerateInputs(1)
	if h.plan, err = lowering.Lower(g, lowering.Options{}); err != nil {
		t.Fatal(err)
	}
	if h.copying, err = New(h.plan, copyingDevice{cpu.NewDevice(2)}, testCompiler, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.copying.Close)
	if h.want, err = h.copying.Run(h.ins); err != nil {
		t.Fatal(err)
	}
	if h.r, err = New(h.plan, h.dev, testCompiler, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.r.Close)
	return h
}

// On the CPU a run reads its inputs where the caller holds them (jit.HostBinder): the outputs
// are those of a run that copies them in, the caller's bytes are left as they were, an
// input whose address does not suit the device is copied instead, and after the run the
// device buffer no longer reads the caller's memory.
func TestInputsReadInPlace(t *testing.T) {
	h := newHostMemoryCase(t)
	ins, plan, want, dev, r := h.ins, h.plan, h.want, h.dev, h.r
	for _, shift := range []int{0, 4} { // 4: an input 4 bytes past an 8-byte boundary is copied
		given := map[string]*safetensors.Tensor{}
		kept := map[string][]byte{}
		for name, in := range ins {
			data := make([]byte, len(in.Data)+shift)[shift:]
			copy(data, in.Data)
			given[name] = &safetensors.Tensor{Name: name, DType: in.DType, Shape: in.Shape, Data: data}
			kept[name] = append([]byte(nil), data...)
		}
		dev.uploads = 0
		tr := NewTracer()
		r.Trace(tr, 0, "cpu")
		got, err := r.Run(given)
		if err != nil {
			t.Fatal(err)
		}
		wantUploads := shift / 4 * len(plan.Inputs)
		if dev.uploads != wantUploads {
			t.Errorf("shift %d: %d uploads, want %d", shift, dev.uploads, wantUploads)
		}
		copies := 0
		for _, e := range tr.Events() {
			if e.Cat == "copy" {
				copies++
			}
		}
		if copies != wantUploads {
			t.Errorf("shift %d: %d copy events in the trace, want %d (the uploads)", shift, copies, wantUploads)
		}
		for name, w := range want {
			if !bytes.Equal(got[name].Data, w.Data) {
				t.Errorf("shift %d: output %s differs from the copying run's", shift, name)
			}
		}
		for _, b := range r.plan.Inputs {
			in := given[b.Name]
			if !bytes.Equal(in.Data, kept[b.Name]) {
				t.Errorf("shift %d: the run changed input %s", shift, b.Name)
			}
			if buf := r.bufs[b].(*cpu.Buffer).Bytes(); &buf[0] == &in.Data[0] {
				t.Errorf("shift %d: after the run input buffer %s still reads the caller's memory", shift, b.Name)
			}
		}
	}
}

// On the CPU the kernels write an output that one buffer holds whole straight into the
// caller's memory: the tensor given to RunInto, or new memory for Run; nothing is downloaded
// and the values are those of a run that downloads them; a run into the previous outputs
// allocates nothing. Output memory that overlaps an input
// read in place (a previous output fed back as the input) is not written by the kernels:
// they would overwrite what later kernels read.
func TestOutputsWrittenInPlace(t *testing.T) {
	h := newHostMemoryCase(t)
	ins, copying, want, dev, r := h.ins, h.copying, h.want, h.dev, h.r
	first, err := r.Run(ins)
	if err != nil {
		t.Fatal(err)
	}
	if dev.downloads != 0 || !bytes.Equal(first["fc2"].Data, want["fc2"].Data) {
		t.Fatalf("Run: %d downloads, outputs equal the downloading run's: %v", dev.downloads, bytes.Equal(first["fc2"].Data, want["fc2"].Data))
	}
	clear(first["fc2"].Data)
	again, err := r.RunInto(ins, first)
	if err != nil {
		t.Fatal(err)
	}
	if &again["fc2"].Data[0] != &first["fc2"].Data[0] || !bytes.Equal(again["fc2"].Data, want["fc2"].Data) || dev.downloads != 0 {
		t.Fatal("RunInto did not have the kernels write the given tensor with the downloading run's values")
	}
	// the previous outputs given back are the result as they are: a run allocates nothing
	if again["fc2"] != first["fc2"] {
		t.Error("RunInto made a new tensor for an output written where the given one lies")
	}
	if n := testing.AllocsPerRun(5, func() { again, err = r.RunInto(ins, again) }); n != 0 || err != nil {
		t.Errorf("RunInto into the previous outputs: %v allocations a run (%v)", n, err)
	}

	// fc2 has x's shape: feed the output back as the next input, into the same tensor.
	fed := map[string]*safetensors.Tensor{"x": {Name: "x", DType: "F32", Shape: again["fc2"].Shape, Data: again["fc2"].Data}}
	wantFed, err := copying.Run(map[string]*safetensors.Tensor{"x": {Name: "x", DType: "F32", Shape: again["fc2"].Shape,
		Data: append([]byte(nil), again["fc2"].Data...)}})
	if err != nil {
		t.Fatal(err)
	}
	r.host.bound = append(r.host.bound[:0], fed["x"].Data)
	if direct := r.bindOutputs(dev, again); slices.ContainsFunc(direct, func(d []byte) bool { return d != nil }) {
		t.Error("an output tensor that overlaps an input read in place was bound for the kernels to write")
	}
	r.host.unbind(dev)
	gotFed, err := r.RunInto(fed, again)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotFed["fc2"].Data, wantFed["fc2"].Data) || &gotFed["fc2"].Data[0] != &again["fc2"].Data[0] {
		t.Error("a run whose input is the tensor it writes its output into differs from the downloading run, or does not write that tensor")
	}
}
