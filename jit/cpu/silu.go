package cpu

import "github.com/widejit/widejit/triton/ir"

// SiLU and the sigmoid as the lowering writes them, x / (o + exp(-x)) and s / (o + exp(-x))
// with scalars o and s (1), run as one step over L1-sized chunks of the tile, as the exact
// GELU does (gelu.go): four passes over whole tiles (negate, exp, add, divide) through three
// intermediate ones become one. Each op is the unfused one, in the same operand order and with
// the same rounding, so the results are the unfused ones bit for bit. The chain's inner
// instructions emit no step (they join geluSkip); the root Div reads x, unchanged by then.

// siluChain is a fusable root Div's chain: den = o + exp(-x), the root num / den.
type siluChain struct {
	x      *ir.Value // the negated tile
	num    *ir.Value // x (SiLU) or an absorbed splat (the sigmoid)
	o      *ir.Value // absorbed splat
	oFirst bool      // den is o + exp (else exp + o)
}

// findSilus maps each fusable root Div to its chain, adds the chain's other instructions to
// skip and maps a SiLU's negation to its root. It runs after the GELU chains and leaves
// every fused instruction alone.
func (c *compiler) findSilus(f *ir.Func, skip map[*ir.Instr]bool) (roots map[*ir.Instr]siluChain, negRoot map[*ir.Instr]*ir.Instr) {
	roots, negRoot = map[*ir.Instr]siluChain{}, map[*ir.Instr]*ir.Instr{}
	fusionSites(f, func(in *ir.Instr, settled func(*ir.Instr) bool) {
		if _, ok := c.gelus[in]; ok || skip[in] {
			return
		}
		s, inner, ok := c.siluAt(in)
		if !ok {
			return
		}
		for _, x := range inner {
			if !settled(x) || skip[x] {
				return
			}
		}
		roots[in] = s
		for _, x := range inner {
			skip[x] = true
		}
		if s.num == s.x {
			negRoot[inner[len(inner)-1]] = in
		}
	})
	return roots, negRoot
}

// siluAt matches root against num / (o + exp(-x)) (either order of the Add), num x itself or
// an absorbed scalar, and returns the chain and its other instructions.
func (c *compiler) siluAt(root *ir.Instr) (s siluChain, inner []*ir.Instr, ok bool) {
	if root.Op != ir.Div || len(root.Args) != 2 || len(root.Results) != 1 || root.Results[0].Type.Elem != ir.F32 ||
		!plainF32Tile(root.Results[0]) || c.claimed(root) || c.absorbed[root.Args[1]] {
		return s, nil, false
	}
	def := c.chainLink
	den := def(root.Args[1], ir.Add)
	if den == nil || len(den.Args) != 2 {
		return s, nil, false
	}
	o, e, oFirst := den.Args[0], den.Args[1], true
	if !c.absorbed[o] {
		o, e, oFirst = e, o, false
	}
	if !c.absorbed[o] || c.absorbed[e] {
		return s, nil, false
	}
	exp := def(e, ir.Exp)
	if exp == nil || len(exp.Args) != 1 {
		return s, nil, false
	}
	neg := def(exp.Args[0], ir.Neg)
	if neg == nil || len(neg.Args) != 1 {
		return s, nil, false
	}
	x, num := neg.Args[0], root.Args[0]
	if c.rowBcast[x] != nil || c.absorbed[x] || !plainF32Tile(x) || (num != x && !c.absorbed[num]) {
		return s, nil, false
	}
	return siluChain{x: x, num: num, o: o, oFirst: oFirst}, []*ir.Instr{den, exp, neg}, true
}

// siluStep is the fused root's step.
func (c *compiler) siluStep(root *ir.Instr, s siluChain, z int) (step, error) {
	x, okx := c.slots[s.x]
	o, oko := c.scalarOperand(s.o)
	num, scalarNum := 0, s.num != s.x
	okn := true
	if scalarNum {
		num, okn = c.scalarOperand(s.num)
	}
	if !okx || !oko || !okn || c.p.slotClass[x] != clsF32 {
		return nil, c.errf(root.Pos, ir.Div, "cannot fuse the SiLU chain")
	}
	span := func(fr *frame, from, to int) {
		xs, zs := fr.f32[x], fr.f32[z]
		ov := fr.f32[o][0]
		t, e := fr.chunkScratch()
		for lo := from; lo < to; lo += geluChunk {
			hi := min(lo+geluChunk, to)
			xx, zz := xs[lo:hi], zs[lo:hi]
			tt, ee := t[:len(zz)], e[:len(zz)]
			negF32(xx, tt)
			expF32(tt, ee)
			arithScalarF32(ir.Add, s.oFirst, ee, ov, ee)
			if scalarNum {
				arithScalarF32(ir.Div, true, ee, fr.f32[num][0], zz)
			} else {
				divF32(xx, ee, zz)
			}
		}
	}
	rows, n := tileRows(c.p.slotType[z])
	obs := c.observedBy[root.Results[0]] // observed.go
	return func(fr *frame) error { fr.spans(obs, rows, n, span); return nil }, nil
}
