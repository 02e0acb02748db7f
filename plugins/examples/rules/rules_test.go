package main

import (
	"strings"
	"testing"

	"github.com/widejit/widejit/plugins/abi"
	"github.com/widejit/widejit/plugins/sdk"
)

func candidates() []sdk.Candidate {
	return []sdk.Candidate{
		{ID: "seq", Strategy: "sequential"},
		{ID: "bat-128", Strategy: "batched", Params: map[string]int{"BLOCK_M": 128}},
		{ID: "bat-16", Strategy: "batched", Params: map[string]int{"BLOCK_M": 16}},
		{ID: "fused-64", Strategy: "fused", Params: map[string]int{"BLOCK_M": 64}},
	}
}

func TestRules(t *testing.T) {
	cases := []struct {
		n, batch, hidden int
		want             string
	}{
		{1, 32, 256, "seq,fused-64,bat-16,bat-128"},
		{8, 32, 256, "fused-64,bat-16,bat-128,seq"},
		{8, 100, 256, "fused-64,bat-128,bat-16,seq"},   // BLOCK_M 128 is nearer a batch of 100
		{8, 32, 4096, "bat-16,bat-128,fused-64,seq"},   // too wide to fuse
		{2, 32, 256, "bat-16,bat-128,fused-64,seq"},    // too few models to fuse
		{64, 4096, 512, "fused-64,bat-128,bat-16,seq"}, // the batch is not a hidden size
	}
	for _, c := range cases {
		req := sdk.Request{N: c.n, Shapes: [][]int{{c.batch, c.hidden}, {c.hidden, c.hidden}}, Candidates: candidates()}
		resp := choose(req)
		if got := strings.Join(resp.Ranking, ","); got != c.want {
			t.Errorf("N=%d batch=%d hidden=%d: %s, want %s (%s)", c.n, c.batch, c.hidden, got, c.want, resp.Note)
		}
		if err := abi.CheckRanking(resp.Ranking, req.Candidates); err != nil || len(resp.Ranking) != 4 {
			t.Errorf("invalid ranking %v: %v", resp.Ranking, err)
		}
	}
}
