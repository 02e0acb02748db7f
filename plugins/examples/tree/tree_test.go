package main

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/plugins/sdk"
	"github.com/widejit/widejit/plugins/treefit"
)

// TestGeneratedTreeMatchesFit checks the committed tree_gen.go against a tree fitted now on the
// committed timings: same features, and the same prediction for every recorded problem.
func TestGeneratedTreeMatchesFit(t *testing.T) {
	if treeFeatures != strings.Join(treefit.FeatureNames, ",") {
		t.Fatalf("tree_gen.go was fitted on features %q, treefit now computes %q: regenerate it", treeFeatures, strings.Join(treefit.FeatureNames, ","))
	}
	f, err := os.Open("timings.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records, err := autotune.ReadTimings(f)
	if err != nil {
		t.Fatal(err)
	}
	var samples []treefit.Sample
	for _, rec := range records {
		x := treefit.Features(rec.Problem.Request(rec.Candidates))
		strategy := ""
		for _, c := range rec.Candidates {
			if c.ID == rec.Winner {
				strategy = c.Strategy
			}
		}
		samples = append(samples, treefit.Sample{X: x, Label: strategy})
	}
	tree, err := treefit.Fit(samples, treefit.Options{MaxDepth: 4, MinLeaf: 2})
	if err != nil {
		t.Fatal(err)
	}
	correct := 0
	for _, s := range samples {
		got, want := predictStrategies(s.X), tree.Predict(s.X)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("features %v: generated tree says %v, fitted tree says %v", s.X, got, want)
		}
		if got[0] == s.Label {
			correct++
		}
	}
	// The sample timings follow a simple rule the tree must capture.
	if correct != len(samples) {
		t.Fatalf("the tree predicts %d of %d recorded winners", correct, len(samples))
	}
}

func TestChooseRanksThePredictedStrategyFirst(t *testing.T) {
	cands := []sdk.Candidate{
		{ID: "s", Strategy: "sequential"},
		{ID: "b", Strategy: "batched"},
		{ID: "f", Strategy: "fused"},
	}
	req := func(n, hidden int) sdk.Request {
		return sdk.Request{OpChain: []string{"linear"}, N: n, Shapes: [][]int{{64, hidden}, {hidden, hidden}, {hidden}}, DTypes: []string{"float32"}, Candidates: cands}
	}
	for _, c := range []struct {
		n, hidden int
		first     string
	}{{8, 128, "f"}, {8, 2048, "b"}, {1, 2048, "s"}} {
		resp := choose(req(c.n, c.hidden))
		if len(resp.Ranking) != 3 || resp.Ranking[0] != c.first {
			t.Errorf("N=%d hidden=%d: ranking %v, want %s first", c.n, c.hidden, resp.Ranking, c.first)
		}
	}
}
