package cpu

import (
	"github.com/widejit/widejit/triton/ir"
	"slices"
	"sync/atomic"
)

// Lazy index tiles. Kernels spend most of their integer work building offset, pointer and
// mask tiles (pid*BLOCK + arange, ptr + offs, offs < n) that are affine in the tile index.
// Instead of filling such tiles element by element, the executor keeps them symbolic:
//
//   - an affine tile (i32/i64 or pointer): value[i_0..i_r] = base + sum_d strides[d]*i_d
//     (pointers: buffer tag plus that element offset);
//   - a mask tile (i1): the conjunction of up to maxConds conditions "affine < 0".
//
// Arange, Splat, Broadcast, ExpandDims, Add, Sub, Mul by a uniform value, PtrAdd, Cmp and
// And of such tiles stay symbolic; Load and Store read them directly: per row of the last
// dimension they solve the mask's linear conditions for the interval of live lanes, check
// it against the buffer once and copy it. Every other consumer materializes the tile first
// (fr.need), so symbolic tiles are invisible to the rest of the executor.
//
// Exactness: i32/i64 Add, Sub and Mul commute with wrapping, so an affine form evaluated in
// int64 and wrapped at materialization equals the op-by-op result. Where the true (wrapped)
// values matter, in comparisons and pointer offsets, the tile's range is checked first and a
// tile that would wrap is materialized and handled element by element.

const maxConds = 6

const (
	lazyNone   uint8 = iota // the slot's slice holds the values
	lazyAffine              // fr.aff[slot] describes them
	lazyMask                // fr.conds[slot] describe them
)

type affine struct {
	base    int64 // value at index 0 (pointers: the element offset)
	tag     int64 // pointers: the buffer tag
	strides [ir8]int64
	// vec adds a gathered vector: per row (vecRows: one value per row of the last
	// dimension) or per lane (vecCols: one value per index of the last dimension). Its
	// values live at the start of the slot's own storage; vecLo/vecHi bound them. This is
	// how offs[:, None]*stride + affine stays symbolic when offs is arbitrary (e.g. % M).
	vec          uint8
	vecLo, vecHi int64
}

const (
	vecNone uint8 = iota
	vecRows
	vecCols
)

// vecLen is the number of entries of a's vector for a tile of shape.
func vecLen(a *affine, shape []int) int {
	n := 1
	if len(shape) > 0 {
		n = shape[len(shape)-1]
	}
	switch a.vec {
	case vecRows:
		total := 1
		for _, d := range shape {
			total *= d
		}
		return total / n
	case vecCols:
		return n
	}
	return 0
}

// cond is "a(i) < 0" for an affine a.
type cond struct{ a affine }

// lazyState is a frame's symbolic view of its slots.
type lazyState struct {
	kind  []uint8
	aff   []affine
	conds [][]cond
	// tmp holds a step's literal or scalar operands as forms (affineAt): only their base and
	// tag are ever written.
	tmp [2]affine
}

func newLazyState(n int) lazyState {
	return lazyState{kind: make([]uint8, n), aff: make([]affine, n), conds: make([][]cond, n)}
}

// magnitude bound for symbolic arithmetic: beyond it the executor materializes rather than
// reason about int64 overflow.
const lazyLimit = 1 << 46

func small(x int64) bool { return x > -lazyLimit && x < lazyLimit }

// need materializes slot s if it is symbolic.
func (fr *frame) need(s int) {
	if fr.lz.kind[s] != lazyNone {
		fr.materialize(s)
	}
}

// rowIter walks the rows of the last dimension of a shape in row-major order without
// allocating: at is the first element of the current row, idx its outer index.
type rowIter struct {
	shape     []int
	n, total  int
	at        int
	idx       [ir8]int
	outerRank int
}

func newRowIter(shape []int) rowIter {
	it := rowIter{shape: shape, n: 1, total: 1, outerRank: max(len(shape)-1, 0)}
	if len(shape) > 0 {
		it.n = shape[len(shape)-1]
	}
	for _, d := range shape {
		it.total *= d
	}
	return it
}

func (it *rowIter) more() bool { return it.at < it.total }

func (it *rowIter) next() {
	it.at += it.n
	for d := it.outerRank - 1; d >= 0; d-- {
		it.idx[d]++
		if it.idx[d] < it.shape[d] {
			return
		}
		it.idx[d] = 0
	}
}

// materializeVec fills a tile whose affine form carries a vector stored at the start of the
// same storage: rows are written last to first, each reading its vector entries before
// overwriting them (row r covers [r*n, r*n+n), which holds no entry of an earlier row).
func (fr *frame) materializeVec(s int, a *affine, t ir.Type, z []int64) {
	shape := t.Shape
	last := len(shape) - 1
	n := shape[last]
	rowsN := len(z) / n
	step := a.strides[last]
	var hi int64
	if t.Ptr {
		hi = a.tag << ptrOffsetBits
	}
	it := newRowIter(shape)
	for r := rowsN - 1; r >= 0; r-- {
		it.seek(r)
		b := a.rowBase(&it)
		row := z[r*n : r*n+n]
		if a.vec == vecRows {
			b += z[r]
			for j := range row {
				row[j] = fr.wrapLazy(t, hi, b+step*int64(j))
			}
			continue
		}
		for j := range row {
			row[j] = fr.wrapLazy(t, hi, b+z[j]+step*int64(j)) // z[j] is still the vector in row 0
		}
	}
}

// wrapLazy turns an unnormalized symbolic value into the slot's representation.
func (fr *frame) wrapLazy(t ir.Type, tagBits, v int64) int64 {
	switch {
	case t.Ptr:
		return tagBits | v&ptrOffsetMask
	case t.Elem == ir.I32:
		return int64(int32(v))
	}
	return v
}

// seek positions the iterator on row r.
func (it *rowIter) seek(r int) {
	it.at = r * it.n
	for d := it.outerRank - 1; d >= 0; d-- {
		it.idx[d] = r % it.shape[d]
		r /= it.shape[d]
	}
}

// rowBase is a's value at the first element of the iterator's row.
func (a *affine) rowBase(it *rowIter) int64 {
	b := a.base
	for d := 0; d < it.outerRank; d++ {
		b += a.strides[d] * int64(it.idx[d])
	}
	return b
}

// maskRow is the interval [lo, hi) of lanes of the iterator's row where every condition holds.
func maskRow(conds []cond, it *rowIter) (int, int) {
	lo, hi := 0, it.n
	for i := range conds {
		a := &conds[i].a
		l, h := laneInterval(a.rowBase(it), a.strides[it.outerRank], it.n)
		lo, hi = max(lo, l), min(hi, h)
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// splitMask is a symbolic mask prepared for a row-by-row walk: the conditions that do not
// vary between rows (e.g. a column bound, iw < W) are solved once into [colLo, colHi); only
// the others (e.g. a channel bound on rows, cs < C) are solved per row.
type splitMask struct {
	colLo, colHi int
	rowConds     [8]*affine
	nRow         int
	all          []cond // more row conditions than rowConds holds: solve all per row
}

func splitConds(conds []cond, outerRank, n int) splitMask {
	sm := splitMask{colHi: n}
	for i := range conds {
		a := &conds[i].a
		perRow := false
		for d := range outerRank {
			perRow = perRow || a.strides[d] != 0
		}
		if !perRow {
			l, h := laneInterval(a.base, a.strides[outerRank], n)
			sm.colLo, sm.colHi = max(sm.colLo, l), min(sm.colHi, h)
			continue
		}
		if sm.nRow == len(sm.rowConds) {
			return splitMask{colHi: n, all: conds}
		}
		sm.rowConds[sm.nRow] = a
		sm.nRow++
	}
	return sm
}

// rowInterval solves the rows of a 2-D tile where the row conditions hold, when each of them
// depends on the row alone (rows < M): those rows are [r0, r1), each live on the columns
// [colLo, colHi). ok is false when a condition varies along both dimensions.
func (sm *splitMask) rowInterval(maskLazy bool, shape []int) (r0, r1 int, ok bool) {
	if !maskLazy || sm.all != nil || len(shape) != 2 {
		return 0, 0, false
	}
	r0, r1 = 0, shape[0]
	for _, a := range sm.rowConds[:sm.nRow] {
		if a.strides[1] != 0 {
			return 0, 0, false
		}
		l, h := laneInterval(a.base, a.strides[0], shape[0])
		r0, r1 = max(r0, l), min(r1, h)
	}
	if r1 < r0 {
		r1 = r0
	}
	return r0, r1, true
}

// row is the interval [lo, hi) of lanes of the iterator's row where every condition holds.
func (sm *splitMask) row(it *rowIter) (int, int) {
	if sm.all != nil {
		return maskRow(sm.all, it)
	}
	lo, hi := sm.colLo, sm.colHi
	for _, a := range sm.rowConds[:sm.nRow] {
		if hi <= lo {
			break
		}
		l, h := laneInterval(a.rowBase(it), a.strides[it.outerRank], it.n)
		lo, hi = max(lo, l), min(hi, h)
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

func (fr *frame) materialize(s int) {
	t := fr.prog.slotType[s]
	z := fr.ints[s]
	switch fr.lz.kind[s] {
	case lazyAffine:
		a := &fr.lz.aff[s]
		if a.vec != vecNone {
			fr.materializeVec(s, a, t, z)
			break
		}
		it := newRowIter(t.Shape)
		step := a.strides[it.outerRank]
		for ; it.more(); it.next() {
			b := a.rowBase(&it)
			row := z[it.at : it.at+it.n]
			switch {
			case t.Ptr:
				hi := a.tag << ptrOffsetBits
				for j := range row {
					row[j] = hi | (b+step*int64(j))&ptrOffsetMask
				}
			case t.Elem == ir.I32:
				for j := range row {
					row[j] = int64(int32(b + step*int64(j)))
				}
			default:
				for j := range row {
					row[j] = b + step*int64(j)
				}
			}
		}
	case lazyMask:
		conds := fr.lz.conds[s]
		it := newRowIter(t.Shape) // declared outside: a per-iteration copy of a loop variable whose address is taken costs more than the row
		for ; it.more(); it.next() {
			lo, hi := maskRow(conds, &it)
			row := z[it.at : it.at+it.n]
			for j := range row {
				row[j] = b2i(j >= lo && j < hi)
			}
		}
	}
	fr.lz.kind[s] = lazyNone
}

// laneInterval is the set of j in [0, n) with a + b*j < 0, which is an interval.
func laneInterval(a, b int64, n int) (int, int) {
	switch {
	case b == 0:
		if a < 0 {
			return 0, n
		}
		return 0, 0
	case b > 0: // b*j < -a  <=>  j <= floor((-a-1)/b)
		hi := floorDiv(-a-1, b) + 1
		return 0, int(clamp(hi, 0, int64(n)))
	default: // (-b)*j > a  <=>  j >= floor(a/(-b)) + 1
		lo := floorDiv(a, -b) + 1
		return int(clamp(lo, 0, int64(n))), n
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func clamp(x, lo, hi int64) int64 { return max(lo, min(hi, x)) }

// affineRange is the smallest and largest value of a over shape; ok is false when the
// terms are too large to reason about.
func affineRange(a *affine, shape []int) (lo, hi int64, ok bool) {
	if !small(a.base) {
		return 0, 0, false
	}
	lo, hi = a.base, a.base
	for d, n := range shape {
		s := a.strides[d]
		if !small(s) || n > 1<<24 {
			return 0, 0, false
		}
		t := s * int64(n-1)
		if t < 0 {
			lo += t
		} else {
			hi += t
		}
	}
	if a.vec != vecNone {
		if !small(a.vecLo) || !small(a.vecHi) {
			return 0, 0, false
		}
		lo, hi = lo+a.vecLo, hi+a.vecHi
	}
	return lo, hi, small(lo) && small(hi)
}

// trueValued reports whether the affine tile's values equal their wrapped dtype values
// (no element wrapped), so comparisons and offsets may use them directly.
func trueValued(a *affine, t ir.Type) bool {
	lo, hi, ok := affineRange(a, t.Shape)
	if !ok {
		return false
	}
	if t.Elem == ir.I32 {
		return lo >= -1<<31 && hi < 1<<31
	}
	return true
}

// lazyInt reports whether values of type t may be kept affine.
func lazyInt(t ir.Type) bool {
	return t.Rank() >= 1 && (t.Ptr || t.Elem == ir.I32 || t.Elem == ir.I64)
}

// affineRef says where operand i of an instruction comes from: an absorbed splat's scalar
// (uniform) or a slot that may hold a symbolic tile.
type affineRef struct {
	slot   int
	scalar bool
	ptr    bool
	// lit: an integer literal tile (iw >= 0, ow * 1, x - 1): the constant val, so that the
	// result stays symbolic instead of falling back to values.
	lit bool
	val int64
}

func (c *compiler) affineOperand(in *ir.Instr, args []int, i int) affineRef {
	v := in.Args[i]
	if sc, ok := c.scalarOperand(v); ok {
		return affineRef{slot: sc, scalar: true, ptr: v.Type.Ptr}
	}
	if d := v.Def; d != nil && d.Op == ir.Const && len(d.Args) == 0 && !v.Type.Ptr && (v.Type.Elem == ir.I32 || v.Type.Elem == ir.I64) {
		return affineRef{slot: args[i], lit: true, val: normInt(v.Type.Elem, d.Int)}
	}
	return affineRef{slot: args[i]}
}

// affineAt gives the operand's affine form in place, or nil if it has none: a literal or a
// scalar is written into *tmp, whose strides and vector stay zero (lazyState.tmp). The
// symbolic steps run for every program and loop iteration; copying their operands' forms
// (over 100 bytes each) by value was most of their cost.
func (fr *frame) affineAt(r affineRef, tmp *affine) *affine {
	switch {
	case r.lit:
		tmp.tag, tmp.base = 0, r.val
		return tmp
	case r.scalar:
		v := fr.ints[r.slot][0]
		if r.ptr {
			tmp.tag, tmp.base = int64(ptrTag(v)), ptrOffset(v)
		} else {
			tmp.tag, tmp.base = 0, v
		}
		return tmp
	case fr.lz.kind[r.slot] != lazyAffine:
		return nil
	}
	return &fr.lz.aff[r.slot]
}

// lazyStep wraps the eager step of in. Ops that can work on symbolic tiles try to; every
// other op materializes its integer tile operands first. Either way an eagerly written
// result is marked as holding values.
func (c *compiler) lazyStep(in *ir.Instr, args, results []int, eager step) step {
	if eager == nil {
		return nil
	}
	if disableLazy {
		return c.materializingStep(in, args, results, eager)
	}
	return c.symbolicStep(in, args, results, eager)
}

// disableLazy turns symbolic tiles off at compile time (differential tests).
var disableLazy = false

// materializingStep runs eager after materializing operands: the plain executor.
func (c *compiler) materializingStep(in *ir.Instr, args, results []int, eager step) step {
	switch in.Op {
	case ir.For, ir.If, ir.While:
		return eager
	}
	return func(fr *frame) error {
		for _, s := range args {
			if c.p.slotClass[s] == clsInt {
				fr.need(s)
			}
		}
		for _, s := range results {
			fr.lz.kind[s] = lazyNone
		}
		return eager(fr)
	}
}

func (c *compiler) symbolicStep(in *ir.Instr, args, results []int, eager step) step {
	var tileArgs []int
	for i, s := range args {
		if c.p.slotClass[s] == clsInt && c.p.slotType[s].Rank() > 0 && !c.absorbed[in.Args[i]] {
			tileArgs = append(tileArgs, s)
		}
	}
	var intResults []int
	for _, s := range results {
		if c.p.slotClass[s] == clsInt {
			intResults = append(intResults, s)
		}
	}
	fallback := func(fr *frame) error {
		for _, s := range tileArgs {
			fr.need(s)
		}
		for _, s := range intResults {
			fr.lz.kind[s] = lazyNone
		}
		return eager(fr)
	}
	if len(tileArgs) == 0 && len(intResults) == 0 {
		fallback = eager // nothing symbolic in or out (float ops): no wrapper per run
	}
	switch in.Op {
	case ir.For, ir.If, ir.While:
		// Their operands and results move through copySlot/swapSlot, which carry the
		// symbolic state; region bodies are wrapped instruction by instruction.
		return eager
	case ir.Load, ir.Store:
		return c.lazyMemory(in, args, fallback)
	}
	if len(results) != 1 {
		return fallback
	}
	z := results[0]
	tz := c.p.slotType[z]
	switch in.Op {
	case ir.Select:
		// A symbolic condition that holds (or fails) on the whole tile, such as an attention
		// mask `rs < S` inside the keys: the result is one operand, moved or copied, with no
		// mask tile built and no lane-by-lane choice.
		cond, a, b := args[0], args[1], args[2]
		cls := c.p.slotClass[z]
		moveA, moveB := c.deadAfter(in.Args[1], in), c.deadAfter(in.Args[2], in)
		return func(fr *frame) error {
			if fr.lz.kind[cond] != lazyMask {
				return fallback(fr)
			}
			switch maskUniform(fr.lz.conds[cond], tz.Shape) {
			case maskAllOn:
				if moveA {
					fr.swapSlot(cls, z, a)
				} else {
					fr.copySlot(cls, z, a)
				}
				return nil
			case maskAllOff:
				if moveB {
					fr.swapSlot(cls, z, b)
				} else {
					fr.copySlot(cls, z, b)
				}
				return nil
			}
			return fallback(fr)
		}
	case ir.Arange:
		if !lazyInt(tz) {
			return fallback
		}
		start := int64(in.Ints[0])
		return func(fr *frame) error {
			fr.lz.kind[z] = lazyAffine
			fr.lz.aff[z] = affine{base: start}
			fr.lz.aff[z].strides[0] = 1
			return nil
		}
	case ir.Splat:
		if !lazyInt(tz) {
			return fallback
		}
		src := args[0]
		return func(fr *frame) error {
			v := fr.ints[src][0]
			fr.lz.kind[z] = lazyAffine
			if tz.Ptr {
				fr.lz.aff[z] = affine{tag: int64(ptrTag(v)), base: ptrOffset(v)}
			} else {
				fr.lz.aff[z] = affine{base: v}
			}
			return nil
		}
	case ir.Broadcast, ir.ExpandDims:
		src := args[0]
		ts := c.p.slotType[src]
		// mapDims gives, for each result dim, the source dim it comes from (-1: none) and
		// whether it is broadcast (stride 0).
		var from [ir8]int
		if in.Op == ir.ExpandDims {
			ax := int(in.Int)
			for d := range tz.Rank() {
				switch {
				case d < ax:
					from[d] = d
				case d == ax:
					from[d] = -1
				default:
					from[d] = d - 1
				}
			}
		} else {
			for d := range tz.Rank() {
				from[d] = d
				if ts.Shape[d] == 1 && tz.Shape[d] != 1 {
					from[d] = -1
				}
			}
		}
		rank := tz.Rank()
		// remap writes a's form over the result's dims into out in place (these tiles are
		// remapped every loop iteration; copying the struct twice showed in profiles).
		remap := func(out, a *affine) {
			*out = affine{base: a.base, tag: a.tag}
			for d := range rank {
				if from[d] >= 0 {
					out.strides[d] = a.strides[from[d]]
				}
			}
		}
		if tz.Rank() > ir8 {
			return fallback
		}
		// A broadcast of a gathered tile along the last dimension ([M,1] -> [M,N]) or
		// along all the others ([1,N] -> [K,N]) becomes an affine form with a vector.
		vecMode := vecNone
		if in.Op == ir.Broadcast && (tz.Ptr || tz.Elem == ir.I32 || tz.Elem == ir.I64) && rank >= 2 {
			lastT, lastS := tz.Shape[rank-1], ts.Shape[rank-1]
			outerSame, outerOnes := true, true
			for d := 0; d < rank-1; d++ {
				outerSame = outerSame && ts.Shape[d] == tz.Shape[d]
				outerOnes = outerOnes && ts.Shape[d] == 1
			}
			switch {
			case lastS == 1 && lastT > 1 && outerSame:
				vecMode = vecRows
			case lastS == lastT && outerOnes:
				vecMode = vecCols
			}
		}
		return func(fr *frame) error {
			switch fr.lz.kind[src] {
			case lazyAffine:
				if fr.lz.aff[src].vec != vecNone {
					return fallback(fr)
				}
				fr.lz.kind[z] = lazyAffine
				remap(&fr.lz.aff[z], &fr.lz.aff[src])
				return nil
			case lazyNone:
				if vecMode == vecNone {
					return fallback(fr)
				}
				x := fr.ints[src]
				var tag int64
				if tz.Ptr {
					// pointers into one buffer (none wild): the vector holds their offsets
					tag = int64(ptrTag(x[0]))
					if tag&tagWild != 0 {
						return fallback(fr)
					}
					off := fr.ints[z][:len(x)]
					for i, p := range x {
						if int64(ptrTag(p)) != tag {
							return fallback(fr)
						}
						off[i] = ptrOffset(p)
					}
					x = off
				}
				lo, hi := x[0], x[0]
				for _, v := range x {
					lo, hi = min(lo, v), max(hi, v)
				}
				copy(fr.ints[z], x)
				fr.lz.kind[z] = lazyAffine
				fr.lz.aff[z] = affine{tag: tag, vec: vecMode, vecLo: lo, vecHi: hi}
				return nil
			case lazyMask:
				cs := fr.lz.conds[z][:0]
				for i := range fr.lz.conds[src] {
					cs = append(cs, cond{})
					remap(&cs[len(cs)-1].a, &fr.lz.conds[src][i].a)
				}
				fr.lz.conds[z] = cs
				fr.lz.kind[z] = lazyMask
				return nil
			}
			return fallback(fr)
		}
	case ir.Add, ir.Sub, ir.Mul:
		if !lazyInt(tz) || len(args) != 2 {
			return fallback
		}
		x, y := c.affineOperand(in, args, 0), c.affineOperand(in, args, 1)
		op := in.Op
		rank := tz.Rank()
		return func(fr *frame) error {
			a, b := fr.affineAt(x, &fr.lz.tmp[0]), fr.affineAt(y, &fr.lz.tmp[1])
			if a == nil || b == nil {
				return fallback(fr)
			}
			// The result gets its own copy of an operand's vector, or of the sum of both
			// operands' (of one mode: a column index made of two gathered parts).
			vecFrom, scale, both := -1, int64(1), a.vec != vecNone && b.vec != vecNone
			switch {
			case both:
				if op == ir.Mul {
					return fallback(fr)
				}
			case a.vec != vecNone:
				vecFrom = x.slot
			case b.vec != vecNone:
				if op == ir.Sub {
					return fallback(fr)
				}
				vecFrom = y.slot
			}
			out := &fr.lz.aff[z] // never an operand's: every value has its own slot
			*out = affine{}
			switch op {
			case ir.Add:
				out.base = a.base + b.base
				for d := range rank {
					out.strides[d] = a.strides[d] + b.strides[d]
				}
			case ir.Sub:
				out.base = a.base - b.base
				for d := range rank {
					out.strides[d] = a.strides[d] - b.strides[d]
				}
			default:
				if !uniform(a, rank) {
					a, b = b, a
				}
				if !uniform(a, rank) {
					return fallback(fr)
				}
				u := a.base
				out.base = b.base * u
				for d := range rank {
					out.strides[d] = b.strides[d] * u
				}
				scale = u
			}
			sign := int64(1)
			if op == ir.Sub {
				sign = -1
			}
			switch {
			case both && !fr.sumVecs(z, x.slot, a, y.slot, b, sign, out):
				return fallback(fr)
			case vecFrom >= 0:
				src := a
				if b.vec != vecNone {
					src = b
				}
				if !fr.copyVec(z, vecFrom, src, scale, out) {
					return fallback(fr)
				}
			}
			fr.lz.kind[z] = lazyAffine
			return nil
		}
	case ir.PtrAdd:
		if !lazyInt(tz) {
			return fallback
		}
		p, off := c.affineOperand(in, args, 0), c.affineOperand(in, args, 1)
		offType := in.Args[1].Type
		rank := tz.Rank()
		return func(fr *frame) error {
			a, b := fr.affineAt(p, &fr.lz.tmp[0]), fr.affineAt(off, &fr.lz.tmp[1])
			if a == nil || b == nil || !trueValued(b, offType) {
				return fallback(fr)
			}
			out := &fr.lz.aff[z] // never an operand's: every value has its own slot
			*out = affine{tag: a.tag, base: a.base + b.base}
			for d := range rank {
				out.strides[d] = a.strides[d] + b.strides[d]
			}
			// Every offset of the tile must be small (not only the base): a large stride
			// would otherwise wrap in the 48-bit encoding and alias a valid element.
			if _, _, ok := affineRange(out, tz.Shape); !ok {
				return fallback(fr)
			}
			switch {
			case a.vec != vecNone && b.vec != vecNone:
				if !fr.sumVecs(z, p.slot, a, off.slot, b, 1, out) {
					return fallback(fr)
				}
			case a.vec != vecNone && !fr.copyVec(z, p.slot, a, 1, out) || b.vec != vecNone && !fr.copyVec(z, off.slot, b, 1, out):
				return fallback(fr)
			}
			fr.lz.kind[z] = lazyAffine
			return nil
		}
	case ir.Cmp:
		t := in.Args[0].Type
		if t.Ptr || !(t.Elem == ir.I32 || t.Elem == ir.I64) || tz.Rank() == 0 || tz.Rank() > ir8 {
			return fallback
		}
		pred := in.Int
		if pred < ir.CmpLT || pred > ir.CmpGE {
			return fallback
		}
		x, y := c.affineOperand(in, args, 0), c.affineOperand(in, args, 1)
		rank := tz.Rank()
		return func(fr *frame) error {
			a, b := fr.affineAt(x, &fr.lz.tmp[0]), fr.affineAt(y, &fr.lz.tmp[1])
			if a == nil || b == nil || a.vec != vecNone || b.vec != vecNone || !trueValued(a, t) || !trueValued(b, t) {
				return fallback(fr)
			}
			// Rewrite x pred y as d < 0 with d affine, written in place.
			cs := append(fr.lz.conds[z][:0], cond{})
			d := &cs[0].a
			sign, bias := int64(1), int64(0)
			switch pred {
			case ir.CmpLT: // x - y < 0
			case ir.CmpLE: // x - y - 1 < 0
				bias = -1
			case ir.CmpGT: // y - x < 0
				sign = -1
			case ir.CmpGE: // y - x - 1 < 0
				sign, bias = -1, -1
			}
			d.base = sign*(a.base-b.base) + bias
			for k := range rank {
				d.strides[k] = sign * (a.strides[k] - b.strides[k])
			}
			fr.lz.conds[z] = cs
			fr.lz.kind[z] = lazyMask
			return nil
		}
	case ir.And:
		if tz.Elem != ir.I1 || tz.Ptr || tz.Rank() == 0 {
			return fallback
		}
		x, y := args[0], args[1]
		return func(fr *frame) error {
			if fr.lz.kind[x] != lazyMask || fr.lz.kind[y] != lazyMask || len(fr.lz.conds[x])+len(fr.lz.conds[y]) > maxConds {
				return fallback(fr)
			}
			cs := append(fr.lz.conds[z][:0], fr.lz.conds[x]...)
			fr.lz.conds[z] = append(cs, fr.lz.conds[y]...)
			fr.lz.kind[z] = lazyMask
			return nil
		}
	}
	return fallback
}

// copyVec gives out the vector of src (stored in slot from) times scale, stored in slot z.
func (fr *frame) copyVec(z, from int, src *affine, scale int64, out *affine) bool {
	if !small(scale) || !small(src.vecLo) || !small(src.vecHi) {
		return false
	}
	if m := max(-src.vecLo, src.vecHi, 1); scale != 0 && (scale > lazyLimit/m || -scale > lazyLimit/m) {
		return false // the scaled vector could overflow
	}
	vl := vecLen(src, fr.prog.slotType[from].Shape)
	dst, v := fr.ints[z][:vl], fr.ints[from][:vl]
	if scale == 1 {
		copy(dst, v)
	} else {
		for i, x := range v {
			dst[i] = x * scale
		}
	}
	lo, hi := src.vecLo*scale, src.vecHi*scale
	out.vec, out.vecLo, out.vecHi = src.vec, min(lo, hi), max(lo, hi)
	return true
}

// sumVecs gives out (in z's storage) the vector of a's plus sign times b's, from slots fa and
// fb: both of one mode and length, the sum's bounds small.
func (fr *frame) sumVecs(z, fa int, a *affine, fb int, b *affine, sign int64, out *affine) bool {
	if a.vec != b.vec || !small(a.vecLo) || !small(a.vecHi) || !small(b.vecLo) || !small(b.vecHi) {
		return false
	}
	vl := vecLen(a, fr.prog.slotType[fa].Shape)
	if vecLen(b, fr.prog.slotType[fb].Shape) != vl {
		return false
	}
	lo, hi := a.vecLo+b.vecLo, a.vecHi+b.vecHi
	if sign < 0 {
		lo, hi = a.vecLo-b.vecHi, a.vecHi-b.vecLo
	}
	dst, x, y := fr.ints[z][:vl], fr.ints[fa][:vl], fr.ints[fb][:vl]
	for i := range dst {
		dst[i] = x[i] + sign*y[i]
	}
	out.vec, out.vecLo, out.vecHi = a.vec, lo, hi
	return true
}

func uniform(a *affine, rank int) bool {
	if a.vec != vecNone {
		return false
	}
	for d := range rank {
		if a.strides[d] != 0 {
			return false
		}
	}
	return true
}

// lazyMemory runs Load and Store whose pointer tile is affine with unit stride along the
// last dimension, or whose mask is symbolic, row by row: one bounds check and one copy per
// row's live interval. Anything else goes to the eager path.
func (c *compiler) lazyMemory(in *ir.Instr, args []int, fallback step) step {
	tp := c.p.slotType[args[0]]
	if tp.Rank() == 0 || tp.Rank() > ir8 {
		return fallback
	}
	m := &memOp{in: in, p: args[0], mask: -1, other: -1, val: -1, shape: tp.Shape, d: tp.Elem, isLoad: in.Op == ir.Load, fallback: fallback}
	m.n = tp.Shape[tp.Rank()-1]
	m.last = tp.Rank() - 1
	m.what = "store"
	if m.isLoad {
		m.what = "load"
		if len(args) == 3 {
			m.mask, m.other = args[1], args[2]
		}
		m.data = c.slots[in.Results[0]]
	} else {
		m.val, m.data = args[1], args[1]
		if len(args) == 3 {
			m.mask = args[2]
		}
	}
	m.cls = c.p.slotClass[m.data]
	m.alias = m.isLoad && m.cls == clsF32 && m.d == ir.F32 && c.aliasableLoad(in)
	m.extent = m.isLoad && c.tracksExtent(in)
	m.rect = m.extent && c.feedsOneDot(in.Results[0], true)
	m.strided = m.alias && (c.dotOperandOnly(in.Results[0]) || c.storedOnly(in.Results[0]))
	m.residual = m.alias && c.residualViews[in]
	m.storedView = m.alias && c.storedUnderItsMask(in)
	return m.run
}

type memOp struct {
	in                  *ir.Instr
	p, mask, other, val int
	data                int // the loaded result, or the stored value
	cls                 class
	shape               []int
	n, last             int
	d                   ir.DType
	isLoad              bool
	alias               bool // a whole live tile may be viewed in place (alias.go)
	extent              bool // records the live extent of the result (extent.go)
	rect                bool // ... and writes only that rectangle (its one consumer is a tl.dot)
	strided             bool // a whole live 2-D tile may be viewed with a leading dimension
	residual            bool // a 2-D tile's live rows may be viewed, read by the panels flush (residualViews)
	storedView          bool // ... or read by the one store, under the load's own mask (storedUnderItsMask)
	what                string
	fallback            step
}

func (m *memOp) run(fr *frame) error {
	if m.alias {
		fr.unalias(m.data)
	}
	if m.storedView {
		fr.partial[m.data] = false // until viewResidual views the live lanes again
	}
	if m.extent {
		fr.ext[m.data], fr.partial[m.data] = extent{m.shape[0], m.n}, false // every path but the row walk
	}
	maskLazy := m.mask >= 0 && fr.lz.kind[m.mask] == lazyMask
	ptrLazy := false
	var colBase int64
	laneStride := int64(1) // element distance of a row's lanes in the buffer
	if fr.lz.kind[m.p] == lazyAffine {
		a := &fr.lz.aff[m.p]
		switch a.vec {
		case vecNone, vecRows:
			ptrLazy = m.n == 1 || a.strides[m.last] == 1
			if !ptrLazy && m.isLoad && m.cls == clsF32 && m.d == ir.F32 && a.strides[m.last] > 1 {
				// every stride-th element (a strided pooling window, a phase of a row, a
				// dot operand of a column residue's pixels): still a row of one interval
				// of lanes, copied with one bounds check
				ptrLazy, laneStride = true, a.strides[m.last]
			}
		case vecCols:
			// Lane offsets vec[j] + stride*j: contiguous when they count up by one.
			v, st := fr.ints[m.p][:m.n], a.strides[m.last]
			ptrLazy = true
			for j := range v {
				if v[j]+st*int64(j) != v[0]+int64(j) {
					ptrLazy = false
					break
				}
			}
			colBase = v[0]
		}
	}
	// A stored value may view the rows it was loaded from (storedOnly). Stored into the buffer
	// they are in, the rows are copied out first: the load's values precede the store. A
	// strided view is read in place by moveRect; every other path wants it dense.
	if !m.isLoad && m.cls == clsF32 && fr.viewing(m.data) {
		if fr.lz.kind[m.p] != lazyAffine || fr.viewsBuffer(m.data, fr.lz.aff[m.p].tag) {
			fr.densify(m.data, m.shape[0], m.n)
		}
	}
	stridedVal := !m.isLoad && m.cls == clsF32 && fr.ld[m.data] != 0
	if m.isLoad && (!ptrLazy || m.mask >= 0 && !maskLazy) && !m.rect && len(m.shape) == 2 && m.cls == clsF32 && m.d == ir.F32 &&
		fr.lz.kind[m.p] == lazyAffine && fr.lz.aff[m.p].vec == vecCols && (m.mask < 0 || maskLazy || fr.lz.kind[m.mask] == lazyNone) {
		fr.lz.kind[m.data] = lazyNone
		if m.loadColumnRuns(fr, &fr.lz.aff[m.p], maskLazy) {
			columnRunLoads.Add(1)
			return nil
		}
		return m.fallback(fr) // it reports the first lane out of bounds
	}
	if m.mask >= 0 && fr.lz.kind[m.mask] == lazyAffine || !ptrLazy && !maskLazy {
		if stridedVal {
			fr.densify(m.data, m.shape[0], m.n)
		}
		return m.fallback(fr)
	}
	if !ptrLazy {
		fr.need(m.p) // a gathered pointer tile under a symbolic mask
	}
	if m.mask >= 0 && !maskLazy {
		// A materialized mask: its rows must be all-on or all-off to stay on this path.
		mk := fr.ints[m.mask]
		for r := 0; r < len(mk); r += m.n {
			if maskState(mk[r:r+m.n]) == maskMixed {
				return m.fallback(fr)
			}
		}
	}
	if m.isLoad {
		fr.lz.kind[m.data] = lazyNone
		if m.cls == clsInt && m.other >= 0 {
			fr.need(m.other)
		}
	} else if m.cls == clsInt {
		fr.need(m.val)
	}
	a := &fr.lz.aff[m.p]
	viewBase, rowStride, viewable := m.viewForm(fr, a, ptrLazy, colBase)
	if stridedVal && !(viewable && len(m.shape) == 2 && rowStride >= 0) {
		fr.densify(m.data, m.shape[0], m.n)
		stridedVal = false
	}
	if (m.residual || m.storedView && maskLazy) && viewable && rowStride >= 0 && (m.mask < 0 || maskLazy) {
		// A residual tile (panels_epilogue.go), or a tile stored under this mask alone: its
		// live rows viewed in place, their extent recorded; the flush or the store reads them
		// there, any other path densifies them first.
		if viewed, err := m.viewResidual(fr, maskLazy, a.tag, viewBase, rowStride); viewed || err != nil {
			return err
		}
	}
	if ptrLazy && a.vec == vecNone && !stridedVal && m.wholeTileLive(fr, maskLazy) && rowMajor(a, m.shape) {
		// One contiguous block, every lane live (a weight tile of a matmul whose rows are
		// BLOCK_K long): one bounds check and one copy instead of one per row. The checked
		// range is the union of the rows', so a bad access reports the same offset.
		return m.moveRowN(fr, a.tag, a.base, fr.prog.slotType[m.data].NumElems())
	}
	if m.strided && viewable && rowStride >= int64(m.n) && m.wholeTileLive(fr, maskLazy) {
		// Rows apart in the buffer, all live, read only by tl.dot/tl.trans: view in place.
		if viewed, err := m.viewRows(fr, a.tag, viewBase, rowStride, m.shape[0], m.n); viewed || err != nil {
			return err
		}
	}
	ptrs := fr.ints[m.p] // the vector of a symbolic pointer tile, or the pointers
	var split splitMask
	if maskLazy {
		split = splitConds(fr.lz.conds[m.mask], len(m.shape)-1, m.n)
	}
	if viewable && !m.rect && len(m.shape) == 2 && rowStride >= 0 {
		if moved, err := m.moveRect(fr, &split, maskLazy, a.tag, viewBase, rowStride); moved || err != nil {
			return err
		}
	}
	if laneStride > 1 && a.vec == vecNone && len(m.shape) == 2 && !m.rect && a.strides[0] >= 0 {
		if moved, err := m.loadStridedRect(fr, &split, maskLazy, a.tag, a.base, a.strides[0], laneStride); moved || err != nil {
			return err
		}
	}
	if stridedVal {
		fr.densify(m.data, m.shape[0], m.n) // the row walk reads rows n apart
	}
	// The live interval of the row at it.
	rowLanes := func(it *rowIter) (int, int) {
		switch {
		case maskLazy:
			return split.row(it)
		case m.mask >= 0 && fr.ints[m.mask][it.at] == 0:
			return 0, 0
		}
		return 0, m.n
	}
	width, rows := m.n, m.shape[0]*len(ptrs) // no bound on rows unless m.rect
	if m.rect {
		// Only the live rectangle is written (extent.go): find it first.
		live := extent{}
		block := true // the live lanes are exactly rows [0, R) x columns [0, C)
		if r0, r1, ok := split.rowInterval(maskLazy, m.shape); ok {
			// rows < M and k < K: solved at once, no walk
			if r1 > r0 && split.colHi > split.colLo {
				live = extent{r1, split.colHi}
				block = r0 == 0 && split.colLo == 0
			}
		} else {
			live, block = m.walkExtent(rowLanes)
		}
		fr.ext[m.data], fr.partial[m.data] = live, true
		if block && m.alias && viewable && rowStride >= int64(live.cols) && live.rows > 0 {
			// An edge tile whose live lanes are one block of rows apart in the buffer: the
			// dot reads that block in place (alias.go), and never past it.
			if viewed, err := m.viewRows(fr, a.tag, viewBase, rowStride, live.rows, live.cols); viewed || err != nil {
				return err
			}
		}
		width, rows = live.cols, live.rows
	}
	var live extent           // rows and columns up to the last live lane seen
	it := newRowIter(m.shape) // declared outside: a per-iteration copy of a loop variable whose address is taken costs more than the row
	for ; it.more() && it.at/m.n < rows; it.next() {
		lo, hi := rowLanes(&it)
		if hi <= lo {
			lo, hi = 0, 0
		}
		var rowOff int64
		if ptrLazy {
			rowOff = a.rowBase(&it)
			switch a.vec {
			case vecRows:
				rowOff += ptrs[it.at/m.n]
			case vecCols:
				rowOff += colBase
			}
		}
		if laneStride > 1 {
			if err := m.loadStridedRow(fr, it.at, lo, hi, a.tag, rowOff, laneStride); err != nil {
				return err
			}
		} else if err := m.moveRow(fr, it.at, lo, hi, width, ptrLazy, a.tag, rowOff); err != nil {
			return err
		}
		if hi > lo {
			live = extent{it.at/m.n + 1, max(live.cols, hi)}
		}
	}
	if m.extent && !m.rect {
		fr.ext[m.data] = live
	}
	return nil
}

// columnRunLoads counts the loads done by loadColumnRuns (tests read it).
var columnRunLoads atomic.Int64

// loadColumnRuns loads a 2-D fp32 tile whose pointers are affine along its rows and
// gathered along its columns, in runs of consecutive elements (a flat convolution's dense
// operand at rp = (q // Wp) * OW + q % Wp: a run per output row), under a mask symbolic
// (maskLazy), materialized or none: row by row, each run of live lanes at consecutive
// addresses with one bounds check and one copy, the rest from other; rows whose live lanes
// are those of the row before reuse its runs. It reports false, having loaded an unknown
// part, when a run is out of bounds.
func (m *memOp) loadColumnRuns(fr *frame, a *affine, maskLazy bool) bool {
	n := m.n
	v, st := fr.ints[m.p][:n], a.strides[1]
	var mk, prev []int64
	var split splitMask
	switch {
	case maskLazy:
		split = splitConds(fr.lz.conds[m.mask], 1, n)
	case m.mask >= 0:
		mk = fr.ints[m.mask]
	}
	runs := fr.maskRuns[:0]
	defer func() { fr.maskRuns = runs }()
	prevLo, prevHi := -1, -1
	it := newRowIter(m.shape)
	for ; it.more(); it.next() {
		at, r := it.at, it.at/n
		// the row's live lanes: a mask row, or the interval [lo, hi)
		var row []int64
		lo, hi := 0, n
		switch {
		case maskLazy:
			lo, hi = split.row(&it)
		case mk != nil:
			row = mk[at : at+n]
		}
		if r == 0 || !slices.Equal(row, prev) || lo != prevLo || hi != prevHi {
			runs = runs[:0]
			for j := 0; j < n; {
				on := j >= lo && j < hi && (row == nil || row[j] != 0)
				k := j + 1
				for k < n && (k >= lo && k < hi && (row == nil || row[k] != 0)) == on && (!on || v[k]+st*int64(k) == v[k-1]+st*int64(k-1)+1) {
					k++
				}
				runs = append(runs, maskRun{j, k, on})
				j = k
			}
			prev, prevLo, prevHi = row, lo, hi
		}
		base := a.base + a.strides[0]*int64(r)
		for _, run := range runs {
			switch {
			case run.on:
				b, off, err := fr.resolveAt(m.in.Pos, m.what, a.tag, base+v[run.lo]+st*int64(run.lo), run.hi-run.lo)
				if err != nil {
					return false
				}
				fr.loadRow(m.cls, m.d, b, off, m.data, at+run.lo, run.hi-run.lo)
			case m.other >= 0:
				fr.copyRange(m.cls, m.data, m.other, at+run.lo, run.hi-run.lo)
			default:
				clear(fr.f32[m.data][at+run.lo : at+run.hi])
			}
		}
	}
	return true
}

// viewForm gives a 2-D tile's element offsets as base + row*rowStride + col, when they are
// (viewable): an affine pointer tile with unit column stride, also when its columns come from
// a gathered vector that counts up by one (colBase) or its rows from one that is affine after
// all (offs % M away from the wrap), so such tiles can be read in place too.
func (m *memOp) viewForm(fr *frame, a *affine, ptrLazy bool, colBase int64) (base, rowStride int64, ok bool) {
	if !ptrLazy || len(m.shape) != 2 || a.vec != vecCols && a.strides[1] != 1 && m.n > 1 {
		return 0, 0, false
	}
	switch a.vec {
	case vecNone:
		return a.base, a.strides[0], true
	case vecCols:
		return a.base + colBase, a.strides[0], true
	case vecRows:
		v := fr.ints[m.p][:m.shape[0]]
		d := int64(0)
		if len(v) > 1 {
			d = v[1] - v[0]
		}
		for r := range v {
			if v[r] != v[0]+int64(r)*d {
				return 0, 0, false
			}
		}
		return a.base + v[0], a.strides[0] + d, true
	}
	return 0, 0, false
}

// viewRows makes the load's slot view rows x cols elements of buffer tag, the rows rowStride
// apart from element offset base (alias.go), after one bounds check of the whole span; it
// reports false when the span is too large to reason about, and the load copies instead.
func (m *memOp) viewRows(fr *frame, tag, base, rowStride int64, rows, cols int) (bool, error) {
	span := int64(rows-1)*rowStride + int64(cols)
	if !small(span) {
		return false, nil
	}
	b, o, err := fr.resolveAt(m.in.Pos, m.what, tag, base, int(span))
	if err != nil {
		return false, err
	}
	fr.aliasF32(m.data, b.f32()[o:o+int(span):o+int(span)])
	fr.ld[m.data] = max(int(rowStride), 1)
	return true, nil
}

// viewResidual views the load's live lanes in place when they are rows [0, R) x columns
// [0, C) of rows rowStride apart (viewRows), recording that extent: the rest of the tile
// is the load's other, zero (partial).
func (m *memOp) viewResidual(fr *frame, maskLazy bool, tag, base, rowStride int64) (bool, error) {
	var split splitMask
	if maskLazy {
		split = splitConds(fr.lz.conds[m.mask], len(m.shape)-1, m.n)
	}
	r0, r1, c0, c1, ok := m.liveRect(&split, maskLazy)
	if !ok || r0 != 0 || c0 != 0 || rowStride < int64(c1) && r1 > 1 {
		return false, nil
	}
	viewed, err := m.viewRows(fr, tag, base, rowStride, r1, c1)
	if viewed {
		fr.ext[m.data], fr.partial[m.data] = extent{r1, c1}, true
	}
	return viewed, err
}

// liveRect is the rectangle of m's live lanes, rows [r0, r1) x columns [c0, c1): all of them
// without a mask, else the mask's row interval and column bounds; false when the mask is no
// such rectangle or no lane is live (the row walk then only fills the loaded tile).
func (m *memOp) liveRect(split *splitMask, maskLazy bool) (r0, r1, c0, c1 int, ok bool) {
	r0, r1, c0, c1 = 0, m.shape[0], 0, m.n
	if m.mask >= 0 {
		if r0, r1, ok = split.rowInterval(maskLazy, m.shape); !ok {
			return 0, 0, 0, 0, false
		}
		c0, c1 = split.colLo, split.colHi
	}
	return r0, r1, c0, c1, r1 > r0 && c1 > c0
}

// moveRect moves a 2-D tile whose live lanes are one rectangle, rows [r0, r1) x columns
// [c0, c1) (no mask, or conditions on rows alone and on columns alone), row r starting at
// element base + r*rowStride of buffer tag: one bounds check of the whole span, then one copy
// per row, with no mask solved per row. It reports false, having moved nothing, when the
// lanes are not such a rectangle or the span fails the check (the row walk then reports the
// first bad row exactly).
func (m *memOp) moveRect(fr *frame, split *splitMask, maskLazy bool, tag, base, rowStride int64) (bool, error) {
	rows, n := m.shape[0], m.n
	r0, r1, c0, c1, ok := m.liveRect(split, maskLazy)
	if !ok {
		return false, nil
	}
	first := base + int64(r0)*rowStride + int64(c0)
	span := int64(r1-r0-1)*rowStride + int64(c1-c0)
	if !small(first) || !small(span) {
		return false, nil
	}
	b, o, err := fr.resolveAt(m.in.Pos, m.what, tag, first, int(span))
	if err != nil {
		return false, nil
	}
	if m.isLoad && (r0 > 0 || r1 < rows || c0 > 0 || c1 < n) {
		fr.copyRange(m.cls, m.data, m.other, 0, rows*n) // the dead lanes read other
	}
	ld := n // the value's row stride: a stored view of loaded rows keeps theirs (storedOnly)
	if !m.isLoad {
		ld = fr.leading(m.data, n)
	}
	// fp32 on both sides, rows too short to stream: the row copies alone, with no per-row
	// dispatch (zero padding moves rows 16 wide, where the dispatch cost as much as the copy)
	w := c1 - c0
	direct := m.cls == clsF32 && m.d == ir.F32 && (m.isLoad || w < streamMinRow)
	var mem, tile []float32
	if direct {
		mem, tile = b.f32(), fr.f32[m.data]
	}
	for r := r0; r < r1; r++ {
		at := r*ld + c0
		switch {
		case direct && m.isLoad:
			copy(tile[at:at+w], mem[o:o+w])
		case direct:
			copy(mem[o:o+w], tile[at:at+w])
		case m.isLoad:
			fr.loadRow(m.cls, m.d, b, o, m.data, at, w)
		default:
			fr.storeRow(m.cls, m.d, b, o, m.data, at, w)
		}
		o += int(rowStride)
	}
	if m.extent {
		fr.ext[m.data] = extent{r1, c1}
	}
	return true, nil
}

// loadStridedRect is moveRect for an fp32 load whose lanes are laneStride elements apart (a
// strided pooling window over a block of planes, a stride phase of rows): one bounds check of
// the whole span, then one strided copy per row, with no mask solved and no bounds checked
// per row. It reports false, having loaded nothing, where moveRect would.
func (m *memOp) loadStridedRect(fr *frame, split *splitMask, maskLazy bool, tag, base, rowStride, laneStride int64) (bool, error) {
	rows, n := m.shape[0], m.n
	r0, r1, c0, c1, ok := m.liveRect(split, maskLazy)
	if !ok {
		return false, nil
	}
	first := base + int64(r0)*rowStride + int64(c0)*laneStride
	span := int64(r1-r0-1)*rowStride + int64(c1-c0-1)*laneStride + 1
	if !small(first) || !small(span) {
		return false, nil
	}
	b, o, err := fr.resolveAt(m.in.Pos, m.what, tag, first, int(span))
	if err != nil {
		return false, nil
	}
	if r0 > 0 || r1 < rows || c0 > 0 || c1 < n {
		fr.copyRange(m.cls, m.data, m.other, 0, rows*n) // the dead lanes read other
	}
	mem, tile, st := b.f32(), fr.f32[m.data], int(laneStride)
	for r := r0; r < r1; r++ {
		dst, src := tile[r*n+c0:r*n+c1], mem[o:o+(c1-c0-1)*st+1]
		j := 0
		if st == 2 { // (a stride-2 pool's taps, a stride phase copy's rows)
			j = evenLanes(dst, src)
		}
		for ; j < len(dst); j++ {
			dst[j] = src[j*st]
		}
		o += int(rowStride)
	}
	if m.extent {
		fr.ext[m.data] = extent{r1, c1}
	}
	return true, nil
}

// walkExtent finds the live extent of a tile row by row, and whether its live lanes are
// exactly one block of rows [0, R) x columns [0, C).
func (m *memOp) walkExtent(rowLanes func(*rowIter) (int, int)) (live extent, block bool) {
	block = true
	it := newRowIter(m.shape) // declared outside: a per-iteration copy of a loop variable whose address is taken costs more than the row
	for ; it.more(); it.next() {
		lo, hi := rowLanes(&it)
		if hi <= lo {
			continue
		}
		r := it.at / m.n
		block = block && lo == 0 && r == live.rows && (r == 0 || hi == live.cols)
		live = extent{r + 1, max(live.cols, hi)}
	}
	return live, block
}

// wholeTileLive reports whether no lane of the tile is masked off: no mask, or symbolic
// conditions that hold on the whole tile.
func (m *memOp) wholeTileLive(fr *frame, maskLazy bool) bool {
	if m.mask < 0 {
		return true
	}
	if !maskLazy {
		return false
	}
	for i := range fr.lz.conds[m.mask] {
		if _, hi, ok := affineRange(&fr.lz.conds[m.mask][i].a, m.shape); !ok || hi >= 0 {
			return false
		}
	}
	return true
}

// maskUniform tells whether the conjunction conds holds on every lane of a tile of shape
// (maskAllOn), on none (maskAllOff: one condition fails everywhere), or cannot say
// (maskMixed).
func maskUniform(conds []cond, shape []int) int {
	on := true
	for i := range conds {
		lo, hi, ok := affineRange(&conds[i].a, shape)
		if !ok {
			return maskMixed
		}
		if lo >= 0 {
			return maskAllOff
		}
		on = on && hi < 0
	}
	if on {
		return maskAllOn
	}
	return maskMixed
}

// rowMajor reports whether the affine tile a of shape counts up by one in row-major order.
func rowMajor(a *affine, shape []int) bool {
	want := int64(1)
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 1 && a.strides[d] != want {
			return false
		}
		want *= int64(shape[d])
	}
	return true
}

// moveRowN moves the whole tile, n elements from element offset off of buffer tag.
func (m *memOp) moveRowN(fr *frame, tag, off int64, n int) error {
	b, o, err := fr.resolveAt(m.in.Pos, m.what, tag, off, n)
	if err != nil {
		return err
	}
	if m.alias {
		fr.aliasF32(m.data, b.f32()[o:o+n:o+n])
		return nil
	}
	if m.isLoad {
		fr.loadRow(m.cls, m.d, b, o, m.data, 0, n)
	} else {
		fr.storeRow(m.cls, m.d, b, o, m.data, 0, n)
	}
	return nil
}

// moveStrided moves an fp32 row whose pointers are one arithmetic progression in one buffer (a
// column of a transposed view) with one bounds check of its two ends, and reports whether it
// did; any other row, or one an end of which is out of bounds, is left to the lane-by-lane
// path, which names the first bad lane.
func (m *memOp) moveStrided(fr *frame, ptrs []int64, at int) bool {
	n := len(ptrs)
	if n < 2 {
		return false
	}
	st := ptrs[1] - ptrs[0]
	for j := 2; j < n; j++ {
		if ptrs[j]-ptrs[j-1] != st {
			return false
		}
	}
	// both ends in one buffer: every lane between them is too (the pointers are monotone)
	b, first, err := fr.resolve(m.in.Pos, m.what, ptrs[0], 1)
	if err != nil {
		return false
	}
	if b2, _, err := fr.resolve(m.in.Pos, m.what, ptrs[n-1], 1); err != nil || b2 != b {
		return false
	}
	data, row, step := b.f32(), fr.f32[m.data][at:at+n], int(st)
	if m.isLoad {
		for j := range row {
			row[j] = data[first+j*step]
		}
	} else {
		for j, x := range row {
			data[first+j*step] = x
		}
	}
	return true
}

// moveRow moves lanes [lo, hi) of the row starting at element at (loads fill the other
// lanes below width from other); rowOff is the row's first element offset when the
// pointers are symbolic.
// loadStridedRow loads lanes [lo, hi) of the fp32 row at, lane j from element rowOff +
// j*stride of buffer tag, after one bounds check of their span; the other lanes get other.
func (m *memOp) loadStridedRow(fr *frame, at, lo, hi int, tag, rowOff, stride int64) error {
	if lo > 0 {
		fr.copyRange(m.cls, m.data, m.other, at, lo)
	}
	if hi < m.n {
		fr.copyRange(m.cls, m.data, m.other, at+hi, m.n-hi)
	}
	if lo >= hi {
		return nil
	}
	st := int(stride)
	b, off, err := fr.resolveAt(m.in.Pos, m.what, tag, rowOff+int64(lo)*stride, (hi-lo-1)*st+1)
	if err != nil {
		return err
	}
	src, dst := b.f32()[off:off+(hi-lo-1)*st+1], fr.f32[m.data][at+lo:at+hi]
	for j := range dst {
		dst[j] = src[j*st]
	}
	return nil
}

func (m *memOp) moveRow(fr *frame, at, lo, hi, width int, ptrLazy bool, tag, rowOff int64) error {
	n := width
	if m.isLoad {
		if lo > 0 {
			fr.copyRange(m.cls, m.data, m.other, at, lo)
		}
		if hi < n {
			fr.copyRange(m.cls, m.data, m.other, at+hi, n-hi)
		}
	}
	if lo >= hi {
		return nil
	}
	ptrs := fr.ints[m.p]
	if ptrLazy || contiguous(ptrs[at+lo:at+hi]) {
		ftag, foff := tag, rowOff+int64(lo)
		if !ptrLazy {
			ftag, foff = int64(ptrTag(ptrs[at+lo])), ptrOffset(ptrs[at+lo])
		}
		b, off, err := fr.resolveAt(m.in.Pos, m.what, ftag, foff, hi-lo)
		if err != nil {
			return err
		}
		if m.isLoad {
			fr.loadRow(m.cls, m.d, b, off, m.data, at+lo, hi-lo)
		} else {
			fr.storeRow(m.cls, m.d, b, off, m.data, at+lo, hi-lo)
		}
		return nil
	}
	if m.cls == clsF32 && m.d == ir.F32 && m.moveStrided(fr, ptrs[at+lo:at+hi], at+lo) {
		return nil
	}
	for j := at + lo; j < at+hi; j++ {
		b, off, err := fr.resolve(m.in.Pos, m.what, ptrs[j], 1)
		if err != nil {
			return err
		}
		if m.isLoad {
			fr.loadRow(m.cls, m.d, b, off, m.data, j, 1)
		} else {
			fr.storeRow(m.cls, m.d, b, off, m.data, j, 1)
		}
	}
	return nil
}
