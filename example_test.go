package widejit_test

import (
	"context"
	"fmt"
	"log"
	"math"

	"github.com/widejit/widejit"
	"github.com/widejit/widejit/graph/safetensors"
)

// Eight MLPs exported from PyTorch (examples/mlp) run as one wide model on the CPU; their
// outputs match the eight PyTorch modules run one by one.
func Example() {
	m, err := widejit.Load("examples/mlp/graph.json", widejit.WithDevice("cpu"), widejit.WithoutCache())
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	inputs, err := m.ReadInputs("examples/mlp/inputs.safetensors")
	if err != nil {
		log.Fatal(err)
	}
	out, err := m.Run(context.Background(), inputs)
	if err != nil {
		log.Fatal(err)
	}
	got, _ := out["fc2"].Float32s()
	want := readFloat32s("examples/mlp/expected.safetensors", "fc2")
	fmt.Println("models:", m.N(), "output shape:", out["fc2"].Shape)
	fmt.Println("matches PyTorch:", maxAbsDiff(got, want) <= 1e-5)
	// Output:
	// models: 8 output shape: [8 32 64]
	// matches PyTorch: true
}

// Inputs can be built in memory, shaped as Inputs describes them ([N, ...] per model).
func ExampleNewFloat32() {
	m, err := widejit.Load("examples/mlp/graph.json", widejit.WithDevice("cpu"), widejit.WithoutCache())
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	spec := m.Inputs()[0]
	n := 1
	for _, d := range spec.Shape {
		n *= d
	}
	x, err := widejit.NewFloat32(spec.Shape, make([]float32, n)) // zeros: each output row is the MLP's response to 0
	if err != nil {
		log.Fatal(err)
	}
	out, err := m.Run(context.Background(), map[string]*widejit.Tensor{spec.Name: x})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(spec.Name, spec.Shape, "->", m.Outputs()[0].Name, out["fc2"].Shape)
	// Output: x [8 32 64] -> fc2 [8 32 64]
}

func readFloat32s(path, name string) []float32 {
	f, err := safetensors.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	t, err := f.Read(name)
	if err != nil {
		log.Fatal(err)
	}
	v, err := t.Float32s()
	if err != nil {
		log.Fatal(err)
	}
	return v
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	worst := 0.0
	for i := range a {
		worst = max(worst, math.Abs(float64(a[i]-b[i])))
	}
	return worst
}

// Four trained checkpoints of a learning-rate sweep (examples/sweep, exported with
// export.py --state-dict) run as one model on a shared input, at the batch size they were
// exported with and at another one.
func ExampleLoad_checkpoints() {
	m, err := widejit.Load("examples/sweep/graph.json", widejit.WithDevice("cpu"), widejit.WithoutCache())
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	in, err := m.ReadInputs("examples/sweep/inputs.safetensors")
	if err != nil {
		log.Fatal(err)
	}
	out, err := m.Run(context.Background(), in)
	if err != nil {
		log.Fatal(err)
	}
	got, _ := out["fc2"].Float32s()
	fmt.Println("models:", m.N(), "output:", out["fc2"].Shape, "matches PyTorch:",
		maxAbsDiff(got, readFloat32s("examples/sweep/expected.safetensors", "fc2")) <= 1e-5)
	x, _ := widejit.NewFloat32([]int{3, 16}, make([]float32, 3*16)) // a batch of 3
	out, err = m.Run(context.Background(), map[string]*widejit.Tensor{"x": x})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("at batch 3:", out["fc2"].Shape)
	// Output:
	// models: 4 output: [4 8 4] matches PyTorch: true
	// at batch 3: [4 3 4]
}
