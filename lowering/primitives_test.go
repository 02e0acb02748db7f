package lowering

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/testkit"
)

// writeGraph writes graph.json (with "weights") and a weights file of random params, and
// loads it.
func writeGraph(t *testing.T, graphJSON string, params map[string][]int, n int, seed int64) *graph.Graph {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewSource(seed))
	var ts []*safetensors.Tensor
	for name, shape := range params {
		full := append([]int{n}, shape...)
		v := make([]float32, numel(full))
		for i := range v {
			v[i] = float32(r.Float64()*2 - 1)
		}
		ts = append(ts, safetensors.FromFloat32s(name, full, v))
	}
	if err := safetensors.Write(filepath.Join(dir, "weights.safetensors"), ts, nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "graph.json")
	if err := os.WriteFile(path, []byte(graphJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := graph.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func f32s(t *testing.T, ts *safetensors.Tensor) []float32 {
	t.Helper()
	v, err := ts.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// RMSNorm has no PyTorch fixture (torch 1.13 lacks nn.RMSNorm): a straightforward loop is the
// reference. eps null means finfo(float32).eps.
func TestRMSNormAgainstLoop(t *testing.T) {
	for _, n := range []int{1, 3, 8} {
		for _, tc := range []struct {
			shape, norm []int
			eps         string
			epsVal      float64
			affine      bool
		}{
			{[]int{5, 13}, []int{13}, "null", 1.1920928955078125e-07, true},
			{[]int{3, 4, 7}, []int{4, 7}, "0.001", 1e-3, true},
			{[]int{2, 37}, []int{37}, "0.01", 1e-2, false},
		} {
			name := fmt.Sprintf("n%d/%v/%v", n, tc.shape, tc.norm)
			t.Run(name, func(t *testing.T) {
				params := map[string][]int{}
				pdecl, proles := "", ""
				if tc.affine {
					params["w"] = tc.norm
					pdecl = fmt.Sprintf(`{"name": "w", "shape": %s, "dtype": "float32"}`, jsonInts(tc.norm))
					proles = `"params": {"weight": "w"},`
				}
				js := fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
  "inputs": [{"name": "x", "shape": %s, "dtype": "float32"}],
  "params": [%s],
  "nodes": [{"name": "rms", "op": "rms_norm", "inputs": ["x"], %s
             "attrs": {"normalized_shape": %s, "eps": %s, "elementwise_affine": %v}}],
  "outputs": ["rms"], "weights": "weights.safetensors"}`, n, jsonInts(tc.shape), pdecl, proles, jsonInts(tc.norm), tc.eps, tc.affine)
				g := writeGraph(t, js, params, n, 7)
				ins, err := g.GenerateInputs(3)
				if err != nil {
					t.Fatal(err)
				}
				got := f32s(t, runPlanCPU(t, g, Options{}, ins)["rms"])
				x := f32s(t, ins["x"])
				var w []float32
				if tc.affine {
					w, _ = g.ParamFloat32s("w")
				}
				r := numel(tc.norm)
				want := make([]float32, len(x))
				for row := 0; row < len(x)/r; row++ {
					model := row * r / numel(tc.shape)
					ss := 0.0
					for c := 0; c < r; c++ {
						v := float64(x[row*r+c])
						ss += v * v
					}
					scale := 1 / math.Sqrt(ss/float64(r)+tc.epsVal)
					for c := 0; c < r; c++ {
						y := float64(x[row*r+c]) * scale
						if tc.affine {
							y *= float64(w[model*r+c])
						}
						want[row*r+c] = float32(y)
					}
				}
				wt := safetensors.FromFloat32s("rms", append([]int{n}, tc.shape...), want)
				gt := safetensors.FromFloat32s("rms", append([]int{n}, tc.shape...), got)
				if err := testkit.CompareTensors(gt, wt); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// LayerNorm on the CPU's row-block kernel (norm_rows.py) in each of its forms, against a
// float64 loop: a row in one tile, masked (13) or filling it (64), and rows longer than one
// tile (4100 with a masked last block, 8192), where mean and variance accumulate over column
// blocks; the GPU-shaped plan on the same inputs too.
func TestLayerNormRowFormsAgainstLoop(t *testing.T) {
	const n = 2
	for _, r := range []int{13, 64, 4100, 8192} {
		shape := []int{3, r}
		js := fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
  "inputs": [{"name": "x", "shape": %s, "dtype": "float32"}],
  "params": [{"name": "w", "shape": [%d], "dtype": "float32"}, {"name": "b", "shape": [%d], "dtype": "float32"}],
  "nodes": [{"name": "ln", "op": "layer_norm", "inputs": ["x"], "params": {"weight": "w", "bias": "b"},
             "attrs": {"normalized_shape": [%d], "eps": 1e-05, "elementwise_affine": true}}],
  "outputs": ["ln"], "weights": "weights.safetensors"}`, n, jsonInts(shape), r, r, r)
		g := writeGraph(t, js, map[string][]int{"w": {r}, "b": {r}}, n, 11)
		ins, err := g.GenerateInputs(4)
		if err != nil {
			t.Fatal(err)
		}
		x := f32s(t, ins["x"])
		w, _ := g.ParamFloat32s("w")
		b, _ := g.ParamFloat32s("b")
		want := make([]float32, len(x))
		for row := 0; row < len(x)/r; row++ {
			model := row / shape[0]
			for c, v := range layerNorm64(x[row*r:(row+1)*r], w[model*r:], b[model*r:], 1e-5) {
				want[row*r+c] = float32(v)
			}
		}
		wt := safetensors.FromFloat32s("ln", append([]int{n}, shape...), want)
		for _, opts := range []Options{{Device: testDevice("cpu")}, {}} {
			got := runPlanCPU(t, g, opts, ins)["ln"]
			if err := testkit.CompareTensors(got, wt); err != nil {
				t.Errorf("R=%d, device %q: %v", r, opts.Device.Kind, err)
			}
		}
	}
}

// layerNorm64 is the float64 reference of a LayerNorm of row xs with affine w, b (the row's
// width of each) and eps.
func layerNorm64(xs, w, b []float32, eps float64) []float64 {
	mean, ss := 0.0, 0.0
	for _, v := range xs {
		mean += float64(v)
	}
	mean /= float64(len(xs))
	for _, v := range xs {
		ss += (float64(v) - mean) * (float64(v) - mean)
	}
	rstd := 1 / math.Sqrt(ss/float64(len(xs))+eps)
	y := make([]float64, len(xs))
	for c, v := range xs {
		y[c] = (float64(v)-mean)*rstd*float64(w[c]) + float64(b[c])
	}
	return y
}

func jsonInts(s []int) string { return strings.ReplaceAll(fmt.Sprint(s), " ", ", ") }

const dropoutGraph = `{"format": "widejit.graph/v1", "n": %d,
  "inputs": [{"name": "x", "shape": [7, 45], "dtype": "float32"}],
  "params": [{"name": "fc.weight", "shape": [45, 45], "dtype": "float32"}, {"name": "fc.bias", "shape": [45], "dtype": "float32"}],
  "nodes": [{"name": "fc", "op": "linear", "inputs": ["x"], "params": {"weight": "fc.weight", "bias": "fc.bias"},
             "attrs": {"in_features": 45, "out_features": 45}},
            {"name": "drop", "op": "dropout", "inputs": ["fc"], "attrs": {"p": 0.25}},
            {"name": "act", "op": "relu", "inputs": ["drop"]}],
  "outputs": ["act", "fc"], "weights": "weights.safetensors"}`

// Monte Carlo dropout: masks differ between models and seeds, repeat for a seed, keep about
// 1-p of the elements scaled by 1/(1-p), and do not depend on strategy or fusion.
func TestDropoutMonteCarlo(t *testing.T) {
	const n = 3
	g := writeGraph(t, fmt.Sprintf(dropoutGraph, n), map[string][]int{"fc.weight": {45, 45}, "fc.bias": {45}}, n, 1)
	ins, err := g.GenerateInputs(5)
	if err != nil {
		t.Fatal(err)
	}
	run := func(o Options) ([]float32, []float32) {
		outs := runPlanCPU(t, g, o, ins)
		return f32s(t, outs["act"]), f32s(t, outs["fc"])
	}
	base, fc := run(Options{Dropout: "mc", Seed: 11})
	per := len(base) / n
	kept := make([]int, n)
	decided := make([]int, n)
	masks := make([][]int8, n) // 1 kept, 0 dropped, -1 undecidable (relu(fc) == 0)
	for i, v := range base {
		m := i / per
		relu := float32(math.Max(float64(fc[i]), 0))
		switch {
		case relu == 0 && v == 0:
			masks[m] = append(masks[m], -1)
		case v == 0:
			masks[m] = append(masks[m], 0)
			decided[m]++
		case math.Abs(float64(v-relu/0.75)) <= 1e-6*math.Max(1, math.Abs(float64(v))):
			masks[m] = append(masks[m], 1)
			kept[m]++
			decided[m]++
		default:
			t.Fatalf("element %d: %g is neither 0 nor relu(fc)/(1-p) = %g", i, v, relu/0.75)
		}
	}
	for m := 0; m < n; m++ {
		frac := float64(kept[m]) / float64(decided[m])
		if frac < 0.65 || frac > 0.85 {
			t.Errorf("model %d keeps %.2f of its elements, want about 0.75", m, frac)
		}
	}
	differ := 0
	for i := range masks[0] {
		if masks[0][i] >= 0 && masks[1][i] >= 0 && masks[0][i] != masks[1][i] {
			differ++
		}
	}
	if differ == 0 {
		t.Errorf("models 0 and 1 got the same dropout mask")
	}
	for _, o := range []Options{{Dropout: "mc", Seed: 11}, {Dropout: "mc", Seed: 11, NoFusion: true},
		{Dropout: "mc", Seed: 11, Strategy: Sequential}, {Dropout: "mc", Seed: 11, ModelMajor: true}} {
		again, _ := run(o)
		for i := range base {
			if again[i] != base[i] {
				t.Fatalf("options %+v: element %d = %g, first run %g (masks must not depend on strategy or fusion)", o, i, again[i], base[i])
			}
		}
	}
	other, _ := run(Options{Dropout: "mc", Seed: 12})
	diff := 0
	for i := range base {
		if other[i] != base[i] {
			diff++
		}
	}
	if diff == 0 {
		t.Errorf("seeds 11 and 12 gave the same masks")
	}
	eval, _ := run(Options{})
	for i := range eval {
		if want := float32(math.Max(float64(fc[i]), 0)); eval[i] != want {
			t.Fatalf("eval dropout must be the identity: element %d = %g, want %g", i, eval[i], want)
		}
	}
}

// ConvTranspose2d (once refused as "not lowered yet") runs, with stride 2, output_padding 1,
// dilation 2, groups 2 and a bias, after a fused-away ReLU: against a straightforward scatter
// loop (each input pixel adds x*w to the outputs its taps reach), the forward definition of
// the transposed convolution, independent of the kernel's gather. Tolerance 1e-5 absolute
// (fp32 sums of 3 x 9 products of values in [-1, 1]; the loop sums in float64).
func TestConvTranspose2dAgainstScatterLoop(t *testing.T) {
	const n, b, cin, cout, groups, h, w = 3, 2, 4, 6, 2, 5, 4
	const k, s, p, op, d = 3, 2, 1, 1, 2
	oh, ow := (h-1)*s-2*p+d*(k-1)+op+1, (w-1)*s-2*p+d*(k-1)+op+1
	g := writeGraph(t, fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
  "inputs": [{"name": "x", "shape": [%d, %d, %d, %d], "dtype": "float32"}],
  "params": [{"name": "w", "shape": [%d, %d, %d, %d], "dtype": "float32"}, {"name": "bias", "shape": [%d], "dtype": "float32"}],
  "nodes": [{"name": "act", "op": "relu", "inputs": ["x"]},
            {"name": "conv_t", "op": "conv_transpose2d", "inputs": ["act"], "params": {"weight": "w", "bias": "bias"},
             "attrs": {"in_channels": %d, "out_channels": %d, "kernel_size": %d, "stride": %d, "padding": %d,
                       "output_padding": %d, "dilation": %d, "groups": %d}}],
  "outputs": ["conv_t"], "weights": "weights.safetensors"}`, n, b, cin, h, w, cin, cout/groups, k, k, cout, cin, cout, k, s, p, op, d, groups),
		map[string][]int{"w": {cin, cout / groups, k, k}, "bias": {cout}}, n, 7)
	ins, err := g.GenerateInputs(5)
	if err != nil {
		t.Fatal(err)
	}
	x := f32s(t, ins["x"])
	wt, err := g.ParamFloat32s("w")
	if err != nil {
		t.Fatal(err)
	}
	bias, err := g.ParamFloat32s("bias")
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, n*b*cout*oh*ow)
	cg, ocg := cin/groups, cout/groups
	for m := 0; m < n; m++ {
		for bi := 0; bi < b; bi++ {
			out := want[(m*b+bi)*cout*oh*ow:]
			for oc := 0; oc < cout; oc++ {
				for i := 0; i < oh*ow; i++ {
					out[oc*oh*ow+i] = float64(bias[m*cout+oc])
				}
			}
			for ci := 0; ci < cin; ci++ {
				grp := ci / cg
				for ih := 0; ih < h; ih++ {
					for iw := 0; iw < w; iw++ {
						xv := math.Max(float64(x[((m*b+bi)*cin+ci)*h*w+ih*w+iw]), 0)
						for j := 0; j < ocg; j++ {
							for kh := 0; kh < k; kh++ {
								for kw := 0; kw < k; kw++ {
									y, z := ih*s-p+kh*d, iw*s-p+kw*d
									if y < 0 || y >= oh || z < 0 || z >= ow {
										continue
									}
									wv := float64(wt[(((m*cin+ci)*ocg+j)*k+kh)*k+kw])
									out[(grp*ocg+j)*oh*ow+y*ow+z] += xv * wv
								}
							}
						}
					}
				}
			}
		}
	}
	for _, o := range []Options{{}, {Strategy: Sequential}, {Device: testDevice("cpu")}} {
		got := f32s(t, runPlanCPU(t, g, o, ins)["conv_t"])
		if len(got) != len(want) {
			t.Fatalf("%+v: %d values, want %d (output [%d, %d, %d, %d] per model)", o, len(got), len(want), b, cout, oh, ow)
		}
		for i := range want {
			if math.Abs(float64(got[i])-want[i]) > 1e-5 {
				t.Fatalf("%+v: element %d = %g, want %g", o, i, got[i], want[i])
			}
		}
	}
}

// An op with no lowering is refused with an error naming the node, its index and the op.
// Every op of the vocabulary may have a lowering one day, so the test takes one away.
func TestUnloweredOpIsRefused(t *testing.T) {
	saved := lowerers["conv_transpose2d"]
	delete(lowerers, "conv_transpose2d")
	defer func() { lowerers["conv_transpose2d"] = saved }()
	g := loadGraphText(t, `{"format": "widejit.graph/v1", "n": 2,
  "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}],
  "params": [{"name": "w", "shape": [3, 4, 3, 3], "dtype": "float32"}],
  "nodes": [{"name": "act", "op": "relu", "inputs": ["x"]},
            {"name": "conv_t", "op": "conv_transpose2d", "inputs": ["act"], "params": {"weight": "w"},
             "attrs": {"in_channels": 3, "out_channels": 4, "kernel_size": 3, "bias": false}}],
  "outputs": ["conv_t"], "init": {"seed": 1}}`)
	_, err := Lower(g, Options{})
	if err == nil || !strings.Contains(err.Error(), `nodes[1] "conv_t": conv_transpose2d is not lowered yet`) {
		t.Fatalf("got %v, want an error naming nodes[1] \"conv_t\" and its op", err)
	}
}

// A chain of unfused element-wise kernels needs only two temporaries besides the output:
// each buffer is reused once its reader has run.
func TestBufferReuse(t *testing.T) {
	g := loadGraphText(t, `{"format": "widejit.graph/v1", "n": 4,
  "inputs": [{"name": "x", "shape": [6, 10], "dtype": "float32"}], "params": [],
  "nodes": [{"name": "a", "op": "relu", "inputs": ["x"]},
            {"name": "b", "op": "sigmoid", "inputs": ["a"]},
            {"name": "c", "op": "tanh", "inputs": ["b"]},
            {"name": "d", "op": "silu", "inputs": ["c"]},
            {"name": "e", "op": "neg", "inputs": ["d"]}],
  "outputs": ["e"], "init": {"seed": 1}}`)
	plan, err := Lower(g, Options{NoFusion: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Launches) != 5 {
		t.Fatalf("unfused chain: %d launches, want 5\n%s", len(plan.Launches), plan)
	}
	if len(plan.Slots) != 3 {
		t.Errorf("unfused chain of 5: %d slots, want 3 (two alternating temporaries + the output)\n%s", len(plan.Slots), plan)
	}
	fused, err := Lower(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fused.Launches) != 1 || fused.Launches[0].Strategy != Fused || len(fused.Launches[0].Nodes) != 5 {
		t.Errorf("fused chain: want one fused launch serving 5 nodes\n%s", fused)
	}
	// the unfused and fused plans compute the same thing
	ins, _ := g.GenerateInputs(1)
	a := runPlanCPU(t, g, Options{NoFusion: true}, ins)["e"]
	b := runPlanCPU(t, g, Options{}, ins)["e"]
	if err := testkit.CompareTensors(b, a); err != nil {
		t.Error(err)
	}
	x := f32s(t, ins["x"])
	got := f32s(t, b)
	for i, v := range x {
		r := math.Max(float64(v), 0)
		s := 1 / (1 + math.Exp(-r))
		th := math.Tanh(s)
		want := -(th / (1 + math.Exp(-th)))
		if math.Abs(float64(got[i])-want) > 1e-6 {
			t.Fatalf("element %d: %g, want %g", i, got[i], want)
		}
	}
}

func TestPlanTextAndHeaders(t *testing.T) {
	g, err := graph.Load("testdata/fixtures/blocks_n3/graph.json")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Lower(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := plan.String()
	for _, want := range []string{"N=3", "launches:", "k0_linear_silu_linear fused", "outputs:", "tanh = t"} {
		if !strings.Contains(s, want) {
			t.Errorf("plan text lacks %q:\n%s", want, s)
		}
	}
	for _, l := range plan.Launches {
		for _, n := range l.Nodes {
			if !strings.Contains(l.Kernel.Source.Text, "# serves node "+n+" (") {
				t.Errorf("kernel %s does not name node %s in its header", l.Kernel.Source.Fn, n)
			}
		}
		if !strings.Contains(l.Kernel.Source.Text, "@triton.jit\ndef "+l.Kernel.Source.Fn+"(") {
			t.Errorf("kernel %s is not a @triton.jit function of that name", l.Kernel.Source.Fn)
		}
	}
	ex := Explain(plan)
	if !strings.Contains(ex, "fc1 fused with fc2 into one MLP kernel") {
		t.Errorf("explain does not say why the MLP was fused:\n%s", ex)
	}
}

// A Chooser that declines every fusion gives the unfused plan; one that picks sequential
// makes every launch sequential.
type fixedChooser struct{ fuse bool }

func (c fixedChooser) Choose(p autotune.Problem, cands []autotune.Candidate) (Choice, error) {
	for _, cand := range cands {
		if (c.fuse && cand.Strategy == Fused) || (!c.fuse && cand.Strategy == Sequential) || (!c.fuse && cand.ID == "unfused") {
			return Choice{ID: cand.ID, Reason: "fixed"}, nil
		}
	}
	return Choice{ID: cands[0].ID, Reason: "fixed"}, nil
}

func TestChooserDecides(t *testing.T) {
	g, err := graph.Load("testdata/fixtures/blocks_n3/graph.json")
	if err != nil {
		t.Fatal(err)
	}
	fused, err := Lower(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	declined, err := Lower(g, Options{Chooser: fixedChooser{fuse: false}})
	if err != nil {
		t.Fatal(err)
	}
	unfused, _ := Lower(g, Options{NoFusion: true})
	if len(declined.Launches) != len(unfused.Launches) || len(declined.Launches) <= len(fused.Launches) {
		t.Errorf("declining fusions: %d launches, unfused %d, fused %d", len(declined.Launches), len(unfused.Launches), len(fused.Launches))
	}
	for _, l := range declined.Launches {
		if l.Strategy != Sequential || !strings.HasPrefix(l.Reason, "fixed") {
			t.Errorf("launch %s: strategy %s (%s), want sequential from the chooser", l.Kernel.Source.Fn, l.Strategy, l.Reason)
		}
	}
	tuned, err := Lower(g, Options{Chooser: &AutotuneChooser{Tuner: &autotune.Tuner{Heuristic: Heuristic}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tuned.Launches) != len(fused.Launches) || tuned.Launches[0].Strategy != Fused || !strings.Contains(tuned.Launches[0].Reason, "heuristic") {
		t.Errorf("tuner with the built-in heuristic: %d launches, first %s (%s)", len(tuned.Launches), tuned.Launches[0].Strategy, tuned.Launches[0].Reason)
	}
}
