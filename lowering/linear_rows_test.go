package lowering

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/widejit/widejit/graph"
)

// TestLinearFixtures runs the small-row Linear fixtures (M = 1, 2, 3, 7; N and K not multiples
// of 16; bias, GELU and hardswish epilogues; squeeze-excite 1x1 convolutions) against PyTorch:
// the dots whose few rows stream the weight in chunks of k (jit/cpu's gemmStreamKC).
func TestLinearFixtures(t *testing.T) { checkFamilyFixtures(t, "linear") }

// TestLayerScaleRowsOverChannels: in the ConvNeXt fixture the layer scale and residual add
// (channels first, width 5) read the second Linear's channels-last output; their kernel walks
// channels as its rows (the output stored through its strides), so that output's rows load
// contiguously. TestLinearFixtures checks the values against PyTorch.
func TestLayerScaleRowsOverChannels(t *testing.T) {
	g := loadFixtureGraph(t, filepath.Join("testdata", "linear", "convnext_n3"))
	plan, err := Lower(g, Options{Device: testDevice("cpu")})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, l := range plan.Launches {
		if !strings.Contains(l.Kernel.Source.Fn, "mul_add") {
			continue
		}
		found++
		require.Contains(t, l.Kernel.Consts, "BLOCK_R", "%s walks rows", l.Kernel.Source.Fn)
		require.Equal(t, int64(32), l.Kernel.Consts["BLOCK_C"], "%s: rows of the 24 channels", l.Kernel.Source.Fn)
	}
	require.Equal(t, 2, found, "one layer scale and residual add kernel per block:\n%s", plan)
}

// TestLinearFixturesAVX2 runs them again with AVX-512 off (GODEBUG=cpu.avx512f=off, read when
// a process starts: a child test process), so the AVX2/FMA kernels are checked too.
func TestLinearFixturesAVX2(t *testing.T) {
	if os.Getenv("WIDEJIT_TEST_AVX2_CHILD") != "" {
		if name := cpuKernels(); strings.Contains(name, "AVX-512") {
			t.Fatalf("child test process: GODEBUG=cpu.avx512f=off, yet the CPU device chose %s", name)
		}
		return
	}
	if name := cpuKernels(); !strings.Contains(name, "AVX-512") {
		t.Skipf("no AVX-512 kernels here (%s): TestLinearFixtures already runs the AVX2 ones", name)
	}
	cmd := exec.Command(os.Args[0], "-test.count=1", "-test.v", "-test.run", "^(TestLinearFixturesAVX2|TestLinearFixtures)$")
	cmd.Env = append(os.Environ(), "GODEBUG=cpu.avx512f=off", "WIDEJIT_TEST_AVX2_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the fixtures under GODEBUG=cpu.avx512f=off: %v\n%s", err, out)
	}
	for _, want := range []string{"--- PASS: TestLinearFixturesAVX2", "--- PASS: TestLinearFixtures/small_rows_n3/cpu",
		"--- PASS: TestLinearFixtures/small_rows_n1/fused-batched",
		"--- PASS: TestLinearFixtures/convnext_n3/cpu"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("the child test process did not report %q:\n%s", want, out)
		}
	}
}

// A CPU Linear on 3 rows a model or fewer, or on up to 32 rows over K >= 256, reads its
// weight [out, in] as it is stored (matmul.py's tl.trans form, which jit/cpu multiplies in
// place: its gemv path), with no prepare launch transposing it; otherwise the weight is
// transposed once at load. The fixtures (TestLinearFixtures, both kernel variants) check the
// values against PyTorch.
func TestFewRowLinearsReadWeightsInPlace(t *testing.T) {
	for _, c := range []struct {
		rows, k int
		gemv    bool
	}{{1, 70, true}, {3, 70, true}, {4, 70, false}, {32, 70, false}, {4, 256, true}, {32, 300, true}, {33, 300, false}} {
		rows, k, gemv := c.rows, c.k, c.gemv
		g, err := graph.Parse("linear.json", []byte(fmt.Sprintf(`{"format": "widejit.graph/v1", "n": 3,
  "inputs": [{"name": "x", "shape": [%d, %d], "dtype": "float32", "per_model": true}],
  "params": [{"name": "w", "shape": [130, %d], "dtype": "float32"}, {"name": "b", "shape": [130], "dtype": "float32"}],
  "nodes": [{"name": "fc", "op": "linear", "inputs": ["x"], "params": {"weight": "w", "bias": "b"}, "attrs": {"in_features": %d, "out_features": 130, "bias": true}},
    {"name": "act", "op": "sigmoid", "inputs": ["fc"]}],
  "outputs": ["act"], "init": {"seed": 1}}`, rows, k, k, k)), graph.Options{})
		require.NoError(t, err)
		plan, err := Lower(g, Options{Device: testDevice("cpu")})
		require.NoError(t, err)
		var mm *Launch
		for _, l := range plan.Launches {
			if l.Kernel.Template == "matmul.py" {
				mm = l
			}
			require.False(t, gemv && l.Prepare, "%d rows: a prepare launch %s:\n%s", rows, l.Kernel.Source.Fn, Explain(plan))
		}
		require.NotNil(t, mm, Explain(plan))
		require.Equal(t, gemv, strings.Contains(mm.Kernel.Source.Text, "tl.trans(bt)"), "%d rows, K = %d:\n%s", rows, k, mm.Kernel.Source.Text)
		for _, a := range mm.Args {
			if a.Name == "b_ptr" {
				require.Equal(t, gemv, a.Buf.Kind == ParamBuffer, "%d rows: B is %s", rows, a.Buf.Name)
			}
		}
		require.Equal(t, gemv, strings.Contains(Explain(plan), "the CPU's gemv path"), Explain(plan))
		require.Contains(t, mm.Kernel.Source.Text, "1.0 / (1.0 + tl.exp(-", "the sigmoid stays fused")
	}
}
