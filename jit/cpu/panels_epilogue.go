package cpu

import (
	"sync/atomic"

	"github.com/widejit/widejit/triton/ir"
)

// The epilogue in the panels flush. A convolution's accumulator (conv_flat.py) leaves its tap
// loop for a chain of per-channel steps, BatchNorm's x*a + b and ReLU's max(x, 0), then its
// stores: run one after the other, each step is a pass over the whole [channels, pixels]
// accumulator (64 x 512 floats, in the L2 cache). When the loop nest's queued dots (panels.go)
// are followed by such a chain, the loop leaves its queue pending and each step of the chain
// is appended to it instead of running; the queue then runs when the chain's value is first
// read (settle), and each register block of the panels kernels goes through the whole chain
// right after its last panel, while it is in the L1 cache. The rest of the tile (the blocks
// the panels kernels do not cover) goes through the chain after its dots. Every element
// still gets the same operations in the same order, through the same loops (arithScalarF32,
// minMaxPropScalarF32), so results are bit for bit those of the steps one at a time.
//
// Like the steps, the flush leaves out what no store sees (observed.go): the tile's lanes
// outside the rectangle of its stores' masks, when those are known before the loop.
//
// The chain's steps are: an fp32 Add, Sub or Mul of the accumulator and a per-row column
// broadcast ([rows, 1] -> [rows, cols], rowbcast.go) or a whole tile of its shape (a
// residual: copied when the step is queued, as its slot may change before the queue runs;
// or, an Add's tile loaded for it alone with other = 0 when the chain's stores join the
// queue too (markResidualViews), its live rows viewed in the buffer by the load and read
// there by the flush, which adds the zeros past them as scalars), a NaN-propagating Max or Min of it
// and a scalar (an absorbed splat: ReLU), or a Select of it and a constant under a column
// mask (a [1, cols] broadcast: the padded store's tl.where(ow < OW, y, 0.0)), each the sole
// user of the value before it, in the
// block of the loop, with no store, atomic or region between (the queued dots read buffer
// memory). Anything else ends the chain; every user of its last value runs the queue first.

// flushedEpilogues counts the chain steps appended to a queue rather than run (tests read it).
var flushedEpilogues atomic.Int64

// residualsInPlace counts the residual tiles the queue reads from their buffer (tests read it).
var residualsInPlace atomic.Int64

// epilogueStep is one recognised chain step: the accumulator's operand index and its other
// operand, a column broadcast's source (vec) or an absorbed scalar.
type epilogueStep struct {
	acc  int       // index of the accumulator among the instruction's operands
	vec  *ir.Value // the [rows, 1] source of the broadcast operand (a select's: its [1, cols] condition), or nil
	tile *ir.Value // a whole-tile operand (a residual), or nil
	fill *ir.Value // a select's other operand, one value throughout
	rows int       // the tile's rows
	view bool      // the tile's load views its buffer's rows, read in place (residualViews)
}

// epilogueOp is a chain step as the flush applies it to rows of the accumulator.
type epilogueOp struct {
	op    ir.Op
	first bool      // the other operand comes first (s - x; a select's: x where the condition fails)
	vec   []float32 // per row (a copy: its slot may change before the flush); nil: s
	// a whole-tile operand, rows tileLd apart: a copy, like vec, or the live rows of a
	// residual in its buffer, rows [0, tileRows) x columns [0, tileCols), zeros past them
	tile                       []float32
	tileLd, tileRows, tileCols int
	lanes                      []bool // a select's condition per column (a copy)
	s                          float32
}

// findFlushEpilogues finds the chains after the loop nests that queue their dots: steps, the
// chains' instructions, and deferFlush, the Fors that leave their queue to them. settleFirst
// is every user of a chain's last value.
func (c *compiler) findFlushEpilogues(f *ir.Func) (steps map[*ir.Instr]epilogueStep, deferFlush, settleFirst map[*ir.Instr]bool) {
	steps, deferFlush, settleFirst = map[*ir.Instr]epilogueStep{}, map[*ir.Instr]bool{}, map[*ir.Instr]bool{}
	var walk func(b *ir.Block)
	walk = func(b *ir.Block) {
		for i, in := range b.Instrs {
			for _, r := range in.Regions {
				walk(r)
			}
			if !c.flushAfter[in] {
				continue
			}
			for _, r := range in.Results {
				chain, forms, last := c.epilogueChain(b, i, r)
				if len(chain) == 0 || !c.settlingUsers(last) {
					continue
				}
				for _, u := range c.allUsers(last) {
					settleFirst[u] = true
				}
				deferFlush[in] = true
				if c.fuseStores(b, chain[len(chain)-1], last) { // panels_store.go
					c.markResidualViews(b, chain, forms)
				}
				for j, x := range chain {
					steps[x] = forms[j]
				}
			}
		}
	}
	walk(f.Body)
	return steps, deferFlush, settleFirst
}

// markResidualViews marks the chain's whole-tile Adds whose tile is a load in b read by them
// alone, so that the queue may read its rows in place from the buffer (residualViews). The
// caller has recorded the chain's stores: the queue runs when the last of them ends, and
// from the load to there nothing else writes memory (aliasableLoad: nothing between the load
// and the Add; fuseStores: nothing but those stores after the chain, each of which runs the
// queue first rather than record a destination the tile overlaps).
func (c *compiler) markResidualViews(b *ir.Block, chain []*ir.Instr, forms []epilogueStep) {
	for j, x := range chain {
		t := forms[j].tile
		if t == nil || x.Op != ir.Add || t.Def == nil || t.Def.Op != ir.Load || c.uses[t] != 1 || c.defBlock[t] != b ||
			t.Type.Rank() != 2 || len(t.Def.Args) == 2 || len(t.Def.Args) == 3 && !isZeroConst(t.Def.Args[2]) || !c.aliasableLoad(t.Def) {
			continue
		}
		if c.residualViews == nil {
			c.residualViews = map[*ir.Instr]bool{}
		}
		c.residualViews[t.Def] = true
		forms[j].view = true
	}
}

// epilogueChain follows v, defined by b.Instrs[at], through the chain steps that consume it,
// returning them, their forms and the chain's last value.
func (c *compiler) epilogueChain(b *ir.Block, at int, v *ir.Value) (chain []*ir.Instr, forms []epilogueStep, last *ir.Value) {
	last = v
	t := v.Type
	if t.Elem != ir.F32 || t.Ptr || t.Rank() != 2 {
		return nil, nil, v
	}
	for i := at + 1; i < len(b.Instrs) && c.uses[last] == 1; i++ {
		u := b.Instrs[i]
		if u == nil || u.Op == ir.Store || u.Op == ir.AtomicRMW || u.Op == ir.AtomicCAS || len(u.Regions) > 0 {
			break
		}
		k := slicesIndex(u.Args, last)
		if k < 0 {
			continue
		}
		s, ok := c.epilogueForm(u, k)
		if !ok {
			break
		}
		s.rows = t.Shape[0]
		chain, forms = append(chain, u), append(forms, s)
		last = u.Results[0]
	}
	return chain, forms, last
}

// epilogueForm says whether u, reading the accumulator as operand k, is a chain step.
func (c *compiler) epilogueForm(u *ir.Instr, k int) (epilogueStep, bool) {
	if u.Op == ir.Select {
		return c.selectForm(u, k)
	}
	if len(u.Args) != 2 || len(u.Results) != 1 || !u.Results[0].Type.Equal(u.Args[k].Type) ||
		c.mulSkip[u] || c.geluSkip[u] || c.dotSkip[u] {
		return epilogueStep{}, false
	}
	if _, ok := c.mulAdds[u]; ok {
		return epilogueStep{}, false
	}
	if _, ok := c.gelus[u]; ok {
		return epilogueStep{}, false
	}
	if _, ok := c.silus[u]; ok {
		return epilogueStep{}, false
	}
	other := u.Args[1-k]
	switch u.Op {
	case ir.Add, ir.Sub, ir.Mul:
		src := c.rowBcast[other]
		if src == nil && other.Type.Equal(u.Results[0].Type) && !c.absorbed[other] {
			return epilogueStep{acc: k, tile: other}, true
		}
		if src == nil || !isColumnVector(src.Type, u.Results[0].Type) || isRowVector(src.Type, u.Results[0].Type) {
			return epilogueStep{}, false
		}
		return epilogueStep{acc: k, vec: src}, true
	case ir.Max, ir.Min:
		if u.Int != ir.PropagateNaN || !c.absorbed[other] {
			return epilogueStep{}, false
		}
		return epilogueStep{acc: k}, true
	}
	return epilogueStep{}, false
}

// selectForm says whether the select u, reading the accumulator as operand k (1 or 2), is a
// chain step: its condition a column mask ([1, cols] broadcast, rowbcast.go), its other
// operand a constant (conv_flat.py's padded store: tl.where(ow < OW, y, 0.0)).
func (c *compiler) selectForm(u *ir.Instr, k int) (epilogueStep, bool) {
	if k == 0 || len(u.Args) != 3 || len(u.Results) != 1 || !u.Results[0].Type.Equal(u.Args[k].Type) {
		return epilogueStep{}, false
	}
	src := c.rowBcast[u.Args[0]]
	fill := u.Args[3-k]
	if src == nil || fill == u.Args[k] || fill.Def == nil || c.rowBcast[fill] != nil {
		return epilogueStep{}, false
	}
	if d := fill.Def; !isFloatTileConst(d) && (d.Op != ir.Splat || len(d.Args) != 1 || d.Args[0].Def == nil || d.Args[0].Def.Op != ir.Const) {
		return epilogueStep{}, false
	}
	return epilogueStep{acc: k, vec: src, fill: fill}, true
}

// settlingUsers reports whether every user of v reads it in a step of its own, which can run
// the queue first (not fused into another instruction's step, not a region's yield).
func (c *compiler) settlingUsers(v *ir.Value) bool {
	for _, u := range c.allUsers(v) {
		switch {
		case c.siluNegRoot[u] != nil && slicesIndex(c.siluNegRoot[u].Args, v) >= 0:
			continue // computed by its SiLU's root Div, which reads v too and settles
		case u.Op == ir.Yield || u.Op == ir.For || u.Op == ir.If || u.Op == ir.While,
			c.mulSkip[u] || c.geluSkip[u] || c.dotSkip[u],
			u.Op == ir.Broadcast && c.rowBcast[u.Results[0]] != nil:
			return false
		}
	}
	return true
}

func slicesIndex(vs []*ir.Value, v *ir.Value) int {
	for i, x := range vs {
		if x == v {
			return i
		}
	}
	return -1
}

// epilogueStepOf wraps a chain step's compiled step (normal): when the queue adds into its
// accumulator operand, the step is appended to the queue and the result takes the
// accumulator's storage over; otherwise the queue (if it adds there) runs first, then normal.
func (c *compiler) epilogueStepOf(in *ir.Instr, s epilogueStep, args, results []int, normal step) step {
	x, z := args[s.acc], results[0]
	if s.view { // the tile's load views its live rows: every other path wants it dense
		ts, next := c.slots[s.tile], normal
		rows, cols := tileRows(c.p.slotType[ts])
		normal = func(fr *frame) error {
			fr.densifyLive(ts, rows, cols)
			return next(fr)
		}
	}
	if y, ok := c.inPlaceOperand(in, args, z); !ok || y != x {
		return c.settling(in, args, normal)
	}
	op, first, rows := in.Op, s.acc == 1, s.rows
	if op == ir.Select {
		first = s.acc == 2
	}
	_, cols := tileRows(c.p.slotType[x])
	obs := c.observedBy[in.Args[s.acc]] // observed.go: what the stores see bounds the rest
	vs, sc, ts := -1, -1, -1
	if s.tile != nil {
		var ok bool
		if ts, ok = c.slots[s.tile]; !ok {
			return c.settling(in, args, normal)
		}
	} else if s.fill != nil {
		var ok1, ok2 bool
		vs, ok1 = c.slots[s.vec]
		sc, ok2 = c.slots[s.fill]
		if !ok1 || !ok2 {
			return c.settling(in, args, normal)
		}
	} else if s.vec != nil {
		var ok bool
		if vs, ok = c.slots[s.vec]; !ok {
			return c.settling(in, args, normal)
		}
	} else {
		var ok bool
		if sc, ok = c.scalarOperand(in.Args[1-s.acc]); !ok {
			return c.settling(in, args, normal)
		}
	}
	return func(fr *frame) error {
		d := &fr.dots
		if !fr.queuedInto(x) {
			return normal(fr)
		}
		if len(d.epilogue) == 0 {
			d.seenRows, d.seenCols = rows, cols
			if r, cl, ok := fr.observedRect(obs, rows, cols); ok {
				d.seenRows, d.seenCols = min(r, rows), min(cl, cols)
			}
		}
		if ts >= 0 && cols != d.ldc {
			fr.flushDots()
			return normal(fr)
		}
		e := epilogueOp{op: op, first: first}
		switch {
		case s.view && fr.viewing(ts): // the live rows in place (the rest of the tile is zeros)
			l := fr.liveOf(ts, rows, cols)
			e.tile, e.tileLd, e.tileRows, e.tileCols = fr.f32[ts], fr.leading(ts, cols), l.rows, l.cols
			residualsInPlace.Add(1)
		case ts >= 0:
			fr.need(ts)
			src, ld, n := fr.f32[ts], cols, len(d.vecs)
			if fr.viewing(ts) {
				ld = fr.leading(ts, cols)
			}
			for r := range rows {
				d.vecs = append(d.vecs, src[r*ld:r*ld+cols]...)
			}
			e.tile, e.tileLd, e.tileRows, e.tileCols = d.vecs[n:n+rows*cols:n+rows*cols], cols, rows, cols
		case s.fill != nil:
			fr.need(vs) // a symbolic mask row is filled in first
			n := len(d.lanes)
			for _, m := range fr.ints[vs][:cols] {
				d.lanes = append(d.lanes, m != 0)
			}
			e.lanes, e.s = d.lanes[n:n+cols:n+cols], fr.f32[sc][0]
		case vs >= 0:
			n := len(d.vecs)
			d.vecs = append(d.vecs, fr.f32[vs][:rows]...)
			e.vec = d.vecs[n : n+rows : n+rows]
		default:
			e.s = fr.f32[sc][0]
		}
		d.epilogue = append(d.epilogue, e)
		flushedEpilogues.Add(1)
		fr.swapSlot(clsF32, z, x)
		return nil
	}
}

// settling wraps step so that it runs the queue first when the queue adds into one of in's
// fp32 operands.
func (c *compiler) settling(in *ir.Instr, args []int, s step) step {
	var f32 []int
	for i, a := range args {
		if classOf(in.Args[i].Type) == clsF32 && !in.Args[i].Type.Ptr {
			f32 = append(f32, a)
		}
	}
	if len(f32) == 0 {
		return s
	}
	return func(fr *frame) error {
		for _, a := range f32 {
			fr.settle(a)
		}
		return s(fr)
	}
}

// applyEpilogue runs the queued chain over rows [r0, r1) x columns [c0, c1) of c: a chain of
// a multiplication, additions (a residual's tile among them) and a ReLU (BatchNorm's, a
// bias's) on the AVX2 loop for whole vectors of each row, the rest step by step.
func applyEpilogue(ops []epilogueOp, c []float32, ldc, r0, r1, c0, c1 int) {
	if c0 >= c1 || r0 >= r1 || len(ops) == 0 {
		return
	}
	for i, e := range ops {
		// a select, or a tile whose live lanes do not cover the block: the steps before it,
		// then it and the rest
		if e.lanes != nil || e.tile != nil && (r1 > e.tileRows || c1 > e.tileCols) {
			applyEpilogue(ops[:i], c, ldc, r0, r1, c0, c1)
			if e.lanes != nil {
				selectLanes(e, c, ldc, r0, r1, c0, c1)
			} else {
				tileStep(e, c, ldc, r0, r1, c0, c1)
			}
			applyEpilogue(ops[i+1:], c, ldc, r0, r1, c0, c1)
			return
		}
	}
	if n := (c1 - c0) &^ 7; n > 0 && haveVecAVX2 {
		if bias, mul, add, tile, floor, flags, ok := epilogueRows(ops); ok {
			_ = c[(r1-1)*ldc+c0+n-1]
			var b, m, a, t *float32
			ldt := 0
			if bias != nil {
				_ = bias[r1-1]
				b = &bias[r0]
			}
			if mul != nil {
				_ = mul[r1-1]
				m = &mul[r0]
			}
			if add != nil {
				_ = add[r1-1]
				a = &add[r0]
			}
			if tile != nil {
				_ = tile.tile[(r1-1)*tile.tileLd+c0+n-1]
				t, ldt = &tile.tile[r0*tile.tileLd+c0], tile.tileLd
			}
			epilogueRowsAVX2(&c[r0*ldc+c0], ldc, r1-r0, n, m, a, floor, flags, b, t, ldt)
			if c0 += n; c0 == c1 {
				return
			}
		}
	}
	for r := r0; r < r1; r++ {
		row := c[r*ldc+c0 : r*ldc+c1]
		for _, e := range ops {
			switch {
			case e.vec != nil:
				arithScalarF32(e.op, e.first, row, e.vec[r], row)
			case e.tile != nil:
				tileRow(e, row, e.tile[r*e.tileLd+c0:r*e.tileLd+c1])
			default:
				minMaxPropScalarF32(e.op, e.first, row, e.s, row)
			}
		}
	}
}

// tileStep runs a whole-tile step over rows [r0, r1) x columns [c0, c1) of c (rows ldc
// apart): with the tile's lanes where they are live, with its zeros past them.
func tileStep(e epilogueOp, c []float32, ldc, r0, r1, c0, c1 int) {
	hi := max(c0, min(c1, e.tileCols))
	for r := r0; r < r1; r++ {
		x := c[r*ldc+c0 : r*ldc+c1]
		if r >= e.tileRows {
			arithScalarF32(e.op, e.first, x, 0, x)
			continue
		}
		tileRow(e, x[:hi-c0], e.tile[r*e.tileLd+c0:r*e.tileLd+hi])
		arithScalarF32(e.op, e.first, x[hi-c0:], 0, x[hi-c0:])
	}
}

// tileRow runs a whole-tile step on a row x of the accumulator and its row t of the tile, in
// the instruction's operand order, through f32Op's loops.
func tileRow(e epilogueOp, x, t []float32) {
	f := addF32
	switch e.op {
	case ir.Sub:
		f = subF32
	case ir.Mul:
		f = mulF32
	}
	if e.first {
		f(t, x, x)
	} else {
		f(x, t, x)
	}
}

// selectLanes runs a select step over rows [r0, r1) x columns [c0, c1) of c: the lanes
// where the condition fails (holds, if first) take its constant.
func selectLanes(e epilogueOp, c []float32, ldc, r0, r1, c0, c1 int) {
	for j := c0; j < c1; {
		k := j + 1
		for k < c1 && e.lanes[k] == e.lanes[j] {
			k++
		}
		if e.lanes[j] == e.first {
			for r := r0; r < r1; r++ {
				fillF32(c[r*ldc+j:r*ldc+k], e.s)
			}
		}
		j = k
	}
}

// epilogueRows matches ops to epilogueRowsAVX2's form: at most one per-row addition followed
// by a per-row multiplication (a convolution's bias before its BatchNorm), at most one per-row
// multiplication, then at most one per-row addition, then at most one addition of a tile
// (a residual), then at most one maxProp(x, floor), floor not NaN, in that order (flags 8, 1,
// 2, 16 or 32 (the tile the first operand), 4).
func epilogueRows(ops []epilogueOp) (bias, mul, add []float32, tile *epilogueOp, floor float32, flags int, ok bool) {
	for i := range ops {
		e := &ops[i]
		switch {
		case e.op == ir.Add && e.vec != nil && i == 0 && len(ops) > 1 && ops[1].op == ir.Mul && ops[1].vec != nil:
			bias, flags = e.vec, 8
		case e.op == ir.Mul && e.vec != nil && flags&^8 == 0:
			mul, flags = e.vec, flags|1
		case e.op == ir.Add && e.vec != nil && flags&^9 == 0:
			add, flags = e.vec, flags|2
		case e.op == ir.Add && e.tile != nil && flags&^11 == 0:
			tile, flags = e, flags|16
			if e.first {
				flags = flags&^16 | 32
			}
		case e.op == ir.Max && e.vec == nil && e.tile == nil && !e.first && e.s == e.s && flags&4 == 0:
			floor, flags = e.s, flags|4
		default:
			return nil, nil, nil, nil, 0, 0, false
		}
	}
	return bias, mul, add, tile, floor, flags, flags != 0
}
