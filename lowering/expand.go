package lowering

import "github.com/widejit/widejit/graph"

// expand is a view, as in PyTorch: the expanded and new leading dims get stride 0, so a
// consumer reads the one element many times; one that needs dense rows gets a copy as for any
// strided view.

func init() {
	registerOp(lowerExpand, "expand")
}

func lowerExpand(l *lowerer, n *graph.Node) error {
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	shape := n.Output().Shape
	lead := len(shape) - len(x.Shape)
	v := x
	v.Shape = append([]int(nil), shape...)
	v.Strides = make([]int, len(shape))
	for d := lead; d < len(shape); d++ {
		if x.Shape[d-lead] == shape[d] {
			v.Strides[d] = x.Strides[d-lead]
		}
	}
	l.define(n.Name, v)
	return nil
}
