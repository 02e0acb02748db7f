package cpu

import (
	"math"
	"sync/atomic"

	"github.com/widejit/widejit/triton/ir"
)

// Live extents of zero-padded dot operands. A matmul kernel loads its edge tiles with masks
// and other=0 (`rows < M`, `k < K`), so a 257-long K in 256-wide tiles, or 67 rows in
// 64-row tiles, would otherwise move and multiply mostly zeros. A 2-D fp32 load whose
// `other` is the constant 0 records the live extent of its result (fr.ext): every element at
// row >= rows or column >= cols is zero. tl.trans of such a tile records the transposed
// extent, and tl.dot multiplies only the live blocks.
//
// When a tile feeds nothing but one tl.dot (directly or through one tl.trans), the load and
// the transpose write only the live rectangle and leave the rest of the slot stale
// (fr.partial): the dot never reads it, except on the exact path below, which zero-fills it.
//
// Exactness: the dropped products all have a zero factor, so they add +0 unless the other
// factor is an infinity or NaN (0*inf = NaN). tl.dot drops them only after checking that both
// live blocks are finite; otherwise it zero-fills the stale parts and multiplies the whole
// tiles, as the kernel is written.
type extent struct{ rows, cols int }

func (e extent) transposed() extent { return extent{e.cols, e.rows} }

// tracksExtent reports whether load records its result's live extent: a 2-D fp32 load
// with a mask and other = 0.
func (c *compiler) tracksExtent(load *ir.Instr) bool {
	if load == nil || load.Op != ir.Load || len(load.Args) != 3 || len(load.Results) != 1 {
		return false
	}
	return load.Results[0].Type.Rank() == 2 && c.p.slotClass[c.slots[load.Results[0]]] == clsF32 && isZeroConst(load.Args[2])
}

// isZeroConst reports whether v is the constant 0 (a Const, or a Splat or Broadcast of one).
func isZeroConst(v *ir.Value) bool {
	for d := v.Def; d != nil && len(d.Args) <= 1; d = d.Args[0].Def {
		switch d.Op {
		case ir.Const:
			return len(d.Args) == 0 && d.Float == 0 && d.Int == 0
		case ir.Splat, ir.Broadcast:
			continue
		}
		return false
	}
	return false
}

// isTranspose2D reports a tl.trans of a 2-D tile.
func isTranspose2D(in *ir.Instr) bool {
	return in != nil && in.Op == ir.Permute && len(in.Ints) == 2 && in.Ints[0] == 1 && len(in.Args) == 1
}

// tracked reports whether value v carries a live extent: the result of a tracking load, of
// a 2-D transpose of one, or of its rows scaled (scaledRows).
func (c *compiler) tracked(v *ir.Value) bool {
	d := v.Def
	if isTranspose2D(d) {
		d = d.Args[0].Def
	}
	return c.scaledExtent[v] || c.tracksExtent(d)
}

// scaledRows reports a 2-D fp32 product x * s[:, None] of a tracking load x and a column
// vector read in place (a squeeze-excite scale on a pointwise convolution's input tile,
// lowering's conv_flat.py ScaleInput), computed whole, and returns x. Its result keeps x's
// live extent where the scale is finite: the lanes outside it are then 0 * s, zeros
// (rowBroadcastStep checks that on every run and records the whole tile otherwise, and
// marks the product in scaledExtent), so the dot reading it still multiplies only the live
// block.
func (c *compiler) scaledRows(v *ir.Value) (*ir.Value, bool) {
	d := v.Def
	if d == nil || d.Op != ir.Mul || len(d.Args) != 2 || len(d.Results) != 1 || v.Type.Rank() != 2 ||
		c.p.slotClass[c.slots[v]] != clsF32 || c.fusedElsewhere(d) || c.observedBy[v] != nil {
		return nil, false
	}
	for i, x := range d.Args {
		src := c.rowBcast[d.Args[1-i]]
		if x != d.Args[1-i] && src != nil && isColumnVector(src.Type, v.Type) && !isRowVector(src.Type, v.Type) &&
			x.Type.Equal(v.Type) && c.tracksExtent(x.Def) {
			return x, true
		}
	}
	return nil, false
}

// soleUser is the one instruction that uses v, or nil.
func (c *compiler) soleUser(v *ir.Value) *ir.Instr {
	if c.uses[v] != 1 {
		return nil
	}
	if c.users == nil {
		c.users = map[*ir.Value]*ir.Instr{}
		var walk func(b *ir.Block)
		walk = func(b *ir.Block) {
			for _, in := range b.Instrs {
				for _, a := range in.Args {
					c.users[a] = in
				}
				for _, r := range in.Regions {
					walk(r)
				}
			}
		}
		walk(c.p.fn.Body)
	}
	return c.users[v]
}

// feedsOneDot reports whether v's only use is as operand A or B of one tl.dot, directly or
// (through) one 2-D transpose: then only the live rectangle of v needs writing.
func (c *compiler) feedsOneDot(v *ir.Value, throughTranspose bool) bool {
	u := c.soleUser(v)
	switch {
	case u == nil:
		return false
	case u.Op == ir.Dot:
		return u.Args[2] != v && c.defBlock[v] == c.defBlock[u.Results[0]]
	case throughTranspose && isTranspose2D(u):
		return c.defBlock[v] == c.defBlock[u.Results[0]] && c.feedsOneDot(u.Results[0], false)
	}
	return false
}

// operandExtent is the live extent of dot operand slot s of shape rows x cols (the whole
// tile when it is not tracked).
func (fr *frame) operandExtent(s int, tracked bool, rows, cols int) extent {
	if !tracked {
		return extent{rows, cols}
	}
	e := fr.ext[s]
	return extent{min(e.rows, rows), min(e.cols, cols)}
}

// zeroOutside clears the elements of the rows x cols tile x outside its live extent e.
func zeroOutside(x []float32, rows, cols int, e extent) {
	for r := range e.rows {
		clear(x[r*cols+e.cols : r*cols+cols])
	}
	clear(x[e.rows*cols : rows*cols])
}

// transposeLive writes the transpose of the live block e of src (rows x cols, leading
// dimension lds) into dst (cols x rows); the rest of dst is left as it was.
func transposeLive(dst, src []float32, rows, cols, lds int, e extent) {
	r8, c8 := transposeRect(dst, rows, src, lds, e.rows, e.cols)
	for i := range e.rows {
		j0 := 0
		if i < r8 {
			j0 = c8
		}
		for j := j0; j < e.cols; j++ {
			dst[j*rows+i] = src[i*lds+j]
		}
	}
}

// dotF32Live runs z += a @ b for the m x k and k x n fp32 tiles in slots a and b (buffer
// views or not, alias.go) on their live blocks when the dropped products are all exactly
// zero, or fall where no one looks (observed: the slots of the only masks z is stored
// through, observed.go), else on the whole tiles, zero-padded as the kernel wrote them.
// bt >= 0: b is the lazy transpose of the n x k tile in slot bt (gemv.go), which a few live
// rows of a multiply in place; otherwise b is transposed here first.
func (fr *frame) dotF32Live(a, b, z, m, n, k int, trackA, trackB bool, observed []int, deferOK bool, bt int) {
	ea := fr.operandExtent(a, trackA, m, k)
	inPlace := bt >= 0 && gemvFits(ea.rows, min(ea.cols, fr.operandExtent(bt, trackB, n, k).cols))
	if bt >= 0 && !inPlace {
		fr.transpose2D(b, bt, n, k, trackB, true)
	}
	var eb extent
	var y []float32
	var ldb int
	if inPlace {
		eb, y, ldb = fr.operandExtent(bt, trackB, n, k).transposed(), fr.f32[bt], fr.leading(bt, k)
	} else {
		eb, y, ldb = fr.operandExtent(b, trackB, k, n), fr.f32[b], fr.leading(b, n)
	}
	x, lda := fr.f32[a], fr.leading(a, k)
	// The dropped products pair zeros of one operand with the other's live block: rows of A
	// past its extent (or B's K rows past A's columns) meet B's, and vice versa. Those of
	// A's zero rows and B's zero columns land outside the live product only.
	rowsDropped, colsDropped := ea.rows < m, eb.cols < n
	if (rowsDropped || colsDropped) && fr.observedWithin(observed, m, n, ea.rows, eb.cols) {
		rowsDropped, colsDropped = false, false
	}
	needB := rowsDropped || ea.cols < eb.rows
	needA := colsDropped || eb.rows < ea.cols
	if needA || needB {
		finiteChecks.Add(1)
	}
	finiteB := func() bool {
		if inPlace {
			return allFinite(y, eb.cols, eb.rows, ldb)
		}
		return allFinite(y, eb.rows, eb.cols, ldb)
	}
	if needA && !allFinite(x, ea.rows, ea.cols, lda) || needB && !finiteB() {
		// A dropped product may be 0*inf: compute everything, as written.
		fr.settle(z)
		if inPlace {
			fr.transpose2D(b, bt, n, k, trackB, true)
		}
		x, y = fr.zeroPadded(a, trackA, m, k, ea), fr.zeroPadded(b, trackB, k, n, eb)
		dotF32(m, n, k, x, k, y, n, fr.f32[z], n, &fr.gemmScratch)
		return
	}
	if kk := min(ea.cols, eb.rows); ea.rows > 0 && eb.cols > 0 && kk > 0 {
		if inPlace {
			fr.settle(z)
			gemvDots.Add(1)
			gemvF32(ea.rows, eb.cols, kk, x, lda, y, ldb, fr.f32[z], n)
			return
		}
		// operands that view buffer memory stay valid until the nest ends (panels.go)
		if deferOK && queueDots && (kk <= panelMaxK || streamsA(lda, eb.cols)) && fr.viewing(a) && fr.viewing(b) {
			fr.deferDot(dotPanel{a: x, lda: lda, b: y, ldb: ldb, m: ea.rows, n: eb.cols, k: kk}, fr.f32[z], n)
			return
		}
		fr.settle(z)
		dotF32(ea.rows, eb.cols, kk, x, lda, y, ldb, fr.f32[z], n, &fr.gemmScratch)
	}
}

// finiteChecks counts the dots that scanned an operand for infinities and NaNs (tests read it).
var finiteChecks atomic.Int64

// zeroPadded makes dot operand slot s (rows x cols, live extent e) a dense tile with zeros
// outside e: a buffer view's live block is copied into the slot's own storage first.
func (fr *frame) zeroPadded(s int, tracked bool, rows, cols int, e extent) []float32 {
	if ld := fr.ld[s]; ld != 0 {
		view := fr.f32[s]
		fr.unalias(s)
		dst := fr.f32[s]
		for r := range e.rows {
			copy(dst[r*cols:r*cols+e.cols], view[r*ld:r*ld+e.cols])
		}
		fr.partial[s] = true
	}
	if tracked && fr.partial[s] {
		zeroOutside(fr.f32[s], rows, cols, e)
		fr.partial[s] = false
	}
	return fr.f32[s]
}

// allFiniteGo reports whether x holds no infinity or NaN: (bits & exponent) + 1<<23 carries
// into the sign bit exactly when the exponent is all ones.
func allFiniteGo(x []float32) bool {
	var acc uint32
	for _, v := range x {
		acc |= math.Float32bits(v)&0x7f800000 + 0x00800000
	}
	return acc&0x80000000 == 0
}
