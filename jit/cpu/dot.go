package cpu

import (
	"github.com/widejit/widejit/triton/ir"
)

func (c *compiler) compileDot(in *ir.Instr, args []int, z int) (step, error) {
	a, b, acc := args[0], args[1], args[2]
	ta, tb, tc, tz := c.p.slotType[a], c.p.slotType[b], c.p.slotType[acc], c.p.slotType[z]
	bad := func() (step, error) {
		return nil, c.errf(in.Pos, in.Op, "expects ([B,]M,K) x ([B,]K,N) + ([B,]M,N), got %s x %s + %s -> %s", ta, tb, tc, tz)
	}
	if ta.Ptr || tb.Ptr || !tz.Equal(tc) || ta.Elem != tb.Elem || ta.Rank() != tb.Rank() || ta.Rank() != tc.Rank() {
		return bad()
	}
	r := ta.Rank()
	if r != 2 && r != 3 {
		return bad()
	}
	batch := 1
	if r == 3 {
		if ta.Shape[0] != tb.Shape[0] || ta.Shape[0] != tc.Shape[0] {
			return bad()
		}
		batch = ta.Shape[0]
	}
	m, k, n := ta.Shape[r-2], ta.Shape[r-1], tb.Shape[r-1]
	if tb.Shape[r-2] != k || tc.Shape[r-2] != m || tc.Shape[r-1] != n {
		return bad()
	}
	ca, cz := c.p.slotClass[a], c.p.slotClass[z]
	switch {
	case ca == clsF32 && cz == clsF32:
		out := tz.Elem
		// A loop-carried accumulator used only here is updated in place instead of copied.
		inPlace := c.deadAfter(in.Args[2], in)
		trackA, trackB := r == 2 && c.tracked(in.Args[0]), r == 2 && c.tracked(in.Args[1])
		return func(fr *frame) error {
			if inPlace {
				fr.swapSlot(clsF32, z, acc)
			} else {
				copy(fr.f32[z], fr.f32[acc])
			}
			x, y, zz := fr.f32[a], fr.f32[b], fr.f32[z]
			if r == 2 {
				// Operands may view buffers in place (alias.go) and be zero-padded (extent.go).
				lda, ldb := fr.leading(a, k), fr.leading(b, n)
				dotF32Live(x, lda, y, ldb, zz, m, n, k, fr.operandExtent(a, trackA, m, k), fr.operandExtent(b, trackB, k, n),
					trackA && fr.partial[a], trackB && fr.partial[b], &fr.gemmScratch)
				roundTo(out, zz)
				return nil
			}
			for bi := range batch {
				gemmF32(m, n, k, x[bi*m*k:], k, y[bi*k*n:], n, zz[bi*m*n:], n, &fr.gemmScratch)
			}
			roundTo(out, zz)
			return nil
		}, nil
	case ca == clsF64 && cz == clsF64:
		return func(fr *frame) error {
			x, y, zz := fr.f64[a], fr.f64[b], fr.f64[z]
			copy(zz, fr.f64[acc])
			for bi := range batch {
				x, y, zz := x[bi*m*k:], y[bi*k*n:], zz[bi*m*n:]
				for i := range m {
					for p := range k {
						av := x[i*k+p]
						row := zz[i*n : i*n+n]
						for j, bv := range y[p*n : p*n+n] {
							row[j] += av * bv
						}
					}
				}
			}
			return nil
		}, nil
	case ca == clsInt && cz == clsInt && !tz.Ptr:
		out := tz.Elem
		return func(fr *frame) error {
			x, y, zz := fr.ints[a], fr.ints[b], fr.ints[z]
			copy(zz, fr.ints[acc])
			for bi := range batch {
				x, y, zz := x[bi*m*k:], y[bi*k*n:], zz[bi*m*n:]
				for i := range m {
					for p := range k {
						av := x[i*k+p]
						row := zz[i*n : i*n+n]
						for j, bv := range y[p*n : p*n+n] {
							row[j] += av * bv
						}
					}
				}
			}
			normInts(out, zz)
			return nil
		}, nil
	}
	return bad()
}

// gemmF32 computes c[m,n] += a[m,k] x b[k,n] (row-major with leading dimensions lda, ldb,
// ldc), register-blocked through the widest micro-kernel the CPU has. Under AVX-512, a
// 16-column strip left after the 32-wide tiles (all of a 16-wide tile) runs on the 16-wide
// kernels; remaining columns run on the micro-kernel through zero-padded copies in scratch;
// the bottom rows run in Go.
func gemmF32(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, scratch *[]float32) {
	if k == 0 {
		return
	}
	mr, nr := microRows, microCols
	mDone, nDone := 0, 0
	if microKernel != nil && m >= mr {
		mDone = m - m%mr
		// Bounds that the assembly relies on, checked once here.
		_ = a[(mDone-1)*lda+k-1]
		_ = c[(mDone-1)*ldc+n-1]
		_ = b[(k-1)*ldb+n-1]
	}
	if microKernel != nil && m >= mr && n >= nr {
		nDone = n - n%nr
		for i := 0; i < mDone; i += mr {
			for j := 0; j < nDone; j += nr {
				microKernel(k, &a[i*lda], lda, &b[j], ldb, &c[i*ldc+j], ldc)
			}
		}
	}
	if narrowKernel16 != nil && m >= mr && n-nDone >= 16 {
		// mDone is a multiple of 8 (microRows): 16-row blocks, then one 8-row block.
		j := nDone
		i := 0
		for ; i+16 <= mDone; i += 16 {
			narrowKernel16(k, &a[i*lda], lda, &b[j], ldb, &c[i*ldc+j], ldc)
		}
		if i < mDone {
			narrowKernel8(k, &a[i*lda], lda, &b[j], ldb, &c[i*ldc+j], ldc)
		}
		nDone += 16
	}
	if microKernel != nil && nDone < n && m >= mr {
		gemmPaddedEdge(mDone, n-nDone, k, a, lda, b[nDone:], ldb, c[nDone:], ldc, scratch)
		nDone = n
	}
	// Right edge of the blocked rows, then the bottom rows.
	if nDone < n {
		gemmGo(mDone, n-nDone, k, a, lda, b[nDone:], ldb, c[nDone:], ldc)
	}
	if mDone < m {
		gemmGo(m-mDone, n, k, a[mDone*lda:], lda, b, ldb, c[mDone*ldc:], ldc)
	}
}

// gemmPaddedEdge runs c[m, w] += a[m, k] x b[k, w] (w < microCols, m a multiple of
// microRows) on the micro-kernel: b is copied into a [k, microCols] panel padded with zeros,
// and each block of c rows into a [microRows, microCols] tile and back.
func gemmPaddedEdge(m, w, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, scratch *[]float32) {
	mr, nr := microRows, microCols
	need := k*nr + mr*nr
	if cap(*scratch) < need {
		*scratch = make([]float32, need)
	}
	panel, tile := (*scratch)[:k*nr], (*scratch)[k*nr:need]
	for p := range k {
		row := panel[p*nr : p*nr+nr]
		copy(row, b[p*ldb:p*ldb+w])
		clear(row[w:])
	}
	_ = a[(m-1)*lda+k-1]
	for i := 0; i < m; i += mr {
		for r := range mr {
			copy(tile[r*nr:r*nr+w], c[(i+r)*ldc:(i+r)*ldc+w])
		}
		microKernel(k, &a[i*lda], lda, &panel[0], nr, &tile[0], nr)
		for r := range mr {
			copy(c[(i+r)*ldc:(i+r)*ldc+w], tile[r*nr:r*nr+w])
		}
	}
}

// gemmGo is the portable kernel: c += a x b in fp32, k in order (the assembly kernels fuse
// each multiply-add, so results differ from it in the last bits only).
func gemmGo(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	for i := range m {
		crow := c[i*ldc : i*ldc+n]
		for p := range k {
			av := a[i*lda+p]
			brow := b[p*ldb : p*ldb+n]
			for j, bv := range brow {
				crow[j] += av * bv
			}
		}
	}
}
