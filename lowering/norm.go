package lowering

import (
	"fmt"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/triton/templates"
)

// The normalisation family: LayerNorm, RMSNorm, GroupNorm and InstanceNorm as one row-wise
// kernel (norm.py) with the affine parameters and the following element-wise ops fused in.
// Eval BatchNorm is element-wise (elementwise.go); InstanceNorm with running stats too.

func init() {
	registerOp(lowerNormNode, "layer_norm", "rms_norm", "group_norm", "instance_norm1d", "instance_norm2d")
}

// lowerNormNode lowers a norm node of the graph: a LayerNorm may end the matmul kernel
// producing its input (rowops.go); otherwise, and for the norms other kernels build on
// (flux.go), lowerNorm.
func lowerNormNode(l *lowerer, n *graph.Node) error {
	if n.Op == "layer_norm" && l.tryRowTail(n) {
		return nil
	}
	return lowerNorm(l, n)
}

type normGroup struct {
	groupBase
	x                                     View
	w, b                                  *View
	rows, r, rowsPerSample, chPerRow, spa int
	eps                                   float64
	center                                bool
	colDims                               int // trailing dims forming a row; -1 when rows split a dim
}

func lowerNorm(l *lowerer, n *graph.Node) error {
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	if !x.DType.IsFloat() {
		return fmt.Errorf("input is %s, want a floating-point tensor", x.DType)
	}
	a := n.Attrs
	shape := x.Shape
	rank := len(shape)
	g := &normGroup{center: true, rowsPerSample: 1, spa: 1, eps: a.Float("eps")}
	switch n.Op {
	case "layer_norm", "rms_norm":
		k := len(a.Ints("normalized_shape"))
		g.rows = numel(shape[:rank-k])
		g.r = numel(shape[rank-k:])
		g.center = n.Op == "layer_norm"
		g.colDims = k
	case "group_norm":
		groups := a.Int("num_groups")
		c := shape[1]
		s := numel(shape[2:])
		g.rows = shape[0] * groups
		g.r = c / groups * s
		g.rowsPerSample, g.chPerRow, g.spa = groups, c/groups, s
		g.colDims = -1
	case "instance_norm1d", "instance_norm2d":
		if a.Bool("track_running_stats") {
			return lowerInstanceNormRunning(l, n)
		}
		spatialRank := 1
		if n.Op == "instance_norm2d" {
			spatialRank = 2
		}
		c := shape[rank-spatialRank-1]
		s := numel(shape[rank-spatialRank:])
		g.rows = numel(shape[:rank-spatialRank])
		g.r = s
		g.rowsPerSample, g.chPerRow, g.spa = c, 1, s
		g.colDims = spatialRank
	}
	g.w, g.b = l.optionalParam(n, "weight"), l.optionalParam(n, "bias")
	g.x = l.contiguous(x, n)
	out := l.newOutput(n.Name, n.Output().Shape, n.Output().DType)
	g.groupBase = groupBase{nodes: []string{n.Name}, ops: []string{n.Op}, out: out}
	if g.colDims < 0 {
		// a GroupNorm row spans part of the channel dim: address fused operands by the flat index
		g.epi = &epilogue{shape: out.Shape, axes: [][2]int{{0, rank}}, vars: []string{"(row * R + cols)"}, masks: []string{"cmask"}}
	} else {
		g.epi = &epilogue{shape: out.Shape, axes: [][2]int{{0, rank - g.colDims}, {rank - g.colDims, rank}},
			vars: []string{"row", "cols"}, masks: []string{"", "cmask"}}
	}
	l.addGroup(g, n.Name)
	return nil
}

// lowerInstanceNormRunning: InstanceNorm with tracked running stats normalises with them in
// eval mode, exactly like eval BatchNorm.
func lowerInstanceNormRunning(l *lowerer, n *graph.Node) error {
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	ex, leaves, err := batchNormExpr(l, &graph.Node{Name: n.Name, Op: n.Op, Params: n.Params,
		Attrs:   graph.Attrs{"training": false, "eps": n.Attrs.Float("eps"), "track_running_stats": true},
		Outputs: n.Outputs}, leafExpr(0), []View{x})
	if err != nil {
		return err
	}
	return l.newElementwiseNode(n, ex, leaves)
}

type normData struct {
	Fn           string
	Header       []string
	Center       bool
	HasW, HasB   bool
	ColsOnly     bool // norm_rows.py: the affine parameters are indexed by the column alone
	FullRows     bool // norm_rows.py: R == BLOCK, no column is masked
	OneTile      bool // norm_rows.py: R <= BLOCK, x is read once
	Epilogue     []loadLine
	EpilogueArgs []string
	ExtraArgs    []string
	Body         []string
}

func (g *normGroup) emit(l *lowerer) (*Launch, error) {
	fn := kernelName(g.index, g.ops)
	re, err := g.epi.render("acc", "cmask", "tl.float32", "(model + model_base) * out_mstride + row * R + cols", "e")
	if err != nil {
		return nil, err
	}
	var args []LaunchArg
	args = append(args, ptrArgs("x", g.x)...)
	if g.w != nil {
		args = append(args, ptrArgs("w", *g.w)...)
	}
	if g.b != nil {
		args = append(args, ptrArgs("b", *g.b)...)
	}
	args = append(args, ptrArgs("out", g.out)...)
	args = append(args, re.args...)
	args = append(args, intArg("R", g.r))
	if g.cpu {
		args = append(args, intArg("ROWS", g.rows))
	}
	args = append(args, intArg("rows_per_sample", g.rowsPerSample), intArg("ch_per_row", g.chPerRow),
		intArg("spatial", g.spa), LaunchArg{Name: "eps", Kind: FloatArg, Float: g.eps})
	args = append(args, re.extra...)
	d := normData{Fn: fn, Header: header(g.nodes, g.ops), Center: g.center, HasW: g.w != nil, HasB: g.b != nil,
		Epilogue: re.loads, EpilogueArgs: argNames(re.args), ExtraArgs: argNames(re.extra), Body: re.body}
	if g.cpu {
		// BLOCK_O rows a program (norm_rows.py): one row's tiles are too small for the CPU
		block := clamp(nextPow2(g.r), 16, 4096)
		bo := rowBlock(g.base(), g.rows, block)
		d.ColsOnly, d.FullRows, d.OneTile = g.rowsPerSample == 1 && g.spa == 1, g.r == block, g.r <= block
		text, err := templates.Render("norm_rows.py", d)
		if err != nil {
			return nil, err
		}
		return &Launch{
			Kernel:    newKernel("norm_rows.py", fn, text, map[string]any{"BLOCK_O": int64(bo), "BLOCK": int64(block)}),
			Grid:      [3]int{cdiv(g.rows, bo), l.n, 1},
			ModelAxis: 1,
			Args:      args,
		}, nil
	}
	text, err := templates.Render("norm.py", d)
	if err != nil {
		return nil, err
	}
	block := vectorBlock(g) // the chosen tunables, else heuristicVectorBlock
	return &Launch{
		Kernel:    newKernel("norm.py", fn, text, map[string]any{"BLOCK": int64(block)}),
		Grid:      [3]int{g.rows, l.n, 1},
		ModelAxis: 1,
		Args:      args,
	}, nil
}
