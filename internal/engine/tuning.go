package engine

import (
	"context"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/cache"
	"github.com/widejit/widejit/lowering"
)

// Tuning is the autotuner of one command or model: decisions recorded in the kernel cache
// (widejit tune), then the configured plugins, then lowering's heuristic. It hands out one
// chooser per plan.
type Tuning struct {
	Tuner        *autotune.Tuner
	closePlugins func()
	choosers     map[string]*lowering.AutotuneChooser
}

// NewTuning builds the tuner on store (cache.Off() records nothing) with the configured
// plugins. Close it when lowering is done.
func (c Config) NewTuning(ctx context.Context, store *cache.Store) *Tuning {
	if ctx == nil {
		ctx = context.Background()
	}
	rankers, closePlugins := c.LoadPlugins(ctx)
	return &Tuning{
		Tuner:        &autotune.Tuner{Store: DecisionStore{store}, Plugins: rankers, Heuristic: lowering.Heuristic, Warn: c.Warn},
		closePlugins: closePlugins,
		choosers:     map[string]*lowering.AutotuneChooser{},
	}
}

// Chooser returns a fresh chooser for the plan called name (e.g. the run mode).
func (t *Tuning) Chooser(name string) lowering.Chooser {
	c := &lowering.AutotuneChooser{Tuner: t.Tuner}
	t.choosers[name] = c
	return c
}

// Explain lists the decisions of the plan called name and their sources.
func (t *Tuning) Explain(name string) string {
	c := t.choosers[name]
	if c == nil {
		return ""
	}
	return lowering.ExplainDecisions(c.Decisions())
}

// Close closes the plugins.
func (t *Tuning) Close() { t.closePlugins() }

// DecisionStore lets the autotuner record its decisions in the kernel cache.
type DecisionStore struct{ Store *cache.Store }

func (s DecisionStore) key(k string) (cache.Key, error) {
	return cache.NewKey(cache.KindDecision).String("autotune_key", k).Key()
}

// Get returns the decision recorded under k.
func (s DecisionStore) Get(k string) ([]byte, bool) {
	key, err := s.key(k)
	if err != nil {
		return nil, false
	}
	return s.Store.GetDecision(key)
}

// Put records a decision under k.
func (s DecisionStore) Put(k string, value []byte) error {
	key, err := s.key(k)
	if err != nil {
		return err
	}
	return s.Store.PutDecision(key, k, value)
}

var _ autotune.DecisionStore = DecisionStore{}
