package graph

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes as graph.json: loading must never panic, and a graph that
// loads must be internally consistent. Seeds: testdata/fuzz/FuzzParse and the examples.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "examples", "*", "graph.json"))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(initGraph))
	// nesting at and past MaxNesting, in lists and objects
	f.Add([]byte(strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting)))
	f.Add([]byte(strings.Repeat("[", MaxNesting+1)))
	f.Add([]byte(`{"format": "widejit.graph/v1", "attrs": ` + strings.Repeat(`{"a":`, MaxNesting+1)))
	// One valid graph per op case of the PyTorch fixture: mutations of these reach deep into
	// each op's inference.
	if data, err := os.ReadFile(filepath.Join("testdata", "torch_shapes.json")); err == nil {
		var fixture struct {
			Cases []torchCase `json:"cases"`
		}
		if json.Unmarshal(data, &fixture) == nil {
			for _, c := range fixture.Cases {
				if src, err := caseGraph(c); err == nil {
					f.Add([]byte(src))
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse("fuzz.json", data, Options{})
		checkLoadResult(t, data, g, err)
	})
}

// FuzzWeightsHeader feeds arbitrary bytes as the weights file of a valid graph.
func FuzzWeightsHeader(f *testing.F) {
	dir := f.TempDir()
	graphPath := filepath.Join(dir, "graph.json")
	src := graphJSON(mlpInputs, mlpParams, mlpNodes, `["fc2"]`, `"weights": "weights.safetensors"`)
	if err := os.WriteFile(graphPath, []byte(src), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"fc1.bias":{"dtype":"F32","shape":[4,128],"data_offsets":[0,2048]}}`))
	f.Add([]byte(`{"__metadata__":{"a":"b"}}`))
	f.Fuzz(func(t *testing.T, header []byte) {
		// The fuzzer controls the header; the data area is sized to what a valid file
		// would need, so layouts get past the size checks.
		file := make([]byte, 8+len(header)+4*(4*128*64+4*128+4*64*128+4*64))
		file[0], file[1], file[2], file[3] = byte(len(header)), byte(len(header)>>8), byte(len(header)>>16), byte(len(header)>>24)
		copy(file[8:], header)
		wdir := t.TempDir()
		if err := os.WriteFile(filepath.Join(wdir, "weights.safetensors"), file, 0o644); err != nil {
			t.Fatal(err)
		}
		g, err := Parse(filepath.Join(wdir, "graph.json"), []byte(src), Options{})
		checkLoadResult(t, []byte(src), g, err)
		if err == nil {
			for _, p := range g.Params {
				if _, err := g.ParamTensor(p.Name); err != nil {
					t.Fatalf("a loaded graph cannot read %s: %v", p.Name, err)
				}
			}
		}
	})
}

func checkLoadResult(t *testing.T, data []byte, g *Graph, err error) {
	if err != nil {
		var ge *Error
		if !errors.As(err, &ge) {
			return // I/O errors
		}
		if len(ge.Problems) == 0 {
			t.Fatal("an Error without problems")
		}
		for _, p := range ge.Problems {
			if p.Msg == "" || p.Line < 0 || p.Line > 1+len(data) {
				t.Fatalf("bad problem %+v", p)
			}
		}
		return
	}
	for _, n := range g.Nodes {
		if len(n.Outputs) == 0 {
			t.Fatalf("node %s has no outputs", n.Name)
		}
		for _, o := range n.Outputs {
			if !o.DType.Valid() || !allPositive(o.Shape) {
				t.Fatalf("node %s has output %v", n.Name, o)
			}
		}
		for _, in := range n.Inputs {
			if in.Kind == TensorOperand {
				if _, ok := g.nodes[in.Name]; !ok && g.inputs[in.Name] == nil && g.params[in.Name] == nil {
					t.Fatalf("node %s reads unknown %s", n.Name, in.Name)
				}
			}
		}
	}
	if g.Init != nil {
		small := true
		for _, p := range g.Params {
			small = small && p.Type.Numel()*g.N < 1<<16
		}
		if small {
			for _, p := range g.Params {
				if _, err := g.ParamTensor(p.Name); err != nil {
					t.Fatalf("init %s: %v", p.Name, err)
				}
			}
		}
	}
}

// FuzzInputsHeader feeds arbitrary bytes as the header of an inputs file (--inputs) of a
// valid graph, read at whatever batch size it carries: reading must never panic, and inputs
// it accepts have the graph's names, dtypes and shapes at that batch size.
func FuzzInputsHeader(f *testing.F) {
	g, err := Parse("graph.json", []byte(graphJSON(mlpInputs, mlpParams, mlpNodes, `["fc2"]`, initSource)), Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"x":{"dtype":"F32","shape":[4,32,64],"data_offsets":[0,32768]}}`))
	f.Add([]byte(`{"x":{"dtype":"F32","shape":[4,8,64],"data_offsets":[0,8192]},"y":{"dtype":"F32","shape":[1],"data_offsets":[8192,8196]}}`))
	f.Add([]byte(`{"x":{"dtype":"F16","shape":[4,32,64],"data_offsets":[0,16384]},"__metadata__":{"widejit.n":"4"}}`))
	f.Fuzz(func(t *testing.T, header []byte) {
		file := make([]byte, 8+len(header)+4*32*64*4)
		binary.LittleEndian.PutUint64(file, uint64(len(header)))
		copy(file[8:], header)
		path := filepath.Join(t.TempDir(), "inputs.safetensors")
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		gb, in, err := g.ReadInputsAnyBatch(path)
		if err != nil {
			return
		}
		if len(in) != len(gb.Inputs) {
			t.Fatalf("read %d inputs for the graph's %d", len(in), len(gb.Inputs))
		}
		for _, spec := range gb.Inputs {
			x := in[spec.Name]
			if x == nil || x.DType != spec.Type.DType.Safetensors() || !slices.Equal(x.Shape, gb.InputTensorShape(spec)) ||
				len(x.Data) != x.Numel()*x.DType.Size() {
				t.Fatalf("input %q read as %v, the graph at batch %d wants %s%v", spec.Name, x, gb.Batch(), spec.Type.DType, gb.InputTensorShape(spec))
			}
		}
	})
}
