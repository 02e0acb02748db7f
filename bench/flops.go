package main

import (
	"github.com/widejit/widejit/graph"
)

// graphFLOPs counts one model's multiply-adds (2 FLOPs each) per call: Linear, matmul,
// Conv1d/Conv2d and multi-head attention (its projections and both attention products), the
// work a BLAS or convolution kernel does; element-wise ops, norms and pooling are not counted
// (they are memory-bound, and small next to these). uncounted names the ops with
// multiply-adds that are not counted (recurrent layers, 3-d and transposed convolutions).
func graphFLOPs(g *graph.Graph) (flops float64, uncounted []string) {
	for _, n := range g.Nodes {
		out := float64(numelOf(n.Output().Shape))
		a := n.Attrs
		switch n.Op {
		case "linear":
			flops += 2 * out * float64(a.Int("in_features"))
		case "matmul":
			s := n.Inputs[0].Type.Shape
			flops += 2 * out * float64(s[len(s)-1])
		case "conv1d", "conv2d":
			taps := 1
			for _, k := range a.Ints("kernel_size") {
				taps *= k
			}
			flops += 2 * out * float64(a.Int("in_channels")/a.Int("groups")*taps)
		case "multihead_attention":
			q, k := n.Inputs[0].Type.Shape, n.Inputs[1].Type.Shape
			e := float64(a.Int("embed_dim"))
			s := k[0] // the key's sequence length: [S, B, E], [S, E], or [B, S, E] batch first
			if len(k) == 3 && a.Bool("batch_first") {
				s = k[1]
			}
			nq, nk := float64(numelOf(q)), float64(numelOf(k))
			// Q and output projections over the queries, K and V over the keys, Q K^T and A V
			flops += 2*e*(2*nq+2*nk) + 4*nq*float64(s)
		case "rnn", "gru", "lstm", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d":
			uncounted = append(uncounted, n.Name+" ("+n.Op+")")
		}
	}
	return flops, uncounted
}

func numelOf(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
