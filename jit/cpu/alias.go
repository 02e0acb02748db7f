package cpu

import (
	"unsafe"

	"github.com/widejit/widejit/triton/ir"
)

// Zero-copy loads. A fp32 tile that is one contiguous, fully live block of a fp32 buffer
// (a weight tile whose rows are BLOCK_K long) need not be copied when its consumers only
// read it: the load's slot then views the buffer itself for the rest of the program. A
// fully live 2-D tile whose rows are apart in the buffer (an activation tile of a matmul
// whose K is longer than BLOCK_K) is viewed with a leading dimension (fr.ld) when its only
// consumers are tl.dot and tl.trans, which read strided operands. The
// slot's own storage is kept aside and put back before the load runs again and when the
// frame returns to the pool, so nothing outside the load's consumers ever sees the view.

// aliasableLoad reports whether the result of load may view buffer memory: every consumer
// sits in the load's own block, after it, and only reads the value (no Yield, which moves
// storage between slots, no in-place accumulator), and no store, atomic or nested region
// runs between the load and its last consumer (so the memory cannot change underneath).
func (c *compiler) aliasableLoad(load *ir.Instr) bool {
	if len(load.Results) != 1 {
		return false
	}
	v := load.Results[0]
	if v.Type.Elem != ir.F32 || v.Type.Ptr || v.Type.Rank() == 0 {
		return false
	}
	blk := c.defBlock[v]
	if blk == nil {
		return false
	}
	at := map[*ir.Instr]int{}
	for i, in := range blk.Instrs {
		at[in] = i
	}
	li, ok := at[load]
	if !ok {
		return false
	}
	last, n := li, 0
	for _, in := range blk.Instrs[li+1:] {
		for i, a := range in.Args {
			if a != v {
				continue
			}
			if !readsOnly(in, i) {
				return false
			}
			n++
			last = at[in]
		}
	}
	if n == 0 || n != c.uses[v] { // a use in a nested region or elsewhere
		return false
	}
	for i, in := range blk.Instrs[li+1 : last+1] {
		switch {
		case in.Op == ir.Store && li+1+i == last:
			// the last consumer may store the value: it reads the view before writing
		case in.Op == ir.Store, in.Op == ir.AtomicRMW, in.Op == ir.AtomicCAS, len(in.Regions) > 0:
			return false
		}
	}
	return true
}

// readsOnly reports consumers whose steps read operand i without taking over its storage.
func readsOnly(in *ir.Instr, i int) bool {
	switch in.Op {
	case ir.Permute, ir.Broadcast, ir.ExpandDims, ir.Reshape:
		return true
	case ir.Dot:
		return i < 2 // the accumulator may be updated in place
	case ir.Add, ir.Sub, ir.Mul, ir.Div, ir.Max, ir.Min:
		return true
	case ir.Store:
		return i == 1 // the stored value (a copy kernel's tile moves buffer to buffer)
	}
	return false
}

// storedOnly reports whether v's one use is as the value of a store in its block: a view of
// the loaded rows is then stored from in place (memOp.moveRect reads it with its leading
// dimension), so a copy moves each row once, not into the tile and out again.
func (c *compiler) storedOnly(v *ir.Value) bool {
	u := c.soleUser(v)
	return u != nil && u.Op == ir.Store && len(u.Args) >= 2 && u.Args[1] == v && u.Args[0] != v &&
		(len(u.Args) < 3 || u.Args[2] != v) && c.defBlock[v] != nil && v.Type.Rank() == 2
}

// storedUnderItsMask reports whether load in's value is stored by its one user under the
// load's own mask (a copy kernel's tile, conv_pad.py's planes): the store then reads the
// load's live lanes alone, so a view of those lanes (viewResidual) serves it even where the
// tile's masked rows or columns lie past the buffer, with no copy into the tile and no fill
// of its dead lanes.
func (c *compiler) storedUnderItsMask(in *ir.Instr) bool {
	if len(in.Args) < 2 || len(in.Results) != 1 || !c.storedOnly(in.Results[0]) {
		return false
	}
	st := c.soleUser(in.Results[0])
	return len(st.Args) == 3 && st.Args[2] == in.Args[1]
}

// viewing reports whether fp32 slot s views buffer memory.
func (fr *frame) viewing(s int) bool { return fr.ownF32 != nil && fr.ownF32[s] != nil }

// viewsBuffer reports whether slot s views memory of the buffer bound to pointer tag (a tag
// that names no buffer counts as yes).
func (fr *frame) viewsBuffer(s int, tag int64) bool {
	l := fr.launch
	if tag < 1 || tag > int64(len(l.bufs)) || l.bufs[tag-1] == nil {
		return true
	}
	return overlapF32(fr.f32[s], l.bufs[tag-1].f32())
}

// overlapF32 reports whether a and b share an element.
func overlapF32(a, b []float32) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	alo, blo := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return alo < blo+uintptr(4*len(b)) && blo < alo+uintptr(4*len(a))
}

// densify gives slot s, a view of rows x cols (strided or not), its own dense copy.
func (fr *frame) densify(s, rows, cols int) {
	if !fr.viewing(s) {
		return
	}
	if fr.partial[s] {
		fr.densifyLive(s, rows, cols) // the view spans the live lanes alone
		return
	}
	ld := fr.leading(s, cols)
	view := fr.f32[s]
	fr.unalias(s)
	dst := fr.f32[s]
	for r := range rows {
		copy(dst[r*cols:r*cols+cols], view[r*ld:r*ld+cols])
	}
}

// densifyLive gives slot s, a view of the live rows of a rows x cols tile (liveOf) whose
// other lanes are zero, its own dense copy.
func (fr *frame) densifyLive(s, rows, cols int) {
	if !fr.viewing(s) {
		return
	}
	l, ld, view := fr.liveOf(s, rows, cols), fr.leading(s, cols), fr.f32[s]
	fr.unalias(s)
	dst := fr.f32[s][:rows*cols]
	clear(dst)
	for r := range l.rows {
		copy(dst[r*cols:r*cols+l.cols], view[r*ld:r*ld+l.cols])
	}
	fr.partial[s] = false
}

// liveOf is the live extent of rows x cols slot s: its recorded one if it holds only that
// (partial), else the whole tile.
func (fr *frame) liveOf(s, rows, cols int) extent {
	if fr.partial[s] {
		return fr.ext[s]
	}
	return extent{rows, cols}
}

// dotOperandOnly reports whether every use of v is as operand A or B of a tl.dot or as the
// operand of a 2-D transpose: those steps read a strided view (fr.ld) in place.
func (c *compiler) dotOperandOnly(v *ir.Value) bool {
	blk := c.defBlock[v]
	if blk == nil || v.Type.Rank() != 2 {
		return false
	}
	n := 0
	for _, in := range blk.Instrs {
		for i, a := range in.Args {
			if a != v {
				continue
			}
			if !(in.Op == ir.Dot && i < 2 || isTranspose2D(in)) {
				return false
			}
			n++
		}
	}
	return n > 0 && n == c.uses[v]
}

// leading is the leading dimension of 2-D fp32 slot s of width cols: the row stride of the
// buffer it views, else cols.
func (fr *frame) leading(s, cols int) int {
	if ld := fr.ld[s]; ld != 0 {
		return ld
	}
	return cols
}

// aliasF32 makes slot s view the buffer memory view, keeping its own storage aside.
func (fr *frame) aliasF32(s int, view []float32) {
	if fr.ownF32 == nil {
		fr.ownF32 = make([][]float32, len(fr.f32))
	}
	if fr.ownF32[s] == nil {
		fr.ownF32[s] = fr.f32[s]
	}
	fr.f32[s] = view
}

// unalias gives slot s its own storage back.
func (fr *frame) unalias(s int) {
	if fr.ownF32 != nil && fr.ownF32[s] != nil {
		fr.f32[s], fr.ownF32[s] = fr.ownF32[s], nil
		fr.ld[s] = 0
	}
}

// unaliasAll drops every view, so a pooled frame holds no buffer.
func (fr *frame) unaliasAll() {
	for s := range fr.ownF32 {
		fr.unalias(s)
	}
}
