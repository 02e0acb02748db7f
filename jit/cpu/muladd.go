package cpu

import "github.com/widejit/widejit/triton/ir"

// x*a + b with scalar a and b (a scale-and-shift: normalization, affine epilogues) runs as
// one loop instead of two passes over the tile. It is still a multiply then an add, each
// rounded, so results are the unfused ones bit for bit; only fp32 qualifies (fp16/bf16
// round after each op). The Mul emits no step; the Add reads the Mul's operands, which
// must be unchanged by then: both sit in one block, the Add's operand is the Mul's only
// use, and no store, atomic or region runs between them.

// mulAddPair is a fused Mul: its vector operand and scalar operand values.
type mulAddPair struct {
	vec, scalar *ir.Value
}

// findMulAdds maps each fusable Add to its Mul, and marks those Muls in skip.
func (c *compiler) findMulAdds(f *ir.Func) (adds map[*ir.Instr]mulAddPair, skip map[*ir.Instr]bool) {
	adds, skip = map[*ir.Instr]mulAddPair{}, map[*ir.Instr]bool{}
	var walk func(b *ir.Block)
	walk = func(b *ir.Block) {
		if b == nil {
			return
		}
		pos := map[*ir.Instr]int{}
		for i, in := range b.Instrs {
			if in == nil {
				continue
			}
			pos[in] = i
			for _, r := range in.Regions {
				walk(r)
			}
			if in.Op != ir.Add || len(in.Args) != 2 || len(in.Results) != 1 || !plainF32Tile(in.Results[0]) {
				continue
			}
			addScalar, t := 1, 0
			if !c.absorbed[in.Args[1]] {
				addScalar, t = 0, 1
			}
			if !c.absorbed[in.Args[addScalar]] || c.absorbed[in.Args[t]] {
				continue
			}
			mv := in.Args[t]
			mul := mv.Def
			if mul == nil || mul.Op != ir.Mul || len(mul.Args) != 2 || skip[mul] || c.uses[mv] != 1 || !plainF32Tile(mv) {
				continue
			}
			mp, ok := pos[mul]
			if !ok || b.Instrs[mp] != mul {
				continue // not in this block
			}
			pair := mulAddPair{vec: mul.Args[0], scalar: mul.Args[1]}
			if !c.absorbed[pair.scalar] {
				pair.vec, pair.scalar = pair.scalar, pair.vec
			}
			if !c.absorbed[pair.scalar] || c.absorbed[pair.vec] {
				continue
			}
			clean := true
			for _, between := range b.Instrs[mp+1 : i] {
				if between == nil || between.Op == ir.Store || between.Op == ir.AtomicRMW || between.Op == ir.AtomicCAS || len(between.Regions) > 0 {
					clean = false
				}
			}
			if clean {
				adds[in] = pair
				skip[mul] = true
			}
		}
	}
	walk(f.Body)
	return adds, skip
}

func plainF32Tile(v *ir.Value) bool {
	return v != nil && v.Type.Elem == ir.F32 && !v.Type.Ptr && v.Type.Rank() > 0
}

// mulAddStep is the fused Add's step: z = vec*a + b.
func (c *compiler) mulAddStep(in *ir.Instr, pair mulAddPair, z int) (step, bool) {
	vec, okv := c.slots[pair.vec]
	a, oka := c.scalarOperand(pair.scalar)
	bv := in.Args[0]
	if !c.absorbed[bv] {
		bv = in.Args[1]
	}
	b, okb := c.scalarOperand(bv)
	if !okv || !oka || !okb || c.p.slotClass[vec] != clsF32 {
		return nil, false
	}
	return func(fr *frame) error {
		x, s, t, zz := fr.f32[vec], fr.f32[a][0], fr.f32[b][0], fr.f32[z]
		x = x[:len(zz)]
		for i := vecMulAddF32(x, s, t, zz); i < len(zz); i++ {
			zz[i] = float32(x[i]*s) + t // the conversion forbids fusing into an FMA
		}
		return nil
	}, true
}
