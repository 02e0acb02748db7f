package cpu

import (
	"fmt"
	"strings"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

// compileAssert runs tl.device_assert: the first false lane of the condition stops the launch
// with a *jit.AssertError naming the kernel, the assert's position, the program id, the
// message and the lane (its flat index in the tile).
func (c *compiler) compileAssert(in *ir.Instr, args []int) (step, error) {
	cond := args[0]
	t := c.p.slotType[cond]
	n := t.NumElems()
	shape := ""
	if !t.IsScalar() {
		shape = t.String()[strings.IndexByte(t.String(), '['):]
	}
	pos := in.Pos.String()
	return func(fr *frame) error {
		for i, v := range fr.ints[cond][:n] {
			if v == 0 {
				e := &jit.AssertError{Kernel: c.p.fn.Name, Pos: pos, Msg: in.Str, Program: fr.pid}
				if shape != "" {
					e.Lane = fmt.Sprintf("element %d of %s", i, shape)
				}
				return e
			}
		}
		return nil
	}, nil
}
