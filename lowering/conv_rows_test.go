package lowering

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/testkit"
)

// convTemplates maps each convolution node of a fixture's plan to its kernel template.
func convTemplates(t *testing.T, dir string) map[string]string {
	t.Helper()
	return convTemplatesFor(t, dir, Options{})
}

// convTemplatesFor is convTemplates for a plan lowered with opts.
func convTemplatesFor(t *testing.T, dir string, opts Options) map[string]string {
	t.Helper()
	g, err := graph.Load(filepath.Join(dir, "graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Lower(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	convs := map[string]bool{}
	for _, n := range g.Nodes {
		if n.Op == "conv1d" || n.Op == "conv2d" {
			convs[n.Name] = true
		}
	}
	got := map[string]string{}
	for _, ln := range plan.Launches {
		for _, n := range ln.Nodes {
			if convs[n] {
				got[n] = ln.Kernel.Template
			}
		}
	}
	if len(got) != len(convs) {
		t.Fatalf("%s: %d convolutions, %d found in the plan's launches", dir, len(convs), len(got))
	}
	return got
}

// Every conv fixture (strided, dilated, grouped, 'same'/'valid', 1x1, conv1d, fused bias,
// BatchNorm, activations and residual adds) through the row-tiled kernel, forced onto the
// fixtures' narrow images, and through conv.py with the row kernel off: both against PyTorch.
// Depthwise convolutions keep the direct kernel either way.
func TestConvRowKernelAndFlatKernel(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "conv", "*"))
	if len(dirs) == 0 {
		t.Fatal("no conv fixtures: run /usr/bin/python3 lowering/testdata/make_conv_fixtures.py")
	}
	run := func(want string) {
		rowKernelSeen := false
		for _, dir := range dirs {
			for node, tmpl := range convTemplates(t, dir) {
				if tmpl != want && tmpl != "conv_depthwise.py" {
					t.Errorf("%s: node %s uses %s, want %s", dir, node, tmpl, want)
				}
				rowKernelSeen = rowKernelSeen || tmpl == want
			}
			for _, v := range exampleVariants {
				if v.name == "fused-batched" || filepath.Base(dir) == "convs_b_n3" {
					checkFixtureCPU(t, dir, v.opts)
				}
			}
		}
		if !rowKernelSeen {
			t.Errorf("no convolution used %s", want)
		}
	}
	defer func() { convRowAlways, convRowKernel = false, true }()
	convRowAlways = true
	t.Run("rows", func(t *testing.T) { run("conv_rows.py") })
	convRowAlways, convRowKernel = false, false
	t.Run("flat", func(t *testing.T) { run("conv.py") })
}

// The zoo's convolutions (16 and 32 pixels wide, 3 to 64 channels) take the row kernel by
// default, the classifier's small 3 -> 16 one conv.py, and a pointwise convolution runs as
// one row of all pixels.
func TestConvRowKernelChoice(t *testing.T) {
	for _, ex := range []string{"resblock", "convnet"} {
		for node, tmpl := range convTemplates(t, filepath.Join("..", "examples", ex)) {
			if tmpl != "conv_rows.py" {
				t.Errorf("%s: node %s uses %s, want conv_rows.py", ex, node, tmpl)
			}
		}
	}
	for node, tmpl := range convTemplates(t, filepath.Join("..", "examples", "classifier")) {
		if tmpl != "conv.py" { // 3 -> 16 channels, 16 wide: too small for the row kernel's steps
			t.Errorf("classifier: node %s uses %s, want conv.py", node, tmpl)
		}
	}
	pw := &convGroup{h: 3, wd: 5, oh: 3, ow: 5, kh: 1, kw: 1, sh: 1, sw: 1}
	if h, w, oh, ow := pw.rowGeometry(); h != 1 || w != 15 || oh != 1 || ow != 15 {
		t.Errorf("pointwise 3x5 runs as %dx%d -> %dx%d, want 1x15 -> 1x15", h, w, oh, ow)
	}
	padded := &convGroup{h: 3, wd: 5, oh: 3, ow: 5, kh: 1, kw: 1, sh: 1, sw: 1, ph: 1}
	if _, w, _, ow := padded.rowGeometry(); w != 5 || ow != 5 {
		t.Errorf("padded 1x1 conv runs %d -> %d wide, want 5 -> 5", w, ow)
	}
}

// CPU plans run every convolution but depthwise ones on conv_flat.py (fed by conv_pad.py,
// strided ones over phase planes, pointwise ones reading their input as it is), depthwise ones
// but pointwise ones on conv_dw_blocks.py,
// whatever their channels, groups, strides, padding or dilation; a GPU plan never uses it. The numbers of every CPU plan are checked against
// PyTorch by the "cpu" variant of TestConvFixtures.
func TestConvFlatKernelOnCPUPlans(t *testing.T) {
	cpuPlan := Options{Device: testDevice("cpu")}
	dirs, _ := filepath.Glob(filepath.Join("testdata", "conv", "*"))
	dirs = append(dirs, filepath.Join("..", "examples", "resblock"), filepath.Join("..", "examples", "convnet"))
	flat := 0
	for _, dir := range dirs {
		g, err := graph.Load(filepath.Join(dir, "graph.json"))
		if err != nil {
			t.Fatal(err)
		}
		tmpl := convTemplatesFor(t, dir, cpuPlan)
		gpu := convTemplatesFor(t, dir, Options{Device: testDevice("cuda")})
		for _, n := range g.Nodes {
			if n.Op != "conv1d" && n.Op != "conv2d" {
				continue
			}
			k, s, p := n.Attrs.Ints("kernel_size"), n.Attrs.Ints("stride"), n.Attrs.Ints("padding")
			pointwise := true
			for i := range k {
				pointwise = pointwise && k[i] == 1 && s[i] == 1 && p[i] == 0
			}
			depthwise := n.Attrs.Int("groups") > 1 && n.Attrs.Int("groups") == n.Attrs.Int("in_channels")
			if tmpl[n.Name] == "matmul.py" || tmpl[n.Name] == "se.py" {
				continue // a pointwise convolution of 1x1 images (TestSqueezeExciteFCsAreMatmuls, TestSqueezeExciteOneKernel)
			}
			if tmpl[n.Name] == "conv_grouped.py" {
				continue // narrow groups on a small map (TestGroupedChannelBlocks)
			}
			want := !depthwise
			if got := tmpl[n.Name] == "conv_flat.py"; got != want {
				t.Errorf("%s: node %s (kernel %v, stride %v) uses %s on the CPU", dir, n.Name, k, s, tmpl[n.Name])
			}
			if got := tmpl[n.Name] == "conv_dw_blocks.py"; got != (depthwise && !pointwise) {
				t.Errorf("%s: node %s (kernel %v, stride %v, depthwise %v) uses %s on the CPU", dir, n.Name, k, s, depthwise, tmpl[n.Name])
			}
			if gpu[n.Name] == "conv_flat.py" {
				t.Errorf("%s: node %s uses conv_flat.py in a GPU plan", dir, n.Name)
			}
			if want {
				flat++
			}
		}
	}
	if flat == 0 {
		t.Fatal("no convolution took conv_flat.py")
	}
}

// Both reduction orders of conv_flat.py (tap-major from one channel per group up, and
// channels x taps everywhere) and the padded stores between chained convolutions match
// PyTorch on the conv fixtures and the conv examples; the plans show that both forms and at
// least one padded store (a conv writing the next one's zero-padded planes, no pad kernel)
// were exercised, tap-major both with and without a k mask (BLOCK_K dividing the channels or
// not; with one, its pointer and mask tiles built once per channel block, outside the taps; a
// grouped one whose group's channels are one block builds them once, before its tap loop),
// and that the residual of examples/resblock is read from the padded copy of the block input
// (an affine tile instead of a gather).
func TestConvFlatTapMajorAndPaddedStores(t *testing.T) {
	cpuPlan := Options{Device: testDevice("cpu")}
	dirs, _ := filepath.Glob(filepath.Join("testdata", "conv", "*_n3"))
	dirs = append(dirs, filepath.Join("..", "examples", "resblock"), filepath.Join("..", "examples", "convnet"))
	defer func(v int) { convTapMajorMinChannels, convMergeGroups = v, true }(convTapMajorMinChannels)
	for _, minCh := range []int{1, math.MaxInt} {
		convTapMajorMinChannels = minCh
		convMergeGroups = minCh == 1 // (merged groups run tap-major whatever their channels)
		tapMajor, padded, whole, paddedResidual, evenK, maskedK, oneBlock := 0, 0, 0, 0, 0, 0, 0
		for _, dir := range dirs {
			t.Run(fmt.Sprintf("%s/tap-major-from-%d", filepath.Base(dir), minCh), func(t *testing.T) {
				checkFixtureCPU(t, dir, cpuPlan)
			})
			g, err := graph.Load(filepath.Join(dir, "graph.json"))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := Lower(g, cpuPlan)
			if err != nil {
				t.Fatal(err)
			}
			for _, ln := range plan.Launches {
				if ln.Kernel.Template != "conv_flat.py" {
					continue
				}
				// (a folded small-map GEMM, over columns of every tap, is one tap-major step)
				if src := ln.Kernel.Source.Text; strings.Contains(src, "for tap in range") && !strings.Contains(src, "qb = qi // QS") {
					tapMajor++
					switch {
					case strings.Contains(src, "a_ptrs + (tap * w_tstride + c0)"):
						evenK++ // BLOCK_K divides the channels: no k mask
					case strings.Contains(src, "a_ptrs + tap * w_tstride, mask=a_mask"):
						maskedK++ // a k mask: the tiles built once per channel block, outside the taps
					case strings.Contains(src, "a_ptrs + t * w_tstride, mask=ocmask"):
						oneBlock++ // a group's channels one block: the tiles built once, outside the taps
					default:
						t.Errorf("%s: a tap-major kernel builds its tiles inside the tap loop:\n%s", dir, src)
					}
				}
				for _, a := range ln.Args {
					if a.Name == "c_off" && a.Int > 0 {
						padded++
					}
				}
				if strings.Contains(ln.Kernel.Source.Text, "tl.where(ow[None, :] < OW, y, 0.0)") {
					whole++ // the padded store of whole tiles
				}
				if strings.Contains(ln.Kernel.Source.Text, "+ q[None, :], mask=ocmask & (q[None, :] < Q)") && slices.Contains(ln.Ops, "add") {
					paddedResidual++
				}
			}
		}
		if (tapMajor > 0) != (minCh == 1) {
			t.Errorf("tap-major from %d channels: %d tap-major conv_flat.py kernels (%d of them one channel block a group)", minCh, tapMajor, oneBlock)
		}
		if minCh == 1 && (evenK == 0 || maskedK == 0) {
			t.Errorf("tap-major from 1 channel: %d kernels without a k mask, %d with one; want both > 0", evenK, maskedK)
		}
		if paddedResidual == 0 {
			t.Errorf("tap-major from %d channels: no convolution read its residual from a padded copy", minCh)
		}
		if padded == 0 || whole == 0 {
			t.Errorf("tap-major from %d channels: %d convolutions stored the next one's padded input, %d as whole tiles; want both > 0", minCh, padded, whole)
		}
	}
}

// On the CPU a pointwise convolution of 1x1 images outside a squeeze-excite block (its pooled
// input has another reader) runs as one matmul over the channels (matmul.py), not as a
// convolution tiling one pixel per sample, and the global pool as a row mean (reduce_rows.py);
// in a squeeze-excite block all three are one se.py kernel (TestSqueezeExciteOneKernel).
// TestConvFixtures' "cpu" variant checks their numbers against PyTorch.
func TestSqueezeExciteFCsAreMatmuls(t *testing.T) {
	dir := filepath.Join("testdata", "conv", "se_n3")
	tmpl := convTemplatesFor(t, dir, Options{Device: testDevice("cpu")})
	for _, node := range []string{"shared_fc1", "shared_fc2"} {
		if tmpl[node] != "matmul.py" {
			t.Errorf("%s: CPU plan runs %s, want matmul.py", node, tmpl[node])
		}
	}
	cnn := convTemplatesFor(t, filepath.Join("testdata", "conv", "cnn_n3"), Options{Device: testDevice("cpu")})
	if cnn["shortcut"] == "matmul.py" || cnn["conv"] == "matmul.py" {
		t.Errorf("convolutions of larger images became matmuls: %v", cnn)
	}
	for _, ln := range lowerGraphFile(t, filepath.Join(dir, "graph.json"), "cpu").Launches {
		if slices.Contains(ln.Nodes, "adaptive_avg_pool2d") && ln.Kernel.Template != "reduce_rows.py" {
			t.Errorf("adaptive_avg_pool2d (global average pool) runs %s on the CPU, want reduce_rows.py", ln.Kernel.Template)
		}
	}
}

// conv_flat.py masks the last pixel tile's dead columns when there are enough (flatQMask); the
// fixtures and examples (checked against PyTorch by TestConvFixtures' "cpu" variant and
// TestConvFlatTapMajorAndPaddedStores) have both forms, and depthwise convolutions run on it
// too, over their zero-padded planes, with the channel blocks off (conv_dw_blocks.py).
func TestConvFlatPixelMasks(t *testing.T) {
	cpuPlan := Options{Device: testDevice("cpu")}
	convDepthwiseBlocks = false
	defer func() { convDepthwiseBlocks = true }()
	dirs, _ := filepath.Glob(filepath.Join("testdata", "conv", "*_n3"))
	dirs = append(dirs, filepath.Join("..", "examples", "resblock"), filepath.Join("..", "examples", "convnet"))
	masked, whole, depthwise := 0, 0, 0
	for _, dir := range dirs {
		g, err := graph.Load(filepath.Join(dir, "graph.json"))
		if err != nil {
			t.Fatal(err)
		}
		plan, err := Lower(g, cpuPlan)
		if err != nil {
			t.Fatal(err)
		}
		for _, ln := range plan.Launches {
			if ln.Kernel.Template != "conv_flat.py" {
				continue
			}
			src := ln.Kernel.Source.Text
			if strings.Contains(src, "& (q[None, :] < Q), other=0.0)") || strings.Contains(src, "mask=q[None, :] < Q, other=0.0") {
				masked++
			} else {
				whole++
			}
			if strings.Contains(src, "for kt in range(0, KHW)") {
				depthwise++
			}
		}
	}
	if masked == 0 || whole == 0 || depthwise == 0 {
		t.Errorf("conv_flat.py kernels: %d with masked pixel tiles, %d whole, %d depthwise; want each > 0", masked, whole, depthwise)
	}
	if flatQMask(12, 16, 16, true) || !flatQMask(1088, 512, 512, true) || flatQMask(1024, 512, 512, true) || !flatQMask(286, 512, 512, true) {
		t.Error("flatQMask: want whole tiles for 12 of 16 and full tiles, masks for a 64-pixel rest of 512 and 286 of 512")
	}
	if !flatQMask(1088, 512, 512, false) || flatQMask(286, 512, 512, false) {
		t.Error("flatQMask, depthwise: want masks for a 64-pixel rest of 512, not for 286 of 512")
	}
}

// The zoo's ResBlock (bench/zoo/resblock.json: 64 channels on 16x16 images, padded to 18x18,
// Q = 286 pixels in one 512 tile) computes only its live pixels: both convolutions mask the
// 226 dead columns, which computed whole were 1.8x the work
// (bench/results/zoo_conv.md). The masked tile's numbers are checked against PyTorch by
// TestConvFixtures (cnn's asym: 40 of 64, patches' many: 72 of 128, both kernel variants).
func TestZooResblockMasksDeadPixels(t *testing.T) {
	plan := lowerGraphFile(t, filepath.Join("..", "bench", "zoo", "resblock.json"), "cpu")
	convs := 0
	for _, ln := range plan.Launches {
		if ln.Kernel.Template != "conv_flat.py" {
			continue
		}
		convs++
		if bp := ln.Kernel.Consts["BLOCK_P"]; bp != int64(512) {
			t.Errorf("%v: BLOCK_P %v, want 512 (Q = 286 in one tile)", ln.Nodes, bp)
		}
		if !strings.Contains(ln.Kernel.Source.Text, "mask=q[None, :] < Q, other=0.0") {
			t.Errorf("%v: the input tile is loaded whole, want the pixels past Q masked:\n%s", ln.Nodes, ln.Kernel.Source.Text)
		}
	}
	if convs != 2 {
		t.Errorf("%d conv_flat.py launches, want the ResBlock's 2:\n%s", convs, plan)
	}
}

// A 1-d convolution's padded row has no next row to wrap into: conv_flat.py computes its OW
// outputs and not the row's pad columns (the bench TCN's 256-long rows, padded to 258 up to
// 272 by dilations 1 to 8, were a 512-pixel tile half dead). The fixture's rows are 37 long,
// padded to 39 up to 53: each convolution computes 37 pixels in one 64 tile.
// TestModelFixtures/bench_tcn checks the numbers against PyTorch.
func TestConv1dTilesSkipThePadColumns(t *testing.T) {
	g, err := graph.Load(filepath.Join("testdata", "models", "bench_tcn_n3", "graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Lower(g, Options{Device: testDevice("cpu")})
	if err != nil {
		t.Fatal(err)
	}
	convs := 0
	for _, ln := range plan.Launches {
		if ln.Kernel.Template != "conv_flat.py" {
			continue
		}
		convs++
		arg := launchIntArgs(ln)
		if bp := ln.Kernel.Consts["BLOCK_P"]; arg["Q"] != 37 || arg["OW"] != 37 || bp != int64(64) || ln.Grid[0] != 1 {
			t.Errorf("%s: Q %d pixels of rows %d long in %d tiles of %v, want 37 of 37 in one 64 tile", ln.Kernel.Source.Fn, arg["Q"], arg["OW"], ln.Grid[0], bp)
		}
	}
	if convs != 8 {
		t.Errorf("%d conv_flat.py launches, want the TCN's 8 convolutions", convs)
	}
}

// Patch embeddings (kernel == stride, no padding, one group) run in CPU plans as a copy of
// each patch's pixels into channels and a pointwise conv_flat.py GEMM, whatever the image's
// rest past the last patch, the patch's shape, the input's strides or the batch dim; a
// grouped one and one over many channels keep the strided path, and GPU plans never copy
// patches. Their numbers match PyTorch's in CPU plans under every plan variant and at
// N = 1, 3 and 8.
func TestPatchEmbeddingAsPointwiseGEMM(t *testing.T) {
	for _, v := range exampleVariants {
		opts := v.opts
		opts.Device = testDevice("cpu")
		for _, n := range []int{1, 3, 8} {
			dir := filepath.Join("testdata", "conv", fmt.Sprintf("patches_n%d", n))
			t.Run(fmt.Sprintf("%s/cpu-%s", filepath.Base(dir), v.name), func(t *testing.T) { checkFixtureCPU(t, dir, opts) })
		}
	}
	dir := filepath.Join("testdata", "conv", "patches_n3")
	g, err := graph.Load(filepath.Join(dir, "graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{"cpu", "cuda"} {
		plan, err := Lower(g, Options{Device: testDevice(dev)})
		if err != nil {
			t.Fatal(err)
		}
		copied := map[string]bool{}
		for _, ln := range plan.Launches {
			for _, name := range ln.Nodes {
				if conv, ok := strings.CutSuffix(name, " (patches as channels)"); ok {
					copied[conv] = true
				}
			}
		}
		tmpl := convTemplatesFor(t, dir, Options{Device: testDevice(dev)})
		for _, n := range g.Nodes {
			if n.Op != "conv1d" && n.Op != "conv2d" {
				continue
			}
			want := dev == "cpu" && n.Attrs.Int("groups") == 1 && n.Attrs.Int("in_channels") <= convPatchMaxChannels &&
				slices.Equal(n.Attrs.Ints("kernel_size"), n.Attrs.Ints("stride")) && slices.Max(n.Attrs.Ints("kernel_size")) > 1
			if copied[n.Name] != want {
				t.Errorf("%s plan: node %s (groups %d): patches copied %v, want %v", dev, n.Name, n.Attrs.Int("groups"), copied[n.Name], want)
			}
			if want && tmpl[n.Name] != "conv_flat.py" {
				t.Errorf("cpu plan: patch embedding %s runs on %s, want conv_flat.py", n.Name, tmpl[n.Name])
			}
		}
	}
}

// A pointwise convolution runs conv_flat.py's one loop over the channels (no tap loop) with
// its store's mask computed before that loop, so that the CPU backend sees the accumulator
// only through that mask (jit/cpu observed.go: no infinity scan in the dots, no fill); with a
// dense output its residual is read at the pixel itself. Both regnet_y_400mf shapes of the
// benchmarks: an f.a (BatchNorm, ReLU) and an f.c (squeeze-excite scale, BatchNorm, residual
// add, ReLU). Their numbers are checked against PyTorch by the conv fixtures (mobile, cnn).
func TestPointwiseConvOneChannelLoop(t *testing.T) {
	for _, tc := range []struct {
		name  string
		graph string
	}{
		{"f.a", convBNReLUGraph(3, 2, convShape{"", 32, 48, 1, 1, 48, 1})},
		{"f.c", scaledConvGraph(3, 2, convShape{"", 48, 48, 1, 1, 24, 1})},
	} {
		g, err := graph.Parse(tc.name+".json", []byte(tc.graph), graph.Options{})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := Lower(g, Options{Device: testDevice("cpu")})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Launches) != 1 || plan.Launches[0].Kernel.Template != "conv_flat.py" {
			t.Fatalf("%s: want one conv_flat.py launch\n%s", tc.name, Explain(plan))
		}
		text := plan.Launches[0].Kernel.Source.Text
		loop, mask := strings.Index(text, "for c0 in range(0, CG, BLOCK_K):"), strings.Index(text, "smask = ")
		if strings.Contains(text, "for tap in range") || loop < 0 || mask < 0 || mask > loop {
			t.Errorf("%s: want one loop over the channels after the store's mask (smask):\n%s", tc.name, text)
		}
		if !strings.Contains(text, "tl.store(c_base + qs[None, :], y, mask=smask)") || !strings.Contains(text, "    rp = q\n") {
			t.Errorf("%s: want the dense store and the residual read at q:\n%s", tc.name, text)
		}
	}
}

// The GPU plans of conv/wide_padding (paddings as wide as the kernel or wider on tiny maps, a
// 3x3 run twice with one weight) on the PTX emulator, through the row kernel (conv_rows.py)
// and the implicit GEMM (conv.py): against PyTorch.
func TestWidePaddingConvsOnEmulatedPTX(t *testing.T) {
	dir := filepath.Join("testdata", "conv", "wide_padding_n3")
	defer func() { convRowAlways, convRowKernel = false, true }()
	for _, tc := range []struct {
		name     string
		rows     bool
		template string
	}{{"rows", true, "conv_rows.py"}, {"flat", false, "conv.py"}} {
		t.Run(tc.name, func(t *testing.T) {
			convRowAlways, convRowKernel = tc.rows, tc.rows
			for node, tmpl := range convTemplates(t, dir) {
				if tmpl != tc.template {
					t.Fatalf("node %s uses %s, want %s", node, tmpl, tc.template)
				}
			}
			testkit.CheckOutputs(t, runOnEmulatedPTX(t, dir), testkit.ReadTensors(t, filepath.Join(dir, "expected.safetensors")))
		})
	}
}

// Where a convolution's output rows have dead columns after them (Wp > OW) and span more
// than one pixel tile, conv_flat.py's tiles start on a row (RowTiles), so that jit/cpu can cut
// them into strips of live columns: the zoo's conv pair (32x32 maps, Wp = 34) runs tiles of
// 15 rows (510 pixels) in as many programs as 512-pixel tiles took. The row_tiles fixture's
// convolutions all take row tiles (a pair with a residual, odd and dilated maps, a strided
// one); TestConvFixtures and TestCNNFixturesAVX2 check their numbers against PyTorch.
func TestConvFlatRowTiles(t *testing.T) {
	check := func(file string, want int, tileQ func(wp int) int) {
		convs := 0
		for _, ln := range lowerGraphFile(t, file, "cpu").Launches {
			if ln.Kernel.Template != "conv_flat.py" {
				continue
			}
			convs++
			arg := launchIntArgs(ln)
			bp := int(ln.Kernel.Consts["BLOCK_P"].(int64))
			tq := tileQ(arg["Wp"])
			if arg["TILE_Q"] != tq || bp != 512 || ln.Grid[0] != cdiv(arg["Q"], tq) || cdiv(arg["Q"], tq) != cdiv(arg["Q"], bp) {
				t.Errorf("%s %v: tiles of %d pixels (BLOCK_P %d) in %d programs over Q = %d, want %d (whole rows of %d) in as many as BLOCK_P's",
					file, ln.Nodes, arg["TILE_Q"], bp, ln.Grid[0], arg["Q"], tq, arg["Wp"])
			}
		}
		if convs != want {
			t.Errorf("%s: %d conv_flat.py launches, want %d", file, convs, want)
		}
	}
	check(filepath.Join("..", "bench", "zoo", "conv3x3.json"), 2, func(int) int { return 15 * 34 })
	check(filepath.Join("testdata", "conv", "row_tiles_n3", "graph.json"), 5, func(wp int) int { return 512 / wp * wp })
}

// launchIntArgs is a launch's integer arguments by name.
func launchIntArgs(ln *Launch) map[string]int {
	arg := map[string]int{}
	for _, a := range ln.Args {
		arg[a.Name] = int(a.Int)
	}
	return arg
}
