package lowering

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/triton/templates"
)

// The element-wise family: activations, arithmetic with broadcasting, eval BatchNorm,
// Monte Carlo dropout, and the strided copies of the shape family. Consecutive element-wise
// nodes fuse into one kernel, or into the epilogue of the group that produced their input.

func init() {
	registerOp(lowerElementwise, "relu", "gelu", "silu", "sigmoid", "tanh", "leaky_relu", "prelu",
		"elu", "softplus", "hardswish", "add", "sub", "mul", "div", "pow", "neg",
		"batch_norm1d", "batch_norm2d", "batch_norm3d",
		"rsqrt", "sqrt", "exp", "log", "eq", "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and", "logical_or",
		"masked_fill", "where", "tril", "triu", "hardsigmoid", "relu6", "hardtanh", "clamp", "sin", "cos", "to")
	registerOp(lowerDropout, "dropout")
}

// ewGroup is an element-wise kernel: every output element is the epilogue expression of
// leaves addressed by the element's coordinates.
type ewGroup struct {
	groupBase
}

func newElementwise(out View, nodes, ops []string) *ewGroup {
	g := &ewGroup{groupBase{nodes: nodes, ops: ops, out: out}}
	axes := make([][2]int, len(out.Shape))
	vars := make([]string, len(out.Shape))
	masks := make([]string, len(out.Shape))
	for d := range out.Shape {
		axes[d] = [2]int{d, d + 1}
		vars[d] = fmt.Sprintf("c%d", d)
		masks[d] = "mask"
	}
	g.epi = &epilogue{shape: out.Shape, axes: axes, vars: vars, masks: masks}
	return g
}

// nodeExpr builds the expression of an element-wise node whose tensor operands are leaves
// 0..k-1 (in the order returned) and scalar operands constants. fusedAt is the operand index
// read as exprIn (-1: none).
func nodeExpr(l *lowerer, n *graph.Node, fusedAt int) (*expr, []View, error) {
	var leaves []View
	args := make([]*expr, 0, len(n.Inputs)+1)
	for i, op := range n.Inputs {
		switch op.Kind {
		case graph.ScalarOperand:
			args = append(args, constExpr(op.Scalar))
		case graph.TensorOperand:
			if i == fusedAt {
				args = append(args, inExpr())
				continue
			}
			v, err := l.value(op)
			if err != nil {
				return nil, nil, err
			}
			// bool operands (masks) load as 0.0/1.0; integers have no lowering yet
			if !v.DType.IsFloat() && v.DType != graph.Bool {
				return nil, nil, fmt.Errorf("operand %s is %s; element-wise ops are lowered for floating-point and bool tensors only", op.Name, v.DType)
			}
			args = append(args, leafExpr(len(leaves)))
			leaves = append(leaves, v)
		case graph.NoneOperand:
		default:
			return nil, nil, fmt.Errorf("unexpected operand %s", op)
		}
	}
	a := n.Attrs
	unary := func(op string) (*expr, []View, error) {
		if len(args) < 1 {
			return nil, nil, fmt.Errorf("needs one tensor input")
		}
		return opExpr(op, args[0]), leaves, nil
	}
	switch n.Op {
	case "relu", "silu", "sigmoid", "tanh", "hardswish", "hardsigmoid", "neg", "rsqrt", "sqrt", "exp", "log", "sin", "cos",
		"logical_not", "to": // to: the kernel computes in the output's type, the load converts
		return unary(n.Op)
	case "relu6", "hardtanh", "clamp":
		lo, hi := 0.0, 6.0
		switch {
		case n.Op == "hardtanh":
			lo, hi = a.Float("min_val"), a.Float("max_val")
		case n.Op == "clamp":
			lo, hi = math.Inf(-1), math.Inf(1) // null: no bound on that side
			if !a.IsNull("min") {
				lo = a.Float("min")
			}
			if !a.IsNull("max") {
				hi = a.Float("max")
			}
		}
		e, lv, err := unary("clamp")
		if err == nil {
			e.f1, e.f2 = lo, hi
		}
		return e, lv, err
	case "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or":
		if len(args) != 2 {
			return nil, nil, fmt.Errorf("needs two operands")
		}
		return opExpr(n.Op, args[0], args[1]), leaves, nil
	case "masked_fill":
		if len(args) != 2 {
			return nil, nil, fmt.Errorf("needs a tensor and a mask")
		}
		e := opExpr("masked_fill", args[0], args[1])
		e.f1 = a.Float("value")
		return e, leaves, nil
	case "where":
		if len(args) != 3 {
			return nil, nil, fmt.Errorf("needs a condition and two operands")
		}
		return opExpr("where", args[0], args[1], args[2]), leaves, nil
	case "tril", "triu":
		// the element's row and column: the last two dims of the output
		e, lv, err := unary(n.Op)
		if err == nil {
			r := len(n.Output().Shape)
			e.f1, e.coords = a.Float("diagonal"), []int{r - 2, r - 1}
		}
		return e, lv, err
	case "gelu":
		if a.String("approximate") == "tanh" {
			return unary("gelu_tanh")
		}
		return unary("gelu")
	case "leaky_relu":
		e, lv, err := unary("leaky_relu")
		if err == nil {
			e.f1 = a.Float("negative_slope")
		}
		return e, lv, err
	case "elu":
		e, lv, err := unary("elu")
		if err == nil {
			e.f1 = a.Float("alpha")
		}
		return e, lv, err
	case "softplus":
		e, lv, err := unary("softplus")
		if err == nil {
			e.f1, e.f2 = a.Float("beta"), a.Float("threshold")
		}
		return e, lv, err
	case "prelu":
		w := n.Param("weight")
		wv := l.values[w.Name]
		// the weight applies along dim 1 of a batched input (dim 0 of an unbatched one)
		rank := len(n.Output().Shape)
		if wv.Numel() > 1 {
			ch := 1
			if rank < 2 {
				ch = 0
			}
			shape := append([]int{wv.Numel()}, ones(rank-ch-1)...)
			wv, _ = wv.reshape(shape)
		}
		k := len(leaves)
		leaves = append(leaves, wv)
		return opExpr("prelu", args[0], leafExpr(k)), leaves, nil
	case "add", "sub":
		if len(args) != 2 {
			return nil, nil, fmt.Errorf("needs two operands")
		}
		b := args[1]
		if alpha := a.Float("alpha"); alpha != 1 {
			b = opExpr("mul", b, constExpr(alpha))
		}
		return opExpr(n.Op, args[0], b), leaves, nil
	case "mul", "pow":
		if len(args) != 2 {
			return nil, nil, fmt.Errorf("needs two operands")
		}
		return opExpr(n.Op, args[0], args[1]), leaves, nil
	case "div":
		if len(args) != 2 {
			return nil, nil, fmt.Errorf("needs two operands")
		}
		op := "div"
		if !a.IsNull("rounding_mode") {
			op = "div_" + a.String("rounding_mode")
		}
		return opExpr(op, args[0], args[1]), leaves, nil
	case "batch_norm1d", "batch_norm2d", "batch_norm3d":
		return batchNormExpr(l, n, args[0], leaves)
	}
	return nil, nil, fmt.Errorf("no element-wise form")
}

func ones(k int) []int {
	s := make([]int, 0, k)
	for i := 0; i < k; i++ {
		s = append(s, 1)
	}
	return s
}

// batchNormExpr is eval BatchNorm as PyTorch's CPU kernel computes it: x * alpha + beta with
// alpha = weight / sqrt(var + eps) and beta = bias - mean * alpha, per channel (broadcast
// along dim 1). alpha and beta only involve the channel vectors, so a fused epilogue computes
// them once per channel tile and makes two passes over its tile, not four.
func batchNormExpr(l *lowerer, n *graph.Node, x *expr, leaves []View) (*expr, []View, error) {
	a := n.Attrs
	if a.Bool("training") {
		return nil, nil, fmt.Errorf("batch statistics (training=true) are not lowered yet")
	}
	rank := len(n.Output().Shape)
	chDim := 1
	if rank < 2 {
		chDim = 0
	}
	// channel adds the per-channel vector of role as a leaf; its expression is built afresh
	// at each use (expression trees are remapped node by node, so nodes are never shared)
	channel := func(role string) (func() *expr, bool) {
		p := n.Param(role)
		if p == nil {
			return nil, false
		}
		v := l.values[p.Name]
		v, _ = v.reshape(append([]int{v.Numel()}, ones(rank-chDim-1)...))
		leaves = append(leaves, v)
		k := len(leaves) - 1
		return func() *expr { return leafExpr(k) }, true
	}
	mean, hasMean := channel("running_mean")
	if !hasMean && !a.Bool("track_running_stats") {
		return nil, nil, fmt.Errorf("eval BatchNorm without running stats uses batch statistics, not lowered yet")
	}
	variance, hasVar := channel("running_var")
	weight, hasWeight := channel("weight")
	bias, hasBias := channel("bias")
	alpha := func() *expr { // nil: 1
		var e *expr
		if hasVar {
			e = opExpr("rsqrt_eps", variance())
			e.f1 = a.Float("eps")
		}
		if hasWeight {
			e = mulExpr(e, weight())
		}
		return e
	}
	y := mulExpr(x, alpha())
	switch {
	case hasMean && hasBias:
		y = opExpr("add", y, opExpr("sub", bias(), mulExpr(mean(), alpha())))
	case hasMean:
		y = opExpr("sub", y, mulExpr(mean(), alpha()))
	case hasBias:
		y = opExpr("add", y, bias())
	}
	return y, leaves, nil
}

// mulExpr is a * b, where a nil operand is 1.
func mulExpr(a, b *expr) *expr {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return opExpr("mul", a, b)
}

func lowerElementwise(l *lowerer, n *graph.Node) error {
	if dt := n.Output().DType; !dt.IsFloat() && dt != graph.Bool {
		return fmt.Errorf("output is %s; element-wise ops are lowered for floating-point and bool tensors only", dt)
	}
	if l.tryFuseNode(n) {
		return nil
	}
	ex, leaves, err := nodeExpr(l, n, -1)
	if err != nil {
		return err
	}
	return l.newElementwiseNode(n, ex, leaves)
}

// newElementwiseNode makes an element-wise group for one node.
func (l *lowerer) newElementwiseNode(n *graph.Node, ex *expr, leaves []View) error {
	out := l.newOutput(n.Name, n.Output().Shape, n.Output().DType)
	g := newElementwise(out, []string{n.Name}, []string{n.Op})
	if !g.epi.tryFuse(ex, leaves) {
		return fmt.Errorf("operands %s do not broadcast to %s", viewShapes(leaves), shapeStr(out.Shape))
	}
	l.addGroup(g, n.Name)
	return nil
}

func viewShapes(vs []View) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = shapeStr(v.Shape)
	}
	return strings.Join(s, " ")
}

// tryFuseNode fuses an element-wise node into the group producing one of its tensor
// operands, when that value has no other use, the shapes agree, every other operand can be
// addressed by that group and is ready before it, and the Chooser agrees.
func (l *lowerer) tryFuseNode(n *graph.Node) bool {
	for i, op := range n.Inputs {
		if op.Kind != graph.TensorOperand {
			continue
		}
		g, perm := l.fusable(op.Name), []int(nil)
		if g == nil {
			g, perm = l.permutedProducer(op.Name)
		}
		if g == nil {
			continue
		}
		b := g.base()
		if b.epi == nil || b.out.DType != n.Output().DType {
			continue
		}
		ex, leaves, err := nodeExpr(l, n, i)
		if err != nil || ex.usesCoords() {
			continue // tril/triu read the element's coordinates, which only their own kernel has
		}
		// The group may write the value in another shape of the same elements (an attention
		// projection's [rows, features] for [B, L, E]): full-shape operands are read in it.
		out, ok := b.out, true
		if perm != nil {
			// or in another dim order: the operands are read in the group's order, and the
			// result is the value's view of the group's output
			if out = l.values[op.Name]; !slices.Equal(out.Shape, n.Output().Shape) || !permuteLeaves(leaves, out.Shape, perm) {
				continue
			}
		} else if !slices.Equal(b.out.Shape, n.Output().Shape) {
			// (a group's output in its own shape may be a strided view: linearTransposed's)
			if out, ok = b.out.reshape(n.Output().Shape); !ok || !reshapeLeaves(leaves, n.Output().Shape, b.out.Shape) {
				continue
			}
		}
		ready := true
		for _, v := range leaves {
			if !l.readyBefore(v, b.index) {
				ready = false
			}
		}
		if !ready {
			continue
		}
		if ex.usesRandom() && !drawsRandom(g) {
			continue
		}
		chain := append(append([]string(nil), b.ops...), n.Op)
		ok, reason := l.decideFusion(chain, b.out, b.ops, n.Op)
		if !ok {
			l.notes[g] = append(l.notes[g], fmt.Sprintf("%s not fused: %s", n.Name, reason))
			continue
		}
		if !b.epi.tryFuse(ex, leaves) {
			continue
		}
		b.nodes = append(b.nodes, n.Name)
		b.ops = append(b.ops, n.Op)
		b.fused = append(b.fused, fmt.Sprintf("%s fused into the epilogue: %s", n.Name, reason))
		delete(l.owner, b.value)
		b.value = n.Name
		l.values[n.Name] = out
		if perm != nil {
			l.permutedOwner[n.Name] = permutedOwner{g: g, from: n.Name, dims: perm}
		} else {
			l.owner[n.Name] = g
		}
		return true
	}
	return false
}

// permuteLeaves rewrites, in place, operands broadcasting to shape (a value that is a
// group's output permuted by dims) as views of the group's output shape. It reports whether
// all broadcast.
func permuteLeaves(leaves []View, shape, dims []int) bool {
	inv := make([]int, len(dims))
	for i, d := range dims {
		inv[d] = i
	}
	for i, v := range leaves {
		st, err := v.broadcastStrides(shape)
		if err != nil {
			return false
		}
		v.Shape, v.Strides = shape, st
		leaves[i] = v.permute(inv)
	}
	return true
}

// reshapeLeaves rewrites, in place, the operands of shape from (the node's output) as views
// of shape to; an operand of another shape must broadcast to from along its trailing dims,
// which to shares (the same last dim), so it addresses to as it is. It reports whether all
// could be.
func reshapeLeaves(leaves []View, from, to []int) bool {
	if len(from) == 0 || len(to) == 0 || from[len(from)-1] != to[len(to)-1] {
		return false
	}
	for i, v := range leaves {
		if slices.Equal(v.Shape, from) {
			r, ok := v.reshape(to)
			if !ok {
				return false
			}
			leaves[i] = r
			continue
		}
		// broadcast along the last dim only: [.., 1, E] or [E] (a bias)
		for d := 0; d < len(v.Shape)-1; d++ {
			if v.Shape[d] != 1 {
				return false
			}
		}
		if len(v.Shape) > len(to) {
			return false
		}
	}
	return true
}

// randomDrawer is implemented by group kinds whose epilogue knows the wide linear index of
// each output element, so Monte Carlo dropout can fuse into them.
type randomDrawer interface{ drawsRandom() }

func drawsRandom(g group) bool { _, ok := g.(randomDrawer); return ok }

func (*ewGroup) drawsRandom()     {}
func (*matmulGroup) drawsRandom() {}
func (*mlpGroup) drawsRandom()    {}
func (*normGroup) drawsRandom()   {}

// lowerDropout: identity in eval mode (a view), per-model Monte Carlo masks in mc mode (or
// when the node itself says training=true).
func lowerDropout(l *lowerer, n *graph.Node) error {
	p := n.Attrs.Float("p")
	// training=true in the graph means F.dropout(training=True): masks drawn as in mc mode
	mc := l.opts.Dropout == "mc" || (n.Attrs.Has("training") && n.Attrs.Bool("training"))
	if !mc || p == 0 {
		v, err := l.input(n, 0)
		if err != nil {
			return err
		}
		l.define(n.Name, v)
		l.passOwner(n.Inputs[0].Name, n.Name)
		return nil
	}
	if p >= 1 {
		return fmt.Errorf("dropout p=%g drops everything; Monte Carlo mode needs p < 1", p)
	}
	mk := func(x *expr) *expr {
		e := opExpr("dropout", x)
		e.f1 = p
		e.seed = l.seedFor(n.Name)
		return e
	}
	if g := l.fusable(n.Inputs[0].Name); g != nil && g.base().epi != nil && g.base().out.DType.IsFloat() && drawsRandom(g) {
		b := g.base()
		// the group may write the value in another shape of the same elements (an attention
		// projection's [rows, features] for [L, B, E]): the node's value keeps its own shape
		out, shaped := b.out.reshape(n.Output().Shape)
		ok, reason := l.decideFusion(append(append([]string(nil), b.ops...), n.Op), b.out, b.ops, n.Op)
		if ok && shaped && b.epi.tryFuse(mk(inExpr()), nil) {
			b.nodes = append(b.nodes, n.Name)
			b.ops = append(b.ops, n.Op)
			b.fused = append(b.fused, fmt.Sprintf("%s fused into the epilogue: %s", n.Name, reason))
			delete(l.owner, b.value)
			b.value = n.Name
			l.values[n.Name] = out
			l.owner[n.Name] = g
			return nil
		}
	}
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	return l.newElementwiseNode(n, mk(leafExpr(0)), []View{x})
}

// ewData is what elementwise.py reads.
type ewData struct {
	Fn            string
	Header        []string
	Operands      []ewOperand
	OutStrideArgs []string
	SizeArgs      []string
	ExtraArgs     []string
	Coords        []string
	Body          []string
	OutOffset     string
	Rows          bool
	Last          string
}

type ewOperand struct {
	Name       string
	StrideArgs []string
	Load       string
}

func (g *ewGroup) emit(l *lowerer) (*Launch, error) {
	out, src := g.out, g.epi
	if o, e, ok := g.rowsOrder(); ok {
		out, src = o, e
	}
	if o, e, ok := collapseDims(out, src); ok {
		out, src = o, e
	}
	shape := out.Shape
	contig := contiguousStrides(shape)
	// a leaf laid out exactly like a dense output is addressed by the flat index
	flat := 0
leaves:
	for k := range src.leaves {
		lf := &src.leaves[k]
		st, _ := lf.view.broadcastStrides(shape)
		for d := range shape {
			if shape[d] != 1 && st[d] != contig[d] {
				continue leaves
			}
		}
		lf.offset, lf.mask = "idx", "mask"
		flat++
	}
	rows := flat < len(src.leaves) && rowsCovered(src, shape)
	epi := *src
	last := len(shape) - 1
	coord := func(d int) string { return fmt.Sprintf("c%d", d) }
	if rows {
		// leading coordinates are per row ([BLOCK_R, 1]), the last dim's per lane ([1, BLOCK_C])
		epi.vars, epi.masks = make([]string, len(shape)), make([]string, len(shape))
		for d := range shape {
			epi.vars[d], epi.masks[d] = fmt.Sprintf("c%d[:, None]", d), "rmask"
		}
		epi.vars[last], epi.masks[last] = fmt.Sprintf("c%d[None, :]", last), "cmask"
		coord = func(d int) string { return epi.vars[d] }
	}
	compute := "tl.float32"
	isCopy := epi.root != nil && epi.root.op == exprLeaf
	if isCopy {
		compute = "" // a copy keeps the loaded type (ints included)
	} else if out.DType == graph.Float64 {
		compute = "tl.float64"
	}
	fn := kernelName(g.index, g.ops)
	linIdx := "(model + model_base) * numel + idx"
	re, err := epi.renderCoords("", "mask", compute, linIdx, "in", coord)
	if err != nil {
		return nil, err
	}
	d := ewData{Fn: fn, Header: header(g.nodes, g.ops), Body: re.body, Rows: rows, Last: fmt.Sprintf("c%d", last)}
	if out.DType == graph.Bool && !isCopy {
		d.Body = append(d.Body, "y = y != 0.0") // bool results are computed as 0.0/1.0
	}
	needCoords := epi.root != nil && epi.root.usesCoords()
	var args []LaunchArg
	for i := range epi.leaves {
		name := fmt.Sprintf("in%d", i)
		var strideArgs []string
		var mine []LaunchArg
		for _, a := range re.args {
			if strings.HasPrefix(a.Name, name+"_") {
				mine = append(mine, a)
				if strings.HasPrefix(a.Name, name+"_s") {
					strideArgs = append(strideArgs, a.Name)
					needCoords = true
				}
			}
		}
		args = append(args, mine...)
		d.Operands = append(d.Operands, ewOperand{Name: name, StrideArgs: strideArgs, Load: re.loads[i].Load})
	}
	args = append(args, LaunchArg{Name: "out_ptr", Kind: PtrArg, Buf: out.Buf, Offset: out.Offset, ModelStride: out.ModelStride},
		LaunchArg{Name: "out_mstride", Kind: IntArg, Int: int64(out.ModelStride)})
	d.OutOffset = "idx"
	if !out.Contiguous() {
		var terms []string
		for dd, s := range out.Strides {
			if shape[dd] == 1 {
				continue
			}
			sn := fmt.Sprintf("out_s%d", dd)
			args = append(args, LaunchArg{Name: sn, Kind: IntArg, Int: int64(s)})
			d.OutStrideArgs = append(d.OutStrideArgs, sn)
			terms = append(terms, fmt.Sprintf("%s * %s", coord(dd), sn))
		}
		if len(terms) == 0 {
			terms = []string{"0"}
		}
		d.OutOffset = strings.Join(terms, " + ")
		needCoords = true
	}
	m := out.Numel()
	args = append(args, LaunchArg{Name: "numel", Kind: IntArg, Int: int64(m)})
	if rows {
		args = append(args, LaunchArg{Name: "nrows", Kind: IntArg, Int: int64(m / shape[last])},
			LaunchArg{Name: "size_last", Kind: IntArg, Int: int64(shape[last])})
		d.SizeArgs = append(d.SizeArgs, "nrows", "size_last")
	}
	if needCoords {
		top := len(shape) - 1
		if rows {
			top-- // the last dim's coordinate is the lane index
		}
		for dd := top; dd >= 0; dd-- {
			sn := fmt.Sprintf("size%d", dd)
			if dd == 0 {
				d.Coords = append(d.Coords, fmt.Sprintf("c%d = rem", dd))
				continue
			}
			args = append(args, LaunchArg{Name: sn, Kind: IntArg, Int: int64(shape[dd])})
			d.SizeArgs = append(d.SizeArgs, sn)
			d.Coords = append(d.Coords, fmt.Sprintf("c%d = rem %% %s", dd, sn), fmt.Sprintf("rem = rem // %s", sn))
		}
	}
	args = append(args, re.extra...)
	d.ExtraArgs = argNames(re.extra)
	block := vectorBlock(g) // the chosen tunables, else heuristicVectorBlock
	text, err := templates.Render("elementwise.py", d)
	if err != nil {
		return nil, err
	}
	consts := map[string]any{"BLOCK": int64(block)}
	grid := cdiv(m, block)
	if rows {
		bc := nextPow2(shape[last])
		br := max(1, block/bc)
		consts = map[string]any{"BLOCK_R": int64(br), "BLOCK_C": int64(bc)}
		grid = cdiv(m/shape[last], br)
	}
	return &Launch{
		Kernel:    newKernel("elementwise.py", fn, text, consts),
		Grid:      [3]int{grid, l.n, 1},
		ModelAxis: 1,
		Args:      args,
	}, nil
}

// rowsOrder returns the output and epilogue with a dim moved last, for a group whose own
// last dim is too short for the rows form but that reads some leaf along another dim at unit
// stride (a channels-last tensor added into a channels-first one, as a permute before a
// residual add does): walking that dim as the lanes loads the leaf's rows contiguously
// instead of gathering it element by element. The output is then stored through its strides.
// Not for groups that read coordinates or draw random numbers (their values follow the
// element order), nor for copies (one side of a transposition is strided whichever dim walks
// the lanes).
func (g *ewGroup) rowsOrder() (View, *epilogue, bool) {
	shape := g.out.Shape
	last := len(shape) - 1
	if last < 1 || shape[last] >= minRowsLast || g.epi.root == nil || g.epi.root.op == exprLeaf ||
		g.epi.root.usesCoords() || g.epi.root.usesRandom() {
		return View{}, nil, false
	}
	for p := last - 1; p >= 0; p-- {
		if shape[p] < minRowsLast || shape[p] > maxRowsLast {
			continue
		}
		unit := false
		for _, lf := range g.epi.leaves {
			st, _ := lf.view.broadcastStrides(shape)
			unit = unit || st[p] == 1
		}
		if !unit {
			continue
		}
		perm := make([]int, 0, len(shape))
		for d := range shape {
			if d != p {
				perm = append(perm, d)
			}
		}
		perm = append(perm, p)
		e := newElementwise(g.out.permute(perm), nil, nil).epi
		e.root = g.epi.root
		for _, lf := range g.epi.leaves {
			// a leaf broadcast to the output is expanded first so that its dims follow the output's
			st, err := lf.view.broadcastStrides(shape)
			if err != nil {
				return View{}, nil, false
			}
			v := lf.view
			v.Shape, v.Strides = shape, st
			if _, err := e.addLeaf(v.permute(perm)); err != nil {
				return View{}, nil, false
			}
		}
		if !rowsCovered(e, e.shape) {
			return View{}, nil, false
		}
		return g.out.permute(perm), e, true
	}
	return View{}, nil, false
}

// collapseDims returns the output and epilogue with adjacent dims merged wherever the output
// and every leaf step through them as one dim (a channel slice of image planes: each plane is
// then one row of the rows form instead of one row per image row, so a copy into a
// channel-strided slice, as ShuffleNet's concatenations, moves whole planes per row). The last
// dim grows only up to maxRowsLast, the longest row of the rows form. Element order is
// unchanged; not for groups that read coordinates (their values follow the dims).
func collapseDims(out View, e *epilogue) (View, *epilogue, bool) {
	shape := out.Shape
	if len(shape) < 2 || e.root == nil || e.root.usesCoords() || e.root.usesRandom() {
		return View{}, nil, false
	}
	views := []View{out}
	strides := [][]int{out.Strides}
	for _, lf := range e.leaves {
		st, err := lf.view.broadcastStrides(shape)
		if err != nil {
			return View{}, nil, false
		}
		views = append(views, lf.view)
		strides = append(strides, st)
	}
	mergeable := func(lo, hi int) bool {
		for _, st := range strides {
			if _, ok := mergeStrides(shape, st, lo, hi); !ok {
				return false
			}
		}
		return true
	}
	// runs [lo, hi) of dims, from the last
	var runs [][2]int
	for hi := len(shape); hi > 0; {
		lo := hi - 1
		for lo > 0 && mergeable(lo-1, hi) && (len(runs) > 0 || numel(shape[lo-1:hi]) <= maxRowsLast) {
			lo--
		}
		runs = append(runs, [2]int{lo, hi})
		hi = lo
	}
	if len(runs) == len(shape) {
		return View{}, nil, false
	}
	slices.Reverse(runs)
	merged := make([]int, len(runs))
	for i, r := range runs {
		merged[i] = numel(shape[r[0]:r[1]])
	}
	collapse := func(v View, st []int) View {
		c := v
		c.Shape, c.Strides = merged, make([]int, len(runs))
		for i, r := range runs {
			c.Strides[i], _ = mergeStrides(shape, st, r[0], r[1])
		}
		return c
	}
	o := collapse(out, out.Strides)
	c := newElementwise(o, nil, nil).epi
	c.root = e.root
	for i := range e.leaves {
		if _, err := c.addLeaf(collapse(views[i+1], strides[i+1])); err != nil {
			return View{}, nil, false
		}
	}
	return o, c, true
}

// Rows of the last dim shorter than this stay on the flat form: a 2-D tile of them would be
// mostly masked lanes.
const minRowsLast, maxRowsLast = 8, 4096

// rowsCovered reports whether an element-wise output of shape suits the rows form: rank 2 or
// more, a last dim of minRowsLast..maxRowsLast, and every dim of the output read by some leaf
// (the loaded tiles then broadcast to the whole [BLOCK_R, BLOCK_C] tile the store writes).
func rowsCovered(e *epilogue, shape []int) bool {
	last := len(shape) - 1
	if last < 1 || shape[last] < minRowsLast || shape[last] > maxRowsLast {
		return false
	}
	for d := range shape {
		if shape[d] == 1 {
			continue
		}
		read := false
		for _, lf := range e.leaves {
			st, _ := lf.view.broadcastStrides(shape)
			read = read || lf.offset != "" || st[d] != 0
		}
		if !read {
			return false
		}
	}
	return true
}

// header lists the graph nodes a kernel serves.
func header(nodes, ops []string) []string {
	h := make([]string, len(nodes))
	for i := range nodes {
		op := ""
		if i < len(ops) {
			op = ops[i]
		}
		h[i] = fmt.Sprintf("serves node %s (%s)", nodes[i], op)
	}
	return h
}
