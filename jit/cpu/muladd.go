package cpu

import "github.com/widejit/widejit/triton/ir"

// x*a + b with scalar a and b (a scale-and-shift: normalization, affine epilogues) runs as
// one loop instead of two passes over the tile. It is still a multiply then an add, each
// rounded, so results are the unfused ones bit for bit; only fp32 qualifies (fp16/bf16
// round after each op). The Mul emits no step; the Add reads the Mul's operands, which
// must be unchanged by then: both sit in one block, the Add's operand is the Mul's only
// use, and no store, atomic or region runs between them.
// acc + x*row, with row a row vector broadcast over the tile and read in place (rowbcast.go),
// fuses the same way into one pass over the tile, z = acc + x*row row by row (a depthwise
// convolution's tap: its input tile times the tap's weight per channel, accumulated).
// x*col + shift, with col and shift column vectors ([rows, 1]) broadcast over the tile and
// read in place (BatchNorm's per-channel scale and shift in an epilogue over [channels,
// pixels]), fuses too, after the panels flush has taken its chains (findColumnMulAdds): one
// pass, z = x*col[r] + shift[r] row by row.

// mulAddPair is a fused Mul: its vector operand and scalar operand values; or, for the row
// form, its vector operand, the broadcast row's source and the Add's accumulator.
type mulAddPair struct {
	vec, scalar *ir.Value
	row, acc    *ir.Value
	col, shift  *ir.Value // the column form: the sources of the two [rows, 1] broadcasts
}

// findMulAdds maps each fusable Add to its Mul, and marks those Muls in skip (after
// findRowBroadcasts: the row form reads its row in place).
func (c *compiler) findMulAdds(f *ir.Func) (adds map[*ir.Instr]mulAddPair, skip map[*ir.Instr]bool) {
	adds, skip = map[*ir.Instr]mulAddPair{}, map[*ir.Instr]bool{}
	fusionSites(f, func(in *ir.Instr, settled func(*ir.Instr) bool) {
		if in.Op != ir.Add || len(in.Args) != 2 || len(in.Results) != 1 || !plainF32Tile(in.Results[0]) {
			return
		}
		if mul, pair, ok := c.rowMulAdd(in, skip); ok && settled(mul) {
			adds[in] = pair
			skip[mul] = true
			return
		}
		addScalar, t := 1, 0
		if !c.absorbed[in.Args[1]] {
			addScalar, t = 0, 1
		}
		if !c.absorbed[in.Args[addScalar]] || c.absorbed[in.Args[t]] {
			return
		}
		mv := in.Args[t]
		mul := mv.Def
		if mul == nil || mul.Op != ir.Mul || len(mul.Args) != 2 || skip[mul] || c.uses[mv] != 1 || !plainF32Tile(mv) {
			return
		}
		pair := mulAddPair{vec: mul.Args[0], scalar: mul.Args[1]}
		if !c.absorbed[pair.scalar] {
			pair.vec, pair.scalar = pair.scalar, pair.vec
		}
		if !c.absorbed[pair.scalar] || c.absorbed[pair.vec] || !settled(mul) {
			return
		}
		adds[in] = pair
		skip[mul] = true
	})
	return adds, skip
}

// rowMulAdd matches in as acc + x*row: a Mul used by in alone, one operand a row vector
// broadcast read in place, the other and acc plain tiles of the result's type.
func (c *compiler) rowMulAdd(in *ir.Instr, skip map[*ir.Instr]bool) (*ir.Instr, mulAddPair, bool) {
	ty := in.Results[0].Type
	plain := func(v *ir.Value) bool { return v.Type.Equal(ty) && !c.absorbed[v] && c.rowBcast[v] == nil }
	for t := range 2 {
		mv, acc := in.Args[t], in.Args[1-t]
		mul := mv.Def
		if mul == nil || mul.Op != ir.Mul || len(mul.Args) != 2 || skip[mul] || c.uses[mv] != 1 || !plain(mv) || !plain(acc) {
			continue
		}
		for r := range 2 {
			src, ok := c.rowBcast[mul.Args[r]]
			if x := mul.Args[1-r]; ok && isRowVector(src.Type, ty) && plain(x) {
				return mul, mulAddPair{vec: x, row: src, acc: acc}, true
			}
		}
	}
	return nil, mulAddPair{}, false
}

// fusionSites calls match for every instruction of f, those of nested blocks before the
// instruction that holds them. settled(x) reports that x sits earlier in the same block with
// no store, atomic or region after it up to the instruction: a fused step there may do x's
// work, reading x's operands unchanged.
func fusionSites(f *ir.Func, match func(in *ir.Instr, settled func(x *ir.Instr) bool)) {
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
			match(in, func(x *ir.Instr) bool {
				p, ok := pos[x]
				return ok && b.Instrs[p] == x && quietBetween(b.Instrs[p+1:i])
			})
		}
	}
	walk(f.Body)
}

// quietBetween reports that no store, atomic or region runs among instrs.
func quietBetween(instrs []*ir.Instr) bool {
	for _, in := range instrs {
		if in == nil || in.Op == ir.Store || in.Op == ir.AtomicRMW || in.Op == ir.AtomicCAS || len(in.Regions) > 0 {
			return false
		}
	}
	return true
}

func plainF32Tile(v *ir.Value) bool {
	return v != nil && v.Type.Elem == ir.F32 && !v.Type.Ptr && v.Type.Rank() > 0
}

// mulAddStep is the fused Add's step: z = vec*a + b, acc + vec*row, or vec*col + shift.
func (c *compiler) mulAddStep(in *ir.Instr, pair mulAddPair, z int) (step, bool) {
	if pair.row != nil {
		return c.rowMulAddStep(in, pair, z)
	}
	if pair.col != nil {
		return c.columnMulAddStep(in, pair, z)
	}
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
	span := func(fr *frame, lo, hi int) {
		x, s, t, zz := fr.f32[vec][lo:hi], fr.f32[a][0], fr.f32[b][0], fr.f32[z][lo:hi]
		for i := vecMulAddF32(x, s, t, zz); i < len(zz); i++ {
			zz[i] = float32(x[i]*s) + t // the conversion forbids fusing into an FMA
		}
	}
	rows, n := tileRows(c.p.slotType[z])
	obs := c.observedBy[in.Results[0]] // observed.go
	return func(fr *frame) error { fr.spans(obs, rows, n, span); return nil }, true
}

// findColumnMulAdds adds the column form to mulAdds and mulSkip: an fp32 Add of a Mul used by
// it alone and a column broadcast read in place, the Mul of a plain tile and another. It runs
// after every other fusion and the panels flush's chains (which take such steps one by one,
// per register block), and leaves alone what they claimed.
func (c *compiler) findColumnMulAdds(f *ir.Func) {
	fusionSites(f, func(in *ir.Instr, settled func(*ir.Instr) bool) {
		if in.Op != ir.Add || len(in.Args) != 2 || len(in.Results) != 1 || !plainF32Tile(in.Results[0]) || c.fusedElsewhere(in) {
			return
		}
		if mul, pair, ok := c.columnMulAdd(in); ok && settled(mul) && !c.fusedElsewhere(mul) {
			c.mulAdds[in] = pair
			c.mulSkip[mul] = true
			c.p.columnMulAdds++
		}
	})
}

// fusedElsewhere reports an instruction that a fusion or the panels flush already computes,
// skips or wraps.
func (c *compiler) fusedElsewhere(in *ir.Instr) bool {
	_, epi := c.epiSteps[in]
	return c.claimed(in) || c.chainRoot(in) || c.geluSkip[in] || epi || c.settleFirst[in] || c.fusedStore[in] ||
		c.selectSteps[in] != nil || c.storedSelect[in] != nil
}

// columnMulAdd matches in as x*col + shift (either operand order), col and shift column
// vectors broadcast and read in place, x a plain tile of the result's type.
func (c *compiler) columnMulAdd(in *ir.Instr) (*ir.Instr, mulAddPair, bool) {
	ty := in.Results[0].Type
	column := func(v *ir.Value) *ir.Value {
		if src := c.rowBcast[v]; src != nil && isColumnVector(src.Type, ty) && !isRowVector(src.Type, ty) {
			return src
		}
		return nil
	}
	plain := func(v *ir.Value) bool { return v.Type.Equal(ty) && !c.absorbed[v] && c.rowBcast[v] == nil }
	for t := range 2 {
		mv, shift := in.Args[t], column(in.Args[1-t])
		mul := mv.Def
		if shift == nil || mul == nil || mul.Op != ir.Mul || len(mul.Args) != 2 || c.uses[mv] != 1 || !plain(mv) {
			continue
		}
		for r := range 2 {
			if col, x := column(mul.Args[r]), mul.Args[1-r]; col != nil && plain(x) {
				return mul, mulAddPair{vec: x, col: col, shift: shift}, true
			}
		}
	}
	return nil, mulAddPair{}, false
}

// columnMulAddStep is the fused Add's step of the column form: z = x*col[r] + shift[r], row by
// row, each rounded after the multiply and after the add as the unfused ops are.
func (c *compiler) columnMulAddStep(in *ir.Instr, pair mulAddPair, z int) (step, bool) {
	s, ok := c.f32Slots(pair.vec, pair.col, pair.shift)
	if !ok {
		return nil, false
	}
	x, col, shift := s[0], s[1], s[2]
	rows, n := tileRows(c.p.slotType[z])
	span := func(fr *frame, lo, hi int) {
		xs, a, b, zz := fr.f32[x], fr.f32[col], fr.f32[shift], fr.f32[z]
		// rows are short (a tile's): one division per span, none per row
		for r, o := lo/n, lo; o < hi; r++ {
			end := min(hi, (r+1)*n)
			s, t := a[r], b[r]
			for i := o + vecMulAddF32(xs[o:end], s, t, zz[o:end]); i < end; i++ {
				zz[i] = float32(xs[i]*s) + t // the conversion forbids fusing into an FMA
			}
			o = end
		}
	}
	obs := c.observedBy[in.Results[0]] // observed.go
	return func(fr *frame) error { fr.spans(obs, rows, n, span); return nil }, true
}

// f32Slots is the slots of vs, or false unless each has one of the fp32 class.
func (c *compiler) f32Slots(vs ...*ir.Value) ([]int, bool) {
	out := make([]int, len(vs))
	for i, v := range vs {
		s, ok := c.slots[v]
		if !ok || c.p.slotClass[s] != clsF32 {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// rowMulAddStep is the fused Add's step of the row form: z = acc + vec*row, row by row.
func (c *compiler) rowMulAddStep(in *ir.Instr, pair mulAddPair, z int) (step, bool) {
	s, ok := c.f32Slots(pair.vec, pair.row, pair.acc)
	if !ok {
		return nil, false
	}
	x, row, acc := s[0], s[1], s[2]
	rows, n := tileRows(c.p.slotType[z])
	span := func(fr *frame, lo, hi int) {
		w, xs, as, zz := fr.f32[row][:n], fr.f32[x], fr.f32[acc], fr.f32[z]
		if lo%n == 0 && vecMulAddRows(xs[lo:hi], w, as[lo:hi], zz[lo:hi], n) {
			return // whole rows, one call
		}
		for o, start := lo, lo-lo%n; o < hi; start += n {
			end := min(hi, start+n)
			mulAddRowF32(xs[o:end], w[o-start:end-start], as[o:end], zz[o:end])
			o = end
		}
	}
	obs := c.observedBy[in.Results[0]] // observed.go
	return func(fr *frame) error { fr.spans(obs, rows, n, span); return nil }, true
}

// mulAddRowF32 computes z = a + x*y lane by lane, rounded after the multiply and after the add
// as the unfused ops are.
func mulAddRowF32(x, y, a, z []float32) {
	for i := vecMulAddVV(x, y, a, z); i < len(z); i++ {
		z[i] = a[i] + float32(x[i]*y[i]) // the conversion forbids fusing into an FMA
	}
}
