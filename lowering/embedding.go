package lowering

import (
	"fmt"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/triton/templates"
)

// The gather family: Embedding. Each model looks its indices up in its own table; shared
// indices are read with model stride 0. padding_idx only affects training (its row is
// whatever the weights hold), so the forward pass is a plain lookup.

func init() {
	registerOp(lowerEmbedding, "embedding")
}

type embeddingGroup struct {
	groupBase
	idx, w  View
	t, v, d int
}

func lowerEmbedding(l *lowerer, n *graph.Node) error {
	idx, err := l.input(n, 0)
	if err != nil {
		return err
	}
	if !idx.DType.IsInteger() {
		return fmt.Errorf("indices are %s, want an integer tensor", idx.DType)
	}
	w := l.values[n.Param("weight").Name]
	if idx.Buf.Kind == InputBuffer {
		// an index out of range would read another model's table: inputs are checked on the
		// host before any launch (the error names the index and where it is); computed
		// indices by the kernel's device_assert
		l.indexChecks = append(l.indexChecks, IndexCheck{Input: idx.Buf.Name, Node: n.Name, Limit: w.Shape[0]})
	}
	idx = l.contiguous(idx, n)
	out := l.newOutput(n.Name, n.Output().Shape, n.Output().DType)
	g := &embeddingGroup{groupBase: groupBase{nodes: []string{n.Name}, ops: []string{n.Op}, out: out},
		idx: idx, w: w, t: idx.Numel(), v: w.Shape[0], d: w.Shape[1]}
	l.addGroup(g, n.Name)
	return nil
}

type embeddingData struct {
	Fn     string
	Header []string
}

func (g *embeddingGroup) emit(l *lowerer) (*Launch, error) {
	fn := kernelName(g.index, g.ops)
	bt := clamp(nextPow2(g.t), 1, 16)
	bd := clamp(nextPow2(g.d), 16, 128)
	var args []LaunchArg
	args = append(args, ptrArgs("idx", g.idx)...)
	args = append(args, ptrArgs("w", g.w)...)
	args = append(args, ptrArgs("out", g.out)...)
	args = append(args, intArg("T", g.t), intArg("V", g.v), intArg("D", g.d))
	text, err := templates.Render("embedding.py", embeddingData{Fn: fn, Header: header(g.nodes, g.ops)})
	if err != nil {
		return nil, err
	}
	return &Launch{
		Kernel:    newKernel("embedding.py", fn, text, map[string]any{"BLOCK_T": int64(bt), "BLOCK_D": int64(bd)}),
		Grid:      [3]int{cdiv(g.t, bt), l.n, 1},
		ModelAxis: 1,
		Args:      args,
	}, nil
}
