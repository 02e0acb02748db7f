package ptx

import (
	"github.com/widejit/widejit/triton/ir"
)

// A num_stages-deep cp.async software pipeline, as Triton's for a K loop on sm_80: when a
// loop's accumulator lives in mma fragments (mmaloop.go) and both operands of its dot are
// loads copied with cp.async (async.go), the staging area becomes a ring of num_stages
// buffers and the copies run num_stages-1 steps ahead of the MMAs. Before the loop, steps
// 0..S-2 are issued, one cp.async.commit_group each. Step k then waits until its own group
// has landed (cp.async.wait_group S-2), publishes it with the step's only barrier, which also
// tells every warp that step k-1's buffer is no longer read, issues the copies of step k+S-1
// into that buffer, and runs its MMAs while those copies are in flight. The loop is unrolled
// num_stages times, so the buffers a step reads and writes are at constant offsets (its
// ldmatrix addresses are computed once, before the loop, plus a constant).
//
// The copies of a step ahead come from the loop body's own address and mask computation,
// emitted once more with the induction variable and carried values of that step (the
// lookahead, carried in registers of its own): so the body may hold only pure operations,
// the two loads and the dot. A step past the loop's end copies nothing (source size 0).

// defaultStages is Triton's num_stages when a launch does not give one.
const defaultStages = 3

// maxStageSmem bounds the ring: the 48 KiB a CTA may use without an opt-in; on sm_90a, whose
// wgmma tiles need deeper rings (lowering's Hopper tiles), hopperStageSmem: 227 KiB less 32
// KiB for the kernel's other staging (jit/cuda opts a launch into more than 48 KiB).
const (
	maxStageSmem    = 48 << 10
	hopperStageSmem = 195 << 10
)

// pipeline is the state of one pipelined loop.
type pipeline struct {
	loop       *ir.Instr
	fa         *fragAcc
	stages     int
	stageBytes int
	ivL        string     // the lookahead's induction variable
	look       [][]string // the lookahead's carried values (nil: the accumulator)
	rd, wr     int        // byte offsets of the buffer read this step and the one written
	tiles      []mmaTile  // this warp's tiles in the first buffer, computed once
	ity        string
}

// pipelineFor returns the pipeline of loop in, or nil where the loop does not qualify.
func (g *gen) pipelineFor(in *ir.Instr, accs []*fragAcc) *pipeline {
	if g.stages < 2 || g.fmaDots {
		return nil
	}
	var fa *fragAcc
	for _, a := range accs {
		if a != nil {
			if fa != nil {
				return nil
			}
			fa = a
		}
	}
	step := in.Args[2].Def
	if fa == nil || step == nil || step.Op != ir.Const || step.Int <= 0 || classOf(in.Args[0].Type) != rcB32 {
		return nil
	}
	body := in.Regions[0]
	defs := map[*ir.Value]bool{}
	for _, x := range body.Instrs {
		switch x.Op {
		case ir.Yield:
			continue
		case ir.Store, ir.AtomicRMW, ir.AtomicCAS, ir.Barrier, ir.Print, ir.Assert, ir.For, ir.If, ir.While, ir.Dot:
			if x != fa.dot {
				return nil
			}
		case ir.Load:
			if !g.asyncLoad(x) {
				return nil
			}
		}
		if len(x.Regions) > 0 {
			return nil
		}
		for _, r := range x.Results {
			defs[r] = true
		}
	}
	a, b := fa.dot.Args[0], fa.dot.Args[1]
	if b.Def != nil && b.Def.Op == ir.Permute {
		b = b.Def.Args[0]
	}
	if g.async[a] == nil || g.async[b] == nil || !defs[a] || !defs[b] {
		return nil
	}
	sh := g.mmaShapeOf(fa.dot, fa.typ, fa.kstep)
	p := &pipeline{loop: in, fa: fa, stages: g.stages, ity: intType(in.Args[0].Type.Elem),
		stageBytes: align16(sh.offB + fa.dot.Args[1].Type.NumElems()*sh.sz)}
	if sh.swA != 0 || sh.swB != 0 {
		// a swizzled row's XORed addresses need its buffer 128-byte aligned (mmaKLoop)
		p.stageBytes = (p.stageBytes + 127) &^ 127
	}
	limit := maxStageSmem
	if g.arch == "sm_90a" {
		limit = hopperStageSmem
	}
	for p.stages > 2 && p.stages*p.stageBytes > limit {
		p.stages--
	}
	if p.stages*p.stageBytes > limit {
		return nil
	}
	return p
}

// start issues steps 0..S-2 before the loop from its first values (lb, inits' registers).
func (g *gen) pipeStart(p *pipeline, lb string, inits [][]string) {
	g.need(p.stages * p.stageBytes)
	p.ivL = g.newReg(rcB32)
	g.mov(rcB32, p.ivL, lb)
	body := p.loop.Regions[0]
	p.look = make([][]string, len(inits))
	for i, a := range body.Args[1:] {
		if p.fa.iter == a {
			continue
		}
		c := classOf(a.Type)
		p.look[i] = make([]string, len(inits[i]))
		for r, s := range inits[i] {
			p.look[i][r] = g.newReg(c)
			g.mov(c, p.look[i][r], s)
		}
	}
	// the ring overlaps whatever shared memory held before (an accumulator converted to
	// fragments, an earlier dot's staging): every thread must be done reading it
	g.emit("bar.sync 0")
	for range p.stages - 1 {
		g.pipeIssue(p)
	}
	if p.fa.wg != nil {
		g.wgmmaStart(p.fa.wg)
		return
	}
	sh := g.mmaShapeOf(p.fa.dot, p.fa.typ, p.fa.kstep)
	l := g.mmaLanes()
	for it := range sh.iters {
		tile := g.newReg(rcB32)
		g.emit("add.u32 %s, %s, %d", tile, l.warp, it*g.threads/32)
		p.tiles = append(p.tiles, g.mmaTileAt(sh, l, tile, 0))
	}
}

// pipeStep is step k of the loop's dot: wait for its buffer, issue step k+S-1, run the MMAs.
func (g *gen) pipeStep(p *pipeline, acc []string) {
	g.emit("cp.async.wait_group %d", p.stages-2)
	g.emit("bar.sync 0")
	g.pipeIssue(p)
	sh := g.mmaShapeOf(p.fa.dot, p.fa.typ, p.fa.kstep)
	for it, mt := range p.tiles {
		at := mt
		at.aAddr, at.bAddr = g.newReg(rcB32), g.newReg(rcB32)
		g.emit("add.u32 %s, %s, %d", at.aAddr, mt.aAddr, p.rd)
		g.emit("add.u32 %s, %s, %d", at.bAddr, mt.bAddr, p.rd)
		if mt.bAddr2 != "" {
			at.bAddr2 = g.newReg(rcB32)
			g.emit("add.u32 %s, %s, %d", at.bAddr2, mt.bAddr2, p.rd)
		}
		at.aK, at.bK = g.atOffset(mt.aK, p.rd), g.atOffset(mt.bK, p.rd)
		g.mmaKLoop(sh, at, acc[4*it:4*it+4])
	}
	p.rd = p.next(p.rd)
}

// pipeIssue copies the lookahead's step into buffer wr, then advances the lookahead. The
// body's values keep their registers for the step being emitted.
func (g *gen) pipeIssue(p *pipeline) {
	body := p.loop.Regions[0]
	saved := map[*ir.Value][]string{}
	keep := func(v *ir.Value) {
		if r, ok := g.vals[v]; ok {
			saved[v] = r
		} else {
			saved[v] = nil
		}
	}
	for _, a := range body.Args {
		keep(a)
	}
	for _, x := range body.Instrs {
		for _, r := range x.Results {
			keep(r)
		}
	}
	g.vals[body.Args[0]] = []string{p.ivL}
	for i, a := range body.Args[1:] {
		if p.look[i] != nil {
			g.vals[a] = p.look[i]
		}
	}
	var yield *ir.Instr
	for _, x := range body.Instrs {
		switch {
		case x.Op == ir.Yield:
			yield = x
		case x != p.fa.dot && x != p.fa.add:
			g.instr(x)
		}
	}
	in := g.newReg(rcPred)
	g.emit("setp.lt.%s %s, %s, %s", p.ity, in, p.ivL, g.get(p.loop.Args[1])[0])
	base := g.atStage(p.wr)
	g.asyncGuard = in
	sh := g.mmaShapeOf(p.fa.dot, p.fa.typ, p.fa.kstep)
	if w := p.fa.wg; w != nil {
		sh.swA, sh.swB, g.swizzled1024 = w.swA, w.swB, true
	}
	g.stageDotOperands(p.fa.dot, sh)
	g.asyncGuard, g.smemBase, g.asyncPending = "", base, false
	g.emit("cp.async.commit_group")

	var dsts [][]string
	var srcs []*ir.Value
	for i, y := range yield.Args {
		if p.look[i] != nil {
			dsts, srcs = append(dsts, p.look[i]), append(srcs, y)
		}
	}
	g.copyValues(dsts, srcs)
	g.emit("add.%s %s, %s, %s", p.ity, p.ivL, p.ivL, g.get(p.loop.Args[2])[0])
	p.wr = p.next(p.wr)
	for v, r := range saved {
		if r == nil {
			delete(g.vals, v)
		} else {
			g.vals[v] = r
		}
	}
}

// pipeEnd follows the loop: the copies of the steps past the end (zero fills) land, and the
// last step's wgmmas (wgmma.go) complete.
func (g *gen) pipeEnd(p *pipeline) {
	g.emit("cp.async.wait_all")
	if p.fa.wg != nil {
		g.emit("wgmma.wait_group.sync.aligned 0")
	}
}

// atStage points the staging area at byte offset off and returns the base to restore.
func (g *gen) atStage(off int) string {
	base := g.smem()
	g.smemBase = g.newReg(rcB32)
	g.emit("add.u32 %s, %s, %d", g.smemBase, base, off)
	return base
}

// atOffset is addrs, each plus off (nil for nil).
func (g *gen) atOffset(addrs []string, off int) []string {
	var out []string
	for _, a := range addrs {
		r := g.newReg(rcB32)
		g.emit("add.u32 %s, %s, %d", r, a, off)
		out = append(out, r)
	}
	return out
}

// next is the byte offset of the buffer after the one at off in the ring.
func (p *pipeline) next(off int) int { return (off + p.stageBytes) % (p.stages * p.stageBytes) }
