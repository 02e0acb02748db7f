package lowering

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/graph"
)

// AutotuneChooser is a Chooser backed by an autotune.Tuner (recorded measurements, then
// strategy plugins, then the Tuner's Heuristic; give it Heuristic for the built-in one). It
// logs every decision Lower asks for, in order, so that `run --explain` can say which source
// decided each group, and `widejit tune` can find the decision points of a plan and force one
// of them to each of its candidates in turn.
//
// Lower asks its questions in a fixed order for a given graph and set of answers: the fusion
// decisions while grouping, then one strategy decision per group. A decision point is the
// index of a question in that order.
//
// The candidates are what lowering offers: fused or not, and for each group batched or
// sequential, times the kernel's tunables (tile sizes, num_warps, num_stages) where its family has them
// (ids like "batched/bm32-bn64-bk32-w4", values in Params; see strategyCandidates).
type AutotuneChooser struct {
	Tuner *autotune.Tuner
	Ctx   context.Context // nil: context.Background()

	mu     sync.Mutex
	forced map[int]string
	log    []DecisionPoint
}

// DecisionPoint is one question Lower asked and its answer.
type DecisionPoint struct {
	Index      int
	Problem    autotune.Problem
	Candidates []autotune.Candidate
	Decision   autotune.Decision
	// Forced is true when the answer was forced by Force rather than decided by the Tuner.
	Forced bool
}

// Key is the decision store key of the point (autotune.Key).
func (d DecisionPoint) Key() string { return autotune.Key(d.Problem, d.Candidates) }

// Label names the question readably, e.g. "linear,relu [32 128] N=8: fused|unfused"; with
// tunables, the strategies and the number of configurations, e.g.
// "linear,relu,linear [32 64] N=8: batched|sequential x 6 tunables".
func (d DecisionPoint) Label() string {
	ids := make([]string, len(d.Candidates))
	var strategies []string
	tuned := false
	for i, c := range d.Candidates {
		ids[i] = c.ID
		tuned = tuned || c.Params != nil
		if !slices.Contains(strategies, c.Strategy) {
			strategies = append(strategies, c.Strategy)
		}
	}
	if tuned {
		ids = []string{fmt.Sprintf("%s x %d tunables", strings.Join(strategies, "|"), len(d.Candidates)/max(len(strategies), 1))}
	}
	var shape []int
	if len(d.Problem.Shapes) > 0 {
		shape = d.Problem.Shapes[0]
	}
	return fmt.Sprintf("%s %v N=%d: %s", strings.Join(d.Problem.OpChain, ","), shape, d.Problem.N, strings.Join(ids, "|"))
}

// Force makes the chooser answer decision point index with candidate id, whatever the Tuner
// would say. It must be called before Lower.
func (c *AutotuneChooser) Force(index int, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forced == nil {
		c.forced = map[int]string{}
	}
	c.forced[index] = id
}

// Decisions returns the decisions made so far, in the order Lower asked for them.
func (c *AutotuneChooser) Decisions() []DecisionPoint {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]DecisionPoint(nil), c.log...)
}

// Choose implements Chooser.
func (c *AutotuneChooser) Choose(p autotune.Problem, cands []autotune.Candidate) (Choice, error) {
	c.mu.Lock()
	index := len(c.log)
	forced, isForced := c.forced[index]
	c.mu.Unlock()
	point := DecisionPoint{Index: index, Problem: p, Candidates: append([]autotune.Candidate(nil), cands...)}
	if isForced {
		known := false
		for _, cand := range cands {
			known = known || cand.ID == forced
		}
		if !known {
			return Choice{}, fmt.Errorf("decision %d (%s): forced candidate %q is not among the candidates", index, point.Label(), forced)
		}
		point.Forced = true
		point.Decision = autotune.Decision{CandidateID: forced, Source: "forced", Ranking: []string{forced}, Key: point.Key()}
	} else {
		tuner := c.Tuner
		if tuner == nil {
			tuner = &autotune.Tuner{Heuristic: Heuristic}
		}
		ctx := c.Ctx
		if ctx == nil {
			ctx = context.Background()
		}
		d, err := tuner.Decide(ctx, p, cands)
		if err != nil {
			return Choice{}, err
		}
		point.Decision = d
	}
	c.mu.Lock()
	c.log = append(c.log, point)
	c.mu.Unlock()
	d := point.Decision
	var reason string
	switch {
	case point.Forced:
		reason = "forced (tuning)"
	case d.Source == autotune.SourceHeuristic:
		reason = heuristicReason(p, d.CandidateID, cands)
	default:
		reason = d.Explain() // "<id> by recorded measurement: ..." or "<id> by plugin:<name>: ..."
	}
	return Choice{ID: d.CandidateID, Reason: reason}, nil
}

var _ Chooser = (*AutotuneChooser)(nil)

// LowerWithDecisions lowers g with a fresh AutotuneChooser on tuner (forcing the given decision
// points) and returns the plan and every decision taken for it.
func LowerWithDecisions(g *graph.Graph, opts Options, tuner *autotune.Tuner, forced map[int]string) (*Plan, []DecisionPoint, error) {
	c := &AutotuneChooser{Tuner: tuner}
	for i, id := range forced {
		c.Force(i, id)
	}
	opts.Chooser = c
	plan, err := Lower(g, opts)
	if err != nil {
		return nil, nil, err
	}
	return plan, c.Decisions(), nil
}

// ExplainDecisions lists, for each decision of a plan, what was asked, what was chosen and
// which source decided it (recorded, plugin:<name>, heuristic), one line each.
func ExplainDecisions(points []DecisionPoint) string {
	if len(points) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("decisions (source: recorded = measured by `widejit tune`, plugin:<name>, heuristic):\n")
	for _, d := range points {
		src := d.Decision.Source
		if d.Decision.Reused && src != autotune.SourceRecorded {
			src += " (recorded answer)"
		}
		fmt.Fprintf(&sb, "  [%d] %s -> %s  source: %s", d.Index, d.Label(), d.Decision.CandidateID, src)
		switch {
		case d.Decision.Source == autotune.SourceRecorded:
			// Explain: "<id> by recorded measurement: <timings>"
			sb.WriteString(strings.TrimPrefix(d.Decision.Explain(), d.Decision.CandidateID+" by recorded measurement"))
		case d.Decision.Note != "":
			sb.WriteString(": " + d.Decision.Note)
		}
		sb.WriteString("\n")
	}
	return sb.String()
}
