package ptx

import (
	"github.com/widejit/widejit/triton/ir"
)

// mmaKind says whether a dot runs on tensor cores, and how: fp16/bf16 operands with
// m16n8k16, fp32 operands with TF32 precision asked for with m16n8k8 (the fp32 bits handed
// over as they stand: the tensor cores read the upper 19, a truncation to TF32, as Triton's
// code does; a cvt.rna per element cost more instructions than the MMAs and spilled). M, N and K must be multiples of the instruction's 16, 8 and k; everything else
// (IEEE fp32, TF32x3, int8, odd shapes) keeps the FMA path.
func (g *gen) mmaKind(in *ir.Instr) (typ string, kstep int, ok bool) {
	if g.fmaDots {
		return "", 0, false
	}
	a, b, res := in.Args[0].Type, in.Args[1].Type, in.Result().Type
	if a.Elem != b.Elem || !(res.Elem == ir.F32 || isHalf(res.Elem)) {
		return "", 0, false
	}
	switch {
	case a.Elem == ir.F16:
		typ, kstep = "f16", 16
	case a.Elem == ir.BF16:
		typ, kstep = "bf16", 16
	case a.Elem == ir.F32 && in.Int == ir.PrecisionTF32:
		typ, kstep = "tf32", 8
	default:
		return "", 0, false
	}
	rank := len(res.Shape)
	if rank != 2 && rank != 3 {
		return "", 0, false
	}
	m, n, k := res.Shape[rank-2], res.Shape[rank-1], a.Shape[rank-1]
	batch := 1
	if rank == 3 {
		batch = res.Shape[0]
	}
	pow2 := func(x int) bool { return x&(x-1) == 0 }
	// Tile indices are split with shifts and masks: the counts must be powers of two.
	if m%16 != 0 || n%8 != 0 || k%kstep != 0 || !pow2(m) || !pow2(n) || !pow2(batch) {
		return "", 0, false
	}
	return typ, kstep, true
}

// mmaShape is what every piece of a tensor-core dot needs to know about its operands.
type mmaShape struct {
	typ                 string
	kstep               int
	m, n, kk, batch, sz int // sz: the operands' element size in shared memory
	offB                int // B's staging offset (A's is 0)
	tiles, tilesN       int // 16x8 output tiles, in all and per row of tiles
	iters               int // tiles per warp
	// bT: B is tl.trans of a tile read only by this dot (a lazy permute, remat.go), staged
	// as that tile, B^T row-major [batch, n, kk], and read with ldmatrix without .trans.
	bT bool
	// swA, swB: A's and B's staged rows are swizzled as Triton's shared layouts for mma
	// (vec 8 fp16), so that ldmatrix's 8 rows of a phase reach 8 different 16-byte bank
	// groups: the 16-byte chunk index within a row XORed with (row / perPhase) % maxPhase.
	// For rows of S = 32, 64 or 128 bytes (perPhase = 128/S, maxPhase = S/16) that is the
	// S-byte swizzle of wgmma.go, address bits [4, 4+log2(S/16)) XORed with bits [7, ...) of
	// the offset within the staging area. 0: not swizzled (other row lengths, or an operand
	// written element by element at permuted positions).
	swA, swB int
}

func (g *gen) mmaShapeOf(in *ir.Instr, typ string, kstep int) mmaShape {
	a, b, res := in.Args[0], in.Args[1], in.Result()
	rs := res.Type.Shape
	rank := len(rs)
	sh := mmaShape{typ: typ, kstep: kstep, m: rs[rank-2], n: rs[rank-1], kk: a.Type.Shape[rank-1], batch: 1, sz: smemSize(a.Type)}
	if rank == 3 {
		sh.batch = rs[0]
	}
	sh.offB = align16(a.Type.NumElems() * sh.sz)
	if p := g.lazy[b]; p != nil && rank == 2 { // (batched dots: not yet)
		sh.bT = p.Ints[0] == 1 && p.Ints[1] == 0
	}
	g.need(sh.offB + b.Type.NumElems()*sh.sz)
	rowSwizzle := func(elems int) int {
		if s := elems * sh.sz; s == 32 || s == 64 || s == 128 {
			return s
		}
		return 0
	}
	if g.lazy[a] == nil {
		sh.swA = rowSwizzle(sh.kk)
	}
	switch {
	case sh.bT:
		sh.swB = rowSwizzle(sh.kk)
	case g.lazy[b] == nil:
		sh.swB = rowSwizzle(sh.n)
	}
	if g.rowMajorStaging {
		sh.swA, sh.swB = 0, 0
	}
	if sh.swA != 0 || sh.swB != 0 {
		g.swizzled1024 = true
	}
	sh.tilesN = sh.n / 8
	sh.tiles = sh.batch * (sh.m / 16) * sh.tilesN
	warps := g.threads / 32
	sh.iters = (sh.tiles + warps - 1) / warps
	return sh
}

// mmaLanes are a warp's coordinates: warp index, lane, groupID (lane>>2), threadID_in_group.
type mmaLanes struct{ warp, lane, grp, tig string }

func (g *gen) mmaLanes() mmaLanes {
	l := mmaLanes{g.newReg(rcB32), g.newReg(rcB32), g.newReg(rcB32), g.newReg(rcB32)}
	g.emit("shr.u32 %s, %s, 5", l.warp, g.tid)
	g.emit("and.b32 %s, %s, 31", l.lane, g.tid)
	g.emit("shr.u32 %s, %s, 2", l.grp, l.lane)
	g.emit("and.b32 %s, %s, 3", l.tig, l.lane)
	return l
}

// mmaTile holds the addresses of one warp's output tile: its C/D fragment in the fp32
// staging area at offC (cOffs from cAddr), and its A and B fragments in the operands'.
type mmaTile struct {
	valid        string // the tile exists (a warp past the last one recomputes tile mod count)
	cAddr, aAddr string
	bAddr        string
	bAddr2       string   // TF32's B: the element 4 rows (k) below bAddr's
	aK, bK       []string // a swizzled A's (B^T's) k-slices' addresses (kSlices), or nil
	cOffs        []int
}

// mmaTileAt computes the addresses of tile number tile (a register) for this lane.
func (g *gen) mmaTileAt(sh mmaShape, l mmaLanes, tileIn string, offC int) mmaTile {
	n, kk, sz := sh.n, sh.kk, sh.sz
	tile, valid := g.newReg(rcB32), g.newReg(rcPred)
	g.emit("setp.lt.u32 %s, %s, %d", valid, tileIn, sh.tiles)
	g.emit("and.b32 %s, %s, %d", tile, tileIn, sh.tiles-1)
	tn, row, t := g.newReg(rcB32), g.newReg(rcB32), g.newReg(rcB32)
	g.emit("and.b32 %s, %s, %d", tn, tile, sh.tilesN-1)
	// Row of A / C (batch folded in): (tile / tilesN) * 16 + grp, as tile / tilesN is
	// batch*tilesM + tm and every batch holds tilesM*16 = m rows.
	g.emit("shr.u32 %s, %s, %d", t, tile, log2(sh.tilesN))
	g.emit("mad.lo.u32 %s, %s, 16, %s", row, t, l.grp)
	bk := g.newReg(rcB32) // batch * kk: the first row of this batch's B (B^T: batch * n)
	g.emit("shr.u32 %s, %s, %d", bk, t, log2(sh.m/16))
	if sh.bT {
		g.emit("mul.lo.u32 %s, %s, %d", bk, bk, n)
	} else {
		g.emit("mul.lo.u32 %s, %s, %d", bk, bk, kk)
	}

	// C/D fragment: c0, c1 at (grp, 2*tig + 0/1), c2, c3 eight rows below.
	tig2 := g.newReg(rcB32)
	g.emit("shl.b32 %s, %s, 1", tig2, l.tig)
	mt := mmaTile{valid: valid, cAddr: g.newReg(rcB32), aAddr: g.newReg(rcB32), bAddr: g.newReg(rcB32),
		cOffs: []int{offC, offC + 4, offC + 8*n*4, offC + 8*n*4 + 4}}
	g.emit("mad.lo.u32 %s, %s, %d, %s", mt.cAddr, row, n, tig2) // (row*n + tn*8 + 2*tig) * 4
	g.emit("mad.lo.u32 %s, %s, 8, %s", mt.cAddr, tn, mt.cAddr)
	g.emit("mad.lo.u32 %s, %s, 4, %s", mt.cAddr, mt.cAddr, g.smem())
	aAddr, bAddr := mt.aAddr, mt.bAddr
	// ldmatrix row addresses; a row is 16 bytes: 8 fp16/bf16 or 4 fp32 (TF32 fragments are
	// 32-bit, two b16 halves to ldmatrix), 1<<colShift elements. A (x4): lane l gives row
	// t*16 + l%16, columns (l/16)<<colShift of the k-slice: matrices (rows 0-7 | 8-15) x
	// (k low | high half) are a0..a3. Rows are 16-byte aligned: kk and n are multiples of the
	// instruction's k and 8, the staging areas 16-byte aligned.
	colShift := log2(16 / sz)
	l16, r := g.newReg(rcB32), g.newReg(rcB32)
	g.emit("and.b32 %s, %s, 15", l16, l.lane)
	g.emit("mad.lo.u32 %s, %s, 16, %s", r, t, l16)
	g.emit("shr.u32 %s, %s, 4", aAddr, l.lane)
	g.emit("shl.b32 %s, %s, %d", aAddr, aAddr, colShift)
	g.emit("mad.lo.u32 %s, %s, %d, %s", aAddr, r, kk, aAddr)
	g.emit("mul.lo.u32 %s, %s, %d", aAddr, aAddr, sz)
	g.emit("add.u32 %s, %s, %s", aAddr, g.swizzledIf(aAddr, sh.swA), g.smem())
	switch {
	case sh.bT:
		// B^T (x2): lane l < 16 gives row batch*n + tn*8 + l%8 (n), columns ((l/8)%2)<<colShift
		// of the k-slice: matrices (n 0-7) x (k low | high half) are b0 and b1 as they stand.
		l8, c := g.newReg(rcB32), g.newReg(rcB32)
		g.emit("and.b32 %s, %s, 7", l8, l.lane)
		g.emit("mad.lo.u32 %s, %s, 8, %s", bAddr, tn, l8)
		g.emit("add.u32 %s, %s, %s", bAddr, bAddr, bk)
		g.emit("shr.u32 %s, %s, 3", c, l.lane)
		g.emit("and.b32 %s, %s, 1", c, c)
		g.emit("shl.b32 %s, %s, %d", c, c, colShift)
		g.emit("mad.lo.u32 %s, %s, %d, %s", bAddr, bAddr, kk, c)
	case sh.kstep == 16:
		// B (x2.trans): lane l < 16 gives row batch*kk + l of B (k), columns tn*8..+7 (n):
		// transposed, the two matrices are b0 and b1.
		g.emit("add.u32 %s, %s, %s", bAddr, bk, l16)
		g.emit("mul.lo.u32 %s, %s, %d", bAddr, bAddr, n)
		g.emit("mad.lo.u32 %s, %s, 8, %s", bAddr, tn, bAddr)
	default:
		// TF32 B, element by element: base (batch*kk + tig, tn*8 + grp).
		col := g.newReg(rcB32)
		g.emit("mad.lo.u32 %s, %s, 8, %s", col, tn, l.grp)
		g.emit("add.u32 %s, %s, %s", bAddr, bk, l.tig)
		g.emit("mad.lo.u32 %s, %s, %d, %s", bAddr, bAddr, n, col)
	}
	g.emit("mad.lo.u32 %s, %s, %d, %d", bAddr, bAddr, sz, sh.offB)
	if !sh.bT && sh.kstep == 8 {
		mt.bAddr2 = g.newReg(rcB32)
		g.emit("add.u32 %s, %s, %d", mt.bAddr2, bAddr, 4*n*sz)
		g.emit("add.u32 %s, %s, %s", mt.bAddr2, g.swizzledIf(mt.bAddr2, sh.swB), g.smem())
	}
	g.emit("add.u32 %s, %s, %s", bAddr, g.swizzledIf(bAddr, sh.swB), g.smem())
	if sh.swA != 0 {
		mt.aK = g.kSlices(aAddr, sh.swA)
	}
	if sh.bT && sh.swB != 0 {
		mt.bK = g.kSlices(bAddr, sh.swB)
	}
	return mt
}

// swizzledIf is rel swizzled with the S-byte swizzle (wgmma.go), or rel when s is 0.
func (g *gen) swizzledIf(rel string, s int) string {
	if s == 0 {
		return rel
	}
	return g.swizzled(rel, s)
}

// kSlices is the addresses of the k-slices along one swizzled row (of S bytes: the whole of
// K) from the first slice's: each XORed with the slice's byte offset, a multiple of 32 below
// S, which shares no bits with the lane's own chunk (0 or 16 bytes) nor with the row's
// S-aligned start (the area is 1024-aligned, a ring's buffers are 128-byte multiples).
func (g *gen) kSlices(first string, s int) []string {
	out := []string{first}
	for off := 32; off < s; off += 32 {
		r := g.newReg(rcB32)
		g.emit("xor.b32 %s, %s, %d", r, first, off)
		out = append(out, r)
	}
	return out
}

// mmaKLoop walks K for one tile, accumulating into the fragment registers cs in place. With
// a swizzled A or B^T, K is one row of at most 4 slices, unrolled, each at its own address
// computed with the tile's (mmaTileAt); otherwise a loop advances copies of the addresses.
func (g *gen) mmaKLoop(sh mmaShape, mt mmaTile, cs []string) {
	n, kk, sz, kstep := sh.n, sh.kk, sh.sz, sh.kstep
	bStep := kstep * n * sz // down B's rows (k); B^T's: along them
	if sh.bT {
		bStep = kstep * sz
	}
	if mt.aK != nil || mt.bK != nil {
		for j := range kk / kstep {
			a, b, b2 := offsetAddr(mt.aAddr, j*kstep*sz), offsetAddr(mt.bAddr, j*bStep), ""
			if mt.aK != nil {
				a = mt.aK[j]
			}
			if mt.bK != nil {
				b = mt.bK[j]
			}
			if mt.bAddr2 != "" {
				b2 = offsetAddr(mt.bAddr2, j*bStep)
			}
			g.mmaSlice(sh, a, b, b2, cs)
		}
		return
	}
	walk := func(base string) string {
		r := g.newReg(rcB32)
		g.emit("mov.u32 %s, %s", r, base)
		return r
	}
	aAddr, bAddr, bAddr2 := walk(mt.aAddr), walk(mt.bAddr), ""
	if mt.bAddr2 != "" {
		bAddr2 = walk(mt.bAddr2)
	}
	kr := g.newReg(rcB32)
	g.emit("mov.u32 %s, 0", kr)
	kLoop := g.label()
	g.placeLabel(kLoop)
	g.mmaSlice(sh, aAddr, bAddr, bAddr2, cs)
	g.emit("add.u32 %s, %s, %d", aAddr, aAddr, kstep*sz)
	g.emit("add.u32 %s, %s, %d", bAddr, bAddr, bStep)
	if bAddr2 != "" {
		g.emit("add.u32 %s, %s, %d", bAddr2, bAddr2, bStep)
	}
	g.emit("add.u32 %s, %s, %d", kr, kr, kstep)
	more := g.newReg(rcPred)
	g.emit("setp.lt.u32 %s, %s, %d", more, kr, kk)
	g.emit("@%s bra %s", more, kLoop)
}

// mmaSlice loads one k-slice's A and B fragments (b2: TF32 B's second row) and accumulates
// their product into cs.
func (g *gen) mmaSlice(sh mmaShape, a, b, b2 string, cs []string) {
	var as, bs [4]string
	// a0: (grp, 2tig..+1), a1: (grp+8, ...), a2: (grp, 2tig+8..+9), a3: (grp+8, 2tig+8..+9);
	// b0: rows 2tig, 2tig+1 of column grp, b1: rows 2tig+8, 2tig+9 (TF32: one element each,
	// a0 (grp, tig), a2 (grp, tig+4), b0 (tig, grp), b1 (tig+4, grp)): what ldmatrix hands
	// each lane, the lower element in the low half.
	for i := range as {
		as[i] = g.newReg(rcB32)
	}
	bs[0], bs[1] = g.newReg(rcB32), g.newReg(rcB32)
	g.emit("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%s, %s, %s, %s}, [%s]", as[0], as[1], as[2], as[3], a)
	switch {
	case sh.bT:
		g.emit("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%s, %s}, [%s]", bs[0], bs[1], b)
	case sh.kstep == 16:
		g.emit("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%s, %s}, [%s]", bs[0], bs[1], b)
	default:
		g.emit("ld.shared.b32 %s, [%s]", bs[0], b)
		g.emit("ld.shared.b32 %s, [%s]", bs[1], b2)
	}
	shape := "m16n8k16"
	if sh.kstep == 8 {
		shape = "m16n8k8"
	}
	g.emit("mma.sync.aligned.%s.row.col.f32.%s.%s.f32 {%s, %s, %s, %s}, {%s, %s, %s, %s}, {%s, %s}, {%s, %s, %s, %s}",
		shape, sh.typ, sh.typ, cs[0], cs[1], cs[2], cs[3], as[0], as[1], as[2], as[3], bs[0], bs[1], cs[0], cs[1], cs[2], cs[3])
}

// mmaDot computes a dot with mma.sync. A, B and the accumulator (as fp32) are staged in
// shared memory row-major; the output is cut into 16x8 tiles (batch, M/16, N/8), and warp w
// takes tiles w, w+W, w+2W, ... (W warps). Per tile it loads its C fragment, walks K loading
// the A and B fragments (ldmatrix for 16-bit types, ld.shared for tf32), and stores D back
// over C. Every warp runs the same number of tiles (so mma.sync stays warp-uniform); a warp
// past the last tile recomputes tile t mod count and does not store it. After a barrier
// every thread reads its own elements of the result.
func (g *gen) mmaDot(in *ir.Instr, typ string, kstep int) {
	b, acc := in.Args[1], in.Args[2]
	res := in.Result()
	rs := res.Type.Shape
	cd := res.Type.Elem
	sh := g.mmaShapeOf(in, typ, kstep)
	offC := align16(sh.offB + b.Type.NumElems()*sh.sz)
	outN := res.Type.NumElems()
	g.need(offC + outN*4)
	g.emit("bar.sync 0")
	g.stageDotOperands(in, sh)
	g.stageF32(acc, offC)
	g.stagedBarrier()

	l := g.mmaLanes()
	it := g.newReg(rcB32)
	g.emit("mov.u32 %s, 0", it)
	tileLoop := g.label()
	g.placeLabel(tileLoop)
	tile := g.newReg(rcB32)
	g.emit("mad.lo.u32 %s, %s, %d, %s", tile, it, g.threads/32, l.warp)
	mt := g.mmaTileAt(sh, l, tile, offC)
	cs := make([]string, 4)
	for i := range cs {
		cs[i] = g.newReg(rcF32)
		g.emit("ld.shared.f32 %s, [%s]", cs[i], offsetAddr(mt.cAddr, mt.cOffs[i]))
	}
	g.mmaKLoop(sh, mt, cs)
	for i := range cs {
		g.emit("@%s st.shared.f32 [%s], %s", mt.valid, offsetAddr(mt.cAddr, mt.cOffs[i]), cs[i])
	}
	g.emit("add.u32 %s, %s, 1", it, it)
	again := g.newReg(rcPred)
	g.emit("setp.lt.u32 %s, %s, %d", again, it, sh.iters)
	g.emit("@%s bra %s", again, tileLoop)
	g.emit("bar.sync 0")

	out := g.gather(ir.Tile(ir.F32, rs...), rowMajorStrides(rs), offC)
	if isHalf(cd) {
		for r := range out {
			out[r] = g.fromF32(cd, out[r])
		}
	}
	g.set(res, out)
}

// stageF32 stores v (in the blocked layout) as fp32 into shared memory at off, row-major.
func (g *gen) stageF32(v *ir.Value, off int) {
	n := v.Type.NumElems()
	addrs := map[string]string{}
	for r, x := range g.get(v) {
		if isHalf(v.Type.Elem) {
			x = g.toF32(v.Type.Elem, x)
		}
		base, k := g.elemIndex(n, r)
		ad, ok := addrs[base]
		if !ok {
			ad = g.newReg(rcB32)
			g.emit("mad.lo.u32 %s, %s, 4, %s", ad, base, g.smem())
			addrs[base] = ad
		}
		g.emit("st.shared.f32 [%s], %s", offsetAddr(ad, off+4*k), x)
	}
}
