package lowering

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/testkit"
	"github.com/widejit/widejit/jit/cpu"
)

// Benchmarks of the conv/pool/attention examples on the CPU backend, wide (one launch per
// kernel for all N) and model by model, for tuning the templates' block sizes:
//
//	go test ./lowering -run '^$' -bench 'Conv|Attention' -benchtime 3x
func benchmarkExample(b *testing.B, example string, opts Options) {
	dir := filepath.Join("..", "examples", example)
	g, err := graph.Load(filepath.Join(dir, "graph.json"))
	if err != nil {
		b.Fatal(err)
	}
	dev := cpu.NewDevice(benchThreads)
	opts.Device = dev.Info() // the CPU plan variant
	plan, err := Lower(g, opts)
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewTestRunner(plan, dev, testCompiler, g)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	f, err := g.ReadInputs(filepath.Join(dir, "inputs.safetensors"))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Run(f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkConvResblockWide(b *testing.B) { benchmarkExample(b, "resblock", Options{}) }
func BenchmarkConvResblockModelMajor(b *testing.B) {
	benchmarkExample(b, "resblock", Options{ModelMajor: true})
}
func BenchmarkConvClassifierWide(b *testing.B) { benchmarkExample(b, "classifier", Options{}) }
func BenchmarkAttentionTransformerWide(b *testing.B) {
	benchmarkExample(b, "transformer", Options{})
}
func BenchmarkAttentionTransformerModelMajor(b *testing.B) {
	benchmarkExample(b, "transformer", Options{ModelMajor: true})
}

// The zoo's convolution models (bench/zoo) at N = 1 and 8, wide, on the CPU plan through the
// row-tiled kernel (rows: conv_flat.py off) and the flat implicit GEMM (flat), for
// before/after figures:
//
//	go test ./lowering -run '^$' -bench ZooConv -benchtime 20x
func BenchmarkZooConv(b *testing.B) {
	for _, model := range []string{"resblock", "convnet"} {
		for _, n := range []int{1, 8} {
			for _, kernel := range []string{"rows", "flat"} {
				b.Run(fmt.Sprintf("%s/n=%d/%s", model, n, kernel), func(b *testing.B) {
					convFlatKernel = kernel == "flat"
					defer func() { convFlatKernel = true }()
					r, inputs, _ := zooRunner(b, model, n)
					defer r.Close()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if _, err := r.Run(inputs); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// zooRunner is benchRunner for the zoo's model (bench/zoo) at n models.
func zooRunner(b *testing.B, model string, n int) (TestRunner, map[string]*safetensors.Tensor, *Plan) {
	path := filepath.Join("..", "bench", "zoo", model+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	g, err := graph.Parse(path, data, graph.Options{N: n})
	if err != nil {
		b.Fatal(err)
	}
	return benchRunner(b, g, 0)
}

// benchRunner lowers g for the CPU and returns its test runner, run once on inputs generated
// from seed, the inputs and the plan.
func benchRunner(b *testing.B, g *graph.Graph, seed int64) (TestRunner, map[string]*safetensors.Tensor, *Plan) {
	inputs, err := g.GenerateInputs(seed)
	if err != nil {
		b.Fatal(err)
	}
	dev := cpu.NewDevice(benchThreads)
	plan, err := Lower(g, Options{Device: dev.Info()})
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewTestRunner(plan, dev, testCompiler, g)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.Run(inputs); err != nil {
		b.Fatal(err)
	}
	return r, inputs, plan
}

// BenchmarkZooConvCells runs the zoo's convolution cells that lose to PyTorch's batched peer
// (bench/results/zoo.md: the ResBlock, the conv pairs at large N) at the bench's N and
// reports their GFLOP per CPU-second and % of one core's FMA peak (measureCPU), the
// figures that the shared machine's other load does not move:
//
//	go test ./lowering -run '^$' -bench ZooConvCells -benchtime 20x
func BenchmarkZooConvCells(b *testing.B) {
	cells := []struct {
		model string
		n     int
		macs  int // multiply-adds of one model's run
	}{
		{"resblock", 1, 2 * 4 * 64 * 64 * 9 * 16 * 16},
		{"resblock", 8, 2 * 4 * 64 * 64 * 9 * 16 * 16},
		{"conv3x3", 4, 8 * (16 + 32) * 32 * 9 * 32 * 32},
		{"conv3x3", 12, 8 * (16 + 32) * 32 * 9 * 32 * 32},
		{"conv64", 16, 4 * (3 + 64) * 64 * 9 * 32 * 32},
	}
	for _, c := range cells {
		b.Run(fmt.Sprintf("%s/n=%d", c.model, c.n), func(b *testing.B) {
			r, inputs, plan := zooRunner(b, c.model, c.n)
			defer r.Close()
			measureCPU(b, r, inputs, plan, 2*float64(c.macs*c.n), 0)
		})
	}
}

// measureCPU runs r b.N times, each run into the previous one's outputs, and reports the GFLOP/s of its convolution kernels alone (the
// runner's per-launch profile), of all its kernels, and per CPU-second of the process, the
// time of its pad kernels (conv_pad.py) and max pools per run, and
// the latter as % of one core's FMA peak measured in the same run (cpu.PeakGFLOPS, the faster
// of before and after): on a shared machine the CPU-time figure is the one that other load
// does not move. flops is one run's; weightBytes (0: none) the weights it reads, reported as
// weight-GB/s of the convolution kernels.
func measureCPU(b *testing.B, r TestRunner, inputs map[string]*safetensors.Tensor, plan *Plan, flops, weightBytes float64) {
	prof, ok := r.(interface {
		Profile(bool)
		KernelTimes() []time.Duration
		RunInto(inputs, reuse map[string]*safetensors.Tensor) (map[string]*safetensors.Tensor, error)
	})
	if !ok {
		b.Fatal("the test runner cannot profile")
	}
	peak := cpu.PeakGFLOPS(50 * time.Millisecond)
	prof.Profile(true)
	b.ResetTimer()
	cpu0 := testkit.CPUTime()
	var outs map[string]*safetensors.Tensor
	for range b.N {
		// each run writes the previous run's outputs, as go run ./bench does (fresh memory
		// would add its page faults to the kernels' stores)
		var err error
		if outs, err = prof.RunInto(inputs, outs); err != nil {
			b.Fatal(err)
		}
	}
	cpuTime := testkit.CPUTime() - cpu0
	b.StopTimer()
	peak = max(peak, cpu.PeakGFLOPS(50*time.Millisecond))
	var conv, pad, pool, node time.Duration
	for i, t := range prof.KernelTimes() {
		switch ops := plan.Launches[i].Ops; {
		case slices.Contains(ops, "conv2d"):
			conv += t
		case slices.Contains(ops, "pad"):
			pad += t
		case slices.Contains(ops, "max_pool2d"):
			pool += t
		}
		node += t
	}
	flops *= float64(b.N)
	b.ReportMetric(flops/conv.Seconds()/1e9, "conv-GFLOP/s")
	if weightBytes > 0 {
		b.ReportMetric(weightBytes*float64(b.N)/conv.Seconds()/1e9, "weight-GB/s")
	}
	b.ReportMetric(flops/node.Seconds()/1e9, "node-GFLOP/s")
	b.ReportMetric(pad.Seconds()*1e6/float64(b.N), "pad-µs/op")
	if pool > 0 {
		b.ReportMetric(pool.Seconds()*1e6/float64(b.N), "pool-µs/op")
	}
	if cpuTime > 0 && peak > 0 {
		b.ReportMetric(flops/cpuTime.Seconds()/1e9, "GFLOP/cpu-s")
		b.ReportMetric(100*flops/cpuTime.Seconds()/1e9/peak, "%peak")
	}
}

// convShape is one convolution (no bias) + eval BatchNorm + ReLU of a benchmark.
type convShape struct {
	name                           string
	in, out, k, stride, hw, groups int
}

// resnet18Convs are the compute-bound convolutions of torchvision's resnet18 on 96x96 images
// (bench/peers/real_models.py), each with its BatchNorm and ReLU as the model fuses them:
// 3x3 at stride 1 on the 24x24 .. 3x3 maps, the stride-2 3x3 and 1x1 (downsample) entering
// each stage, and the 7x7 stride-2 stem.
var resnet18Convs = []convShape{
	{"stem7x7s2", 3, 64, 7, 2, 96, 1},
	{"3x3/64/24x24", 64, 64, 3, 1, 24, 1},
	{"3x3s2/64-128/24x24", 64, 128, 3, 2, 24, 1},
	{"1x1s2/64-128/24x24", 64, 128, 1, 2, 24, 1},
	{"3x3/128/12x12", 128, 128, 3, 1, 12, 1},
	{"3x3s2/128-256/12x12", 128, 256, 3, 2, 12, 1},
	{"1x1s2/128-256/12x12", 128, 256, 1, 2, 12, 1},
	{"3x3/256/6x6", 256, 256, 3, 1, 6, 1},
	{"3x3s2/256-512/6x6", 256, 512, 3, 2, 6, 1},
	{"1x1s2/256-512/6x6", 256, 512, 1, 2, 6, 1},
	{"3x3/512/3x3", 512, 512, 3, 1, 3, 1},
}

// regnetGroupedConvs are the grouped 3x3 convolutions of torchvision's regnet_y_400mf on 96x96
// images (group width 8): each stage's first, at stride 2, and the rest at stride 1.
var regnetGroupedConvs = []convShape{
	{"g6/48/s2/48x48", 48, 48, 3, 2, 48, 6},
	{"g13/104/s2/24x24", 104, 104, 3, 2, 24, 13},
	{"g13/104/12x12", 104, 104, 3, 1, 12, 13},
	{"g26/208/s2/12x12", 208, 208, 3, 2, 12, 26},
	{"g26/208/6x6", 208, 208, 3, 1, 6, 26},
	{"g55/440/s2/6x6", 440, 440, 3, 2, 6, 55},
	{"g55/440/3x3", 440, 440, 3, 1, 3, 55},
}

// regnetXGroupedConvs are the grouped 3x3 convolutions of torchvision's regnet_x_400mf on
// 96x96 images (group width 16), as regnetGroupedConvs.
var regnetXGroupedConvs = []convShape{
	{"x/g2/32/s2/48x48", 32, 32, 3, 2, 48, 2},
	{"x/g4/64/s2/24x24", 64, 64, 3, 2, 24, 4},
	{"x/g4/64/12x12", 64, 64, 3, 1, 12, 4},
	{"x/g10/160/s2/12x12", 160, 160, 3, 2, 12, 10},
	{"x/g10/160/6x6", 160, 160, 3, 1, 6, 10},
	{"x/g25/400/s2/6x6", 400, 400, 3, 2, 6, 25},
	{"x/g25/400/3x3", 400, 400, 3, 1, 3, 25},
}

// BenchmarkRegnetGroupedFolded times the unit-stride grouped convolutions of both RegNets
// (regnetGroupedConvs, regnetXGroupedConvs) behind the 1x1 convolution that produces their
// input, as in the models (pointwiseThenStridedGraph), at N = 8: the samples folded into the
// pixels where foldSamples takes them ("folded") and a program per sample ("samples"),
// interleaved for A/B runs; flops count the grouped convolution alone, CPU time both.
//
//	go test ./lowering -run '^$' -bench RegnetGroupedFolded -benchtime 40x
func BenchmarkRegnetGroupedFolded(b *testing.B) {
	for _, c := range append(append([]convShape{}, regnetGroupedConvs...), regnetXGroupedConvs...) {
		if c.stride != 1 {
			continue
		}
		for _, v := range []struct {
			name string
			fold bool
		}{{"folded", true}, {"samples", false}} {
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				convFoldSamples = v.fold
				defer func() { convFoldSamples = true }()
				benchmarkGraph(b, 8, c, pointwiseThenStridedGraph)
			})
		}
	}
}

// regnetPointwiseConvs are the 1x1 convolutions of torchvision's regnet_y_400mf on 96x96
// images: each stage's first f.a (in -> width on the stage's input map) and its f.c (width ->
// width on the stride-2 output map), then a later block's f.a (width -> width).
var regnetPointwiseConvs = []convShape{
	{"1x1/32-48/48x48", 32, 48, 1, 1, 48, 1},
	{"1x1/48/24x24", 48, 48, 1, 1, 24, 1},
	{"1x1/48-104/24x24", 48, 104, 1, 1, 24, 1},
	{"1x1/104/12x12", 104, 104, 1, 1, 12, 1},
	{"1x1/104-208/12x12", 104, 208, 1, 1, 12, 1},
	{"1x1/208/6x6", 208, 208, 1, 1, 6, 1},
	{"1x1/208-440/6x6", 208, 440, 1, 1, 6, 1},
	{"1x1/440/3x3", 440, 440, 1, 1, 3, 1},
	{"1x1/320/6x6", 320, 320, 1, 1, 6, 1}, // regnet_y_800mf's stage 3
}

// convBNReLUGraph is c at n models, each model its own batch of images.
func convBNReLUGraph(n, batch int, c convShape) string {
	return fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
 "inputs": [{"name": "x", "shape": [%d, %d, %d, %d], "dtype": "float32", "per_model": true}],
 "params": [{"name": "w", "shape": [%d, %d, %d, %d], "dtype": "float32"},
  {"name": "g", "shape": [%d], "dtype": "float32"}, {"name": "b", "shape": [%d], "dtype": "float32"},
  {"name": "m", "shape": [%d], "dtype": "float32"}, {"name": "v", "shape": [%d], "dtype": "float32"}],
 "nodes": [{"name": "conv", "op": "conv2d", "inputs": ["x"], "params": {"weight": "w"}, "attrs": {"in_channels": %d, "out_channels": %d, "kernel_size": [%d, %d], "stride": [%d, %d], "padding": [%d, %d], "dilation": [1, 1], "groups": %d, "bias": false, "padding_mode": "zeros"}},
  {"name": "bn", "op": "batch_norm2d", "inputs": ["conv"], "params": {"weight": "g", "bias": "b", "running_mean": "m", "running_var": "v"}, "attrs": {"num_features": %d, "eps": 1e-05, "momentum": 0.1, "affine": true, "track_running_stats": true, "training": false}},
  {"name": "relu", "op": "relu", "inputs": ["bn"]}],
 "outputs": ["relu"], "init": {"seed": 1}}`,
		n, batch, c.in, c.hw, c.hw, c.out, c.in/c.groups, c.k, c.k, c.out, c.out, c.out, c.out,
		c.in, c.out, c.k, c.k, c.stride, c.stride, c.k/2, c.k/2, c.groups, c.out)
}

// scaledConvGraph is the pointwise convolution c of an input scaled per sample and channel
// (squeeze-excite's x * s), then BatchNorm, a residual add and ReLU: a RegNet block's f.c.
func scaledConvGraph(n, batch int, c convShape) string {
	return fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
 "inputs": [{"name": "x", "shape": [%d, %d, %d, %d], "dtype": "float32", "per_model": true},
  {"name": "s", "shape": [%d, %d, 1, 1], "dtype": "float32", "per_model": true},
  {"name": "r", "shape": [%d, %d, %d, %d], "dtype": "float32", "per_model": true}],
 "params": [{"name": "w", "shape": [%d, %d, 1, 1], "dtype": "float32"},
  {"name": "g", "shape": [%d], "dtype": "float32"}, {"name": "b", "shape": [%d], "dtype": "float32"},
  {"name": "m", "shape": [%d], "dtype": "float32"}, {"name": "v", "shape": [%d], "dtype": "float32"}],
 "nodes": [{"name": "mul", "op": "mul", "inputs": ["x", "s"]},
  {"name": "conv", "op": "conv2d", "inputs": ["mul"], "params": {"weight": "w"}, "attrs": {"in_channels": %d, "out_channels": %d, "kernel_size": [1, 1], "stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 1, "bias": false, "padding_mode": "zeros"}},
  {"name": "bn", "op": "batch_norm2d", "inputs": ["conv"], "params": {"weight": "g", "bias": "b", "running_mean": "m", "running_var": "v"}, "attrs": {"num_features": %d, "eps": 1e-05, "momentum": 0.1, "affine": true, "track_running_stats": true, "training": false}},
  {"name": "add", "op": "add", "inputs": ["bn", "r"]},
  {"name": "relu", "op": "relu", "inputs": ["add"]}],
 "outputs": ["relu"], "init": {"seed": 1}}`,
		n, batch, c.in, c.hw, c.hw, batch, c.in, batch, c.out, c.hw, c.hw, c.out, c.in, c.out, c.out, c.out, c.out,
		c.in, c.out, c.out)
}

// BenchmarkResnet18Convs times resnet18's convolutions (resnet18Convs) wide at N = 3, batch
// 2, as `go run ./bench --real` runs the model, and reports the convolution kernel's GFLOP/s
// (its launches alone, timed by the runner's profile), the whole node's (with its input
// padding), and the node's GFLOP per CPU-second of the process as % of one core's FMA peak
// measured in the same run (cpu.PeakGFLOPS, the faster of before and after): on a shared
// machine the CPU-time figure is the one that other load does not move.
//
//	go test ./lowering -run '^$' -bench 'Resnet18Convs|RegnetGroupedConvs'
func BenchmarkResnet18Convs(b *testing.B) { benchmarkConvs(b, resnet18Convs) }

// resnet50Convs are the 1x1 convolutions of torchvision's resnet50 bottlenecks on 96x96 images
// (conv1 C -> width, conv3 width -> 4 width) in layers 2-4, and layer 4's 3x3: the 6x6 and
// 3x3 maps where the AVX2 path's 16-wide strips leave the widest edges.
var resnet50Convs = []convShape{
	{"1x1/512-128/12x12", 512, 128, 1, 1, 12, 1},
	{"1x1/128-512/12x12", 128, 512, 1, 1, 12, 1},
	{"1x1/1024-256/6x6", 1024, 256, 1, 1, 6, 1},
	{"1x1/256-1024/6x6", 256, 1024, 1, 1, 6, 1},
	{"3x3/256/6x6", 256, 256, 3, 1, 6, 1},
	{"1x1/2048-512/3x3", 2048, 512, 1, 1, 3, 1},
	{"1x1/512-2048/3x3", 512, 2048, 1, 1, 3, 1},
	{"3x3/512/3x3", 512, 512, 3, 1, 3, 1},
}

// BenchmarkResnet50Convs is BenchmarkResnet18Convs for resnet50Convs:
//
//	GODEBUG=cpu.avx512f=off go test ./lowering -run '^$' -bench Resnet50Convs -benchtime 30x
func BenchmarkResnet50Convs(b *testing.B) { benchmarkConvs(b, resnet50Convs) }

// BenchmarkResnet18WeightConvs runs the convolutions of resnet18's layers 3 and 4 (the last
// six of resnet18Convs) at N = 8 as well as 3: there their weights (up to 9.4 MB a model) come
// from the L3 or memory, read once a launch, so the kernel streams them; "weight-GB/s" is
// the weight bytes of a run per second of the convolution kernel's launches.
func BenchmarkResnet18WeightConvs(b *testing.B) {
	for _, n := range []int{3, 8} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			benchmarkGraphsN(b, n, resnet18Convs[len(resnet18Convs)-6:], convBNReLUGraph)
		})
	}
}

// stemConvs are the first convolutions of the real models (bench/peers/real_models.py): 3 input
// channels, stride 2, resnet18's 7x7 and the others' 3x3 (regnet_y_400mf and shufflenet_v2_x0_5
// on 96x96 images, mobilenet_v3_small and efficientnet_b0 on 64x64).
var stemConvs = []convShape{
	{"resnet18/7x7s2/3-64/96x96", 3, 64, 7, 2, 96, 1},
	{"regnet/3x3s2/3-32/96x96", 3, 32, 3, 2, 96, 1},
	{"shufflenet/3x3s2/3-24/96x96", 3, 24, 3, 2, 96, 1},
	{"mobilenet/3x3s2/3-16/64x64", 3, 16, 3, 2, 64, 1},
	{"effnet/3x3s2/3-32/64x64", 3, 32, 3, 2, 64, 1},
}

// BenchmarkStemConvs is BenchmarkResnet18Convs for the models' stems (stemConvs), each with
// its input's stride phase copy:
//
//	go test ./lowering -run '^$' -bench StemConvs -benchtime 40x
func BenchmarkStemConvs(b *testing.B) { benchmarkConvs(b, stemConvs) }

// BenchmarkRegnetGroupedConvs is BenchmarkResnet18Convs for regnet_y_400mf's grouped
// convolutions (regnetGroupedConvs).
func BenchmarkRegnetGroupedConvs(b *testing.B) { benchmarkConvs(b, regnetGroupedConvs) }

// mobileDepthwiseConvs are the depthwise convolutions of torchvision's efficientnet_b0 on 64x64
// images and shufflenet_v2_x0_5 on 96x96 (bench/peers/real_models.py): 3x3 and 5x5, each
// stage's first at stride 2, from 24 channels on 24x24 maps to 1152 on 2x2 (smaller than the
// 5x5 kernel).
var mobileDepthwiseConvs = []convShape{
	{"effnet/dw3/32/32x32", 32, 32, 3, 1, 32, 32},
	{"effnet/dw3s2/96/32x32", 96, 96, 3, 2, 32, 96},
	{"effnet/dw3/144/16x16", 144, 144, 3, 1, 16, 144},
	{"effnet/dw5s2/144/16x16", 144, 144, 5, 2, 16, 144},
	{"effnet/dw5/240/8x8", 240, 240, 5, 1, 8, 240},
	{"effnet/dw3s2/240/8x8", 240, 240, 3, 2, 8, 240},
	{"effnet/dw3/480/4x4", 480, 480, 3, 1, 4, 480},
	{"effnet/dw5/672/4x4", 672, 672, 5, 1, 4, 672},
	{"effnet/dw5s2/672/4x4", 672, 672, 5, 2, 4, 672},
	{"effnet/dw5/1152/2x2", 1152, 1152, 5, 1, 2, 1152},
	{"effnet/dw3/1152/2x2", 1152, 1152, 3, 1, 2, 1152},
	{"shufflenet/dw3s2/24/24x24", 24, 24, 3, 2, 24, 24},
	{"shufflenet/dw3/24/12x12", 24, 24, 3, 1, 12, 24},
	{"shufflenet/dw3s2/48/12x12", 48, 48, 3, 2, 12, 48},
	{"shufflenet/dw3/48/6x6", 48, 48, 3, 1, 6, 48},
	{"shufflenet/dw3s2/96/6x6", 96, 96, 3, 2, 6, 96},
	{"shufflenet/dw3/96/3x3", 96, 96, 3, 1, 3, 96},
}

// BenchmarkMobileDepthwiseConvs is BenchmarkResnet18Convs for the depthwise convolutions of
// mobileDepthwiseConvs; "node" adds the input's copy into channel blocks.
func BenchmarkMobileDepthwiseConvs(b *testing.B) { benchmarkConvs(b, mobileDepthwiseConvs) }

// BenchmarkRegnetGroupedConvsAll and BenchmarkRegnetGroupedConvsFlat are
// BenchmarkRegnetGroupedConvs with every map on conv_grouped.py (convGroupedAlways) or on
// conv_flat.py (convGroupedBlocks off), for A/B runs of the two kernels.
func BenchmarkRegnetGroupedConvsAll(b *testing.B) {
	convGroupedAlways = true
	defer func() { convGroupedAlways = false }()
	benchmarkConvs(b, regnetGroupedConvs)
}

func BenchmarkRegnetGroupedConvsFlat(b *testing.B) {
	convGroupedBlocks = false
	defer func() { convGroupedBlocks = true }()
	benchmarkConvs(b, regnetGroupedConvs)
}

// BenchmarkRegnetGroupedConvsUnmerged is BenchmarkRegnetGroupedConvs with narrow groups run
// one by one (convMergeGroups off), for A/B runs of the merged groups.
func BenchmarkRegnetGroupedConvsUnmerged(b *testing.B) {
	convMergeGroups = false
	defer func() { convMergeGroups = true }()
	benchmarkConvs(b, regnetGroupedConvs)
}

// BenchmarkRegnetPointwiseConvs is BenchmarkResnet18Convs for regnet_y_400mf's pointwise
// convolutions (regnetPointwiseConvs).
func BenchmarkRegnetPointwiseConvs(b *testing.B) { benchmarkConvs(b, regnetPointwiseConvs) }

// BenchmarkRegnetPointwiseSE is BenchmarkRegnetPointwiseConvs for the f.c convolutions as the
// model runs them: the squeeze-excite scale of their input, BatchNorm, the residual add and
// ReLU fused (scaledConvGraph).
func BenchmarkRegnetPointwiseSE(b *testing.B) {
	var fc []convShape
	for _, c := range regnetPointwiseConvs {
		if c.in == c.out {
			fc = append(fc, c)
		}
	}
	benchmarkGraphs(b, fc, scaledConvGraph)
}

func benchmarkConvs(b *testing.B, convs []convShape) { benchmarkGraphs(b, convs, convBNReLUGraph) }

func benchmarkGraphs(b *testing.B, convs []convShape, graphOf func(n, batch int, c convShape) string) {
	benchmarkGraphsN(b, 3, convs, graphOf)
}

// benchmarkGraphsN runs each of convs at n models (benchmarkGraph).
func benchmarkGraphsN(b *testing.B, n int, convs []convShape, graphOf func(n, batch int, c convShape) string) {
	for _, c := range convs {
		b.Run(c.name, func(b *testing.B) { benchmarkGraph(b, n, c, graphOf) })
	}
}

// benchmarkGraph runs graphOf(c) at n models, batch 2 under measureCPU, its flops and weight
// bytes those of c.
func benchmarkGraph(b *testing.B, n int, c convShape, graphOf func(n, batch int, c convShape) string) {
	const batch = 2
	g, err := graph.Parse("conv.json", []byte(graphOf(n, batch, c)), graph.Options{})
	if err != nil {
		b.Fatal(err)
	}
	r, inputs, plan := benchRunner(b, g, 1)
	defer r.Close()
	oh := (c.hw+2*(c.k/2)-c.k)/c.stride + 1
	weights := 4 * float64(n*c.out*c.in/c.groups*c.k*c.k)
	measureCPU(b, r, inputs, plan, 2*float64(n*batch*c.out*c.in/c.groups*c.k*c.k*oh*oh), weights)
}

// regnetDownsamplings are regnet_y_400mf's stride-2 entries on 96x96 images: each stage's
// first f.a (1x1, in -> width) and the grouped 3x3 stride-2 f.b (group width 8) reading it.
var regnetDownsamplings = []convShape{
	{"32-48/48x48", 32, 48, 3, 2, 48, 6},
	{"48-104/24x24", 48, 104, 3, 2, 24, 13},
	{"104-208/12x12", 104, 208, 3, 2, 12, 26},
	{"208-440/6x6", 208, 440, 3, 2, 6, 55},
}

// pointwiseThenStridedGraph is a 1x1 convolution (c.in -> c.out) + eval BatchNorm + ReLU read
// by the c.k x c.k convolution c at c.stride (c.out channels in c.groups groups) + ReLU: a
// RegNet block's f.a and f.b.
func pointwiseThenStridedGraph(n, batch int, c convShape) string {
	return fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
 "inputs": [{"name": "x", "shape": [%d, %d, %d, %d], "dtype": "float32", "per_model": true}],
 "params": [{"name": "wa", "shape": [%d, %d, 1, 1], "dtype": "float32"}, {"name": "wb", "shape": [%d, %d, %d, %d], "dtype": "float32"},
  {"name": "g", "shape": [%d], "dtype": "float32"}, {"name": "b", "shape": [%d], "dtype": "float32"},
  {"name": "m", "shape": [%d], "dtype": "float32"}, {"name": "v", "shape": [%d], "dtype": "float32"}],
 "nodes": [{"name": "fa", "op": "conv2d", "inputs": ["x"], "params": {"weight": "wa"}, "attrs": {"in_channels": %d, "out_channels": %d, "kernel_size": [1, 1], "stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 1, "bias": false, "padding_mode": "zeros"}},
  {"name": "bn", "op": "batch_norm2d", "inputs": ["fa"], "params": {"weight": "g", "bias": "b", "running_mean": "m", "running_var": "v"}, "attrs": {"num_features": %d, "eps": 1e-05, "momentum": 0.1, "affine": true, "track_running_stats": true, "training": false}},
  {"name": "relu", "op": "relu", "inputs": ["bn"]},
  {"name": "fb", "op": "conv2d", "inputs": ["relu"], "params": {"weight": "wb"}, "attrs": {"in_channels": %d, "out_channels": %d, "kernel_size": [%d, %d], "stride": [%d, %d], "padding": [%d, %d], "dilation": [1, 1], "groups": %d, "bias": false, "padding_mode": "zeros"}},
  {"name": "relu2", "op": "relu", "inputs": ["fb"]}],
 "outputs": ["relu2"], "init": {"seed": 1}}`,
		n, batch, c.in, c.hw, c.hw, c.out, c.in, c.out, c.out/c.groups, c.k, c.k, c.out, c.out, c.out, c.out,
		c.in, c.out, c.out, c.out, c.out, c.k, c.k, c.stride, c.stride, c.k/2, c.k/2, c.groups)
}

// effnetExpansions are efficientnet_b0's expansion 1x1 convolutions on 64x64 images, each
// with the depthwise convolution reading it (k, stride; groups = channels).
var effnetExpansions = []convShape{
	{"16-96/32x32/dw3s2", 16, 96, 3, 2, 32, 96},
	{"24-144/16x16/dw3", 24, 144, 3, 1, 16, 144},
	{"24-144/16x16/dw5s2", 24, 144, 5, 2, 16, 144},
	{"40-240/8x8/dw5", 40, 240, 5, 1, 8, 240},
	{"40-240/8x8/dw3s2", 40, 240, 3, 2, 8, 240},
	{"80-480/4x4/dw3", 80, 480, 3, 1, 4, 480},
	{"192-1152/2x2/dw5", 192, 1152, 5, 1, 2, 1152},
}

// BenchmarkRegnetDownsampling times regnetDownsamplings (pointwiseThenStridedGraph) as
// measureCPU does, the 1x1 storing the stride phase planes the strided convolution reads
// ("phases", takePhasedInput) or a pad kernel copying them ("pad"), interleaved for A/B runs;
// flops count the strided convolution alone.
//
//	go test ./lowering -run '^$' -bench RegnetDownsampling -benchtime 40x
func BenchmarkRegnetDownsampling(b *testing.B) { benchmarkProducerStores(b, regnetDownsamplings) }

// BenchmarkEffnetExpansions is BenchmarkRegnetDownsampling for effnetExpansions: the 1x1
// storing the depthwise convolution's channel blocks ("phases": takeBlockedInput) or a pad
// kernel copying them.
func BenchmarkEffnetExpansions(b *testing.B) { benchmarkProducerStores(b, effnetExpansions) }

func benchmarkProducerStores(b *testing.B, convs []convShape) {
	for _, c := range convs {
		for _, v := range []struct {
			name  string
			store bool
		}{{"phases", true}, {"pad", false}} {
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				convPhaseStore, convBlockStore = v.store, v.store
				defer func() { convPhaseStore, convBlockStore = true, true }()
				benchmarkGraph(b, 3, c, pointwiseThenStridedGraph)
			})
		}
	}
}

// resnetStemGraph is torchvision resnet18's stem and the first convolution of layer1 at n
// models, batch 2, size x size images: conv 7x7 stride 2 pad 3 (3 -> 64) + BatchNorm + ReLU,
// max_pool 3x3 stride 2 pad 1, then conv 3x3 (64 -> 64) + BatchNorm whose residual is the
// pool's output, + ReLU (layer1.0 without its second convolution).
func resnetStemGraph(n, batch, size int) string {
	return fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
 "inputs": [{"name": "x", "shape": [%d, 3, %d, %d], "dtype": "float32", "per_model": true}],
 "params": [{"name": "w", "shape": [64, 3, 7, 7], "dtype": "float32"}, {"name": "w1", "shape": [64, 64, 3, 3], "dtype": "float32"},
  {"name": "g", "shape": [64], "dtype": "float32"}, {"name": "b", "shape": [64], "dtype": "float32"},
  {"name": "m", "shape": [64], "dtype": "float32"}, {"name": "v", "shape": [64], "dtype": "float32"}],
 "nodes": [{"name": "conv", "op": "conv2d", "inputs": ["x"], "params": {"weight": "w"}, "attrs": {"in_channels": 3, "out_channels": 64, "kernel_size": [7, 7], "stride": [2, 2], "padding": [3, 3], "dilation": [1, 1], "groups": 1, "bias": false, "padding_mode": "zeros"}},
  {"name": "bn", "op": "batch_norm2d", "inputs": ["conv"], "params": {"weight": "g", "bias": "b", "running_mean": "m", "running_var": "v"}, "attrs": {"num_features": 64, "eps": 1e-05, "momentum": 0.1, "affine": true, "track_running_stats": true, "training": false}},
  {"name": "relu", "op": "relu", "inputs": ["bn"]},
  {"name": "pool", "op": "max_pool2d", "inputs": ["relu"], "attrs": {"kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1], "dilation": [1, 1], "ceil_mode": false}},
  {"name": "conv1", "op": "conv2d", "inputs": ["pool"], "params": {"weight": "w1"}, "attrs": {"in_channels": 64, "out_channels": 64, "kernel_size": [3, 3], "stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 1, "bias": false, "padding_mode": "zeros"}},
  {"name": "bn1", "op": "batch_norm2d", "inputs": ["conv1"], "params": {"weight": "g", "bias": "b", "running_mean": "m", "running_var": "v"}, "attrs": {"num_features": 64, "eps": 1e-05, "momentum": 0.1, "affine": true, "track_running_stats": true, "training": false}},
  {"name": "add", "op": "add", "inputs": ["bn1", "pool"]},
  {"name": "relu1", "op": "relu", "inputs": ["add"]}],
 "outputs": ["relu1"], "init": {"seed": 1}}`, n, batch, size, size)
}

// BenchmarkResnet18Stem runs resnetStemGraph at N = 3 and 8 on 96x96 images, as `go run
// ./bench --real` runs resnet18, and reports measureCPU's figures (flops: the two
// convolutions) and the max pool's kernel time per run:
//
//	go test ./lowering -run '^$' -bench Resnet18Stem -benchtime 40x
func BenchmarkResnet18Stem(b *testing.B) {
	for _, n := range []int{3, 8} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			const batch, size = 2, 96
			g, err := graph.Parse("stem.json", []byte(resnetStemGraph(n, batch, size)), graph.Options{})
			if err != nil {
				b.Fatal(err)
			}
			r, inputs, plan := benchRunner(b, g, 1)
			defer r.Close()
			macs := batch * (64*3*49*48*48 + 64*64*9*24*24)
			measureCPU(b, r, inputs, plan, 2*float64(n*macs), 0)
		})
	}
}

// BenchmarkResnet18MaxPool runs resnet18's max pool (3x3 stride 2 pad 1 over the stem's 64
// channels of 48x48 at 96x96 input) alone at N = 3 and 8, batch 2; measureCPU's "GFLOP"
// figures count one operation a window tap (9 an output element).
//
//	go test ./lowering -run '^$' -bench Resnet18MaxPool -benchtime 100x
func BenchmarkResnet18MaxPool(b *testing.B) {
	for _, n := range []int{3, 8} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			g, err := graph.Parse("pool.json", []byte(fmt.Sprintf(`{"format": "widejit.graph/v1", "n": %d,
 "inputs": [{"name": "x", "shape": [2, 64, 48, 48], "dtype": "float32", "per_model": true}], "params": [],
 "nodes": [{"name": "pool", "op": "max_pool2d", "inputs": ["x"], "attrs": {"kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1], "dilation": [1, 1], "ceil_mode": false}}],
 "outputs": ["pool"], "init": {"seed": 1}}`, n)), graph.Options{})
			if err != nil {
				b.Fatal(err)
			}
			r, inputs, plan := benchRunner(b, g, 1)
			defer r.Close()
			measureCPU(b, r, inputs, plan, float64(n*2*64*24*24*9), 0)
		})
	}
}
