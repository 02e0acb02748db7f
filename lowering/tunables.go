package lowering

import (
	"fmt"
	"sort"
	"strings"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/jit"
)

// Tunables as autotune candidates. A kernel family whose tile sizes matter (matmul, fused MLP,
// conv implicit GEMM, the element-wise / row kernels' BLOCK) describes its tunables as a
// tunableSpace: each axis has the emitter's built-in choice (the heuristic, kept in the family
// file) and the range that is valid for the group's shapes. A group's candidates are then
// strategy x a few configurations: the heuristic's first, then one axis at a time halved or
// doubled, then num_warps 8 (GPUs). The chosen configuration is stored in groupBase.tuned before the
// group is emitted; emitters read their block sizes from it (chosenTunables) and compute
// their grids from them.

// Tunables maps a kernel's tunable names (its constexprs, e.g. BLOCK_M, and num_warps) to
// values. Candidate.Params carries them to the tuner and plugins.
type Tunables map[string]int

// NumWarpsParam is the tunable holding the warp count: it changes only GPU code (the CPU
// backend ignores it), but it is part of the decision so a GPU tune can choose it.
const NumWarpsParam = "num_warps"

const (
	defaultNumWarps = 4
	wideNumWarps    = 8
	// maxTunableConfigs bounds the configurations per group; with two strategies a group has
	// at most 12 candidates, which a tune times in seconds on a CPU.
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

// tunableSpace is the tunables of one kernel group.
type tunableSpace struct{ axes []tunableAxis }

// tunableGroup is a group whose kernel has tunables; ok is false when this instance has none
// (e.g. a depthwise convolution, which uses the direct kernel).
type tunableGroup interface {
	group
	tunables() (space tunableSpace, ok bool)
}

// defaults is the built-in configuration: every axis at the heuristic's value, 4 warps.
func (s tunableSpace) defaults() Tunables {
	t := Tunables{NumWarpsParam: defaultNumWarps}
	for _, a := range s.axes {
		t[a.name] = a.def
	}
	return t
}

// configs lists the configurations offered, the built-in one first: then each axis halved,
// then each axis doubled (within its range; at most maxTunableConfigs-2 of these), then, when
// warps is set, the built-in tiles with 8 warps.
func (s tunableSpace) configs(warps bool) []Tunables {
	def := s.defaults()
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
	if !warps {
		return out
	}
	return append(out, def.with(NumWarpsParam, wideNumWarps))
}

// offersWarps reports whether num_warps is worth a candidate on dev: not where programs run
// on host threads, where the kernel is the same computation whatever the warp count (timing
// the copies would only pick between identical kernels by noise).
func offersWarps(dev jit.DeviceInfo) bool { return !dev.Caps.HostThreads }

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

// id names a configuration in candidate ids, e.g. "bm32-bn64-bk32-w4".
func (s tunableSpace) id(t Tunables) string {
	parts := make([]string, 0, len(s.axes)+1)
	for _, a := range s.axes {
		parts = append(parts, fmt.Sprintf("%s%d", a.short, t[a.name]))
	}
	parts = append(parts, fmt.Sprintf("w%d", t[NumWarpsParam]))
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
		for _, t := range space.configs(offersWarps(dev)) {
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

// applyNumWarps sets the kernel's warp count from its tunables; the default stays 0 ("4")
// so default plans keep their kernel cache keys.
func applyNumWarps(k *KernelSource, t Tunables) {
	if w := t[NumWarpsParam]; w != 0 && w != defaultNumWarps {
		k.NumWarps = w
	}
}

// The tunable spaces of the families. Each family file keeps its heuristic
// (heuristicBlocks); these describe what may be tried instead.

func (g *matmulGroup) tunables() (tunableSpace, bool) {
	bm, bn, bk := g.heuristicBlocks()
	bnAxis := blockAxis("BLOCK_N", "bn", bn, dotMinBlock, g.maxBlock(128, 256), g.nn)
	if len(g.tails) > 0 {
		bnAxis.lo = bn // a row tail needs whole rows in a program (rowops.go)
	}
	return tunableSpace{axes: []tunableAxis{
		blockAxis("BLOCK_M", "bm", bm, dotMinBlock, 128, g.m),
		bnAxis,
		headKAxis(g.head, bk, g.maxBlock(64, 2*cpuMaxBlockK), g.k),
	}}, true
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
	}}, true
}

func (g *mlpGroup) blocks() (bm, bk, bh int) {
	t := chosenTunables(g)
	return t["BLOCK_M"], t["BLOCK_K"], t["BLOCK_H"]
}

// The implicit-GEMM convolutions (and conv_flat.py's depthwise form) have tile sizes here; the direct
// depthwise kernel keeps its own.
func (g *convGroup) tunables() (tunableSpace, bool) {
	if g.depthwise && !g.flat {
		return tunableSpace{}, false
	}
	bp, boc, bk := g.heuristicBlocks()
	ocg := g.ocg
	if g.flat {
		ocg, _ = g.flatChannels()
	}
	return tunableSpace{axes: []tunableAxis{
		blockAxis("BLOCK_P", "bp", bp, dotMinBlock, 128, g.oh*g.ow),
		blockAxis("BLOCK_OC", "boc", boc, dotMinBlock, 64, ocg),
		blockAxis("BLOCK_K", "bk", bk, dotMinBlock, 64, g.kExtent()),
	}}, true
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
