package lowering

import (
	"fmt"
	"slices"

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
	shape := n.Output().Shape
	if p, shuffled := l.shuffledCats[n.Inputs[0].Name]; shuffled && slices.Equal(p.Shape, shape) {
		l.define(n.Name, p) // the cat as [B, G, C/G, H, W], laid out shuffled (lowerConcat)
		return nil
	}
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
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
	v := x.permute(dims)
	if g := l.fusable(n.Inputs[0].Name); g != nil && v.Contiguous() {
		// the group's output read back dense (a transposed Linear's out^T, transposed back):
		// an element-wise consumer (the residual add) may still join the group's epilogue
		l.permutedOwner[n.Name] = permutedOwner{g: g, from: n.Inputs[0].Name, dims: dims}
	}
	l.define(n.Name, v)
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

// cat/stack: each input lands in its slice of one new dense buffer: a pending convolution
// producing it (its only reader being the cat) stores its output there itself, any other
// input is copied (a strided copy kernel). A cat of [B, C, H, W] along the channels that a
// channel shuffle reads (ShuffleNet's view [B, G, C/G, H, W], transpose(1, 2), flatten) is
// laid out shuffled instead: the buffer holds the shuffled tensor, the cat's channel
// g*C/G + j at channel j*G + g, so the shuffle's transpose is a dense view of it and no copy
// moves the channels (shuffleGroups).
func lowerConcat(l *lowerer, n *graph.Node) error {
	if len(n.Inputs) != 1 || n.Inputs[0].Kind != graph.ListOperand {
		return fmt.Errorf("expects one list of tensors")
	}
	d := n.Attrs.Int("dim")
	shape := n.Output().Shape
	if d < 0 {
		d += len(shape)
	}
	out := l.newOutput(n.Name, shape, n.Output().DType)
	// dst(start, size): the cat's channels [start, start+size) in out; ok false when they are
	// not one affine view of it (a shuffled part spanning two groups)
	dst := func(start, size int) (View, bool) { return out.slice(d, start, size), true }
	shuffled := View{}
	if gs := l.shuffleGroups(n, d); gs > 1 {
		// out holds the shuffled [B, C/G, G, H, W]; the cat's [B, G, C/G, H, W] is its transpose
		cg := shape[1] / gs
		p, _ := out.reshape([]int{shape[0], cg, gs, shape[2], shape[3]})
		shuffled = p.permute([]int{0, 2, 1, 3, 4})
		dst = func(start, size int) (View, bool) {
			g := start / cg
			if (start+size-1)/cg != g {
				return View{}, false
			}
			return shuffled.slice(1, g, 1).squeeze([]int{1}).slice(1, start-g*cg, size), true
		}
	}
	var parts []View
	start := 0
	for i, op := range n.Inputs[0].List {
		x, err := l.value(op)
		if err != nil {
			return err
		}
		if n.Op == "stack" {
			parts = append(parts, out.slice(d, i, 1).squeeze([]int{d}))
			continue
		}
		v, ok := dst(start, x.Shape[d])
		if !ok {
			shuffled, parts = View{}, nil
			break
		}
		parts = append(parts, v)
		start += x.Shape[d]
	}
	if len(parts) == 0 { // a shuffle whose groups the parts straddle: a plain cat
		start = 0
		for _, op := range n.Inputs[0].List {
			v, err := l.value(op)
			if err != nil {
				return err
			}
			parts = append(parts, out.slice(d, start, v.Shape[d]))
			start += v.Shape[d]
		}
	}
	for i, op := range n.Inputs[0].List {
		x, _ := l.value(op)
		if n.Op == "cat" && l.convStoresInto(op.Name, x, parts[i], n.Name) {
			continue
		}
		g := newElementwise(parts[i], []string{n.Name}, []string{n.Op})
		k, err := g.epi.addLeaf(x)
		if err != nil {
			return err
		}
		g.epi.root = leafExpr(k)
		l.addGroup(g, fmt.Sprintf("%s#part%d", n.Name, i))
	}
	if shuffled.Buf != nil {
		// the cat's one reader is the shuffle's view, which takes this layout (lowerReshape);
		// the cat itself is no view of out
		l.shuffledCats[n.Name] = shuffled
		return nil
	}
	l.values[n.Name] = out
	delete(l.owner, n.Name)
	return nil
}

// shuffleGroups is G when cat n (along dim d) is a [B, C, H, W] channel concatenation whose
// only reader is a view as [B, G, C/G, H, W] (G > 1), itself read only by a transpose of dims
// 1 and 2: a channel shuffle. Else 0.
func (l *lowerer) shuffleGroups(n *graph.Node, d int) int {
	shape := n.Output().Shape
	if n.Op != "cat" || len(shape) != 4 || d != 1 || l.opts.NoFusion {
		return 0
	}
	view := l.soleReader(n)
	if view == nil || (view.Op != "view" && view.Op != "reshape") {
		return 0
	}
	vs := view.Output().Shape
	if len(vs) != 5 || vs[0] != shape[0] || vs[1] <= 1 || vs[1]*vs[2] != shape[1] || vs[3] != shape[2] || vs[4] != shape[3] {
		return 0
	}
	t := l.soleReader(view)
	if t == nil || t.Op != "transpose" || t.Inputs[0].Name != view.Name {
		return 0
	}
	if d0, d1 := t.Attrs.Int("dim0"), t.Attrs.Int("dim1"); !(d0 == 1 && d1 == 2 || d0 == 2 && d1 == 1) {
		return 0
	}
	return vs[1]
}

// soleReader is the node reading n's (single) value when it is its only use and not a graph
// output, else nil.
func (l *lowerer) soleReader(n *graph.Node) *graph.Node {
	if l.uses[n.Name] != 1 {
		return nil
	}
	for _, o := range l.g.Outputs {
		if o.Name == n.Name {
			return nil
		}
	}
	for _, r := range l.g.Nodes {
		for _, in := range r.Inputs {
			if in.Kind == graph.TensorOperand && in.Name == n.Name {
				return r
			}
		}
	}
	return nil
}
