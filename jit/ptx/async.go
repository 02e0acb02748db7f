package ptx

import (
	"github.com/widejit/widejit/triton/ir"
)

// Dot operands copied from global to shared memory with cp.async. A load whose only use is
// a dot operand staged row-major (A; B as it stands; B^T for a tensor-core dot's transposed
// B) is not loaded into registers at all: where the dot stages it, each thread's runs of
// contiguous elements are copied with cp.async.ca.shared.global (4, 8 or 16 bytes, the
// global access's vector width; a masked-off run is zero-filled by a source size of 0, which
// is why the load's other must be 0), and cp.async.wait_all precedes the barrier that
// publishes the staging area. In a pipelined K loop (pipeline.go) the copies run steps ahead
// instead, in commit groups, and a step waits only for its own group.

// asyncLoad defers in to the dot that stages it, when it can.
func (g *gen) asyncLoad(in *ir.Instr) bool {
	res := in.Result()
	n := res.Type.NumElems()
	if g.uses[res] != 1 || in.Int&1 != 0 || n < g.threads || res.Type.Ptr || classOf(res.Type) == rcPred {
		return false
	}
	if len(in.Args) == 3 && !isZeroConst(in.Args[2]) {
		return false
	}
	u := g.user[res]
	switch {
	case u.Op == ir.Dot && (u.Args[0] == res || u.Args[1] == res):
		// staged row-major as it stands (stageOperand, stageB without a permute)
	case u.Op == ir.Permute && len(u.Ints) == 2 && u.Ints[0] == 1 && u.Ints[1] == 0:
		// B^T of a 2-D tensor-core dot (mmaShapeOf's bT): the permute must be lazy and its dot
		// a tensor-core one, or the permute would need the loaded registers
		p := u.Result()
		d := g.user[p]
		if g.uses[p] != 1 || d == nil || d.Op != ir.Dot || d.Args[1] != p {
			return false
		}
		if _, _, ok := g.mmaKind(d); !ok {
			return false
		}
	default:
		return false
	}
	var mask *ir.Value
	if len(in.Args) == 3 {
		mask = in.Args[1]
	}
	w := g.vecWidth(in.Args[0], mask, g.runLen(n))
	if bytes := w * smemSize(res.Type); bytes != 4 && bytes != 8 && bytes != 16 {
		return false
	}
	g.async[res] = in
	return true
}

// copyAsync stages the deferred load ld at byte offset off, row-major.
func (g *gen) copyAsync(ld *ir.Instr, off int) {
	res := ld.Result()
	n := res.Type.NumElems()
	size := smemSize(res.Type)
	var mask []string
	var maskV *ir.Value
	if len(ld.Args) == 3 {
		mask, maskV = g.get(ld.Args[1]), ld.Args[1]
	}
	w := g.vecWidth(ld.Args[0], maskV, g.runLen(n))
	bytes := w * size
	ptrs := g.get(ld.Args[0])
	addrOf := g.sharedAddr(n, size, off)
	for r := 0; r < len(ptrs); r += w {
		dst := addrOf(r)
		m := g.asyncGuard
		if mask != nil && m != "" {
			m = g.newReg(rcPred)
			g.emit("and.pred %s, %s, %s", m, mask[r], g.asyncGuard)
		} else if mask != nil {
			m = mask[r]
		}
		if m == "" {
			g.emit("cp.async.ca.shared.global [%s], [%s], %d", dst, ptrs[r], bytes)
			continue
		}
		src := g.newReg(rcB32)
		g.emit("selp.u32 %s, %d, 0, %s", src, bytes, m)
		g.emit("cp.async.ca.shared.global [%s], [%s], %d, %s", dst, ptrs[r], bytes, src)
	}
	g.asyncPending = true
}

// stagedBarrier publishes a staging area: the copies in flight land, then bar.sync.
func (g *gen) stagedBarrier() {
	if g.asyncPending {
		g.emit("cp.async.wait_all")
		g.asyncPending = false
	}
	g.emit("bar.sync 0")
}
