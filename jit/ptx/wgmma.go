package ptx

import (
	"fmt"
	"strings"

	"github.com/widejit/widejit/triton/ir"
)

// The Hopper K loop (sm_90a, PTX ISA 8.0): a pipelined loop (pipeline.go) of a 2-D fp16/bf16
// dot, or a TF32 one with K-major operands (A, and B^T: the ISA gives .tf32 no imm-trans),
// runs on wgmma.mma_async instead of mma.sync, as Triton's does on Hopper. A warpgroup
// (4 warps) owns 64xN blocks of the output (m64nNk16; k8 for tf32, whose 8 fp32 values are
// the same 32 bytes of a K-major row; N <= 256), their fp32 accumulators in
// registers; A and B are read straight from the cp.async ring through matrix descriptors,
// no ldmatrix. A is staged row-major, K-major; B either as B^T (a Linear's weight, tl.trans
// of a [N, K] tile: K-major, any N) or as it stands ([K, N]: MN-major, imm-trans-b 1, N one
// swizzle row wide). Each staged row of an operand is S = 32, 64 or 128 bytes (K, or N, elements),
// which makes the row-major tile the PTX ISA's canonical layout for the S-byte swizzle mode:
// 8-row atoms of 8*S bytes (the stride byte offset), the leading byte offset unused, and the
// 16-byte chunk c of row r stored at chunk c ^ (r/(128/S) mod S/16), i.e. byte address bits
// [4, 4+log2(S/16)) XORed with bits [7, ...) of the absolute address. The cp.async copies
// write at those swizzled addresses (sharedAddr), so a warp's 16-byte rows spread over the
// banks; every ring buffer and tile starts at a multiple of 8*S bytes of a 1024-byte aligned
// wj_smem, so the pattern needs no base offset.
//
// A step: cp.async.wait_group for its buffer, fence.proxy.async (the copies are generic-
// proxy writes, wgmma reads through the async proxy), wgmma.wait_group 0 for the previous
// step's wgmmas (which so run while this step's copies land; they must be done before the
// barrier lets any warp overwrite their buffer), the step's barrier, the copies of the step
// ahead, then wgmma.fence, one wgmma.mma_async per block and K slice, and commit_group; after
// the loop, wait_group 0 again. The accumulators are never touched between a wgmma and its
// wait (the loop carries them in place). TMA is not used: cp.async already overlaps the
// loads with the MMAs here, and the descriptors' swizzle is the one TMA would write.

// wgmmaPlan is how a pipelined dot runs on wgmma.
type wgmmaPlan struct {
	swA, swB int    // S of A and of B: bytes per staged row, the swizzle mode's width
	transB   bool   // B staged [K, N]: MN-major
	n        int    // the N of every wgmma
	dotN     int    // the dot's N
	nBlocks  int    // 64xN blocks per row of blocks
	groups   int    // warpgroups
	per      int    // blocks per warpgroup
	typ      string // f16, bf16 or tf32
	kk       int    // K of a step
	offB     int    // B's offset in a stage
	scale    string // the predicate true: D = A*B + D
	// per block of this warpgroup: the descriptors of its A rows and B columns in the first
	// ring buffer, as a register plus a constant (in 16-byte units)
	blocks []wgmmaBlock
}

type wgmmaBlock struct {
	descA, descB string
	offA, offB   int
}

// wgmmaFor returns the wgmma plan of pipeline p, or nil where the dot keeps mma.sync.
func (g *gen) wgmmaFor(p *pipeline) *wgmmaPlan {
	fa := p.fa
	if g.arch != "sm_90a" || (fa.typ != "f16" && fa.typ != "bf16" && fa.typ != "tf32") {
		return nil
	}
	// A is a load (pipelineFor). B is either a load, staged [K, N], or tl.trans of a tile
	// read only by the dot, which the body's emission will make lazy (remat.go) and stage as
	// it stands: B^T, [N, K].
	sh := g.mmaShapeOf(fa.dot, fa.typ, fa.kstep)
	if sh.batch != 1 {
		return nil
	}
	b := fa.dot.Args[1]
	d := b.Def
	transB := d == nil || d.Op != ir.Permute
	if !transB && (len(d.Ints) != 2 || d.Ints[0] != 1 || g.uses[b] != 1 || d.Args[0].Type.NumElems() < g.threads) {
		return nil
	}
	swizzles := func(s int) bool { return s == 32 || s == 64 || s == 128 }
	w := &wgmmaPlan{swA: sh.kk * sh.sz, swB: sh.kk * sh.sz, transB: transB, n: min(sh.n, 256), dotN: sh.n,
		groups: g.threads / 128, typ: fa.typ, kk: sh.kk, offB: sh.offB}
	if transB {
		w.swB = sh.n * sh.sz
	}
	// tf32 operands must be K-major (the ISA has no imm-trans for them): B^T
	if !swizzles(w.swA) || !swizzles(w.swB) || g.threads%128 != 0 || sh.m%64 != 0 || fa.typ == "tf32" && transB {
		return nil
	}
	w.nBlocks = sh.n / w.n
	blocks := sh.m / 64 * w.nBlocks
	if sh.n%w.n != 0 || blocks%w.groups != 0 || sh.offB != sh.m*w.swA {
		return nil
	}
	w.per = blocks / w.groups
	if w.per*w.n/2 > 128 { // accumulator registers per thread
		return nil
	}
	return w
}

// swizzleMode is the descriptor's bits 62-63 for an S-byte swizzle.
func swizzleMode(s int) int { return map[int]int{128: 1, 64: 2, 32: 3}[s] }

// wgmmaStart computes the ring's first descriptors and the scale predicate, before the loop.
func (g *gen) wgmmaStart(w *wgmmaPlan) {
	desc := func(off, s int) string {
		// stride byte offset: 8 rows of S bytes; leading byte offset 1 (unused: the k16 slice
		// of a K-major operand, the N of an MN-major one fit in a swizzle row)
		lo, hi, d := g.newReg(rcB32), g.newReg(rcB32), g.newReg(rcB64)
		g.emit("shr.u32 %s, %s, 4", lo, g.smem())
		g.emit("add.u32 %s, %s, %d", lo, lo, off>>4|1<<16)
		g.emit("mov.u32 %s, %d", hi, (8*s>>4)|swizzleMode(s)<<30)
		g.emit("mov.b64 %s, {%s, %s}", d, lo, hi)
		return d
	}
	descA, descB := desc(0, w.swA), desc(w.offB, w.swB)
	w.scale = g.newReg(rcPred)
	g.emit("setp.ne.u32 %s, 1, 0", w.scale)
	// a block's first row, per block row (A) and column (B^T; MN-major B has one column)
	rowA, rowB := 64*w.swA>>4, w.n*w.swB>>4
	if w.groups == 1 {
		// one warpgroup: the blocks are constants, the descriptors uniform
		for i := range w.per {
			w.blocks = append(w.blocks, wgmmaBlock{descA, descB, i / w.nBlocks * rowA, i % w.nBlocks * rowB})
		}
		return
	}
	wq := g.newReg(rcB32)
	g.emit("shr.u32 %s, %s, 7", wq, g.tid)
	for i := range w.per {
		mb, nb := g.wgmmaBlock(w, wq, i)
		b := wgmmaBlock{descA: g.newReg(rcB64), descB: g.newReg(rcB64)}
		g.emit("mad.wide.u32 %s, %s, %d, %s", b.descA, mb, rowA, descA)
		g.emit("mad.wide.u32 %s, %s, %d, %s", b.descB, nb, rowB, descB)
		w.blocks = append(w.blocks, b)
	}
}

// wgmmaStep runs step k of p's dot on wgmma (see above), accumulating into acc in place.
func (g *gen) wgmmaStep(p *pipeline, acc []string) {
	w := p.fa.wg
	g.emit("cp.async.wait_group %d", p.stages-2)
	g.emit("fence.proxy.async.shared::cta")
	// the previous step's wgmmas, which ran while the copies landed, must be done before the
	// barrier lets any warp overwrite their buffer
	g.emit("wgmma.wait_group.sync.aligned 0")
	g.emit("bar.sync 0")
	g.pipeIssue(p)
	g.emit("wgmma.fence.sync.aligned")
	regs := w.n / 2
	for i, bl := range w.blocks {
		// an instruction's K: 16 16-bit elements, 8 tf32 ones; 32 bytes of a K-major row either way
		ik, sz := 16, 2
		if w.typ == "tf32" {
			ik, sz = 8, 4
		}
		for kk := 0; kk < w.kk; kk += ik {
			// the ring buffer and the K slice: 32 bytes into K-major rows, 16 MN-major rows on
			offA, offB, trans := (p.rd+kk*sz)>>4, (p.rd+kk*sz)>>4, 0
			if w.transB {
				offB, trans = (p.rd+kk*w.swB)>>4, 1
			}
			a, b := g.newReg(rcB64), g.newReg(rcB64)
			g.emit("add.s64 %s, %s, %d", a, bl.descA, bl.offA+offA)
			g.emit("add.s64 %s, %s, %d", b, bl.descB, bl.offB+offB)
			regsList := strings.Join(acc[i*regs:(i+1)*regs], ", ")
			if w.typ == "tf32" {
				g.emit("wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32 {%s}, %s, %s, %s, 1, 1", w.n, regsList, a, b, w.scale)
				continue
			}
			g.emit("wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {%s}, %s, %s, %s, 1, 1, 0, %d",
				w.n, w.typ, w.typ, regsList, a, b, w.scale, trans)
		}
	}
	g.emit("wgmma.commit_group.sync.aligned")
	p.rd = p.next(p.rd)
}

// wgmmaBlock returns the block row mb and column nb of this warpgroup's i-th block
// (wq + i*groups, uniform over the warpgroup).
func (g *gen) wgmmaBlock(w *wgmmaPlan, wq string, i int) (string, string) {
	b, mb, nb := g.newReg(rcB32), g.newReg(rcB32), g.newReg(rcB32)
	g.emit("add.u32 %s, %s, %d", b, wq, i*w.groups)
	g.emit("div.u32 %s, %s, %d", mb, b, w.nBlocks)
	g.emit("rem.u32 %s, %s, %d", nb, b, w.nBlocks)
	return mb, nb
}

// wgmmaFragAddrs returns, for this thread's i-th block, the fp32 staging address of its
// accumulator element 0 and the byte offsets of all of them: the PTX ISA's wgmma D fragment,
// element j of lane l in warp q of the warpgroup at row 16q + l/4 + 8*(j/2 mod 2), column
// 8*(j/4) + 2*(l mod 4) + j mod 2 of the block.
func (g *gen) wgmmaFragAddrs(w *wgmmaPlan, i int) (string, []int) {
	wq, q, lane := g.newReg(rcB32), g.newReg(rcB32), g.newReg(rcB32)
	g.emit("shr.u32 %s, %s, 7", wq, g.tid)
	g.emit("shr.u32 %s, %s, 5", q, g.tid)
	g.emit("and.b32 %s, %s, 3", q, q)
	g.emit("and.b32 %s, %s, 31", lane, g.tid)
	mb, nb := g.wgmmaBlock(w, wq, i)
	row, col, t := g.newReg(rcB32), g.newReg(rcB32), g.newReg(rcB32)
	g.emit("shr.u32 %s, %s, 2", t, lane)
	g.emit("mad.lo.u32 %s, %s, 16, %s", row, q, t)
	g.emit("mad.lo.u32 %s, %s, 64, %s", row, mb, row)
	g.emit("and.b32 %s, %s, 3", t, lane)
	g.emit("shl.b32 %s, %s, 1", col, t)
	g.emit("mad.lo.u32 %s, %s, %d, %s", col, nb, w.n, col)
	addr := g.newReg(rcB32)
	g.emit("mad.lo.u32 %s, %s, %d, %s", addr, row, w.dotN, col)
	g.emit("mad.lo.u32 %s, %s, 4, %s", addr, addr, g.smem())
	offs := make([]int, w.n/2)
	for j := range offs {
		offs[j] = 4 * ((8*(j/2%2))*w.dotN + 8*(j/4) + j%2)
	}
	return addr, offs
}

// swizzled returns the register holding rel (a byte offset into a staged tile whose base
// is 8*S-aligned) with bits [4, 4+log2(S/16)) XORed with bits [7, ...): the S-byte swizzle.
func (g *gen) swizzled(rel string, s int) string {
	t, out := g.newReg(rcB32), g.newReg(rcB32)
	g.emit("shr.u32 %s, %s, 3", t, rel)
	g.emit("and.b32 %s, %s, %d", t, t, (s/16-1)<<4)
	g.emit("xor.b32 %s, %s, %s", out, rel, t)
	return out
}

// swizzledAddr is sharedAddr for a tile staged row-major with the swizzle g.swizzle: a
// constant offset that is a multiple of the pattern's period (8*S bytes) is added after
// the swizzle, anything below it before.
func (g *gen) swizzledAddr(n, size, off int) func(r int) string {
	period := 8 * g.swizzle
	addrs := map[string]string{}
	return func(r int) string {
		base, k := g.elemIndex(n, r)
		c := k*size + off
		low := c % period
		key := fmt.Sprintf("%s+%d", base, low)
		a, ok := addrs[key]
		if !ok {
			rel := g.newReg(rcB32)
			g.emit("mad.lo.u32 %s, %s, %d, %d", rel, base, size, low)
			a = g.newReg(rcB32)
			g.emit("add.u32 %s, %s, %s", a, g.swizzled(rel, g.swizzle), g.smem())
			addrs[key] = a
		}
		return offsetAddr(a, c-low)
	}
}
