package cpu

import (
	"cmp"
	"slices"
	"sync/atomic"

	"github.com/widejit/widejit/triton/ir"
)

// The store in the panels flush. After its epilogue (panels_epilogue.go), a convolution's
// accumulator is stored (conv_flat.py: whole, one output row at a time, or into the next
// convolution's padded planes after a tl.where that zeroes the dropped columns, itself a
// chain step), each store a pass over the [channels, pixels] tile in the L2 cache. When
// every user of the chain's last value is such a store of it, and nothing between the chain
// and the last of them reads or writes memory otherwise, the stores are recorded in the
// queue instead of run: each destination is a rectangle of the tile, its rows a fixed stride
// apart in one fp32 buffer (an affine pointer tile with unit column stride, a mask of row
// and column bounds, checked against the buffer once). The queue then runs after the last of
// the stores' instructions, and gemmPanels copies each register block, right after its
// epilogue, into every recorded rectangle it meets, while it is in the L1 cache. The
// accumulator still receives every block, so the result is bit for bit that of the stores
// after the flush.
//
// The chain's value may also be stored through a select that zeroes the dropped columns
// (conv_flat.py's padded copy beside the plain output, when the output has other readers:
// tl.store(p, tl.where(ow < OW, y, 0.0))): the select, a column mask and a constant, is
// then left to its store (deferredSelectStep), which records the rectangle with the mask's
// column runs, the constant going where the select would put it.
//
// A store is recorded only where writing early cannot change what anyone reads: its
// destination overlaps no queued dot's operands (which the later blocks still read) and no
// other recorded store's destination (whose order would then matter). Any other store (a
// gathered pointer tile, a mask that is no rectangle, a bounds error to report) runs the
// queue, with the stores recorded before it, and then runs as always.

// fusedStores counts the stores recorded into a queue rather than run (tests read it).
var fusedStores atomic.Int64

// queuedStore is a recorded store: rows [r0, r1) x columns [c0, c1) of the tile go to dst,
// its rows rowStride apart; tag and first (element offset of dst[0]) place it in its buffer.
type queuedStore struct {
	dst            []float32
	rowStride      int
	r0, r1, c0, c1 int
	tag, first     int64
	runs           []maskRun // a select's column runs (on: the tile's lanes; off: fill); nil: all the tile's
	fill           float32
}

// fuseStores marks the stores of a chain's last value (ending at b.Instrs[at]) that may be
// recorded: every user of last is an fp32 2-D store of it, and the instructions of b from
// the chain up to the last holding one of them load, store (but those), print or assert
// nothing. That last instruction runs the queue when it ends (storesEnd). It reports whether
// it marked them.
func (c *compiler) fuseStores(b *ir.Block, at *ir.Instr, last *ir.Value) bool {
	users := c.allUsers(last)
	set, sels := map[*ir.Instr]bool{}, map[*ir.Instr]*ir.Instr{}
	for _, u := range users {
		if u.Op == ir.Select {
			st := c.selectStore(b, u, last)
			if st == nil {
				return false
			}
			set[st], sels[st] = true, u
			continue
		}
		if u.Op != ir.Store || len(u.Args) < 2 || u.Args[1] != last || u.Args[0] == last {
			return false
		}
		if pt := u.Args[0].Type; !pt.Ptr || pt.Elem != ir.F32 || pt.Rank() != 2 {
			return false
		}
		set[u] = true
	}
	start, end := slices.Index(b.Instrs, at), -1
	if start < 0 {
		return false
	}
	for i := start + 1; i < len(b.Instrs); i++ {
		if holdsAny(b.Instrs[i], set) {
			end = i
		}
	}
	if end < 0 {
		return false
	}
	for _, x := range b.Instrs[start+1 : end+1] {
		if !onlyStoresOf(x, set) {
			return false
		}
	}
	if c.fusedStore == nil {
		c.fusedStore, c.storesEnd = map[*ir.Instr]bool{}, map[*ir.Instr]bool{}
	}
	for u := range set {
		c.fusedStore[u] = true
	}
	for st, sel := range sels {
		if c.storedSelect == nil {
			c.storedSelect, c.selectSteps = map[*ir.Instr]*ir.Instr{}, map[*ir.Instr]*step{}
		}
		c.storedSelect[st], c.selectSteps[sel] = sel, new(step)
	}
	c.storesEnd[b.Instrs[end]] = true
	return true
}

// selectStore returns the store of the select u of last, when u is a chain's select form
// (selectForm: a column mask and a constant) defined in b and its one user is an fp32 2-D
// store of it; nil otherwise.
func (c *compiler) selectStore(b *ir.Block, u *ir.Instr, last *ir.Value) *ir.Instr {
	k := slicesIndex(u.Args, last)
	if k < 1 || slicesIndex(u.Args[k+1:], last) >= 0 || len(u.Results) != 1 || c.defBlock[u.Results[0]] != b {
		return nil
	}
	if _, ok := c.selectForm(u, k); !ok {
		return nil
	}
	v := u.Results[0]
	users := c.allUsers(v)
	if len(users) != 1 {
		return nil
	}
	st := users[0]
	if st.Op != ir.Store || len(st.Args) < 2 || st.Args[1] != v || st.Args[0] == v || len(st.Args) == 3 && st.Args[2] == v {
		return nil
	}
	if pt := st.Args[0].Type; !pt.Ptr || pt.Elem != ir.F32 || pt.Rank() != 2 {
		return nil
	}
	return st
}

// deferredSelectStep wraps a select whose store may record it (selectStore): while the
// queue adds into its operand, the select is left to the store (which runs it if it cannot
// record it); otherwise the queue runs first, then normal.
func (c *compiler) deferredSelectStep(in *ir.Instr, args, results []int, normal step) step {
	settled := c.settling(in, args, normal)
	*c.selectSteps[in] = settled
	k := slicesIndex(in.Args, c.chainOperand(in))
	x, z := args[k], results[0]
	return func(fr *frame) error {
		if !fr.queuedInto(x) {
			fr.deferredSelect[z] = false
			return settled(fr)
		}
		fr.deferredSelect[z] = true
		return nil
	}
}

// chainOperand is the select in's operand that a chain ends with: the one that is not its
// condition nor a constant (selectStore checked the form).
func (c *compiler) chainOperand(in *ir.Instr) *ir.Value {
	for k := 1; k < len(in.Args); k++ {
		if _, ok := c.selectForm(in, k); ok {
			return in.Args[k]
		}
	}
	return nil
}

// selectStoreStep is fusedStoreStep for the store of a deferred select (sel): the store is
// recorded with the select's column runs and constant; when it cannot be, the queue runs,
// then the select and the store.
func (c *compiler) selectStoreStep(in *ir.Instr, args []int, sel *ir.Instr, normal step) step {
	settled := c.settling(in, args, normal)
	k := slicesIndex(sel.Args, c.chainOperand(sel))
	form, _ := c.selectForm(sel, k)
	x, vs, sc, selStep := c.slots[sel.Args[k]], c.slots[form.vec], c.slots[form.fill], c.selectSteps[sel]
	first := k == 2 // the chain's value is the select's false operand: the fill goes where the mask holds
	m, val := c.recordableStore(in, args), args[1]
	return func(fr *frame) error {
		if !fr.deferredSelect[val] {
			return settled(fr)
		}
		fr.deferredSelect[val] = false
		d := &fr.dots
		if fr.queuedInto(x) && d.ldc == m.n {
			fr.need(vs) // a symbolic mask row is filled in first
			n := len(d.runs)
			d.runs = appendMaskRuns(d.runs, fr.ints[vs][:m.n], first)
			if m.record(fr, d.runs[n:len(d.runs):len(d.runs)], fr.f32[sc][0]) {
				fusedStores.Add(1)
				return nil
			}
			d.runs = d.runs[:n]
		}
		fr.flushDots()
		if err := (*selStep)(fr); err != nil {
			return err
		}
		return normal(fr)
	}
}

// holdsAny reports whether x is one of set or holds one in its regions.
func holdsAny(x *ir.Instr, set map[*ir.Instr]bool) bool {
	if set[x] {
		return true
	}
	for _, r := range x.Regions {
		for _, y := range r.Instrs {
			if holdsAny(y, set) {
				return true
			}
		}
	}
	return false
}

// onlyStoresOf reports whether x, regions included, touches memory only by the stores of set.
func onlyStoresOf(x *ir.Instr, set map[*ir.Instr]bool) bool {
	switch x.Op {
	case ir.Load, ir.AtomicRMW, ir.AtomicCAS, ir.Print, ir.Assert:
		return false
	case ir.Store:
		return set[x]
	}
	for _, r := range x.Regions {
		for _, y := range r.Instrs {
			if !onlyStoresOf(y, set) {
				return false
			}
		}
	}
	return true
}

// fusedStoreStep wraps a recordable store's compiled step (normal): when the queue adds into
// the stored value and the store's lanes are a rectangle of one buffer's rows, the store is
// recorded; otherwise the queue runs first, then normal.
func (c *compiler) fusedStoreStep(in *ir.Instr, args []int, normal step) step {
	settled := c.settling(in, args, normal)
	m, val := c.recordableStore(in, args), args[1]
	return func(fr *frame) error {
		if !fr.queuedInto(val) || fr.dots.ldc != m.n {
			return settled(fr)
		}
		if !m.record(fr, nil, 0) {
			fr.flushDots()
			return normal(fr)
		}
		fusedStores.Add(1)
		return nil
	}
}

// recordableStore is the memOp that records the 2-D store in (its argument slots args).
func (c *compiler) recordableStore(in *ir.Instr, args []int) *memOp {
	t := c.p.slotType[args[1]]
	m := &memOp{in: in, p: args[0], mask: -1, shape: t.Shape, n: t.Shape[1], last: 1, what: "store"}
	if len(args) == 3 {
		m.mask = args[2]
	}
	return m
}

// record appends the store to the queue, with a select's column runs and constant (runs nil:
// none), reporting false (recording nothing) when it cannot be recorded.
func (m *memOp) record(fr *frame, runs []maskRun, fill float32) bool {
	if fr.lz.kind[m.p] != lazyAffine {
		return false
	}
	a := &fr.lz.aff[m.p]
	if a.vec != vecNone || a.strides[1] != 1 && m.n > 1 || a.strides[0] < 0 {
		return false
	}
	var split splitMask
	maskLazy := m.mask >= 0 && fr.lz.kind[m.mask] == lazyMask
	if m.mask >= 0 {
		if !maskLazy {
			return false
		}
		split = splitConds(fr.lz.conds[m.mask], 1, m.n)
	}
	r0, r1, c0, c1 := 0, m.shape[0], 0, m.n
	if m.mask >= 0 {
		var ok bool
		if r0, r1, ok = split.rowInterval(maskLazy, m.shape); !ok {
			return false
		}
		c0, c1 = split.colLo, split.colHi
	}
	if r1 <= r0 || c1 <= c0 {
		return true // no lane stored: nothing to record
	}
	d := &fr.dots
	if len(d.epilogue) > 0 && (r1 > d.seenRows || c1 > d.seenCols) {
		return false // lanes the epilogue left out (observed.go)
	}
	first := a.base + int64(r0)*a.strides[0] + int64(c0)
	span := int64(r1-r0-1)*a.strides[0] + int64(c1-c0)
	if !small(first) || !small(span) || a.strides[0] < int64(c1-c0) && r1-r0 > 1 {
		return false
	}
	b, o, err := fr.resolveAt(m.in.Pos, m.what, a.tag, first, int(span))
	if err != nil {
		return false // the normal store reports it
	}
	s := queuedStore{dst: b.f32()[o : o+int(span)], rowStride: int(a.strides[0]), r0: r0, r1: r1, c0: c0, c1: c1, tag: a.tag, first: first, runs: runs, fill: fill}
	for _, p := range d.panels {
		if overlapF32(s.dst, p.a[:(p.m-1)*p.lda+p.k]) || overlapF32(s.dst, p.b[:(p.k-1)*p.ldb+p.n]) {
			return false
		}
	}
	for _, e := range d.epilogue {
		if e.tile != nil && overlapF32(s.dst, e.tile) { // a residual read in place
			return false
		}
	}
	for i := range d.stores {
		if s.collides(&d.stores[i]) {
			return false
		}
	}
	d.stores = append(d.stores, s)
	return true
}

// collides reports whether s and t may write one element: both rectangles of rows rowStride
// apart in one buffer, element first + r*S + c each. Rows of another stride count as a
// collision (they are not worth solving).
func (s *queuedStore) collides(t *queuedStore) bool {
	if s.tag != t.tag || !overlapF32(s.dst, t.dst) {
		return false
	}
	if s.rowStride != t.rowStride || s.rowStride <= 0 || s.c1-s.c0 > s.rowStride || t.c1-t.c0 > t.rowStride {
		return true
	}
	// t.first - s.first = dr*S + dc for rows dr of s minus rows of t and columns dc likewise:
	// dr in (-rowsT, rowsS), dc in (-colsT, colsS); dc is d mod S or that minus S
	S := int64(s.rowStride)
	d := s.first - t.first
	q, r := d/S, d%S
	if r < 0 {
		q, r = q-1, r+S
	}
	rowsS, rowsT, colsS, colsT := int64(s.r1-s.r0), int64(t.r1-t.r0), int64(s.c1-s.c0), int64(t.c1-t.c0)
	hit := func(dr, dc int64) bool { return dr > -rowsS && dr < rowsT && dc > -colsS && dc < colsT }
	return hit(q, r) || hit(q+1, r-S)
}

// storeRect copies rows [r0, r1) x columns [c0, c1) of the tile c (rows ldc apart), clipped to
// each recorded store's rectangle, to its destination.
func storeRect(st []queuedStore, c []float32, ldc, r0, r1, c0, c1 int) {
	for i := range st {
		s := &st[i]
		lo, hi := max(c0, s.c0), min(c1, s.c1)
		if lo >= hi {
			continue
		}
		var runs []maskRun
		if s.runs != nil {
			// the runs are in column order: from the first that ends past lo
			k, _ := slices.BinarySearchFunc(s.runs, lo, func(run maskRun, col int) int { return cmp.Compare(run.hi, col+1) })
			runs = s.runs[k:]
		}
		for r := max(r0, s.r0); r < min(r1, s.r1); r++ {
			o := (r-s.r0)*s.rowStride - s.c0
			if s.runs == nil {
				copy(s.dst[o+lo:o+hi], c[r*ldc+lo:r*ldc+hi])
				continue
			}
			for _, run := range runs {
				if run.lo >= hi {
					break
				}
				a, b := max(lo, run.lo), min(hi, run.hi)
				switch {
				case run.on:
					copy(s.dst[o+a:o+b], c[r*ldc+a:r*ldc+b])
				default:
					fillF32(s.dst[o+a:o+b], s.fill)
				}
			}
		}
	}
}

// endStores wraps the step of the last instruction holding recordable stores: the queue
// (with the stores recorded) runs when it ends.
func endStores(s step) step {
	return func(fr *frame) error {
		err := s(fr)
		if err != nil {
			fr.dropDots()
			return err
		}
		if len(fr.dots.stores) > 0 {
			fr.flushStores()
		}
		return nil
	}
}
