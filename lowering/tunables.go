package lowering

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/jit"
)

// Tunables as autotune candidates. A kernel family whose tile sizes matter (matmul, fused MLP,
// conv implicit GEMM, the element-wise / row kernels' BLOCK) describes its tunables as a
// tunableSpace: each axis has the emitter's built-in choice (the heuristic, kept in the family
// file) and the range that is valid for the group's shapes. A group's candidates are then
// strategy x a few configurations: the heuristic's first, then one axis at a time halved or
// doubled, then num_warps 8 and, for kernels whose K loop the PTX backend pipelines, num_stages
// 2 and 4 (GPUs). The chosen configuration is stored in groupBase.tuned before the
// group is emitted; emitters read their block sizes from it (chosenTunables) and compute
// their grids from them.

// Tunables maps a kernel's tunable names (its constexprs, e.g. BLOCK_M, num_warps, num_stages) to
// values. Candidate.Params carries them to the tuner and plugins.
type Tunables map[string]int

// NumWarpsParam is the tunable holding the warp count: it changes only GPU code (the CPU
// backend ignores it), but it is part of the decision so a GPU tune can choose it.
const NumWarpsParam = "num_warps"

// NumStagesParam is the tunable holding the depth of a K loop's cp.async pipeline, Triton's
// num_stages (jit/ptx's pipeline.go): only in the spaces of kernels whose dots run on tensor
// cores in GPU code (fp16/bf16 operands, fp32 at TF32), the loops the PTX backend pipelines.
// It reaches the kernel as jit.Spec's NumStages.
const NumStagesParam = "num_stages"

const (
	defaultNumWarps = 4
	wideNumWarps    = 8
	// defaultNumStages is Triton's num_stages, which jit/ptx uses when a launch gives none.
	defaultNumStages = 3
	// maxTunableConfigs bounds the tile configurations per group; with two strategies a group
	// has at most 12 candidates on a CPU, which a tune times in seconds (a GPU adds num_warps
	// and num_stages variants: at most 16).
	maxTunableConfigs = 6
	// dotMinBlock is the smallest tile side tl.dot takes; dot tiles never go below it, even
	// for a smaller dimension.
	dotMinBlock = 16
)

// tunableAxis is one tile size of a kernel.
type tunableAxis struct {
	name  string // the kernel's constexpr, e.g. "BLOCK_M"
	short string // its name in candidate ids, e.g. "bm"
	def   int    // the emitter's built-in choice
	lo    int    // smallest valid value
	hi    int    // largest value offered (pruned by the dimension)
}

// blockAxis is a power-of-two tile size over a dimension of size dim: values from lo up to
// the next power of two of dim, at most maxBlock; the built-in choice def is always valid.
func blockAxis(name, short string, def, lo, maxBlock, dim int) tunableAxis {
	hi := max(min(maxBlock, nextPow2(dim)), lo, def)
	return tunableAxis{name: name, short: short, def: def, lo: lo, hi: hi}
}

// tunableSpace is the tunables of one kernel group. A kernel whose K loop the PTX backend
// pipelines has num_stages too: stageBytes is one stage of its ring at the built-in tiles
// (0: no pipeline).
type tunableSpace struct {
	axes       []tunableAxis
	stageBytes int
	// hopper are whole configurations offered on a GPU besides the axes' (hopperConfigs)
	hopper []Tunables
	// builtIn, when set, is the built-in configuration instead of the axes' defaults (one of
	// hopper, where a launch has enough of its tiles to fill a GPU: matmulGroup.tunables)
	builtIn Tunables
}

// maxRingBytes is what jit/ptx lets a pipeline's ring use (48 KiB, the shared memory a CTA
// gets without an opt-in); a deeper ring is shortened to fit.
const maxRingBytes = 48 << 10

// stageDepths are the num_stages variants offered besides the built-in 3: 2 and 4, each only
// where its ring fits and the built-in one was not shortened to it (else both would compile
// to one kernel, and timing them would pick between identical kernels by noise).
func (s tunableSpace) stageDepths() []int {
	if s.stageBytes == 0 {
		return nil
	}
	built := defaultNumStages
	for built > 2 && built*s.stageBytes > maxRingBytes {
		built--
	}
	var out []int
	for _, d := range []int{2, 4} {
		if d != built && d*s.stageBytes <= maxRingBytes {
			out = append(out, d)
		}
	}
	return out
}

// tunableGroup is a group whose kernel has tunables; ok is false when this instance has none
// (e.g. a depthwise convolution, which uses the direct kernel).
type tunableGroup interface {
	group
	tunables() (space tunableSpace, ok bool)
}

// defaults is the built-in configuration: builtIn, else axesDefaults.
func (s tunableSpace) defaults() Tunables {
	if s.builtIn != nil {
		return maps.Clone(s.builtIn)
	}
	return s.axesDefaults()
}

// axesDefaults is every axis at the heuristic's value, 4 warps (and 3 stages).
func (s tunableSpace) axesDefaults() Tunables {
	t := Tunables{NumWarpsParam: defaultNumWarps}
	if s.stageBytes > 0 {
		t[NumStagesParam] = defaultNumStages
	}
	for _, a := range s.axes {
		t[a.name] = a.def
	}
	return t
}

// configs lists the configurations offered, the built-in one first: then the axes' defaults
// (where they are not the built-in one), each axis halved, then each axis doubled (within its
// range; at most maxTunableConfigs-2 of these), then, on a GPU, the axes' default tiles with
// 8 warps and with the stageDepths, and the hopper configurations.
func (s tunableSpace) configs(gpu bool) []Tunables {
	out := s.axesConfigs(gpu)
	if s.builtIn == nil {
		return out
	}
	first := []Tunables{s.defaults()}
	for _, t := range out {
		if !t.equal(s.builtIn) {
			first = append(first, t)
		}
	}
	return first
}

// axesConfigs is configs around the axes' defaults, which come first.
func (s tunableSpace) axesConfigs(gpu bool) []Tunables {
	def := s.axesDefaults()
	var variants []Tunables
	for _, a := range s.axes {
		if a.def/2 >= a.lo {
			variants = append(variants, def.with(a.name, a.def/2))
		}
	}
	for _, a := range s.axes {
		if a.def*2 <= a.hi {
			variants = append(variants, def.with(a.name, a.def*2))
		}
	}
	variants = variants[:min(len(variants), maxTunableConfigs-2)]
	out := append([]Tunables{def}, variants...)
	if !gpu {
		return out
	}
	out = append(out, def.with(NumWarpsParam, wideNumWarps))
	for _, d := range s.stageDepths() {
		out = append(out, def.with(NumStagesParam, d))
	}
	return append(out, s.hopper...)
}

// offersGPUTunables reports whether num_warps and num_stages are worth candidates on dev: not
// where programs run on host threads, where the kernel is the same computation whatever they
// are (timing the copies would only pick between identical kernels by noise).
func offersGPUTunables(dev jit.DeviceInfo) bool { return !dev.Caps.HostThreads }

// with returns a copy of t with name set to v.
func (t Tunables) with(name string, v int) Tunables {
	c := make(Tunables, len(t))
	for k, x := range t {
		c[k] = x
	}
	c[name] = v
	return c
}

// equal reports whether t and u hold the same names and values.
func (t Tunables) equal(u map[string]int) bool {
	if len(t) != len(u) {
		return false
	}
	for k, v := range t {
		if x, ok := u[k]; !ok || x != v {
			return false
		}
	}
	return true
}

// id names a configuration in candidate ids, e.g. "bm32-bn64-bk32-w4" (with stages:
// "bm32-bn64-bk32-w4-s3").
func (s tunableSpace) id(t Tunables) string {
	parts := make([]string, 0, len(s.axes)+2)
	for _, a := range s.axes {
		parts = append(parts, fmt.Sprintf("%s%d", a.short, t[a.name]))
	}
	parts = append(parts, fmt.Sprintf("w%d", t[NumWarpsParam]))
	if s.stageBytes > 0 {
		parts = append(parts, fmt.Sprintf("s%d", t[NumStagesParam]))
	}
	return strings.Join(parts, "-")
}

// String lists the values by name, sorted, e.g. "BLOCK=256 num_warps=4".
func (t Tunables) String() string {
	names := make([]string, 0, len(t))
	for k := range t {
		names = append(names, k)
	}
	sort.Strings(names)
	for i, k := range names {
		names[i] = fmt.Sprintf("%s=%d", k, t[k])
	}
	return strings.Join(names, " ")
}

// strategyCandidates is the candidates of a group's strategy decision: each strategy alone
// when the group has no tunables (ids "batched", "sequential"), else strategy x configs with
// ids "<strategy>/<config>" and the configuration in Params; each strategy's built-in
// configuration comes first among its candidates, so the heuristic's ranking (stable within
// a strategy) keeps the emitter's choice.
func strategyCandidates(gr group, dev jit.DeviceInfo) []autotune.Candidate {
	strategies := []string{Batched, Sequential}
	tg, ok := gr.(tunableGroup)
	var space tunableSpace
	if ok {
		space, ok = tg.tunables()
	}
	var cands []autotune.Candidate
	for _, s := range strategies {
		if !ok {
			cands = append(cands, autotune.Candidate{ID: s, Strategy: s})
			continue
		}
		for _, t := range space.configs(offersGPUTunables(dev)) {
			cands = append(cands, autotune.Candidate{ID: s + "/" + space.id(t), Strategy: s, Params: t})
		}
	}
	return cands
}

// chosenTunables returns the tunables chosen for g (by the Chooser, through groupBase.tuned),
// else the built-in configuration.
func chosenTunables(g tunableGroup) Tunables {
	if t := g.base().tuned; t != nil {
		return t
	}
	space, _ := g.tunables()
	return space.defaults()
}

// applyGPUTunables sets the kernel's warp count and pipeline depth (jit.Spec's, part of the
// kernel's cache key) from its tunables; the defaults stay unset (4 warps, 3 stages) so
// default plans keep their kernel cache keys.
func applyGPUTunables(k *KernelSource, t Tunables) {
	if w := t[NumWarpsParam]; w != 0 && w != defaultNumWarps {
		k.NumWarps = w
	}
	if s := t[NumStagesParam]; s != 0 && s != defaultNumStages {
		k.NumStages = s
	}
}

// ringStage is the bytes of one pipeline stage of a K loop whose dot multiplies an [m, k]
// tile by a [k, n] one of dt over a reduction of length kDim, when jit/ptx pipelines it
// num_stages deep: a dot on tensor cores in GPU code whose operands cp.async can copy, fp32
// at TF32 (one element is a 4-byte copy), fp16 and bf16 when kDim is a multiple of 16 (the
// 4- to 16-byte copies of 16-bit elements need rows and masks proven aligned, which integer
// specialization gives for multiples of 16); not fp32 at bf16 precision, whose operands are
// cast after loading. Else 0.
func (g *groupBase) ringStage(dt graph.DType, m, n, k, kDim int) int {
	switch {
	case g.cpu:
		return 0
	case dt == graph.Float16 || dt == graph.BFloat16:
		if kDim%16 != 0 {
			return 0
		}
	case dt != graph.Float32 || g.precision != "tf32":
		return 0
	}
	return (m*k + k*n) * dt.Size()
}

// The tunable spaces of the families. Each family file keeps its heuristic
// (heuristicBlocks); these describe what may be tried instead.

func (g *matmulGroup) tunables() (tunableSpace, bool) {
	bm, bn, bk := g.heuristicBlocks()
	bnAxis := blockAxis("BLOCK_N", "bn", bn, dotMinBlock, g.maxBlock(128, 256), g.nn)
	if len(g.tails) > 0 {
		bnAxis.lo = bn // a row tail needs whole rows in a program (rowops.go)
	}
	hopper, builtIn := g.hopperConfigs()
	space := tunableSpace{axes: []tunableAxis{
		blockAxis("BLOCK_M", "bm", bm, dotMinBlock, 128, g.m),
		bnAxis,
		headKAxis(g.head, bk, g.maxBlock(64, 2*cpuMaxBlockK), g.k),
	}, stageBytes: g.ringStage(g.a.DType, bm, bn, bk, g.k), hopper: hopper}
	// on wgmma the larger tile and ring pay wherever its programs fill the GPU (an H100 or
	// H200 has 132 SMs); fewer, larger programs would leave SMs idle
	if builtIn != nil && g.models*g.batch*cdiv(g.m, builtIn["BLOCK_M"])*cdiv(g.nn, builtIn["BLOCK_N"]) >= hopperMinPrograms {
		space.builtIn = builtIn
	}
	return space, true
}

// hopperMinPrograms is how many programs a matmul launch needs for a Hopper tile to be its
// built-in configuration: about a Hopper GPU's SM count (132), so that each SM gets one.
const hopperMinPrograms = 128

// Hopper's tiles, as Triton's for sm_90: a 128-row tile over two warpgroups (8 warps, each
// warpgroup's 64 rows on wgmma), 128 or 256 columns, K slices of 64 (128-byte swizzled
// fp16/bf16 rows), 3 or 4 stages in a ring of up to hopperMaxRingBytes of shared memory
// (jit/ptx's limit on sm_90a, where the launch opts into more than 48 KiB). builtIn marks the
// one a large launch gets without tuning: the fastest of those timed on an H100
// (bench/gpu/README.md); the 256-column tile, Triton's best there, has not run on a GPU yet
// and is offered to `widejit tune` only.
var hopperTiles = []struct {
	bm, bn, bk, stages int
	builtIn            bool
}{{128, 128, 64, 3, false}, {128, 128, 64, 4, true}, {128, 256, 64, 3, false}}

// hopperMaxRingBytes is what jit/ptx lets a pipeline's ring use on sm_90a: its 227 KiB of
// shared memory per CTA less 32 KiB for the kernel's other staging.
const hopperMaxRingBytes = 195 << 10

// hopperConfigs are the Hopper tiles a wgmma device is offered for a 2-D fp16/bf16 matmul
// whose K loop jit/ptx pipelines (onto wgmma): where the output has more than 64 rows and
// columns (the default 64x64 tile covers less) and K at least 64. Where B is staged [K, N]
// (not a Linear's weight, read as B^T), 64 columns: wgmma reads such rows through a swizzle of
// at most 128 bytes. (jit/ptx keeps mma.sync where cp.async cannot copy the operands: rows not
// proven 16-byte aligned.) TF32 (fp32 at `high`) gets them with BLOCK_K 32, for a Linear only:
// wgmma reads tf32 operands K-major, so B must be B^T. builtIn is the configuration of the
// tile marked builtIn where B is B^T (a Linear's weight, as timed); nil otherwise.
func (g *matmulGroup) hopperConfigs() (configs []Tunables, builtIn Tunables) {
	dt := g.a.DType
	tf32 := dt == graph.Float32 && g.precision == "tf32"
	if !g.wgmma || g.cpu || len(g.tails) > 0 || g.head != nil || g.batch != 1 ||
		(dt != graph.Float16 && dt != graph.BFloat16 && !tf32) || g.m <= 64 || g.nn <= 64 || g.k < 64 ||
		tf32 && !g.bRowsAlongK() {
		return nil, nil
	}
	seen := map[[4]int]bool{}
	for _, t := range hopperTiles {
		if !g.bRowsAlongK() { // B staged [K, N]: its rows of bn elements must fit 128 bytes
			t.bn = 64
		}
		if tf32 { // rows of 32 fp32 values are the 128 bytes of a swizzle row
			t.bk = 32
		}
		stage := g.ringStage(dt, t.bm, t.bn, t.bk, g.k)
		if stage == 0 || t.stages*stage > hopperMaxRingBytes || seen[[4]int{t.bm, t.bn, t.bk, t.stages}] {
			continue
		}
		seen[[4]int{t.bm, t.bn, t.bk, t.stages}] = true
		c := Tunables{"BLOCK_M": t.bm, "BLOCK_N": t.bn, "BLOCK_K": t.bk, NumWarpsParam: wideNumWarps, NumStagesParam: t.stages}
		configs = append(configs, c)
		if t.builtIn && g.bRowsAlongK() { // the Linear's form, the one timed
			builtIn = c
		}
	}
	return configs, builtIn
}

// headKAxis is a dot's BLOCK_K axis: with a row head, never under K (the head normalises
// whole rows, rowops.go).
func headKAxis(head *rowHead, bk, maxBlock, k int) tunableAxis {
	a := blockAxis("BLOCK_K", "bk", bk, dotMinBlock, maxBlock, k)
	if head != nil {
		a.lo = max(a.lo, nextPow2(k))
	}
	return a
}

// maxBlock is the largest tile side offered: gpu on a GPU (registers and shared memory
// bound it), cpu on the CPU executor.
func (g *groupBase) maxBlock(gpu, cpu int) int {
	if g.cpu {
		return cpu
	}
	return gpu
}

// blocks is the tile sizes the matmul kernel is rendered with.
func (g *matmulGroup) blocks() (bm, bn, bk int) {
	t := chosenTunables(g)
	return t["BLOCK_M"], t["BLOCK_N"], t["BLOCK_K"]
}

// The fused MLP's BLOCK_N covers the whole output row (one program owns whole rows), so it
// is not tunable; the row, reduction and hidden-slice tiles are.
func (g *mlpGroup) tunables() (tunableSpace, bool) {
	bm, bk, bh := g.heuristicBlocks()
	f := g.first
	return tunableSpace{axes: []tunableAxis{
		blockAxis("BLOCK_M", "bm", bm, dotMinBlock, 64, f.m),
		headKAxis(g.head, bk, g.maxBlock(64, 2*cpuMaxBlockK), f.k),
		blockAxis("BLOCK_H", "bh", bh, dotMinBlock, 128, f.nn),
	}, stageBytes: g.ringStage(f.a.DType, bm, bh, bk, f.k)}, true
}

func (g *mlpGroup) blocks() (bm, bk, bh int) {
	t := chosenTunables(g)
	return t["BLOCK_M"], t["BLOCK_K"], t["BLOCK_H"]
}

// The implicit-GEMM convolutions (and conv_flat.py's depthwise form) have tile sizes here; the direct
// depthwise and grouped kernels keep their own.
func (g *convGroup) tunables() (tunableSpace, bool) {
	if g.depthwise && !g.flat || g.groupBlock > 0 {
		return tunableSpace{}, false
	}
	bp, boc, bk := g.heuristicBlocks()
	ocg, pixels := g.ocg, g.oh*g.ow
	if g.flat {
		ocg, _ = g.flatChannels()
	}
	if g.cols {
		pixels = g.gemmPixels() // every sample's
	}
	return tunableSpace{axes: []tunableAxis{
		blockAxis("BLOCK_P", "bp", bp, dotMinBlock, 128, pixels),
		blockAxis("BLOCK_OC", "boc", boc, dotMinBlock, 64, ocg),
		blockAxis("BLOCK_K", "bk", bk, dotMinBlock, 64, g.kExtent()),
	}, stageBytes: g.ringStage(g.x.DType, bp, boc, bk, g.kExtent())}, true
}

func (g *convGroup) blocks() (bp, boc, bk int) {
	t := chosenTunables(g)
	return t["BLOCK_P"], t["BLOCK_OC"], t["BLOCK_K"]
}

// Element-wise, row (norm) and pooling kernels loop or mask over any BLOCK; 16 is the
// smallest offered (a vector narrower than that only adds programs).
const minVectorBlock = 16

func (g *ewGroup) tunables() (tunableSpace, bool) {
	m := g.out.Numel()
	return tunableSpace{axes: []tunableAxis{
		blockAxis("BLOCK", "b", heuristicVectorBlock(m), minVectorBlock, 4096, m)}}, true
}

func (g *normGroup) tunables() (tunableSpace, bool) {
	return tunableSpace{axes: []tunableAxis{
		blockAxis("BLOCK", "b", heuristicVectorBlock(g.r), minVectorBlock, 4096, g.r)}}, true
}

func (g *poolGroup) tunables() (tunableSpace, bool) {
	if g.rows { // pool_rows.py keeps its own tiles
		return tunableSpace{}, false
	}
	m := g.out.Numel()
	return tunableSpace{axes: []tunableAxis{
		blockAxis("BLOCK", "b", heuristicVectorBlock(m), minVectorBlock, 4096, m)}}, true
}

// vectorBlock is the BLOCK a one-axis kernel is rendered with.
func vectorBlock(g tunableGroup) int { return chosenTunables(g)["BLOCK"] }

// heuristicVectorBlock is the built-in BLOCK of the element-wise, norm and pool kernels.
func heuristicVectorBlock(m int) int { return clamp(nextPow2(m), 16, 1024) }
