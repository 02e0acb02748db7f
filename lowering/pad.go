package lowering

import (
	"fmt"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/triton/templates"
)

// pad (F.pad) is a kernel of its own (pad.py): each output element finds its source element
// by the mode, or takes the fill value. A pad that only feeds a convolution is that
// convolution's business (its zero-padded input copy, conv.go); this is the op as written.

func init() {
	registerOp(lowerPad, "pad")
}

type padGroup struct {
	groupBase
	x    View
	pads [][2]int // per dim of x: before, after
	mode string
	fill float64
}

func lowerPad(l *lowerer, n *graph.Node) error {
	out := n.Output()
	if !out.DType.IsFloat() {
		return fmt.Errorf("pad is lowered for floating-point tensors only; %s is %s", n.Inputs[0].Name, out.DType)
	}
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	pad := n.Attrs.Ints("pad")
	pads := make([][2]int, len(x.Shape))
	for i := 0; i < len(pad)/2; i++ {
		pads[len(x.Shape)-1-i] = [2]int{pad[2*i], pad[2*i+1]}
	}
	g := &padGroup{x: x, pads: pads, mode: n.Attrs.String("mode"), fill: n.Attrs.Float("value")}
	g.groupBase = groupBase{nodes: []string{n.Name}, ops: []string{n.Op}, out: l.newOutput(n.Name, out.Shape, out.DType)}
	l.addGroup(g, n.Name)
	return nil
}

type padData struct {
	Fn       string
	Header   []string
	SizeArgs []string
	Body     []string
	Result   string
}

func (g *padGroup) emit(l *lowerer) (*Launch, error) {
	fn := kernelName(g.index, g.ops)
	args := append(ptrArgs("x", g.x), ptrArgs("out", g.out)...)
	m := g.out.Numel()
	args = append(args, intArg("numel", m))
	d := padData{Fn: fn, Header: header(g.nodes, g.ops), Result: "v"}
	shape := g.out.Shape
	for k := len(shape) - 1; k >= 0; k-- {
		c, i := fmt.Sprintf("c%d", k), fmt.Sprintf("i%d", k)
		if k == 0 {
			d.Body = append(d.Body, fmt.Sprintf("%s = rem", c))
		} else {
			d.Body = append(d.Body, fmt.Sprintf("%s = rem %% out_size%d", c, k), fmt.Sprintf("rem = rem // out_size%d", k))
			args = append(args, intArg(fmt.Sprintf("out_size%d", k), shape[k]))
			d.SizeArgs = append(d.SizeArgs, fmt.Sprintf("out_size%d", k))
		}
		before, n := g.pads[k][0], g.x.Shape[k]
		src := c
		if before != 0 {
			src = fmt.Sprintf("%s - %d", c, before)
		}
		d.Body = append(d.Body, fmt.Sprintf("%s = %s", i, src))
		if g.pads[k] != [2]int{} {
			switch g.mode {
			case "constant":
				d.Body = append(d.Body, fmt.Sprintf("inside = inside & (%s >= 0) & (%s < %d)", i, i, n))
			case "reflect": // -1 -> 1, n -> n-2
				d.Body = append(d.Body, fmt.Sprintf("%s = tl.where(%s < 0, -%s, %s)", i, i, i, i),
					fmt.Sprintf("%s = tl.where(%s >= %d, %d - %s, %s)", i, i, n, 2*(n-1), i, i))
			case "replicate":
				d.Body = append(d.Body, fmt.Sprintf("%s = tl.where(%s < 0, 0, tl.where(%s >= %d, %d, %s))", i, i, i, n, n-1, i))
			case "circular":
				d.Body = append(d.Body, fmt.Sprintf("%s = tl.where(%s < 0, %s + %d, tl.where(%s >= %d, %s - %d, %s))", i, i, i, n, i, n, i, n, i))
			}
		}
		if n != 1 && g.x.Strides[k] != 0 { // a size-1 dim's source is always 0
			d.Body = append(d.Body, fmt.Sprintf("off = off + %s * x_stride%d", i, k))
			args = append(args, intArg(fmt.Sprintf("x_stride%d", k), g.x.Strides[k]))
			d.SizeArgs = append(d.SizeArgs, fmt.Sprintf("x_stride%d", k))
		}
	}
	if g.mode == "constant" {
		d.Result = fmt.Sprintf("tl.where(inside, v, %s)", pyFloat(g.fill))
	}
	text, err := templates.Render("pad.py", d)
	if err != nil {
		return nil, err
	}
	block := 1024
	return &Launch{
		Kernel:    newKernel("pad.py", fn, text, map[string]any{"BLOCK": int64(block)}),
		Grid:      [3]int{cdiv(m, block), l.n, 1},
		ModelAxis: 1,
		Args:      args,
	}, nil
}
