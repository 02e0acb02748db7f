package ptx

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx/ptxemu"
	"github.com/widejit/widejit/lowering"
	"github.com/widejit/widejit/runner"
)

// tf32Trunc is what the tensor cores read of an fp32 operand of mma .tf32: its upper 19 bits
// (sign, exponent, 10 mantissa bits); the low 13 are ignored, a truncation toward zero.
func tf32Trunc(x float32) float64 {
	return float64(math.Float32frombits(math.Float32bits(x) &^ 0x1fff))
}

// tf32RoundNearest is cvt.rna.tf32.f32 (ties away from zero), for the test's contrast.
func tf32RoundNearest(x float32) float64 {
	return float64(math.Float32frombits((math.Float32bits(x) + 0x1000) &^ 0x1fff))
}

// linearGraph is one model's bias-free Linear y = x W^T of dtype, x [m, k], W [n, k] drawn
// from seed.
func linearGraph(t *testing.T, dtype string, m, k, n, seed int) *graph.Graph {
	t.Helper()
	g, err := graph.Parse("linear.json", []byte(fmt.Sprintf(`{"format": "widejit.graph/v1", "n": 1,
  "inputs": [{"name": "x", "shape": [%d, %d], "dtype": "%s", "per_model": true}],
  "params": [{"name": "w", "shape": [%d, %d], "dtype": "%s"}],
  "nodes": [{"name": "fc", "op": "linear", "inputs": ["x"], "params": {"weight": "w"}, "attrs": {"in_features": %d, "out_features": %d, "bias": false}}],
  "outputs": ["fc"], "init": {"seed": %d}}`, m, k, dtype, n, k, dtype, k, n, seed)), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestTF32GEMMOddSizesOnEmulatedPTX runs the GEMMs that lowering plans at
// --float32-matmul-precision high, at sizes no tile divides (masked rows, columns and K
// tail), through the PTX backend on the emulator: a Linear (its weight staged as B^T and read
// with ldmatrix) and a matmul by a [K, N] parameter (B read element by element). Each K loop
// is the cp.async pipeline on TF32 tensor cores, its operands passed to mma.sync as they
// stand in memory (no cvt.rna). The reference is computed here in float64 from the operands
// truncated to TF32, so the only difference left is the fp32 accumulation: |error| <= K *
// 2^-23 * sum|a||b| (a generous bound on fp32 summation of K terms). The same outputs must be
// further than that from the exact product and from operands rounded to nearest, or the test
// could not tell truncation from either.
func TestTF32GEMMOddSizesOnEmulatedPTX(t *testing.T) {
	const m, k, n = 77, 100, 72
	matmul, err := graph.Parse("matmul.json", []byte(fmt.Sprintf(`{"format": "widejit.graph/v1", "n": 1,
  "inputs": [{"name": "x", "shape": [%d, %d], "dtype": "float32", "per_model": true}],
  "params": [{"name": "w", "shape": [%d, %d], "dtype": "float32"}],
  "nodes": [{"name": "fc", "op": "matmul", "inputs": ["x", "w"]}],
  "outputs": ["fc"], "init": {"seed": 3}}`, m, k, k, n)), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		g      *graph.Graph
		weight func(ws []float32, kk, j int) float32
	}{
		{"linear", linearGraph(t, "float32", m, k, n, 3), func(ws []float32, kk, j int) float32 { return ws[j*k+kk] }},
		{"matmul", matmul, func(ws []float32, kk, j int) float32 { return ws[kk*n+j] }},
	} {
		t.Run(tc.name, func(t *testing.T) { checkTF32GEMM(t, tc.g, m, k, n, tc.weight) })
	}
}

// checkTF32GEMM checks the one-GEMM plan of g (x [m, k] times the parameter w, whose element
// (kk, j) of B weight gives) as TestTF32GEMMOddSizesOnEmulatedPTX says.
func checkTF32GEMM(t *testing.T, g *graph.Graph, m, k, n int, weight func(ws []float32, kk, j int) float32) {
	plan, err := lowering.Lower(g, lowering.Options{Float32MatmulPrecision: lowering.PrecisionHigh})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Launches) != 1 {
		t.Fatalf("%d launches, want the one GEMM", len(plan.Launches))
	}
	l := plan.Launches[0]
	a, err := jit.NewCompiler(jit.CompilerOptions{}).Compile(l.Kernel.Source, l.Spec(), Target{Arch: "sm_80"})
	if err != nil {
		t.Fatal(err)
	}
	text := string(a.Payload)
	for _, want := range []string{"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "cp.async.wait_group"} {
		if !strings.Contains(text, want) {
			t.Errorf("the GEMM's PTX has no %s", want)
		}
	}
	if strings.Contains(text, "cvt.rna.tf32") {
		t.Error("the GEMM's PTX rounds its operands with cvt.rna.tf32: the documented precision of high is truncation")
	}

	xs := make([]float32, m*k)
	rng := rand.New(rand.NewSource(5))
	for i := range xs {
		xs[i] = float32(rng.NormFloat64())
	}
	ws, err := g.ParamFloat32s("w")
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(plan, ptxemu.NewDevice(Target{Arch: "sm_80"}, ParamTypes), jit.NewCompiler(jit.CompilerOptions{}), g)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	outs, err := r.Run(map[string]*safetensors.Tensor{"x": safetensors.FromFloat32s("x", []int{m, k}, xs)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := outs["fc"].Float32s()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != m*n {
		t.Fatalf("%d outputs, want %d", len(got), m*n)
	}
	var worst, fromExact, fromNearest float64 // in units of each element's bound
	for i := range m {
		for j := range n {
			var trunc, exact, nearest, mag float64
			for kk := range k {
				x, w := xs[i*k+kk], weight(ws, kk, j)
				trunc += tf32Trunc(x) * tf32Trunc(w)
				exact += float64(x) * float64(w)
				nearest += tf32RoundNearest(x) * tf32RoundNearest(w)
				mag += math.Abs(tf32Trunc(x) * tf32Trunc(w))
			}
			bound := float64(k)*0x1p-23*mag + 1e-30
			y := float64(got[i*n+j])
			worst = math.Max(worst, math.Abs(y-trunc)/bound)
			fromExact = math.Max(fromExact, math.Abs(y-exact)/bound)
			fromNearest = math.Max(fromNearest, math.Abs(y-nearest)/bound)
		}
	}
	t.Logf("max error over the bound: %.3g from the truncated product, %.3g from the exact, %.3g from round-to-nearest", worst, fromExact, fromNearest)
	if worst > 1 {
		t.Errorf("outputs %.3g bounds from the product of TF32-truncated operands, want within 1", worst)
	}
	if fromExact <= 1 || fromNearest <= 1 {
		t.Errorf("outputs within %.3g and %.3g bounds of the exact and the round-to-nearest products: the test cannot see truncation", fromExact, fromNearest)
	}
}
