package lowering

import (
	"fmt"
	"strings"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/plugins/abi"
)

// Chooser picks one candidate for a kernel group. Candidates and problems are autotune's
// types, so a tuner (recorded measurements, plugins) can stand in for the heuristic.
type Chooser interface {
	Choose(p autotune.Problem, candidates []autotune.Candidate) (Choice, error)
}

// Choice is the chosen candidate and why.
type Choice struct {
	ID     string
	Reason string
}

// HeuristicChooser is the built-in Chooser: fuse whenever a fusion is offered (fusions are
// only offered when they save a round trip through memory without recomputation), one
// batched launch for N > 1, and the single-model kernel for N = 1.
type HeuristicChooser struct{}

// Choose implements Chooser.
func (HeuristicChooser) Choose(p autotune.Problem, cands []autotune.Candidate) (Choice, error) {
	ranked := Heuristic(p, cands)
	if len(ranked) == 0 {
		return Choice{}, fmt.Errorf("no candidates for %s", strings.Join(p.OpChain, "-"))
	}
	return Choice{ID: ranked[0], Reason: heuristicReason(p, ranked[0], cands)}, nil
}

// Heuristic ranks candidates best first; it has autotune.Heuristic's shape. It ranks by
// strategy only and keeps the candidates' order within one (a stable sort): lowering lists
// each strategy's built-in tunables first, so the heuristic keeps the emitters' tiles.
func Heuristic(p autotune.Problem, cands []autotune.Candidate) []string {
	score := func(c autotune.Candidate) int {
		switch c.Strategy {
		case Fused:
			return 0
		case Batched:
			if p.N == 1 {
				return 2
			}
			return 1
		case Sequential:
			if p.N == 1 {
				return 1
			}
			return 3
		}
		return 4
	}
	ids := make([]string, 0, len(cands))
	order := make([]autotune.Candidate, len(cands))
	copy(order, cands)
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && score(order[j]) < score(order[j-1]); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	for _, c := range order {
		ids = append(ids, c.ID)
	}
	return ids
}

var _ autotune.Heuristic = Heuristic

func heuristicReason(p autotune.Problem, id string, cands []autotune.Candidate) string {
	var strategy string
	for _, c := range cands {
		if c.ID == id {
			strategy = c.Strategy
		}
	}
	switch strategy {
	case Fused:
		return "heuristic: fusing keeps the intermediate out of memory and saves a launch"
	case Batched:
		return fmt.Sprintf("heuristic: one launch serves all %d models", p.N)
	case Sequential:
		if p.N == 1 {
			return "heuristic: N=1, the single-model kernel is the whole job"
		}
		return "heuristic: sequential"
	}
	return "heuristic"
}

func (l *lowerer) problem(chain []string, out View) autotune.Problem {
	dtypes := []string{string(out.DType)}
	if p := l.opts.inputPrecision(); p != "ieee" {
		// fp32 products in another type time differently: a decision of their own
		dtypes = append(dtypes, "dot:"+p)
	}
	return autotune.Problem{OpChain: chain, Shapes: [][]int{out.Shape}, DTypes: dtypes,
		N: l.n, Device: PluginDevice(l.opts.Device, l.opts.BackendOptions)}
}

// PluginDevice is info as the autotuner's keys and the plugin ABI describe it, with the
// options its backend was opened with.
func PluginDevice(info jit.DeviceInfo, backendOptions map[string]string) autotune.DeviceInfo {
	c := info.Caps
	return autotune.DeviceInfo{Kind: info.Kind, Name: info.Name, ComputeCapability: info.ComputeCapability,
		MemoryBytes: info.MemoryBytes, Cores: info.Cores, BackendOptions: backendOptions,
		Capabilities: abi.Capabilities{Version: abi.CapabilitiesVersion, HostThreads: c.HostThreads,
			SIMDWidth: c.SIMDWidth, WarpSize: c.WarpSize, SharedMemoryBytes: c.SharedMemoryBytes,
			TensorCores: c.TensorCores, DiscreteMemory: c.DiscreteMemory, WarpgroupMMA: c.WarpgroupMMA}}
}

// decideFusion asks the Chooser whether to fuse op into a group computing ops.
func (l *lowerer) decideFusion(chain []string, out View, ops []string, op string) (bool, string) {
	cands := []autotune.Candidate{{ID: "fused", Strategy: Fused}, {ID: "unfused", Strategy: Batched}}
	c, err := l.chooser.Choose(l.problem(chain, out), cands)
	if err != nil {
		return false, err.Error()
	}
	return c.ID == "fused", c.Reason
}

// chooseStrategy decides a group's strategy and tunables before it is emitted: forced by the
// options (with the built-in tunables), else the Chooser's pick among strategy x tunables
// (strategyCandidates). The tunables go to the group (groupBase.tuned) for its emitter.
func (l *lowerer) chooseStrategy(gr group) (strategy, reason string, err error) {
	b := gr.base()
	b.cpu, b.cores, b.models = l.opts.Device.Caps.HostThreads, max(l.opts.Device.Cores, 1), l.n
	b.wgmma = l.opts.Device.Caps.WarpgroupMMA
	b.precision = l.opts.inputPrecision()
	if l.opts.ModelMajor {
		b.models = 1
	}
	if l.opts.Strategy != "" {
		return l.opts.Strategy, "forced by options", nil
	}
	cands := strategyCandidates(gr, l.opts.Device)
	c, err := l.chooser.Choose(l.problem(b.ops, b.out), cands)
	if err != nil {
		return "", "", fmt.Errorf("choosing a strategy for %s: %w", strings.Join(b.nodes, ","), err)
	}
	var chosen *autotune.Candidate
	for i := range cands {
		if cands[i].ID == c.ID {
			chosen = &cands[i]
		}
	}
	if chosen == nil || (chosen.Strategy != Batched && chosen.Strategy != Sequential) {
		return "", "", fmt.Errorf("chooser picked unknown candidate %q for %s", c.ID, strings.Join(b.nodes, ","))
	}
	if chosen.Params != nil {
		b.tuned = Tunables(chosen.Params)
	}
	return chosen.Strategy, c.Reason, nil
}

// applyStrategy records the decision on the group's launch: strategy (batched becomes fused
// for a merged group), why, the strategies considered, and the tunables rendered.
func (l *lowerer) applyStrategy(gr group, ln *Launch, strategy, reason string) {
	b := gr.base()
	ln.Nodes, ln.Ops = b.nodes, b.ops
	ln.Candidates = []string{Batched, Sequential}
	if len(b.nodes) > 1 {
		ln.Candidates = []string{Fused, Sequential}
	}
	if tg, ok := gr.(tunableGroup); ok {
		if space, ok := tg.tunables(); ok {
			ln.Tunables = chosenTunables(tg)
			ln.TunablesID = space.id(ln.Tunables)
			applyGPUTunables(ln.Kernel, ln.Tunables)
		}
	}
	if strategy == Batched && len(b.nodes) > 1 {
		strategy = Fused
	}
	notes := append(append([]string(nil), b.fused...), l.notes[gr]...)
	if len(notes) > 0 {
		reason += "; " + strings.Join(notes, "; ")
	}
	ln.Strategy, ln.Reason = strategy, reason
}
