package cpu

import (
	"sync/atomic"

	"github.com/widejit/widejit/triton/ir"
)

// A dot on a few rows times a transposed tile: tl.dot(a, tl.trans(bt)) with bt's rows along k
// (a Linear's weight [out, in] read as it is stored) is memory-bound on bt when a has few
// live rows. Transposing bt into [k, n] first and running the gemm micro-kernels on it reads
// bt once, writes it, and reads the copy in strips; gemvF32 reads bt in place instead, each
// row once from start to end, four rows at a time (gemv_kernels_amd64.s). The transpose is
// lazy: a tl.trans whose only user is such a dot does nothing (compiler.lazyTranspose), and the
// dot transposes it only when it takes the gemm path after all (gemvFits says no, or an
// operand with infinities that must multiply the zero padding as written).

//go:generate go run gemv_asm_gen.go

// gemvFits reports whether a dot of rows live rows of a over kk steps of k reads a transposed
// operand in place: up to gemvAnyKRows rows always (each element of b is used by every row
// as it streams by), up to gemvMaxRows when k is at least gemvMinK. Otherwise the gemm
// kernels' register blocks, which reuse each loaded element of B over more rows, win: an
// attention's q @ k^T on 32 rows and a 16-64 deep head is small, in cache and compute-bound,
// and each gemv kernel call ends with a horizontal sum per output.
func gemvFits(rows, kk int) bool {
	return rows <= gemvAnyKRows || rows <= gemvMaxRows && kk >= gemvMinK
}

const (
	gemvAnyKRows = 3
	gemvMaxRows  = 32
	gemvMinK     = 256
)

// gemvDots counts the dots that read a transposed operand in place (tests read it).
var gemvDots atomic.Int64

// gemvKernel computes c[r, 4] += a[r, k] x b[4, k]^T for its r rows of a (k a positive
// multiple of gemvLanes; leading dimensions in elements).
type gemvKernel func(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)

// The gemv kernels in use (selectMicroKernel): gemvKern[r] for r rows, k in multiples of
// gemvLanes; nil: pure Go.
var (
	gemvKern  []gemvKernel
	gemvLanes int
)

// gemvF32 computes c[m, n] += a[m, k] x b[n, k]^T (row-major with leading dimensions lda,
// ldb, ldc).
func gemvF32(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m <= 0 || n <= 0 || k <= 0 {
		return
	}
	_ = a[(m-1)*lda+k-1]
	_ = b[(n-1)*ldb+k-1]
	_ = c[(m-1)*ldc+n-1]
	kv := 0
	if gemvKern != nil && n >= 4 {
		kv = k - k%gemvLanes
	}
	if kv > 0 {
		top := len(gemvKern) - 1
		var tile [4 * 4]float32 // the last columns when n is not a multiple of 4
		for j := 0; j < n; j += 4 {
			for i := 0; i < m; {
				r := min(top, m-i)
				if j+4 <= n {
					gemvKern[r](kv, &a[i*lda], lda, &b[j*ldb], ldb, &c[i*ldc+j], ldc)
				} else {
					// the 4 last rows of b, into a tile: only the columns from j on are added
					j0 := n - 4
					clear(tile[:])
					gemvKern[r](kv, &a[i*lda], lda, &b[j0*ldb], ldb, &tile[0], 4)
					for x := range r {
						for y := j - j0; y < 4; y++ {
							c[(i+x)*ldc+j0+y] += tile[x*4+y]
						}
					}
				}
				i += r
			}
		}
	}
	if kv == k {
		return
	}
	for i := range m {
		arow := a[i*lda+kv : i*lda+k]
		for j := range n {
			brow := b[j*ldb+kv : j*ldb+k]
			s := c[i*ldc+j]
			for p, v := range arow {
				s += v * brow[p]
			}
			c[i*ldc+j] = s
		}
	}
}

// lazyTranspose reports whether the 2-D fp32 transpose in may be left to the tl.dot that is
// its only user, as that dot's operand B: the dot then runs in place of it, so nothing between
// them may write memory (the transposed tile may view a buffer, alias.go).
func (c *compiler) lazyTranspose(in *ir.Instr) bool {
	if !isTranspose2D(in) || len(in.Results) != 1 || c.p.slotClass[c.slots[in.Results[0]]] != clsF32 ||
		!c.feedsOneDot(in.Results[0], false) {
		return false
	}
	dot := c.soleUser(in.Results[0])
	if dot.Args[1] != in.Results[0] || dot.Results[0].Type.Rank() != 2 {
		return false
	}
	// the dot runs where it is, or in the Add that accumulates it (dotAdds)
	last := dot
	if u := c.soleUser(dot.Results[0]); u != nil && u.Op == ir.Add && c.defBlock[u.Results[0]] == c.defBlock[in.Results[0]] {
		last = u
	}
	block := c.defBlock[in.Results[0]]
	seen := false
	for _, x := range block.Instrs {
		switch {
		case x == in:
			seen = true
		case !seen:
		case x == last:
			return true
		case x.Op == ir.Store || x.Op == ir.AtomicRMW || x.Op == ir.AtomicCAS || len(x.Regions) > 0:
			return false
		}
	}
	return false
}

// lazySource is the slot of the tile that dot operand v transposes lazily, or -1.
func (c *compiler) lazySource(v *ir.Value) int {
	if d := v.Def; d != nil && c.lazyTranspose(d) {
		return c.slots[d.Args[0]]
	}
	return -1
}

// transpose2D writes the transpose of the rows x cols fp32 tile in slot a into slot z: of its
// live extent when tracked (extent.go), live: only that block is written (z feeds one dot).
func (fr *frame) transpose2D(z, a, rows, cols int, tracked, live bool) {
	if !tracked {
		if lds := fr.ld[a]; lds != 0 { // a strided buffer view (alias.go)
			transposeLive(fr.f32[z], fr.f32[a], rows, cols, lds, extent{rows, cols})
		} else {
			transposeF32(fr.f32[z], fr.f32[a], rows, cols)
		}
		return
	}
	e, lds := fr.ext[a], fr.leading(a, cols)
	if live || fr.partial[a] || lds != cols {
		transposeLive(fr.f32[z], fr.f32[a], rows, cols, lds, e)
	} else {
		transposeF32(fr.f32[z], fr.f32[a], rows, cols)
	}
	fr.ext[z], fr.partial[z] = e.transposed(), live || fr.partial[a]
}
