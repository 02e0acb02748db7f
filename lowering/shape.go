package lowering

import (
	"fmt"

	"github.com/widejit/widejit/graph"
)

// The shape family: views where the layout allows (no kernel), strided copies where data has
// to move (cat, stack, and reshapes of non-contiguous views). permute/transpose are views: the
// consumer reads through the permuted strides, or gets a copy when it needs contiguous rows.

func init() {
	registerOp(lowerReshape, "flatten", "view", "reshape")
	registerOp(lowerPassThrough, "contiguous", "identity")
	registerOp(lowerPermute, "permute", "transpose")
	registerOp(lowerUnsqueeze, "unsqueeze")
	registerOp(lowerSqueeze, "squeeze")
	registerOp(lowerSplit, "chunk", "split")
	registerOp(lowerGetitem, "getitem")
	registerOp(lowerConcat, "cat", "stack")
	registerOp(lowerSlice, "slice", "select")
}

// slice/select: views (the offset moves, a stepped slice multiplies the stride, a selected
// dim is dropped), so x[:, -1] or self.bias[:, :, :T, :T] never copies; a consumer that needs
// dense rows gets a copy as for any strided view.
func lowerSlice(l *lowerer, n *graph.Node) error {
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	a := n.Attrs
	d := a.Int("dim")
	if n.Op == "select" {
		l.define(n.Name, x.slice(d, a.Int("index"), 1).squeeze([]int{d}))
		return nil
	}
	v := x.slice(d, a.Int("start"), n.Output().Shape[d])
	v.Strides[d] *= a.Int("step")
	l.define(n.Name, v)
	return nil
}

func lowerReshape(l *lowerer, n *graph.Node) error {
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	shape := n.Output().Shape
	v, ok := x.restride(shape)
	if !ok {
		c := l.materialize(x, n.Name+".in", []string{n.Name + " (reshape of a strided view)"})
		v, _ = c.reshape(shape)
	}
	l.define(n.Name, v)
	return nil
}

func lowerPassThrough(l *lowerer, n *graph.Node) error {
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	// contiguous() of a strided view stays a view: consumers that need dense rows copy
	l.define(n.Name, x)
	l.passOwner(n.Inputs[0].Name, n.Name)
	return nil
}

func lowerPermute(l *lowerer, n *graph.Node) error {
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	var dims []int
	if n.Op == "permute" {
		dims = n.Attrs.Ints("dims")
	} else {
		dims = make([]int, len(x.Shape))
		for i := range dims {
			dims[i] = i
		}
		d0, d1 := n.Attrs.Int("dim0"), n.Attrs.Int("dim1")
		dims[d0], dims[d1] = d1, d0
	}
	if v, ok := l.storePermuted(n.Inputs[0].Name, x.permute(dims), dims); ok {
		l.define(n.Name, v)
		return nil
	}
	l.define(n.Name, x.permute(dims))
	return nil
}

func lowerUnsqueeze(l *lowerer, n *graph.Node) error {
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	l.define(n.Name, x.unsqueeze(n.Attrs.Int("dim")))
	return nil
}

func lowerSqueeze(l *lowerer, n *graph.Node) error {
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	l.define(n.Name, x.squeeze(n.Attrs.Ints("dim")))
	return nil
}

// chunk/split: a tuple of slices of the input along dim (views).
func lowerSplit(l *lowerer, n *graph.Node) error {
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	d := n.Attrs.Int("dim")
	start := 0
	for i, t := range n.Outputs {
		size := t.Shape[d]
		l.values[tupleName(n.Name, i)] = x.slice(d, start, size)
		start += size
	}
	return nil
}

func tupleName(node string, i int) string { return fmt.Sprintf("%s#%d", node, i) }

func lowerGetitem(l *lowerer, n *graph.Node) error {
	src := n.Inputs[0]
	i := n.Attrs.Int("index")
	v, ok := l.values[tupleName(src.Name, i)]
	if !ok {
		return fmt.Errorf("%s has no lowered tuple element %d", src.Name, i)
	}
	l.define(n.Name, v)
	if l.uses[src.Name] == 1 { // the only element taken
		l.passOwner(tupleName(src.Name, i), n.Name)
	}
	return nil
}

// cat/stack: one strided copy per input into its slice of a new dense buffer.
func lowerConcat(l *lowerer, n *graph.Node) error {
	if len(n.Inputs) != 1 || n.Inputs[0].Kind != graph.ListOperand {
		return fmt.Errorf("expects one list of tensors")
	}
	d := n.Attrs.Int("dim")
	out := l.newOutput(n.Name, n.Output().Shape, n.Output().DType)
	start := 0
	for i, op := range n.Inputs[0].List {
		x, err := l.value(op)
		if err != nil {
			return err
		}
		var dst View
		if n.Op == "cat" {
			dst = out.slice(d, start, x.Shape[d])
			start += x.Shape[d]
		} else {
			dst = out.slice(d, i, 1).squeeze([]int{d})
		}
		g := newElementwise(dst, []string{n.Name}, []string{n.Op})
		k, err := g.epi.addLeaf(x)
		if err != nil {
			return err
		}
		g.epi.root = leafExpr(k)
		l.addGroup(g, fmt.Sprintf("%s#part%d", n.Name, i))
	}
	l.values[n.Name] = out
	delete(l.owner, n.Name)
	return nil
}
