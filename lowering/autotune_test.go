package lowering

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/graph"
)

type mapDecisions map[string][]byte

func (m mapDecisions) Get(k string) ([]byte, bool)  { v, ok := m[k]; return v, ok }
func (m mapDecisions) Put(k string, v []byte) error { m[k] = v; return nil }

func mlpForTuning(t *testing.T) *graph.Graph {
	t.Helper()
	g, err := graph.Load("../examples/mlp/graph.json")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// The chooser logs Lower's questions in order, agrees with HeuristicChooser without a store,
// and a forced answer changes the plan from that point on.
func TestAutotuneChooserLogsAndForces(t *testing.T) {
	g := mlpForTuning(t)
	heur, err := Lower(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, points, err := LowerWithDecisions(g, Options{}, &autotune.Tuner{Heuristic: Heuristic}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// mlp: relu into fc1's epilogue, fc1 with fc2, then the group's strategy
	if len(points) != 3 || len(plan.Launches) != len(heur.Launches) || plan.Launches[0].Strategy != Fused {
		t.Fatalf("%d decisions, %d launches (heuristic plan: %d)\n%s", len(points), len(plan.Launches), len(heur.Launches), ExplainDecisions(points))
	}
	for i, p := range points {
		if p.Index != i || p.Decision.Source != autotune.SourceHeuristic || p.Forced {
			t.Errorf("decision %d: %+v", i, p)
		}
	}
	if got := points[0].Label(); got != "linear,relu [32 128] N=8: fused|unfused" {
		t.Errorf("label %q", got)
	}
	unfused, upoints, err := LowerWithDecisions(g, Options{}, &autotune.Tuner{Heuristic: Heuristic}, map[int]string{0: "unfused"})
	if err != nil {
		t.Fatal(err)
	}
	if len(unfused.Launches) != 3 || !upoints[0].Forced || upoints[0].Key() != points[0].Key() {
		t.Fatalf("forcing decision 0 to unfused: %d launches\n%s", len(unfused.Launches), ExplainDecisions(upoints))
	}
	if _, _, err := LowerWithDecisions(g, Options{}, nil, map[int]string{0: "no-such"}); err == nil || !strings.Contains(err.Error(), `"no-such"`) {
		t.Fatalf("unknown forced id: %v", err)
	}
}

// A decision recorded in the store wins over the heuristic, and explain says "recorded".
func TestAutotuneChooserUsesRecordedDecisions(t *testing.T) {
	g := mlpForTuning(t)
	store := mapDecisions{}
	tuner := &autotune.Tuner{Store: store, Heuristic: Heuristic}
	_, points, err := LowerWithDecisions(g, Options{}, tuner, nil)
	if err != nil {
		t.Fatal(err)
	}
	// record "unfused" for the first question, as `widejit tune` would after measuring
	p := points[0]
	rec := autotune.Record{Format: 1, Key: p.Key(), Problem: p.Problem, Candidates: p.Candidates, Winner: "unfused",
		Source: "measured", Ranking: []string{"unfused", "fused"},
		Timings: []autotune.Timing{{CandidateID: "unfused", Median: 1000, Samples: 3}, {CandidateID: "fused", Median: 2000, Samples: 3}}}
	data, _ := json.Marshal(rec)
	store[p.Key()] = data
	plan, points, err := LowerWithDecisions(g, Options{}, tuner, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Launches) != 3 || points[0].Decision.Source != autotune.SourceRecorded {
		t.Fatalf("%d launches\n%s", len(plan.Launches), ExplainDecisions(points))
	}
	ex := ExplainDecisions(points)
	if !strings.Contains(ex, "fused|unfused -> unfused  source: recorded: 0.00ms median of 3 runs (next: fused 0.00ms)") {
		t.Fatalf("explain:\n%s", ex)
	}
	if !strings.Contains(plan.Launches[0].Reason, "by recorded measurement") {
		t.Fatalf("launch reason %q", plan.Launches[0].Reason)
	}
}
