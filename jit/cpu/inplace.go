package cpu

import (
	"slices"

	"github.com/widejit/widejit/triton/ir"
)

// In-place steps. An fp32 arithmetic instruction (or select) whose tile operand dies with
// it writes its result over that operand's storage: a chain such as a convolution's
// epilogue (bias, activation, select, then the store) then works on one tile, which stays in
// the L1 cache, instead of a new tile per step. The step takes the operand's storage over
// (swapSlot) and runs with the result's slot in the operand's place; an operand that views
// buffer memory (alias.go) is never written, and its step runs as compiled.

// inPlaceOperand returns the slot of the operand that in may overwrite: an fp32 tile of the
// result's type, defined by an instruction, used by in alone and recomputed whenever in runs
// again (deadAfter), not read in place as a scalar or a row broadcast.
func (c *compiler) inPlaceOperand(in *ir.Instr, args []int, z int) (int, bool) {
	switch in.Op {
	case ir.Add, ir.Sub, ir.Mul, ir.Div, ir.Max, ir.Min, ir.Select:
		// their loops read each element before writing it, and nothing after (the vectorized
		// exp and erf may read lanes again past their writes)
	default:
		return 0, false
	}
	if c.p.slotClass[z] != clsF32 || len(in.Results) != 1 || c.mulSkip[in] || c.geluSkip[in] {
		return 0, false
	}
	if c.chainRoot(in) {
		return 0, false
	}
	if _, ok := c.dotAdds[in]; ok {
		return 0, false
	}
	if _, ok := c.mulAdds[in]; ok {
		return 0, false
	}
	first := 0
	if in.Op == ir.Select {
		first = 1 // the condition is no fp32 tile
	}
	order := make([]int, 0, len(in.Args))
	if e, ok := c.epiSteps[in]; ok {
		order = append(order, e.acc) // a chain step keeps the queue's accumulator (panels_epilogue.go)
	}
	for i := first; i < len(in.Args); i++ {
		order = append(order, i)
	}
	for _, i := range order {
		v := in.Args[i]
		if v.Def != nil && v.Type.Equal(in.Results[0].Type) && c.p.slotClass[args[i]] == clsF32 &&
			!c.absorbed[v] && c.rowBcast[v] == nil && c.deadAfter(v, in) {
			return args[i], true
		}
	}
	return 0, false
}

// inPlace compiles in through compile, in place when it has an operand to overwrite.
func (c *compiler) inPlace(in *ir.Instr, args []int, z int, compile func(args []int) (step, error)) (step, error) {
	x, ok := c.inPlaceOperand(in, args, z)
	if !ok {
		return compile(args)
	}
	normal, err := compile(args)
	if err != nil || normal == nil {
		return normal, err
	}
	over := slices.Clone(args)
	for i := range over {
		if over[i] == x {
			over[i] = z
		}
	}
	inPlace, err := compile(over)
	if err != nil {
		return nil, err
	}
	c.p.inPlace++
	return func(fr *frame) error {
		if fr.viewing(x) {
			return normal(fr)
		}
		fr.swapSlot(clsF32, z, x)
		return inPlace(fr)
	}, nil
}
