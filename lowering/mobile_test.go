package lowering

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
)

// launchesOf maps each graph node of plan to the templates of the launches serving it.
func launchesOf(plan *Plan) map[string][]string {
	m := map[string][]string{}
	for _, ln := range plan.Launches {
		for _, n := range ln.Nodes {
			m[n] = append(m[n], ln.Kernel.Template)
		}
	}
	return m
}

// launchIntArg is the value of ln's integer argument name, -1 when it has none.
func launchIntArg(ln *Launch, name string) int {
	for _, a := range ln.Args {
		if a.Name == name && a.Kind == IntArg {
			return int(a.Int)
		}
	}
	return -1
}

// TestMobileBlocksFused checks the CPU plans of the mobile blocks (testdata/conv/mobile:
// squeeze-excite scales read by 1x1 convolutions, ShuffleNet's unit) against PyTorch under
// the CPU plan's strategies, and that explain shows no mul kernel where the 1x1 convolution
// is the scaled tensor's only reader (the convolution, conv_flat.py, serves the mul node
// itself; the scaled tensor that is also a graph output keeps its mul kernel), and no copy
// for the channel shuffle but the cat's pass-through half, and no pad kernel in front of a
// unit-stride convolution reading a convolution's output that has other readers. (Its
// strided convolutions reading a convolution's output check those plans against PyTorch.)
func TestMobileBlocksFused(t *testing.T) {
	cpuOpts := Options{Device: testDevice("cpu")}
	for _, n := range []int{1, 3} {
		dir := fmt.Sprintf("testdata/conv/mobile_n%d", n)
		g, err := graph.Load(filepath.Join(dir, "graph.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct {
			name string
			opts Options
		}{{"cpu", cpuOpts}, {"cpu-sequential", Options{Device: cpuOpts.Device, Strategy: Sequential}},
			{"cpu-model-major", Options{Device: cpuOpts.Device, ModelMajor: true}}} {
			t.Run(fmt.Sprintf("n%d/%s", n, v.name), func(t *testing.T) {
				plan, err := Lower(g, v.opts)
				if err != nil {
					t.Fatal(err)
				}
				served := launchesOf(plan)
				// mul: scale * x before a 32-channel 1x1 (tap-major, BLOCK_K dividing the
				// channels); mul_1: x * scale before a 1x1 in groups of 8 (tap-major, k masked);
				// mul_3: x * scale before a 5-channel 1x1 (K = channels x taps)
				for _, mul := range []string{"mul", "mul_1", "mul_3"} {
					if !slices.Equal(served[mul], []string{"conv_flat.py"}) {
						t.Errorf("%s is served by %v, want the 1x1 convolution reading it (conv_flat.py) alone\n%s", mul, served[mul], Explain(plan))
					}
				}
				// at 3x2 pixels into 40, 33 and 20 channels the input tile is the smaller: scaled
				for _, mul := range []string{"mul_4", "mul_5", "mul_6"} {
					if !slices.Equal(served[mul], []string{"conv_flat.py"}) {
						t.Errorf("%s is served by %v, want the 1x1 convolution reading it (conv_flat.py) alone", mul, served[mul])
					}
				}
				for _, ln := range plan.Launches {
					scalesInput := strings.Contains(ln.Kernel.Source.Text, "b = b * tl.load(s_base")
					if tiny := slices.Contains(ln.Nodes, "tiny_project") || slices.Contains(ln.Nodes, "tiny5_project") || slices.Contains(ln.Nodes, "tiny12_project"); tiny != scalesInput {
						t.Errorf("%s (%v) scales its input tile: %v; want the 3x2-pixel ones alone to", ln.Kernel.Source.Fn, ln.Nodes, scalesInput)
					}
				}
				if !slices.Equal(served["mul_2"], []string{"elementwise.py"}) {
					t.Errorf("mul_2 (also a graph output) is served by %v, want its own element-wise kernel", served["mul_2"])
				}
				if ex := Explain(plan); !strings.Contains(ex, "mul_3 applied by small_project") {
					t.Errorf("explain does not say that small_project applies mul_3:\n%s", ex)
				}
				// the shuffle unit: the branch's 1x1 reads its chunk in place and stores into
				// the shuffled cat; the cat copies its other part (a view) there; the shuffle
				// itself is a view. The 4-group shuffle, whose parts straddle its groups,
				// copies as a plain cat, then shuffles.
				if !slices.Equal(served["branch"], []string{"conv_flat.py"}) || !slices.Equal(served["cat"], []string{"elementwise.py"}) {
					t.Errorf("branch is served by %v and cat by %v, want the branch's conv_flat.py and one copy of the chunk\n%s", served["branch"], served["cat"], Explain(plan))
				}
				// the copy into the cat's channel-strided slice moves whole 9x7 planes a row
				// (collapseDims), not image rows of 7 gathered element by element
				for _, ln := range plan.Launches {
					if slices.Equal(ln.Nodes, []string{"cat"}) {
						if got := launchIntArg(ln, "size_last"); got != 9*7 {
							t.Errorf("%s copies rows of %d elements, want whole planes of 63\n%s", ln.Kernel.Source.Fn, got, ln.Kernel.Source.Text)
						}
					}
				}
				for _, ln := range plan.Launches {
					for _, node := range ln.Nodes {
						if strings.Contains(node, "input made contiguous") || strings.Contains(node, "reshape of a strided view") && !strings.HasPrefix(node, "view_2 ") {
							t.Errorf("%s copies: %s\n%s", ln.Kernel.Source.Fn, node, Explain(plan))
						}
					}
				}
				// block outputs with several readers: their convolutions store the padded
				// copies res_c and res_d read, no pad kernel
				for _, c := range []string{"res_c", "res_d"} {
					if served[c+" (input zero-padded)"] != nil {
						t.Errorf("%s reads a pad kernel's copy\n%s", c, Explain(plan))
					}
				}
				if !slices.Equal(served["cat_1"], []string{"elementwise.py", "elementwise.py"}) || len(served["view_2 (reshape of a strided view)"]) != 1 {
					t.Errorf("cat_1 is served by %v, want two copies, then a shuffle copy\n%s", served["cat_1"], Explain(plan))
				}
				checkFixtureCPU(t, dir, v.opts)
			})
		}
	}
}

// TestPaddedCopies runs the mobile blocks with and without padded copies stored by the
// producing convolutions (takePaddedCopy): the pad kernels come back without them, and both
// plans match PyTorch.
func TestPaddedCopies(t *testing.T) {
	dir := "testdata/conv/mobile_n3"
	g, err := graph.Load(filepath.Join(dir, "graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { convPaddedCopies = true }()
	for _, on := range []bool{false, true} {
		convPaddedCopies = on
		plan, err := Lower(g, Options{Device: testDevice("cpu")})
		if err != nil {
			t.Fatal(err)
		}
		padded := launchesOf(plan)["res_c (input zero-padded)"] != nil
		if padded == on {
			t.Errorf("convPaddedCopies=%v: res_c reads a pad kernel's copy: %v\n%s", on, padded, Explain(plan))
		}
		if ex := Explain(plan); on != strings.Contains(ex, "stores a copy of its output zero-padded to [13, 11] planes for res_d") {
			t.Errorf("convPaddedCopies=%v: explain does not say that res_c's producer stores res_d's copy:\n%s", on, ex)
		}
		checkFixtureCPU(t, dir, Options{Device: testDevice("cpu")})
	}
}

// TestPointwiseSamplesInner: a pointwise convolution whose samples each fit one pixel tile
// (the mobile blocks' small maps) numbers its programs sample fastest (conv_flat.py's
// SamplesInner: the plain grid's first two axes swapped, [B x groups, channel tiles, N]); a
// dense convolution does not; the plans match PyTorch with that order and with it off.
func TestPointwiseSamplesInner(t *testing.T) {
	const dir = "testdata/conv/mobile_n3"
	grids := func() (map[string][3]int, map[string]bool) {
		plan := lowerGraphFile(t, filepath.Join(dir, "graph.json"), "cpu")
		g, inner := map[string][3]int{}, map[string]bool{}
		for _, ln := range plan.Launches {
			for _, n := range ln.Nodes {
				if ln.Kernel.Template == "conv_flat.py" {
					n = strings.Fields(n)[0]
					g[n], inner[n] = ln.Grid, strings.Contains(ln.Kernel.Source.Text, "bg = tl.program_id(0)")
				}
			}
		}
		return g, inner
	}
	on, inner := grids()
	checkFixtureCPU(t, dir, Options{Device: testDevice("cpu")})
	convSamplesInner = false
	defer func() { convSamplesInner = true }()
	off, innerOff := grids()
	for _, n := range []string{"expand", "project", "small_project", "tiny_project", "grouped"} {
		if !inner[n] {
			t.Errorf("%s: not samples inner (grid %v)", n, on[n])
		}
	}
	for _, n := range []string{"small", "c3", "tiny"} {
		if inner[n] {
			t.Errorf("dense %s runs samples inner", n)
		}
	}
	for n, in := range inner {
		if o := off[n]; in && on[n] != [3]int{o[1], o[0], o[2]} {
			t.Errorf("%s: grid %v samples inner, %v plain: want the first two axes swapped", n, on[n], o)
		}
		if innerOff[n] {
			t.Errorf("%s: samples inner with convSamplesInner off", n)
		}
	}
	checkFixtureCPU(t, dir, Options{Device: testDevice("cpu")})
}

// TestPointwiseSamplesInnerAVX2 is TestPointwiseSamplesInner with AVX-512 off (checkFixturesAVX2).
func TestPointwiseSamplesInnerAVX2(t *testing.T) {
	checkFixturesAVX2(t, "TestPointwiseSamplesInnerAVX2", "^(TestPointwiseSamplesInnerAVX2|TestPointwiseSamplesInner)$",
		"--- PASS: TestPointwiseSamplesInner")
}

// TestEpilogueComputesRepeatsOnce: an eval BatchNorm fused into a convolution's epilogue,
// acc * (w / sqrt(var + eps)) + (b - mean * w / sqrt(var + eps)), computes its one square
// root once (exprRenderer.named), and the plan's outputs are PyTorch's.
func TestEpilogueComputesRepeatsOnce(t *testing.T) {
	const dir = "testdata/conv/mobile_n3"
	plan := lowerGraphFile(t, filepath.Join(dir, "graph.json"), "cpu")
	found := false
	for _, ln := range plan.Launches {
		if !slices.Contains(ln.Ops, "batch_norm2d") || slices.Contains(ln.Ops[slices.Index(ln.Ops, "batch_norm2d")+1:], "batch_norm2d") {
			continue
		}
		found = true
		if n := strings.Count(ln.Kernel.Source.Text, "tl.sqrt("); n != 1 {
			t.Errorf("%s (%v): %d square roots, want 1", ln.Kernel.Source.Fn, ln.Nodes, n)
		}
	}
	if !found {
		t.Fatal("no kernel with one BatchNorm in the plan")
	}
	checkFixtureCPU(t, dir, Options{Device: testDevice("cpu")})
}
