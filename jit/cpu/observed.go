package cpu

import (
	"slices"

	"github.com/widejit/widejit/triton/ir"
)

// Observed regions of a matmul accumulator. A matmul kernel's accumulator usually reaches
// memory only through element-wise ops and a store masked to the output's live rectangle
// (`rm < M`, `rn < N`). Its lanes outside that rectangle are never seen, so
//   - the products tl.dot drops there (extent.go) need no check that they are zeros: an
//     infinity or NaN in the live block of A could only turn unseen columns into NaN (and one
//     in B unseen rows);
//   - the accumulator's fill before the loop and every step from it to the store need only
//     cover the rectangle (fr.spans).
// An odd-sized edge tile then costs its live part and nothing else.
//
// observedMasks finds, at compile time, the masks of the stores that see a loop-carried
// accumulator: the dot's Add updates a For's carried value and is that value's only update,
// the For's result flows only through element-wise ops and transposes into the value operand
// of masked stores, and each mask is computed before the For (so it holds its value while the loop
// runs), or is such a mask and'ed with others (maskFactorBefore). At run time each mask must
// be a symbolic rectangle (fr.observedRect); the dot also needs it inside the live product
// (fr.observedWithin). Otherwise everything runs whole.

// observedMasks returns the slots of the store masks that alone observe the accumulator the
// dot-add in updates, or nil when anything else may see it. It records them in
// c.observedBy for the For's result and every value computed from it on the way to the
// stores: their steps compute only the rectangle the masks cover (fr.spans), and the For
// fills only that rectangle of the accumulator before the loop.
func (c *compiler) observedMasks(in *ir.Instr, acc *ir.Value) []int {
	loop, i := c.carrier(acc)
	if loop == nil || c.uses[in.Results[0]] != 1 {
		return nil
	}
	body := loop.Regions[0]
	term := body.Instrs[len(body.Instrs)-1]
	if term.Op != ir.Yield || i >= len(term.Args) || term.Args[i] != in.Results[0] || c.uses[acc] != 1 {
		return nil
	}
	// A loop nested in others (conv_flat.py's taps outside, channel blocks inside) carries
	// the accumulator out through theirs: follow it to the outermost loop that does.
	loop, i = c.outermostCarrier(loop, i)
	var masks []*ir.Value
	var flipped []bool
	chain := map[*ir.Value]bool{}
	if !c.seenOnlyByMaskedStores(loop.Results[i], false, &masks, &flipped, chain) || len(masks) == 0 {
		return nil
	}
	outer := c.defBlock[loop.Results[i]]
	before := map[*ir.Value]bool{}
	for _, x := range outer.Instrs {
		if x == loop {
			break
		}
		for _, r := range x.Results {
			before[r] = true
		}
	}
	var slots []int
	for k, m := range masks {
		m = c.maskFactorBefore(m, before)
		s, ok := c.slots[m]
		if m == nil || !ok {
			return nil
		}
		if flipped[k] {
			s = ^s
		}
		slots = append(slots, s)
	}
	if c.observedBy == nil {
		c.observedBy = map[*ir.Value][]int{}
	}
	for v, t := range chain {
		if t {
			c.observedBy[v] = transposedSlots(slots)
		} else {
			c.observedBy[v] = slots
		}
	}
	return slots
}

// transposedSlots is a list of observing mask slots as the transposed tile sees them: a
// negative slot ^s is mask s of the tile's transpose (observedRect swaps its rectangle), so
// transposing flips every slot.
func transposedSlots(slots []int) []int {
	t := make([]int, len(slots))
	for i, s := range slots {
		t[i] = ^s
	}
	return t
}

// maskFactorBefore is mask m, or a factor of it (m = f & g, nested), of m's own shape and
// computed before the For (in before), or nil: a store through m lets through no lane that f
// does not, so f bounds what it sees. (A store in a loop of its own, one output row at a
// time, builds its mask there, as smask & the row's lanes.)
func (c *compiler) maskFactorBefore(m *ir.Value, before map[*ir.Value]bool) *ir.Value {
	if before[m] {
		return m
	}
	if d := m.Def; d != nil && d.Op == ir.And && len(d.Args) == 2 {
		for _, a := range d.Args {
			if slices.Equal(a.Type.Shape, m.Type.Shape) {
				if f := c.maskFactorBefore(a, before); f != nil {
					return f
				}
			}
		}
	}
	return nil
}

// outermostCarrier follows carried value i of loop out through the loops enclosing it: while
// the loop's result is only yielded, as value j, by the body of an enclosing For whose block
// argument j is the loop's initial value (used by nothing else), that For carries the same
// accumulator. It returns the outermost such loop and index.
func (c *compiler) outermostCarrier(loop *ir.Instr, i int) (*ir.Instr, int) {
	for {
		res := loop.Results[i]
		users := c.allUsers(res)
		if len(users) != 1 || users[0].Op != ir.Yield || c.uses[res] != 1 {
			return loop, i
		}
		j := slicesIndex(users[0].Args, res)
		f, _ := c.carrier(loop.Args[3+i])
		if f == nil || j < 0 || j >= len(f.Results) {
			return loop, i
		}
		body := f.Regions[0]
		if body.Instrs[len(body.Instrs)-1] != users[0] || body.Args[1+j] != loop.Args[3+i] || c.uses[loop.Args[3+i]] != 1 {
			return loop, i
		}
		loop, i = f, j
	}
}

// carrier is the For whose body's block argument v is, and v's index among the carried
// values (the body's arguments after the induction variable).
func (c *compiler) carrier(v *ir.Value) (*ir.Instr, int) {
	b := c.defBlock[v]
	if b == nil {
		return nil, 0
	}
	var found *ir.Instr
	var walk func(blk *ir.Block)
	walk = func(blk *ir.Block) {
		for _, x := range blk.Instrs {
			for _, r := range x.Regions {
				if r == b && x.Op == ir.For {
					found = x
				}
				walk(r)
			}
		}
	}
	walk(c.p.fn.Body)
	if found == nil {
		return nil, 0
	}
	for i, a := range b.Args[1:] {
		if a == v && i < len(found.Results) {
			return found, i
		}
	}
	return nil, 0
}

// seenOnlyByMaskedStores reports whether every use of the 2-D tile v is an element-wise op of
// its shape or a transpose whose result is seen the same way, or the value operand of a masked
// store (its mask appended to masks). t says whether v is the accumulator transposed: seen
// records it for every value reached, flipped for every mask (a mask of the transposed tile;
// conv_flat.py's channel-block stores write the tile as [pixels, channels]).
func (c *compiler) seenOnlyByMaskedStores(v *ir.Value, t bool, masks *[]*ir.Value, flipped *[]bool, seen map[*ir.Value]bool) bool {
	if _, ok := seen[v]; ok {
		return true
	}
	seen[v] = t
	if v.Type.Rank() != 2 || len(seen) > 64 {
		return false
	}
	for _, u := range c.allUsers(v) {
		switch {
		case u.Op == ir.Store:
			if len(u.Args) != 3 || u.Args[1] != v || u.Args[0] == v || u.Args[2] == v {
				return false
			}
			*masks = append(*masks, u.Args[2])
			*flipped = append(*flipped, t)
		case u.Op.IsElementwise() || u.Op == ir.Cmp || u.Op == ir.Select || u.Op == ir.Cast:
			if len(u.Results) != 1 || !slices.Equal(u.Results[0].Type.Shape, v.Type.Shape) ||
				!c.seenOnlyByMaskedStores(u.Results[0], t, masks, flipped, seen) {
				return false
			}
		case isTranspose2D(u):
			if !c.seenOnlyByMaskedStores(u.Results[0], !t, masks, flipped, seen) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// allUsers lists the instructions that use v, once per use.
func (c *compiler) allUsers(v *ir.Value) []*ir.Instr {
	if c.usersAll == nil {
		c.usersAll = map[*ir.Value][]*ir.Instr{}
		var walk func(b *ir.Block)
		walk = func(b *ir.Block) {
			for _, in := range b.Instrs {
				for _, a := range in.Args {
					c.usersAll[a] = append(c.usersAll[a], in)
				}
				for _, r := range in.Regions {
					walk(r)
				}
			}
		}
		walk(c.p.fn.Body)
	}
	return c.usersAll[v]
}

// observedWithin reports whether every mask in masks (slots of rows x cols masks) is a
// symbolic rectangle inside rows [0, liveRows) x columns [0, liveCols).
func (fr *frame) observedWithin(masks []int, rows, cols, liveRows, liveCols int) bool {
	r, c, ok := fr.observedRect(masks, rows, cols)
	return ok && (r == 0 || c == 0 || r <= liveRows && c <= liveCols)
}

// observedRect is the rectangle [0, r) x [0, c) of a rows x cols tile that holds every lane
// the masks (slots of symbolic rows x cols masks, or ^slot of a cols x rows mask of the
// transposed tile) let through; ok is false when a mask is no such rectangle.
func (fr *frame) observedRect(masks []int, rows, cols int) (r, c int, ok bool) {
	if len(masks) == 0 {
		return 0, 0, false
	}
	for _, s := range masks {
		mr, mc, flip := rows, cols, s < 0
		if flip {
			s, mr, mc = ^s, cols, rows
		}
		if fr.lz.kind[s] != lazyMask {
			return 0, 0, false
		}
		split := splitConds(fr.lz.conds[s], 1, mc)
		r0, r1, ok := split.rowInterval(true, []int{mr, mc})
		if !ok {
			return 0, 0, false
		}
		if r1 > r0 && split.colHi > split.colLo {
			hr, hc := r1, split.colHi
			if flip {
				hr, hc = hc, hr
			}
			r, c = max(r, hr), max(c, hc)
		}
	}
	return r, c, true
}

// spanMinDeadLanes: a rectangle's rows run one span each only when each skips at least this
// many unseen lanes; fewer cost less computed than a call each (a pointwise convolution's
// 4 live pixels of a 16-wide tile, on 256 channel rows).
const spanMinDeadLanes = 32

// spans runs fn over the lanes [lo, hi) of a rows x n tile (row-major) that anyone looks at:
// the whole tile when masks is nil or not a rectangle, else the rectangle's rows, as one
// span when they are whole or skip few lanes each.
func (fr *frame) spans(masks []int, rows, n int, fn func(fr *frame, lo, hi int)) {
	r, c, ok := fr.observedRect(masks, rows, n)
	switch {
	case !ok || r >= rows && c >= n:
		fn(fr, 0, rows*n)
	case c >= n || r <= 1:
		if r > 0 {
			fn(fr, 0, (r-1)*n+c)
		}
	case n-c < spanMinDeadLanes:
		fn(fr, 0, r*n)
	default:
		for i := range r {
			fn(fr, i*n, i*n+c)
		}
	}
}

// tileRows is a value's rows and row length as spans reads them (the last dimension against
// all the others).
func tileRows(t ir.Type) (rows, n int) {
	if t.Rank() == 0 {
		return 1, 1
	}
	n = t.Shape[t.Rank()-1]
	return t.NumElems() / max(n, 1), n
}
