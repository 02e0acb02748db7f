package ptx

import (
	"fmt"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

// Device asserts report through a flag buffer the device passes after the kernel's
// parameters (jit.AssertsMeta): the PTX cannot return an error, and trap would leave the
// context unusable and the failure nameless.

// hasAsserts reports whether b or its regions hold an Assert.
func hasAsserts(b *ir.Block) bool {
	for _, in := range b.Instrs {
		if in.Op == ir.Assert {
			return true
		}
		for _, r := range in.Regions {
			if hasAsserts(r) {
				return true
			}
		}
	}
	return false
}

// assertParam declares the flag buffer's parameter, last, and loads it.
func (g *gen) assertParam(name string) string {
	g.assertFlag = g.newReg(rcB64)
	g.emitPro("ld.param.u64 %s, [%s]", g.assertFlag, name)
	return fmt.Sprintf("\t.param .u64 %s", name)
}

// deviceAssert emits an Assert: each thread ORs the negations of the lanes it holds, and one
// with a false lane claims the flag's first word with its assert number (an atomic CAS from
// 0, so the launch's first failure is the one reported) and, when it won, stores its program
// id in the next three words. A vector compare per tile and no branch: the hot path pays a
// few predicate ops per thread.
func (g *gen) deviceAssert(in *ir.Instr) {
	g.asserts = append(g.asserts, jit.DeviceAssert{Pos: in.Pos.String(), Msg: in.Str})
	id := len(g.asserts)
	fail := g.newReg(rcPred)
	seen := map[string]bool{}
	for _, c := range g.get(in.Args[0]) {
		if seen[c] {
			continue
		}
		if len(seen) == 0 {
			g.emit("not.pred %s, %s", fail, c)
		} else {
			nc := g.newReg(rcPred)
			g.emit("not.pred %s, %s", nc, c)
			g.emit("or.pred %s, %s, %s", fail, fail, nc)
		}
		seen[c] = true
	}
	old := g.newReg(rcB32)
	g.emit("mov.u32 %s, 1", old)
	g.emit("@%s atom.acq_rel.gpu.global.cas.b32 %s, [%s], 0, %d", fail, old, g.assertFlag, id)
	won := g.newReg(rcPred)
	g.emit("setp.eq.u32 %s, %s, 0", won, old)
	for i, axis := range []string{"x", "y", "z"} {
		r := g.newReg(rcB32)
		g.emit("mov.u32 %s, %%ctaid.%s", r, axis)
		g.emit("@%s st.global.u32 [%s+%d], %s", won, g.assertFlag, 4*(i+1), r)
	}
}
