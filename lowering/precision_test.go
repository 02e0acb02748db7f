package lowering

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx"
)

// dotTemplates are the templates with tl.dot: the ones --float32-matmul-precision governs.
var dotTemplates = map[string]bool{"matmul.py": true, "mlp.py": true, "conv.py": true, "conv_flat.py": true,
	"conv_rows.py": true, "conv_nd.py": true, "attention.py": true, "rnn.py": true}

var (
	tf32MMA = regexp.MustCompile(`mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32\.tf32\.f32`)
	bf16MMA = regexp.MustCompile(`mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32`)
)

// precisionPTX lowers the fp32 fixtures of every dot family (Linear/matmul, MLP, convolutions,
// attention, recurrent layers) for a GPU at precision and returns the PTX (sm_80) of each
// distinct dot kernel, by name.
func precisionPTX(t *testing.T, precision string) map[string]string {
	t.Helper()
	dirs := []string{"fixtures/matmuls_n3", "fixtures/blocks_n3", "conv/convs_a_n3", "conv/convs_3d_n3",
		"attention/attention_a_n3", "rnn/lstm_n3", "rnn/gru_n3", "idioms/transformers_n3",
		"idioms/halfmlp_bf16_n3"} // bf16 data: bf16 tensor cores at every precision
	comp := jit.NewCompiler(jit.CompilerOptions{})
	out := map[string]string{}
	for _, d := range dirs {
		g, err := graph.Load(filepath.Join("testdata", d, "graph.json"))
		if err != nil {
			t.Fatal(err)
		}
		plan, err := Lower(g, Options{Float32MatmulPrecision: precision})
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		for _, l := range plan.Launches {
			if !dotTemplates[l.Kernel.Template] {
				continue
			}
			if got, want := l.Kernel.Consts["INPUT_PRECISION"], (Options{Float32MatmulPrecision: precision}).inputPrecision(); got != want {
				t.Errorf("%s %s: INPUT_PRECISION %v, want %s", d, l.Kernel.Source.Fn, got, want)
			}
			a, err := comp.Compile(l.Kernel.Source, l.Spec(), ptx.Target{Arch: "sm_80"})
			if err != nil {
				t.Fatalf("%s %s: %v", d, l.Kernel.Source.Fn, err)
			}
			out[d+"/"+l.Kernel.Template+"/"+l.Kernel.Source.Fn] = string(a.Payload)
		}
	}
	return out
}

// At the default precision no kernel of any family uses TF32 (or bf16) tensor cores on fp32
// data: convolutions and attention once did, silently. At high and medium the fp32 dots go to
// TF32 and bf16 tensor cores; the families whose fixtures have tensor-core shapes show them.
func TestFloat32MatmulPrecisionPTX(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles every dot kernel of the fixtures three times; skipped with -short")
	}
	families := map[string]bool{}
	for name, text := range precisionPTX(t, "") {
		families[strings.Split(name, "/")[2]] = true
		fp32Data := !strings.Contains(name, "_bf16_")
		if tf32MMA.MatchString(text) || strings.Contains(text, "cvt.rna.tf32") || (fp32Data && bf16MMA.MatchString(text)) {
			t.Errorf("%s: TF32 or bf16 tensor cores at the default (highest) precision", name)
		}
	}
	for _, tmpl := range []string{"matmul.py", "mlp.py", "conv.py", "conv_nd.py", "attention.py", "rnn.py"} {
		if !families[tmpl] {
			t.Errorf("no %s kernel among the fixtures' plans: the check misses a family", tmpl)
		}
	}
	for _, c := range []struct {
		precision string
		mma       *regexp.Regexp
	}{{"high", tf32MMA}, {"medium", bf16MMA}} {
		with := map[string]bool{}
		for name, text := range precisionPTX(t, c.precision) {
			if c.mma.MatchString(text) {
				with[strings.Split(name, "/")[2]] = true
			}
		}
		for _, tmpl := range []string{"matmul.py", "conv.py", "attention.py"} {
			if !with[tmpl] {
				t.Errorf("%s: no %s kernel uses %s tensor cores", c.precision, tmpl, c.mma)
			}
		}
	}
	if err := CheckFloat32MatmulPrecision("fast"); err == nil || !strings.Contains(err.Error(), "highest, high, medium") {
		t.Errorf("an unknown precision: %v", err)
	}
}

// The same from SASS (CUDA 12.4's ptxas and cuobjdump): at the default precision no
// instruction of any dot kernel is a TF32 HMMA on sm_90a, while the bf16 fixture's
// dots are HMMAs (so the count is of real tensor-core code).
func TestFloat32MatmulPrecisionSASS(t *testing.T) {
	if testing.Short() {
		t.Skip("assembles every dot kernel of the fixtures; skipped with -short")
	}
	ptxas, err := ptx.FindCUDA12Tool(".", "ptxas")
	if err != nil {
		t.Skip(err.Error())
	}
	cuobjdump, err := ptx.FindCUDA12Tool(".", "cuobjdump")
	if err != nil {
		t.Skip(err.Error())
	}
	check := func(precision string) (tensor, tf32 int) {
		var mods []string
		for _, text := range precisionPTX(t, precision) {
			mods = append(mods, text)
		}
		for _, arch := range []string{"sm_90a"} {
			cubin, _, err := ptx.AssembleCubin(ptxas, arch, ptx.MergeModules("sm_80", mods))
			if err != nil {
				t.Fatal(err)
			}
			sass, err := ptx.Disassemble(cuobjdump, cubin)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range ptx.ParseSASS(sass) {
				c := ptx.Analyze(f).Whole
				tensor, tf32 = tensor+c.Tensor, tf32+c.TF32
			}
		}
		return tensor, tf32
	}
	tensor, tf32 := check("")
	if tf32 != 0 {
		t.Errorf("%d TF32 HMMA instructions at the default precision", tf32)
	}
	if tensor == 0 {
		t.Errorf("no tensor-core instruction at all: the fixtures' kernels no longer exercise mma.sync (fp32 dots use it only at high/medium, but the halfmlp fixture's bf16 ones always)")
	}
}
