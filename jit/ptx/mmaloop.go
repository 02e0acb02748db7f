package ptx

import (
	"github.com/widejit/widejit/triton/ir"
)

// Accumulators held in registers across a K loop, as Triton keeps a tl.dot's accumulator in
// the MMA layout: when a for loop carries a tile that only feeds a tensor-core dot as its
// accumulator (acc = tl.dot(a, b, acc)) or only adds a dot's fresh product to itself
// (acc += tl.dot(a, b)), and yields that result, the tile lives as mma.sync C/D fragments in
// the registers of the warps that own its 16x8 tiles for the whole loop. Each step then stages
// only A and B in shared memory; the accumulator is converted from the blocked layout once
// before the loop and back once after it, instead of going through shared memory twice per step.

// fragAcc is one such loop-carried accumulator.
type fragAcc struct {
	iter  *ir.Value // the loop body's argument carrying it
	dot   *ir.Instr // the tensor-core dot that accumulates into it
	add   *ir.Instr // acc += tl.dot(...): the add folded into the dot (nil for tl.dot(a, b, acc))
	typ   string    // mmaKind's
	kstep int
	pipe  *pipeline  // its operands' cp.async pipeline, if any (pipeline.go)
	wg    *wgmmaPlan // the pipeline's dot runs on wgmma (wgmma.go)
}

// findFragAccs records the loops whose accumulators can live in registers (see above).
func (g *gen) findFragAccs(f *ir.Func) {
	uses, user := map[*ir.Value]int{}, map[*ir.Value]*ir.Instr{}
	var count func(b *ir.Block)
	count = func(b *ir.Block) {
		for _, in := range b.Instrs {
			for _, a := range in.Args {
				uses[a]++
				user[a] = in
			}
			for _, r := range in.Regions {
				count(r)
			}
		}
	}
	count(f.Body)
	g.uses, g.user, g.lazy, g.async = uses, user, map[*ir.Value]*ir.Instr{}, map[*ir.Value]*ir.Instr{}
	g.fragFor, g.fragDot, g.fragAdd = map[*ir.Instr][]*fragAcc{}, map[*ir.Instr]*fragAcc{}, map[*ir.Instr]*fragAcc{}
	g.frags = map[*ir.Value][]string{}
	var walk func(b *ir.Block)
	walk = func(b *ir.Block) {
		for _, in := range b.Instrs {
			for _, r := range in.Regions {
				walk(r)
			}
			if in.Op != ir.For {
				continue
			}
			body := in.Regions[0]
			top := map[*ir.Instr]bool{}
			for _, x := range body.Instrs {
				top[x] = true
			}
			yield := body.Instrs[len(body.Instrs)-1]
			if yield.Op != ir.Yield {
				continue
			}
			accs := make([]*fragAcc, len(body.Args)-1)
			found := false
			for i, x := range body.Args[1:] {
				y := yield.Args[i]
				d := y.Def
				if d == nil || !top[d] || uses[x] != 1 || uses[y] != 1 {
					continue
				}
				fa := &fragAcc{iter: x}
				switch {
				case d.Op == ir.Dot && d.Args[2] == x:
					fa.dot = d
				case d.Op == ir.Add && (d.Args[0] == x || d.Args[1] == x):
					other := d.Args[0]
					if other == x {
						other = d.Args[1]
					}
					od := other.Def
					if od == nil || od.Op != ir.Dot || !top[od] || uses[other] != 1 || !isZeroConst(od.Args[2]) || !od.Result().Type.Equal(x.Type) {
						continue
					}
					fa.dot, fa.add = od, d
				default:
					continue
				}
				typ, kstep, ok := g.mmaKind(fa.dot)
				if !ok || fa.dot.Result().Type.Elem != ir.F32 {
					continue
				}
				fa.typ, fa.kstep = typ, kstep
				accs[i], found = fa, true
				g.fragDot[fa.dot] = fa
				if fa.add != nil {
					g.fragAdd[fa.add] = fa
				}
			}
			if found {
				g.fragFor[in] = accs
			}
		}
	}
	walk(f.Body)
}

func isZeroConst(v *ir.Value) bool {
	d := v.Def
	return d != nil && d.Op == ir.Const && d.Int == 0 && d.Float == 0
}

// fragCount is how many fp32 registers a lane holds for a dot's accumulator: 4 per tile.
func (g *gen) fragCount(fa *fragAcc) int {
	if fa.wg != nil {
		return fa.wg.per * fa.wg.n / 2
	}
	return 4 * g.mmaShapeOf(fa.dot, fa.typ, fa.kstep).iters
}

// toFrags converts v (blocked layout) into the fragments of fa's dot through shared memory
// (a zero constant needs no conversion).
func (g *gen) toFrags(v *ir.Value, fa *fragAcc) []string {
	sh := g.mmaShapeOf(fa.dot, fa.typ, fa.kstep)
	if isZeroConst(v) {
		out := make([]string, g.fragCount(fa))
		for i := range out {
			out[i] = g.newReg(rcF32)
			g.emit("mov.f32 %s, 0f00000000", out[i])
		}
		return out
	}
	g.need(v.Type.NumElems() * 4)
	g.emit("bar.sync 0")
	g.stageF32(v, 0)
	g.emit("bar.sync 0")
	if w := fa.wg; w != nil {
		var out []string
		for i := range w.per {
			addr, offs := g.wgmmaFragAddrs(w, i)
			for _, off := range offs {
				c := g.newReg(rcF32)
				g.emit("ld.shared.f32 %s, [%s]", c, offsetAddr(addr, off))
				out = append(out, c)
			}
		}
		return out
	}
	l := g.mmaLanes()
	var out []string
	for it := range sh.iters {
		tile := g.newReg(rcB32)
		g.emit("add.u32 %s, %s, %d", tile, l.warp, it*g.threads/32)
		mt := g.mmaTileAt(sh, l, tile, 0)
		for _, off := range mt.cOffs {
			c := g.newReg(rcF32)
			g.emit("ld.shared.f32 %s, [%s]", c, offsetAddr(mt.cAddr, off))
			out = append(out, c)
		}
	}
	return out
}

// fromFrags converts fragments back into the blocked layout of a value of type t.
func (g *gen) fromFrags(frags []string, fa *fragAcc, t ir.Type) []string {
	sh := g.mmaShapeOf(fa.dot, fa.typ, fa.kstep)
	g.need(t.NumElems() * 4)
	g.emit("bar.sync 0")
	if w := fa.wg; w != nil {
		for i := range w.per {
			addr, offs := g.wgmmaFragAddrs(w, i)
			for j, off := range offs {
				g.emit("st.shared.f32 [%s], %s", offsetAddr(addr, off), frags[i*len(offs)+j])
			}
		}
	} else {
		l := g.mmaLanes()
		for it := range sh.iters {
			tile := g.newReg(rcB32)
			g.emit("add.u32 %s, %s, %d", tile, l.warp, it*g.threads/32)
			mt := g.mmaTileAt(sh, l, tile, 0)
			for i, off := range mt.cOffs {
				g.emit("@%s st.shared.f32 [%s], %s", mt.valid, offsetAddr(mt.cAddr, off), frags[4*it+i])
			}
		}
	}
	g.emit("bar.sync 0")
	return g.gather(ir.Tile(ir.F32, t.Shape...), rowMajorStrides(t.Shape), 0)
}

// fragDotStep is one loop step of fa's dot: A and B staged in shared memory, every tile of
// this warp accumulated into its fragment registers in place.
func (g *gen) fragDotStep(fa *fragAcc, acc []string) {
	switch {
	case fa.wg != nil:
		g.wgmmaStep(fa.pipe, acc)
		return
	case fa.pipe != nil:
		g.pipeStep(fa.pipe, acc)
		return
	}
	in := fa.dot
	sh := g.mmaShapeOf(in, fa.typ, fa.kstep)
	g.emit("bar.sync 0")
	g.stageDotOperands(in, sh)
	g.stagedBarrier()
	g.mmaFrags(sh, acc)
}

// mmaFrags accumulates every tile of this warp, its A and B staged, into acc in place.
func (g *gen) mmaFrags(sh mmaShape, acc []string) {
	l := g.mmaLanes()
	for it := range sh.iters {
		tile := g.newReg(rcB32)
		g.emit("add.u32 %s, %s, %d", tile, l.warp, it*g.threads/32)
		g.mmaKLoop(sh, g.mmaTileAt(sh, l, tile, 0), acc[4*it:4*it+4])
	}
}
