package lowering

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/testkit"
	"github.com/widejit/widejit/internal/testkit/ptxkit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx"
	"github.com/widejit/widejit/jit/ptx/ptxemu"
	"github.com/widejit/widejit/triton"
	"github.com/widejit/widejit/triton/ir"
)

// The fp16 and bf16 fixtures (testdata/half, made by make_half_fixtures.py): every convolution
// path (transposed ones in fp16 only), pooling, attention (causal and key-padding masked, with weights), LSTM/GRU/RNN and a fused MLP,
// with the element-wise and norm ops around them, in each half dtype.
//
// bfloat16: expected.safetensors holds PyTorch's own bf16 outputs (its CPU runs these ops in
// bf16, rounding every op's result), compared with testkit.CompareTensors' bf16 tolerance.
// float16: PyTorch 1.13's CPU has no fp16 convolution or matmul, so the exporter computed
// expected.safetensors with the fp32 modules on the same rounded weights and inputs, rounded to
// float16. widejit computes every dot in fp32 from those values and rounds where PyTorch on a
// GPU stores a value (each kernel's output, attention's probabilities before their dot with V,
// the MLP's hidden activation), so it differs from that reference by the two final roundings
// (u = 2^-11 of the output each) and by the roundings of the intermediates that later dots
// read: each of a dot's K operands off by up to u of its size, random in sign, about
// u * sqrt(K) of the output's scale. halfReduction is each fixture's longest reduction K.
var halfReduction = map[string]int{
	"convs":      200, // the 5x5 convolution over 8 channels
	"attention":  16,  // the projections over d = 16
	"recurrent":  10,  // the LSTM's hidden state
	"mlp":        67,  // the MLP's hidden layer
	"transposed": 45,  // ConvTranspose2d: 5 channels x 9 taps (float16 only)
}

// checkHalfOutputs compares outs with the fixture dir's expected outputs (see above).
func checkHalfOutputs(t *testing.T, dir string, outs map[string]*safetensors.Tensor) {
	t.Helper()
	model, dtype, _ := strings.Cut(filepath.Base(dir), "_")
	for name, w := range testkit.ReadTensors(t, filepath.Join(dir, "expected.safetensors")) {
		got := outs[name]
		if got == nil {
			t.Errorf("output %s missing", name)
			continue
		}
		half := strings.HasPrefix(dtype, "float16")
		if want := map[bool]safetensors.DType{false: safetensors.BF16, true: safetensors.F16}[half]; got.DType != want {
			t.Errorf("output %s is %s, want the graph's dtype %s", name, got.DType, want)
		}
		if !half {
			if err := testkit.CompareTensors(got, w); err != nil {
				t.Errorf("output %s: %v", name, err)
			}
			continue
		}
		if err := testkit.CompareTensorsRTol(got, w, math.Ldexp(1, -11)*(3+math.Sqrt(float64(halfReduction[model])))); err != nil {
			t.Errorf("output %s: %v", name, err)
		}
	}
}

func halfFixtures(t *testing.T) []string {
	dirs, _ := filepath.Glob("testdata/half/*_n3")
	if len(dirs) != 2*len(halfReduction)-1 {
		t.Fatalf("%d half fixtures, want %d: run /usr/bin/python3 lowering/testdata/make_half_fixtures.py", len(dirs), 2*len(halfReduction)-1)
	}
	return dirs
}

// The GPU plans of the half fixtures, on the PTX emulator (sm_80: the dots on tensor cores
// where their tiles allow); the convolutions also through the row kernel (conv_rows.py) and
// the depthwise ones through the implicit GEMM.
func TestHalfFixturesOnEmulatedPTX(t *testing.T) {
	for _, dir := range halfFixtures(t) {
		dir := dir
		t.Run(filepath.Base(dir), func(t *testing.T) { runHalfOnEmulator(t, dir) })
		if strings.HasPrefix(filepath.Base(dir), "convs_") {
			t.Run(filepath.Base(dir)+"/rows", func(t *testing.T) {
				convRowAlways, convDirectDepthwise = true, false
				defer func() { convRowAlways, convDirectDepthwise = false, true }()
				runHalfOnEmulator(t, dir)
			})
		}
	}
}

func runHalfOnEmulator(t *testing.T, dir string) { checkHalfOutputs(t, dir, runOnEmulatedPTX(t, dir)) }

// runOnEmulatedPTX runs the GPU plan of fixture dir on its inputs on the PTX emulator (sm_80).
func runOnEmulatedPTX(t *testing.T, dir string) map[string]*safetensors.Tensor {
	t.Helper()
	g := loadFixtureGraph(t, dir)
	plan, err := Lower(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewTestRunner(plan, ptxemu.NewDevice(ptx.Target{Arch: "sm_80"}, ptx.ParamTypes), testCompiler, g)
	if err != nil {
		t.Fatalf("prepare: %v\nplan:\n%s", err, plan)
	}
	defer r.Close()
	outs, err := r.Run(testkit.ReadTensors(t, filepath.Join(dir, "inputs.safetensors")))
	if err != nil {
		t.Fatalf("run: %v\nplan:\n%s", err, plan)
	}
	return outs
}

// The CPU runs the same graphs the same way (fp32 arithmetic on the rounded values, results
// rounded to the graph's dtype where they are stored).
func TestHalfFixturesCPU(t *testing.T) {
	for _, dir := range halfFixtures(t) {
		dir := dir
		t.Run(filepath.Base(dir), func(t *testing.T) {
			g := loadFixtureGraph(t, dir)
			outs := runPlanCPU(t, g, Options{Device: testDevice("cpu")}, testkit.ReadTensors(t, filepath.Join(dir, "inputs.safetensors")))
			checkHalfOutputs(t, dir, outs)
		})
	}
}

// No kernel of the half fixtures' plans (GPU and CPU) accumulates or multiplies in fp16 or
// bf16: every dot accumulates in fp32, and no arithmetic or reduction has a half result (half
// values are only loaded, converted, fed to dots and stored). Every family is among them.
func TestHalfKernelsComputeInFP32(t *testing.T) {
	families := map[string]bool{}
	for _, dir := range halfFixtures(t) {
		g := loadFixtureGraph(t, dir)
		for _, v := range []struct {
			opts       Options
			rows, gemm bool // convRowAlways, and !convDirectDepthwise
		}{{Options{}, false, false}, {Options{Device: testDevice("cpu")}, false, false}, {Options{NoFusion: true}, true, true}} {
			convRowAlways, convDirectDepthwise = v.rows, !v.gemm
			plan, err := Lower(g, v.opts)
			convRowAlways, convDirectDepthwise = false, true
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			for _, l := range plan.Launches {
				src, spec := l.Kernel.Source, l.Spec()
				f, err := triton.Specialize(src.File, src.Text, src.Fn, spec.Sig, spec.Consts)
				if err != nil {
					t.Fatalf("%s %s: %v", dir, src.Fn, err)
				}
				families[l.Kernel.Template] = true
				if bad := halfArithmetic(f.Body); bad != "" {
					t.Errorf("%s %s (%s): %s", dir, src.Fn, l.Kernel.Template, bad)
				}
			}
		}
	}
	for _, tmpl := range []string{"matmul.py", "mlp.py", "conv.py", "conv_rows.py", "conv_depthwise.py", "conv_flat.py", "conv_nd.py",
		"attention.py", "rnn.py", "norm.py", "elementwise.py", "pool.py", "pool_rows.py"} {
		if !families[tmpl] {
			t.Errorf("no %s kernel in the half fixtures' plans: the check misses a family", tmpl)
		}
	}
}

// halfArithmetic names the first instruction of b (nested regions included) that rounds in a
// half dtype: a dot not accumulating in fp32, or arithmetic, math or a reduction with an fp16
// or bf16 result (min, max, neg and abs are exact and allowed).
func halfArithmetic(b *ir.Block) string {
	for _, in := range b.Instrs {
		for _, r := range in.Regions {
			if s := halfArithmetic(r); s != "" {
				return s
			}
		}
		if len(in.Results) == 0 {
			continue
		}
		res := in.Results[0].Type.Elem
		switch {
		case in.Op == ir.Dot && res != ir.F32:
			return fmt.Sprintf("a dot accumulates in %s", res)
		case res != ir.F16 && res != ir.BF16:
		case in.Op == ir.Min || in.Op == ir.Max || in.Op == ir.Neg || in.Op == ir.Abs:
		case in.Op.IsElementwise() || in.Op == ir.Reduce:
			return fmt.Sprintf("%s computes in %s", in.Op, res)
		}
	}
	return ""
}

// halfPTXArithmetic is PTX arithmetic rounding in fp16 or bf16.
var halfPTXArithmetic = regexp.MustCompile(`\b(add|sub|mul|fma|div|neg|ex2|max|min)(\.\w+)*\.(f16|bf16)(x2)?\b`)

// halfMMA is a tensor-core mma of fp16/bf16 operands; its accumulator type comes first.
var halfMMA = regexp.MustCompile(`mma\.sync\.aligned\.m16n8k16\.row\.col\.(\w+)\.(f16|bf16)\.(f16|bf16)\.(\w+)`)

// Every GPU kernel of the half fixtures' plans assembles with ptxas for sm_80 and sm_90, its
// tensor-core instructions accumulate in fp32 (the families whose tiles fill an mma use them)
// and no instruction computes in fp16 or bf16.
func TestHalfKernelsAssemblePTX(t *testing.T) {
	if testing.Short() {
		t.Skip("assembles every kernel of the half fixtures' plans; skipped with -short")
	}
	ptxas, err := ptx.FindPtxas(".")
	if err != nil {
		t.Skip(err.Error() + " (bash .ci/setup installs ptxas)")
	}
	comp := jit.NewCompiler(jit.CompilerOptions{})
	kernels := ptxkit.NewKernels(comp)
	withMMA := map[string]bool{}
	for _, dir := range halfFixtures(t) {
		g := loadFixtureGraph(t, dir)
		plan, err := Lower(g, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range plan.Launches {
			name := filepath.Base(dir) + "/" + l.Kernel.Source.Fn
			if err := kernels.Add(name, l.Kernel.Source, l.Spec()); err != nil {
				t.Fatal(err)
			}
			a, err := comp.Compile(l.Kernel.Source, l.Spec(), ptx.Target{Arch: "sm_80"})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if m := halfPTXArithmetic.FindString(string(a.Payload)); m != "" {
				t.Errorf("%s: %s rounds in a half dtype", name, m)
			}
			for _, m := range halfMMA.FindAllStringSubmatch(string(a.Payload), -1) {
				withMMA[l.Kernel.Template] = true
				if m[1] != "f32" || m[4] != "f32" {
					t.Errorf("%s: %s accumulates in %s", name, m[0], m[1])
				}
			}
		}
	}
	for _, tmpl := range []string{"matmul.py", "mlp.py", "conv.py", "attention.py"} {
		if !withMMA[tmpl] {
			t.Errorf("no %s kernel of the half fixtures uses fp16/bf16 tensor cores", tmpl)
		}
	}
	kernels.AssembleAll(t, ptxas)
}
