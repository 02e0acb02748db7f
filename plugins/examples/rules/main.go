package main

import (
	"fmt"

	"github.com/widejit/widejit/plugins/sdk"
)

// Thresholds of the rules. They are illustrations, not measurements: tune them against
// `widejit tune` on your device.
const (
	// fuseFromN: from this many models up, one fused kernel beats separate launches...
	fuseFromN = 4
	// fuseUpToHidden: ...while the group's widest dimension is at most this; above it the
	// fused kernel's intermediate tiles stop fitting in registers / cache.
	fuseUpToHidden = 1024
)

func init() { sdk.Register(choose) }

func choose(req sdk.Request) sdk.Response {
	hidden := widest(req.Shapes)
	switch {
	case req.N == 1:
		return rank(req, "one model: its own kernel, no widening overhead",
			"sequential", "fused", "batched")
	case req.N >= fuseFromN && hidden <= fuseUpToHidden:
		return rank(req, fmt.Sprintf("N=%d >= %d and hidden %d <= %d: fuse", req.N, fuseFromN, hidden, fuseUpToHidden),
			"fused", "batched", "sequential")
	default:
		return rank(req, fmt.Sprintf("N=%d, hidden %d: one batched launch per op", req.N, hidden),
			"batched", "fused", "sequential")
	}
}

// widest is the largest dimension among the inputs after the first (the weights); the
// activation's first dimension is the batch, not a hidden size.
func widest(shapes [][]int) int {
	w := 0
	for i, shape := range shapes {
		for j, d := range shape {
			if i == 0 && j == 0 {
				continue
			}
			w = max(w, d)
		}
	}
	return w
}

// rank orders the candidates by strategy and, within a strategy, prefers the block size
// closest to the batch (so small batches do not pay for large idle tiles).
func rank(req sdk.Request, note string, strategies ...string) sdk.Response {
	batch := 0
	if len(req.Shapes) > 0 && len(req.Shapes[0]) > 0 {
		batch = req.Shapes[0][0]
	}
	byStrategy := sdk.RankByStrategy(req.Candidates, strategies...)
	params := map[string]sdk.Candidate{}
	for _, c := range req.Candidates {
		params[c.ID] = c
	}
	// Stable insertion sort within runs of one strategy, by distance of BLOCK_M to the batch.
	for i := 1; i < len(byStrategy); i++ {
		for j := i; j > 0; j-- {
			a, b := params[byStrategy[j-1]], params[byStrategy[j]]
			if a.Strategy != b.Strategy || blockDistance(b, batch) >= blockDistance(a, batch) {
				break
			}
			byStrategy[j-1], byStrategy[j] = byStrategy[j], byStrategy[j-1]
		}
	}
	return sdk.Response{Ranking: byStrategy, Note: note}
}

func blockDistance(c sdk.Candidate, batch int) int {
	m, ok := c.Params["BLOCK_M"]
	if !ok || batch == 0 {
		return 0
	}
	if m > batch {
		return m - batch
	}
	return batch - m
}

func main() {}
