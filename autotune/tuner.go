package autotune

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/widejit/widejit/plugins/abi"
)

// Tuner decides which candidate runs for each problem. The zero value decides by candidate
// order; set the fields to add sources.
type Tuner struct {
	// Store keeps and returns recorded decisions; nil records and reuses nothing.
	Store DecisionStore
	// Plugins are asked in order; the first valid answer decides.
	Plugins []Ranker
	// Heuristic decides when nothing else does, and orders what a partial plugin ranking
	// leaves out; nil means the candidates' order.
	Heuristic Heuristic
	// Warn receives plugin failures and unreadable or failed store records; nil drops them.
	Warn func(msg string)
}

func (t *Tuner) warnf(format string, args ...any) {
	if t.Warn != nil {
		t.Warn(fmt.Sprintf(format, args...))
	}
}

// Decide chooses a candidate for p. It fails only on bad input from the caller (no candidates,
// duplicate ids, a heuristic naming unknown ids); plugin and store failures are warnings.
func (t *Tuner) Decide(ctx context.Context, p Problem, candidates []Candidate) (Decision, error) {
	if err := checkCandidates(candidates); err != nil {
		return Decision{}, err
	}
	heuristic, err := t.heuristicRanking(p, candidates)
	if err != nil {
		return Decision{}, err
	}
	key := Key(p, candidates)
	if rec, ok := t.lookup(key, candidates); ok {
		return rec.Decision(), nil
	}
	for _, plugin := range t.Plugins {
		pkey := PluginKey(key, plugin.Hash())
		if rec, ok := t.lookup(pkey, candidates); ok {
			return rec.Decision(), nil
		}
		resp, err := plugin.Choose(ctx, p.Request(candidates))
		if err == nil {
			err = abi.CheckRanking(resp.Ranking, candidates)
		}
		if err != nil {
			t.warnf("strategy plugin %s failed for group %s (N=%d); falling back: %v", plugin.Name(), strings.Join(p.OpChain, ","), p.N, err)
			continue
		}
		rec := Record{
			Format:     recordFormat,
			Key:        pkey,
			Problem:    p,
			Candidates: candidates,
			Source:     SourcePlugin(plugin.Name()),
			Note:       resp.Note,
			Ranking:    abi.Complete(resp.Ranking, heuristic),
		}
		rec.Winner = rec.Ranking[0]
		t.record(rec)
		d := rec.Decision()
		d.Reused = false
		return d, nil
	}
	return Decision{CandidateID: heuristic[0], Source: SourceHeuristic, Ranking: heuristic, Key: key}, nil
}

func checkCandidates(candidates []Candidate) error {
	if len(candidates) == 0 {
		return fmt.Errorf("autotune: no candidates to choose from")
	}
	seen := make(map[string]bool, len(candidates))
	for i, c := range candidates {
		if c.ID == "" {
			return fmt.Errorf("autotune: candidates[%d] has an empty id", i)
		}
		if seen[c.ID] {
			return fmt.Errorf("autotune: candidates[%d]: duplicate id %q", i, c.ID)
		}
		seen[c.ID] = true
	}
	return nil
}

// heuristicRanking is the Heuristic's ranking completed by the candidates' order.
func (t *Tuner) heuristicRanking(p Problem, candidates []Candidate) ([]string, error) {
	order := make([]string, len(candidates))
	for i, c := range candidates {
		order[i] = c.ID
	}
	if t.Heuristic == nil {
		return order, nil
	}
	ranking := t.Heuristic(p, candidates)
	if len(ranking) == 0 {
		return order, nil
	}
	if err := abi.CheckRanking(ranking, candidates); err != nil {
		return nil, fmt.Errorf("autotune: the heuristic's ranking: %v", err)
	}
	return abi.Complete(ranking, order), nil
}

func (t *Tuner) lookup(key string, candidates []Candidate) (Record, bool) {
	if t.Store == nil {
		return Record{}, false
	}
	data, ok := t.Store.Get(key)
	if !ok {
		return Record{}, false
	}
	rec, err := decodeRecord(data, key, candidates)
	if err != nil {
		t.warnf("ignoring the recorded decision %s: %v", key, err)
		return Record{}, false
	}
	return rec, true
}

func (t *Tuner) record(rec Record) {
	if t.Store == nil {
		return
	}
	data, err := json.Marshal(rec)
	if err == nil {
		err = t.Store.Put(rec.Key, data)
	}
	if err != nil {
		t.warnf("could not record the decision %s: %v", rec.Key, err)
	}
}
