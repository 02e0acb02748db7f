package lowering

import (
	"fmt"
	"math"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/testkit/ptxkit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx"
)

// PyTorch propagates NaN through relu, the max reductions (amax, max_pool) and softmax, while
// Triton's tl.maximum / tl.max are maxnum (a NaN operand is ignored). These tests feed inputs
// with NaN at known places and check, against straightforward Go loops, that every output
// that reads a NaN is NaN and every other output keeps its finite value.

const nanTestN = 3

var nan32 = float32(math.NaN())

func isNaN32(v float32) bool { return v != v }

var (
	posInf32 = float32(math.Inf(1))
	negInf32 = float32(math.Inf(-1))
)

// nanInput is [N, *shape] of finite values of both signs, NaN at the flat indices given and
// the values of special at theirs (the infinities, which the NaN checks must not catch).
func nanInput(shape []int, special map[int]float32, nanAt ...int) (*safetensors.Tensor, []float32) {
	full := append([]int{nanTestN}, shape...)
	v := make([]float32, numel(full))
	for i := range v {
		v[i] = float32((i*37)%23-11) / 4 // -2.75 .. 2.75
	}
	for i, x := range special {
		v[i] = x
	}
	for _, i := range nanAt {
		v[i] = nan32
	}
	return safetensors.FromFloat32s("x", full, v), v
}

// checkNaNOutput: NaN exactly where want is NaN, finite values within tol elsewhere.
func checkNaNOutput(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d outputs, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range want {
		var msg string
		switch {
		case isNaN32(want[i]) && !isNaN32(got[i]):
			msg = fmt.Sprintf("got %v, want NaN (PyTorch propagates it)", got[i])
		case !isNaN32(want[i]) && isNaN32(got[i]):
			msg = fmt.Sprintf("got NaN, want %v", want[i])
		case math.IsInf(float64(want[i]), 0) && got[i] != want[i]:
			msg = fmt.Sprintf("got %v, want %v", got[i], want[i])
		case !isNaN32(want[i]) && math.Abs(float64(got[i]-want[i])) > tol*(1+math.Abs(float64(want[i]))):
			msg = fmt.Sprintf("got %v, want %v", got[i], want[i])
		}
		if msg != "" {
			t.Errorf("%s: flat index %d: %s", what, i, msg)
			if bad++; bad > 10 {
				t.Fatalf("%s: too many mismatches", what)
			}
		}
	}
}

// countNaN guards against a vacuous test: the reference must have NaN and finite outputs.
func countNaN(t *testing.T, what string, want []float32) {
	t.Helper()
	k := 0
	for _, v := range want {
		if isNaN32(v) {
			k++
		}
	}
	if k == 0 || k == len(want) {
		t.Fatalf("%s: reference has %d NaN of %d outputs; the test needs both kinds", what, k, len(want))
	}
}

// nanGraph is an init graph of N=3 models with input x and output y.
func nanGraph(t *testing.T, inShape []int, nodes, params string) *graph.Graph {
	t.Helper()
	return loadGraphText(t, fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
  "inputs": [{"name": "x", "shape": %s, "dtype": "float32"}],
  "params": [%s],
  "nodes": [%s],
  "outputs": ["y"], "init": {"seed": 5}}`, nanTestN, jsonInts(inShape), params, nodes))
}

func runNaNGraph(t *testing.T, inShape []int, nodes, params string, x *safetensors.Tensor) []float32 {
	t.Helper()
	g := nanGraph(t, inShape, nodes, params)
	return f32s(t, runPlanCPU(t, g, Options{}, map[string]*safetensors.Tensor{"x": x})["y"])
}

// The NaN-propagating forms assemble with ptxas too (softplus, amax and max_pool are not in
// the examples that jit/ptx assembles).
func TestNaNKernelsAssemblePTX(t *testing.T) {
	if testing.Short() {
		t.Skip("assembles kernels with ptxas; skipped with -short")
	}
	ptxas, err := ptx.FindPtxas(".")
	if err != nil {
		t.Skip(err.Error() + " (bash .ci/setup installs ptxas)")
	}
	kernels := ptxkit.NewKernels(jit.NewCompiler(jit.CompilerOptions{}))
	for i, tc := range []struct {
		shape []int
		nodes string
	}{
		{[]int{4, 5}, `{"name": "y", "op": "softplus", "inputs": ["x"], "attrs": {"beta": 1.0, "threshold": 2.0}}`},
		{[]int{4, 5}, `{"name": "y", "op": "relu", "inputs": ["x"]}`},
		{[]int{4, 6}, `{"name": "y", "op": "amax", "inputs": ["x"], "attrs": {"dim": 0}}`},
		{[]int{4, 6}, `{"name": "y", "op": "amax", "inputs": ["x"], "attrs": {"dim": null}}`},
		{[]int{1, 2, 5, 5}, `{"name": "y", "op": "max_pool2d", "inputs": ["x"], "attrs": {"kernel_size": 3, "stride": 1, "padding": 1}}`},
	} {
		plan, err := Lower(nanGraph(t, tc.shape, tc.nodes, ""), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range plan.Launches {
			if err := kernels.Add(fmt.Sprintf("nan%d/%s", i, l.Kernel.Source.Fn), l.Kernel.Source, l.Spec()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if kernels.Len() < 5 {
		t.Fatalf("only %d distinct kernels collected", kernels.Len())
	}
	kernels.AssembleAll(t, ptxas)
}

func TestNaNElementwise(t *testing.T) {
	shape := []int{8, 16} // over 32 elements: the CPU's AVX2 loops run, not only their tails
	for _, tc := range []struct {
		op, attrs string
		ref       func(x float64) float64
	}{
		{"relu", `{}`, func(x float64) float64 { return math.Max(x, 0) }},
		{"leaky_relu", `{"negative_slope": 0.1}`, func(x float64) float64 {
			if x >= 0 {
				return x
			}
			return 0.1 * x
		}},
		{"elu", `{"alpha": 1.0}`, func(x float64) float64 {
			if x > 0 {
				return x
			}
			return math.Exp(x) - 1
		}},
		{"softplus", `{"beta": 1.0, "threshold": 2.0}`, func(x float64) float64 {
			if x > 2 {
				return x
			}
			return math.Log1p(math.Exp(x))
		}},
		{"hardswish", `{}`, func(x float64) float64 { return x * math.Min(math.Max(x+3, 0), 6) / 6 }},
		{"hardsigmoid", `{}`, func(x float64) float64 { return math.Min(math.Max(x+3, 0), 6) / 6 }},
		{"relu6", `{}`, func(x float64) float64 { return math.Min(math.Max(x, 0), 6) }},
		{"hardtanh", `{"min_val": -0.5, "max_val": 0.25}`, func(x float64) float64 { return math.Min(math.Max(x, -0.5), 0.25) }},
		{"clamp", `{"min": -0.75}`, func(x float64) float64 { return math.Max(x, -0.75) }},
		{"clamp", `{"min": null, "max": 0.5}`, func(x float64) float64 { return math.Min(x, 0.5) }},
		{"sin", `{}`, math.Sin},
		{"cos", `{}`, math.Cos},
		{"silu", `{}`, func(x float64) float64 { return x / (1 + math.Exp(-x)) }},
		{"gelu", `{}`, func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }},
	} {
		t.Run(tc.op, func(t *testing.T) {
			x, xv := nanInput(shape, map[int]float32{23: posInf32, 40: negInf32, 200: negInf32}, 0, 7, 59, 300)
			got := runNaNGraph(t, shape, fmt.Sprintf(`{"name": "y", "op": %q, "inputs": ["x"], "attrs": %s}`, tc.op, tc.attrs), "", x)
			want := make([]float32, len(xv))
			for i, v := range xv {
				if isNaN32(v) {
					want[i] = nan32 // every element-wise op maps NaN to NaN
				} else {
					want[i] = float32(tc.ref(float64(v)))
				}
			}
			countNaN(t, tc.op, want)
			checkNaNOutput(t, tc.op, got, want, 1e-5)
		})
	}
}

// amaxRef reduces x viewed as [outer, r, inner] over r, NaN if any element read is NaN.
func amaxRef(x []float32, outer, r, inner int) []float32 {
	out := make([]float32, outer*inner)
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			m := float32(math.Inf(-1))
			for k := 0; k < r; k++ {
				v := x[(o*r+k)*inner+i]
				if isNaN32(v) || isNaN32(m) {
					m = nan32
				} else if v > m {
					m = v
				}
			}
			out[o*inner+i] = m
		}
	}
	return out
}

func TestNaNAmax(t *testing.T) {
	shape := []int{4, 6} // per model; x is [3, 4, 6]
	for _, tc := range []struct {
		name, dim       string
		outer, r, inner int
	}{
		{"last dim", `1`, nanTestN * 4, 6, 1},
		{"leading dim", `0`, nanTestN, 4, 6},
		{"all dims", `null`, nanTestN, 24, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// model 0 row 1, model 2 row 3 (last column): model 1 stays finite
			x, xv := nanInput(shape, map[int]float32{1*24 + 0*6 + 1: posInf32, 1*24 + 2*6 + 0: negInf32}, 0*24+1*6+2, 2*24+3*6+5)
			got := runNaNGraph(t, shape, fmt.Sprintf(`{"name": "y", "op": "amax", "inputs": ["x"], "attrs": {"dim": %s}}`, tc.dim), "", x)
			want := amaxRef(xv, tc.outer, tc.r, tc.inner)
			countNaN(t, "amax "+tc.name, want)
			checkNaNOutput(t, "amax "+tc.name, got, want, 0)
		})
	}
}

func TestNaNMaxPool2d(t *testing.T) {
	const c, h, w = 2, 5, 5
	shape := []int{1, c, h, w}
	for _, tc := range []struct {
		name, attrs    string
		k, stride, pad int
	}{
		{"2x2 stride 2", `{"kernel_size": 2, "stride": 2}`, 2, 2, 0},
		{"3x3 stride 1 pad 1", `{"kernel_size": 3, "stride": 1, "padding": 1}`, 3, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// model 0 channel 1 at (1,1); model 2 channel 0 at (3,4)
			// model 1: +inf in channel 0, -inf in channel 1
			x, xv := nanInput(shape, map[int]float32{1*50 + 0*25 + 2*5 + 2: posInf32, 1*50 + 1*25 + 0*5 + 0: negInf32}, 0*50+1*25+1*5+1, 2*50+0*25+3*5+4)
			node := fmt.Sprintf(`{"name": "y", "op": "max_pool2d", "inputs": ["x"], "attrs": %s}`, tc.attrs)
			got := runNaNGraph(t, shape, node, "", x)
			// CPU plans pool row by row (pool_rows.py)
			gotCPU := f32s(t, runPlanCPU(t, nanGraph(t, shape, node, ""), Options{Device: testDevice("cpu")},
				map[string]*safetensors.Tensor{"x": x})["y"])
			oh := (h+2*tc.pad-tc.k)/tc.stride + 1
			ow := (w+2*tc.pad-tc.k)/tc.stride + 1
			var want []float32
			for plane := 0; plane < nanTestN*c; plane++ {
				for i := 0; i < oh; i++ {
					for j := 0; j < ow; j++ {
						m := float32(math.Inf(-1))
						for a := 0; a < tc.k; a++ {
							for b := 0; b < tc.k; b++ {
								y, z := i*tc.stride-tc.pad+a, j*tc.stride-tc.pad+b
								if y < 0 || y >= h || z < 0 || z >= w {
									continue
								}
								v := xv[(plane*h+y)*w+z]
								if isNaN32(v) || isNaN32(m) {
									m = nan32
								} else if v > m {
									m = v
								}
							}
						}
						want = append(want, m)
					}
				}
			}
			countNaN(t, "max_pool2d "+tc.name, want)
			checkNaNOutput(t, "max_pool2d "+tc.name, got, want, 0)
			checkNaNOutput(t, "max_pool2d (CPU plan) "+tc.name, gotCPU, want, 0)
		})
	}
}

func TestNaNSoftmax(t *testing.T) {
	shape := []int{4, 6}
	for _, tc := range []struct {
		op, dim         string
		outer, r, inner int
	}{
		{"softmax", "-1", nanTestN * 4, 6, 1},
		{"log_softmax", "-1", nanTestN * 4, 6, 1},
		{"softmax", "0", nanTestN, 4, 6},
	} {
		t.Run(tc.op+" dim "+tc.dim, func(t *testing.T) {
			// -inf is an ordinary element of softmax (probability 0)
			x, xv := nanInput(shape, map[int]float32{1*24 + 1*6 + 1: negInf32}, 0*24+1*6+2, 2*24+3*6+5)
			got := runNaNGraph(t, shape, fmt.Sprintf(`{"name": "y", "op": %q, "inputs": ["x"], "attrs": {"dim": %s}}`, tc.op, tc.dim), "", x)
			want := make([]float32, len(xv))
			for o := 0; o < tc.outer; o++ {
				for i := 0; i < tc.inner; i++ {
					at := func(k int) int { return (o*tc.r+k)*tc.inner + i }
					hasNaN, m := false, math.Inf(-1)
					for k := 0; k < tc.r; k++ {
						v := float64(xv[at(k)])
						hasNaN = hasNaN || math.IsNaN(v)
						m = math.Max(m, v)
					}
					s := 0.0
					for k := 0; k < tc.r; k++ {
						s += math.Exp(float64(xv[at(k)]) - m)
					}
					for k := 0; k < tc.r; k++ {
						switch {
						case hasNaN: // torch: a NaN anywhere in the softmax run makes the whole run NaN
							want[at(k)] = nan32
						case tc.op == "softmax":
							want[at(k)] = float32(math.Exp(float64(xv[at(k)])-m) / s)
						default:
							want[at(k)] = float32(float64(xv[at(k)]) - m - math.Log(s))
						}
					}
				}
			}
			countNaN(t, tc.op, want)
			checkNaNOutput(t, tc.op+" dim "+tc.dim, got, want, 1e-5)
		})
	}
}

// linearRelu is relu(x W^T + b) per model, as float64 sums.
func linearRelu(x, w, b []float32, model, rows, in, out int) []float32 {
	y := make([]float32, rows*out)
	for r := 0; r < rows; r++ {
		for o := 0; o < out; o++ {
			s := float64(b[model*out+o])
			for k := 0; k < in; k++ {
				s += float64(x[(model*rows+r)*in+k]) * float64(w[(model*out+o)*in+k])
			}
			if s < 0 { // NaN passes, as in torch.relu
				s = 0
			}
			y[r*out+o] = float32(s)
		}
	}
	return y
}

// A Linear with a fused relu epilogue, and two Linears with the relu between them (the fused
// MLP's hidden activation): a NaN in an input row must reach every output of that row.
func TestNaNLinearReluEpilogue(t *testing.T) {
	const rows, in, hid, out = 4, 8, 16, 5
	params := fmt.Sprintf(`{"name": "w1", "shape": [%d, %d], "dtype": "float32"}, {"name": "b1", "shape": [%d], "dtype": "float32"},
    {"name": "w2", "shape": [%d, %d], "dtype": "float32"}, {"name": "b2", "shape": [%d], "dtype": "float32"}`, hid, in, hid, out, hid, out)
	fc1 := fmt.Sprintf(`{"name": "fc1", "op": "linear", "inputs": ["x"], "params": {"weight": "w1", "bias": "b1"}, "attrs": {"in_features": %d, "out_features": %d}}`, in, hid)
	fc2 := fmt.Sprintf(`{"name": "y", "op": "linear", "inputs": ["act"], "params": {"weight": "w2", "bias": "b2"}, "attrs": {"in_features": %d, "out_features": %d}}`, hid, out)
	for _, tc := range []struct {
		name, nodes string
		twoLayers   bool
	}{
		{"linear+relu", fc1 + `, {"name": "y", "op": "relu", "inputs": ["fc1"]}`, false},
		{"linear+relu+linear", fc1 + `, {"name": "act", "op": "relu", "inputs": ["fc1"]}, ` + fc2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shape := []int{rows, in}
			// model 1 row 2, model 2 row 0
			x, xv := nanInput(shape, nil, 1*rows*in+2*in+3, 2*rows*in+0*in+7)
			g := nanGraph(t, shape, tc.nodes, params)
			plan, err := Lower(g, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := f32s(t, runPlanCPU(t, g, Options{}, map[string]*safetensors.Tensor{"x": x})["y"])
			param := func(name string) []float32 {
				v, err := g.ParamFloat32s(name)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			w1, b1, w2, b2 := param("w1"), param("b1"), param("w2"), param("b2")
			var want []float32
			for m := 0; m < nanTestN; m++ {
				h := linearRelu(xv, w1, b1, m, rows, in, hid)
				if !tc.twoLayers {
					want = append(want, h...)
					continue
				}
				for r := 0; r < rows; r++ {
					for o := 0; o < out; o++ {
						s := float64(b2[m*out+o])
						for k := 0; k < hid; k++ {
							s += float64(h[r*hid+k]) * float64(w2[(m*out+o)*hid+k])
						}
						want = append(want, float32(s))
					}
				}
			}
			countNaN(t, tc.name, want)
			checkNaNOutput(t, tc.name, got, want, 1e-4)
			if t.Failed() {
				t.Logf("plan:\n%s", plan)
			}
		})
	}
}
