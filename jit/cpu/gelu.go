package cpu

import "github.com/widejit/widejit/triton/ir"

// The exact GELU, x*h * (o + erf(x*c)) with scalars h, o and c (0.5, 1 and 1/sqrt(2) as the
// lowering writes it), runs as one step over chunks of the tile small enough to stay in L1,
// instead of five passes over whole tiles through four intermediate ones: on an MLP's
// hidden tiles the passes around erf cost as much as erf itself. Each op is the unfused
// one, in the same operand order and with the same rounding, so the results are the unfused
// ones bit for bit. The chain's inner instructions emit no step; the root Mul reads x, which
// is unchanged by then: every value has its own slot, and no store, atomic or region runs
// between the chain's first instruction and the root.

// geluChain is a fusable root Mul's chain: scaled = x*h, shifted = o + erf(x*c).
type geluChain struct {
	x, h, o, c  *ir.Value // h, o, c: absorbed splats
	hFirst      bool      // scaled is h*x (else x*h)
	oFirst      bool      // shifted is o + erf (else erf + o)
	cFirst      bool      // the erf's argument is c*x (else x*c)
	scaledFirst bool      // root is scaled * shifted (else shifted * scaled)
}

// findGelus maps each fusable root Mul to its chain and marks the chain's other
// instructions in skip. It runs after the other fusions and leaves their instructions alone.
func (c *compiler) findGelus(f *ir.Func) (roots map[*ir.Instr]geluChain, skip map[*ir.Instr]bool) {
	roots, skip = map[*ir.Instr]geluChain{}, map[*ir.Instr]bool{}
	fusionSites(f, func(in *ir.Instr, settled func(*ir.Instr) bool) {
		g, inner, ok := c.geluAt(in)
		if !ok {
			return
		}
		for _, x := range inner {
			if !settled(x) {
				return
			}
		}
		roots[in] = g
		for _, x := range inner {
			skip[x] = true
		}
	})
	return roots, skip
}

// geluAt matches root against x*h * (o + erf(x*c)) (either operand order of each op) and
// returns the chain and its other instructions.
func (c *compiler) geluAt(root *ir.Instr) (g geluChain, inner []*ir.Instr, ok bool) {
	if root.Op != ir.Mul || len(root.Args) != 2 || len(root.Results) != 1 || root.Results[0].Type.Elem != ir.F32 ||
		!plainF32Tile(root.Results[0]) || c.claimed(root) {
		return g, nil, false
	}
	def := c.chainLink
	// scalarAndVector splits a two-operand op into its absorbed scalar and its vector.
	scalarAndVector := func(in *ir.Instr) (s, v *ir.Value, scalarFirst, ok bool) {
		if len(in.Args) != 2 {
			return nil, nil, false, false
		}
		a, b := in.Args[0], in.Args[1]
		switch {
		case c.absorbed[a] && !c.absorbed[b]:
			return a, b, true, true
		case c.absorbed[b] && !c.absorbed[a]:
			return b, a, false, true
		}
		return nil, nil, false, false
	}
	for _, scaledFirst := range []bool{true, false} {
		sv, hv := root.Args[0], root.Args[1]
		if !scaledFirst {
			sv, hv = hv, sv
		}
		scaled, shifted := def(sv, ir.Mul), def(hv, ir.Add)
		if scaled == nil || shifted == nil {
			continue
		}
		h, x, hFirst, ok1 := scalarAndVector(scaled)
		o, e, oFirst, ok2 := scalarAndVector(shifted)
		if !ok1 || !ok2 || c.rowBcast[x] != nil {
			continue
		}
		erf := def(e, ir.Erf)
		if erf == nil || len(erf.Args) != 1 {
			continue
		}
		arg := def(erf.Args[0], ir.Mul)
		if arg == nil {
			continue
		}
		cv, x2, cFirst, ok3 := scalarAndVector(arg)
		if !ok3 || x2 != x {
			continue
		}
		g = geluChain{x: x, h: h, o: o, c: cv, hFirst: hFirst, oFirst: oFirst, cFirst: cFirst, scaledFirst: scaledFirst}
		return g, []*ir.Instr{scaled, shifted, erf, arg}, true
	}
	return g, nil, false
}

// claimed reports an instruction that another fusion computes or skips.
func (c *compiler) claimed(in *ir.Instr) bool {
	_, mulAdd := c.mulAdds[in]
	_, dotAdd := c.dotAdds[in]
	return mulAdd || dotAdd || c.mulSkip[in] || c.dotSkip[in]
}

// geluChunk is the lanes the fused step computes at once: x, z and two chunk buffers stay
// in L1 (16 KB).
const geluChunk = 1024

// geluStep is the fused root's step.
func (c *compiler) geluStep(root *ir.Instr, g geluChain, z int) (step, error) {
	x, okx := c.slots[g.x]
	h, okh := c.scalarOperand(g.h)
	o, oko := c.scalarOperand(g.o)
	cs, okc := c.scalarOperand(g.c)
	if !okx || !okh || !oko || !okc || c.p.slotClass[x] != clsF32 {
		return nil, c.errf(g.x.Def.Pos, ir.Mul, "cannot fuse the GELU chain")
	}
	span := func(fr *frame, from, to int) {
		xs, zs := fr.f32[x], fr.f32[z]
		hv, ov, cv := fr.f32[h][0], fr.f32[o][0], fr.f32[cs][0]
		t, e := fr.chunkScratch()
		for lo := from; lo < to; lo += geluChunk {
			hi := min(lo+geluChunk, to)
			xx, zz := xs[lo:hi], zs[lo:hi]
			tt, ee := t[:len(zz)], e[:len(zz)]
			arithScalarF32(ir.Mul, g.cFirst, xx, cv, tt)
			erfF32(tt, ee)
			arithScalarF32(ir.Add, g.oFirst, ee, ov, ee)
			arithScalarF32(ir.Mul, g.hFirst, xx, hv, tt)
			if g.scaledFirst {
				mulF32(tt, ee, zz)
			} else {
				mulF32(ee, tt, zz)
			}
		}
	}
	rows, n := tileRows(c.p.slotType[z])
	obs := c.observedBy[root.Results[0]] // observed.go
	return func(fr *frame) error { fr.spans(obs, rows, n, span); return nil }, nil
}

// mulF32 sets z = a * b lane by lane (the unfused Mul's loop).
func mulF32(a, b, z []float32) {
	a, b = a[:len(z)], b[:len(z)]
	for i := vecF32('*', a, b, z); i < len(z); i++ {
		z[i] = a[i] * b[i]
	}
}

// chainLink is the instruction that defines v inside a fused element-wise chain (a GELU's, a
// SiLU's): an op of kind op whose single-use result is a plain fp32 tile, not claimed by
// another fusion, no row broadcast; nil otherwise.
func (c *compiler) chainLink(v *ir.Value, op ir.Op) *ir.Instr {
	in := v.Def
	if in == nil || in.Op != op || len(in.Results) != 1 || c.uses[v] != 1 || !plainF32Tile(v) ||
		c.claimed(in) || c.rowBcast[v] != nil {
		return nil
	}
	return in
}

// chunkScratch is the frame's two scratch chunks of geluChunk lanes, which a fused
// element-wise chain (a GELU's, a SiLU's) steps through so that its intermediates stay in L1.
func (fr *frame) chunkScratch() (t, e []float32) {
	if len(fr.chunks) < 2*geluChunk {
		fr.chunks = make([]float32, 2*geluChunk)
	}
	return fr.chunks[:geluChunk], fr.chunks[geluChunk : 2*geluChunk]
}

// chainRoot reports whether in is the root of a fused element-wise chain, a GELU's (gelus)
// or a SiLU's (silus), which runs as one step in its place.
func (c *compiler) chainRoot(in *ir.Instr) bool {
	_, gelu := c.gelus[in]
	_, silu := c.silus[in]
	return gelu || silu
}
