package cpu

import (
	"strings"

	"github.com/widejit/widejit/triton/ir"
)

// compileAssert runs tl.device_assert: the first false lane of the condition stops the launch
// with an error naming the kernel, the assert's position, the program id, the message and
// the lane (its flat index in the tile).
func (c *compiler) compileAssert(in *ir.Instr, args []int) (step, error) {
	cond := args[0]
	t := c.p.slotType[cond]
	n := t.NumElems()
	msg := in.Str
	if msg == "" {
		msg = "(no message)"
	}
	shape := ""
	if !t.IsScalar() {
		shape = t.String()[strings.IndexByte(t.String(), '['):]
	}
	return func(fr *frame) error {
		for i, v := range fr.ints[cond][:n] {
			if v == 0 {
				if shape == "" {
					return fr.errf(in.Pos, "device assertion failed: %s", msg)
				}
				return fr.errf(in.Pos, "device assertion failed: %s (element %d of %s)", msg, i, shape)
			}
		}
		return nil
	}, nil
}
