package triton

import (
	"math"
	"strconv"
	"strings"

	"github.com/widejit/widejit/triton/ir"
)

// removeDeadCode deletes instructions whose results are never used and that have no effect:
// everything but stores, atomics, prints, barriers, asserts that can fail and terminators, and control flow whose
// regions hold such effects. Unrolled helpers (Box-Muller's unused sine, a tuple element
// dropped with `_`) otherwise leave work for every backend.
func removeDeadCode(f *ir.Func) {
	for {
		uses := map[*ir.Value]int{}
		countUses(f.Body, uses)
		if !sweep(f.Body, uses) {
			return
		}
	}
}

func countUses(b *ir.Block, uses map[*ir.Value]int) {
	for _, in := range b.Instrs {
		for _, a := range in.Args {
			uses[a]++
		}
		for _, r := range in.Regions {
			countUses(r, uses)
		}
	}
}

func hasEffects(in *ir.Instr) bool {
	switch in.Op {
	case ir.Store, ir.AtomicRMW, ir.AtomicCAS, ir.Print, ir.Barrier, ir.Yield, ir.Condition:
		return true
	case ir.Assert:
		// An assert of a constant true (tl.full(..., True), a splat of one) cannot fail.
		c := in.Args[0].Def
		for c != nil && (c.Op == ir.Splat || c.Op == ir.Broadcast) {
			c = c.Args[0].Def
		}
		return c == nil || c.Op != ir.Const || c.Int == 0
	}
	for _, r := range in.Regions {
		for _, x := range r.Instrs {
			if x.Op != ir.Yield && x.Op != ir.Condition && hasEffects(x) {
				return true
			}
		}
	}
	return false
}

// sweep removes dead instructions from b and its regions; it reports whether it removed any.
func sweep(b *ir.Block, uses map[*ir.Value]int) bool {
	changed := false
	out := b.Instrs[:0]
	for i := len(b.Instrs) - 1; i >= 0; i-- {
		in := b.Instrs[i]
		dead := !hasEffects(in)
		for _, r := range in.Results {
			if uses[r] > 0 {
				dead = false
			}
		}
		if dead {
			for _, a := range in.Args {
				uses[a]--
			}
			changed = true
			b.Instrs[i] = nil
			continue
		}
		for _, r := range in.Regions {
			if sweep(r, uses) {
				changed = true
			}
		}
	}
	for _, in := range b.Instrs {
		if in != nil {
			out = append(out, in)
		}
	}
	for i := len(out); i < len(b.Instrs); i++ {
		b.Instrs[i] = nil
	}
	b.Instrs = out
	return changed
}

// cseKey identifies a pure instruction by everything that determines its result.
type cseKey struct {
	op    ir.Op
	typ   string
	i     int64
	f     uint64
	ints  string
	args  string
	nargs int
}

func keyOf(in *ir.Instr) (cseKey, bool) {
	switch in.Op {
	case ir.Load, ir.Store, ir.AtomicRMW, ir.AtomicCAS, ir.Print, ir.Barrier,
		ir.For, ir.If, ir.While, ir.Yield, ir.Condition:
		return cseKey{}, false
	}
	if len(in.Results) != 1 || len(in.Regions) != 0 {
		return cseKey{}, false
	}
	k := cseKey{op: in.Op, typ: in.Result().Type.String(), i: in.Int, f: math.Float64bits(in.Float), nargs: len(in.Args)}
	var b strings.Builder
	for _, x := range in.Ints {
		b.WriteString(strconv.Itoa(x))
		b.WriteByte(',')
	}
	k.ints = b.String()
	b.Reset()
	for _, a := range in.Args {
		b.WriteString(strconv.Itoa(a.ID))
		b.WriteByte(',')
	}
	k.args = b.String()
	return k, true
}

// eliminateCommonSubexpressions replaces a pure instruction by an identical one that
// dominates it (same block or an enclosing one): the interpreter re-emits the same constants,
// splats and index arithmetic each time a source expression is evaluated.
func eliminateCommonSubexpressions(f *ir.Func) {
	repl := map[*ir.Value]*ir.Value{}
	cseBlock(f.Body, map[cseKey]*ir.Value{}, repl)
}

func cseBlock(b *ir.Block, outer map[cseKey]*ir.Value, repl map[*ir.Value]*ir.Value) {
	seen := make(map[cseKey]*ir.Value, len(outer)+len(b.Instrs))
	for k, v := range outer {
		seen[k] = v
	}
	out := b.Instrs[:0]
	for _, in := range b.Instrs {
		for i, a := range in.Args {
			if r, ok := repl[a]; ok {
				in.Args[i] = r
			}
		}
		for _, r := range in.Regions {
			cseBlock(r, seen, repl)
		}
		if k, ok := keyOf(in); ok {
			if prev, ok := seen[k]; ok {
				repl[in.Result()] = prev
				continue
			}
			seen[k] = in.Result()
		}
		out = append(out, in)
	}
	for i := len(out); i < len(b.Instrs); i++ {
		b.Instrs[i] = nil
	}
	b.Instrs = out
}
