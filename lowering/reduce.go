package lowering

import (
	"fmt"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/triton/templates"
)

// The reduction family: softmax/log_softmax along any dim and sum/mean/amax over any dims,
// on a contiguous tensor viewed as [outer, R, inner] per model (reduce.py).

func init() {
	registerOp(lowerSoftmax, "softmax", "log_softmax")
	registerOp(lowerReduce, "sum", "mean", "amax")
}

type reduceGroup struct {
	groupBase
	x               View
	kind            string
	outer, r, inner int
}

func lowerSoftmax(l *lowerer, n *graph.Node) error {
	if l.tryRowTail(n) {
		return nil
	}
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	if !x.DType.IsFloat() {
		return fmt.Errorf("input is %s, want a floating-point tensor", x.DType)
	}
	x = l.contiguous(x, n)
	d := n.Attrs.Int("dim")
	if len(x.Shape) == 0 {
		d = 0
		x, _ = x.reshape([]int{1})
	}
	out := l.newOutput(n.Name, n.Output().Shape, n.Output().DType)
	g := &reduceGroup{groupBase: groupBase{nodes: []string{n.Name}, ops: []string{n.Op}, out: out},
		x: x, kind: n.Op, outer: numel(x.Shape[:d]), r: x.Shape[d], inner: numel(x.Shape[d+1:])}
	l.addGroup(g, n.Name)
	return nil
}

// lowerReduce reduces one run of adjacent dims per kernel, last run first (so the dims of the
// earlier runs keep their positions); mean of means over equal-sized slices is the mean.
func lowerReduce(l *lowerer, n *graph.Node) error {
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	if !x.DType.IsFloat() {
		return fmt.Errorf("input is %s; reductions are lowered for floating-point tensors only", x.DType)
	}
	dims := n.Attrs.Ints("dim")
	if len(x.Shape) == 0 {
		l.define(n.Name, x)
		return nil
	}
	var runs [][2]int
	for _, d := range dims {
		if k := len(runs); k > 0 && runs[k-1][1] == d {
			runs[k-1][1] = d + 1
		} else {
			runs = append(runs, [2]int{d, d + 1})
		}
	}
	cur := l.contiguous(x, n)
	for i := len(runs) - 1; i >= 0; i-- {
		lo, hi := runs[i][0], runs[i][1]
		shape := append(append([]int(nil), cur.Shape[:lo]...), cur.Shape[hi:]...)
		name := n.Name
		if i > 0 {
			name = fmt.Sprintf("%s.part%d", n.Name, i)
		}
		out := l.newOutput(name, shape, n.Output().DType)
		g := &reduceGroup{groupBase: groupBase{nodes: []string{n.Name}, ops: []string{n.Op}, out: out},
			x: cur, kind: n.Op, outer: numel(cur.Shape[:lo]), r: numel(cur.Shape[lo:hi]), inner: numel(cur.Shape[hi:])}
		l.addGroup(g, name)
		// shift the earlier runs: dims after lo moved left by hi-lo (only later runs did, and
		// they are done), so earlier runs are unaffected
		cur = out
	}
	final, ok := cur.reshape(n.Output().Shape) // keepdim re-inserts size-1 dims
	if !ok {
		return fmt.Errorf("internal: reduced shape %s does not fit %s", shapeStr(cur.Shape), shapeStr(n.Output().Shape))
	}
	l.values[n.Name] = final
	return nil
}

type reduceData struct {
	Fn      string
	Header  []string
	Kind    string
	OnePass bool // reduce_rows.py: the row fits one tile
}

func (g *reduceGroup) emit(l *lowerer) (*Launch, error) {
	fn := kernelName(g.index, g.ops)
	if g.cpu && g.inner == 1 {
		return g.emitRows(l, fn)
	}
	bi := clamp(nextPow2(g.inner), 1, 64)
	br := clamp(nextPow2(g.r), 1, 4096/bi)
	if br*bi < 16 {
		br = 16 / bi // keep tiles at least 16 elements
	}
	iblocks := cdiv(g.inner, bi)
	var args []LaunchArg
	args = append(args, ptrArgs("x", g.x)...)
	args = append(args, ptrArgs("out", g.out)...)
	args = append(args, intArg("R", g.r), intArg("inner", g.inner), intArg("iblocks", iblocks))
	text, err := templates.Render("reduce.py", reduceData{Fn: fn, Header: header(g.nodes, g.ops), Kind: g.kind})
	if err != nil {
		return nil, err
	}
	return &Launch{
		Kernel:    newKernel("reduce.py", fn, text, map[string]any{"BLOCK_R": int64(br), "BLOCK_I": int64(bi)}),
		Grid:      [3]int{g.outer * iblocks, l.n, 1},
		ModelAxis: 1,
		Args:      args,
	}, nil
}

// emitRows runs a last-dim reduction on the CPU as reduce_rows.py: BLOCK_O rows a program,
// about cpuRowTile elements a tile, over at least two programs per core.
func (g *reduceGroup) emitRows(l *lowerer, fn string) (*Launch, error) {
	br := clamp(nextPow2(g.r), 16, 4096)
	bo := rowBlock(g.base(), g.outer, br)
	var args []LaunchArg
	args = append(args, ptrArgs("x", g.x)...)
	args = append(args, ptrArgs("out", g.out)...)
	args = append(args, intArg("R", g.r), intArg("OUTER", g.outer))
	text, err := templates.Render("reduce_rows.py", reduceData{Fn: fn, Header: header(g.nodes, g.ops), Kind: g.kind, OnePass: g.r <= br})
	if err != nil {
		return nil, err
	}
	return &Launch{
		Kernel:    newKernel("reduce_rows.py", fn, text, map[string]any{"BLOCK_O": int64(bo), "BLOCK_R": int64(br)}),
		Grid:      [3]int{cdiv(g.outer, bo), l.n, 1},
		ModelAxis: 1,
		Args:      args,
	}, nil
}

// cpuRowTile is the elements of a CPU row-block tile: enough rows that a program's few tile
// operations outweigh its fixed costs, few enough to stay in L1/L2.
const cpuRowTile = 8192

// rowBlock is how many rows of width block one CPU program takes: about cpuRowTile
// elements, fewer when the launch would otherwise have under two programs per core.
func rowBlock(g *groupBase, rows, block int) int {
	bo := clamp(cpuRowTile/block, 1, nextPow2(rows))
	for bo > 1 && cdiv(rows, bo)*g.models < 2*g.cores {
		bo /= 2
	}
	return bo
}
