package autotune

import (
	"context"
	"time"

	"github.com/widejit/widejit/plugins/abi"
)

// Candidate is one way to compute a kernel group: a strategy (sequential, batched, fused, ...)
// and its tunables (BLOCK_M, num_warps, num_stages, ...). IDs are unique among a group's
// candidates. It is the plugin ABI's type, so plugins see exactly what the tuner sees.
type Candidate = abi.Candidate

// DeviceInfo describes the device the kernels run on.
type DeviceInfo = abi.Device

// Problem is one kernel group to decide for.
type Problem struct {
	// OpChain names the group's ops in order, e.g. ["linear", "gelu", "linear"].
	OpChain []string `json:"op_chain"`
	// Shapes holds the per-model shape of each input (without the leading N). The first input
	// is the activation with its rows flattened into dimension 0: that dimension is the batch,
	// which the decision key buckets (see Key).
	Shapes [][]int    `json:"shapes"`
	DTypes []string   `json:"dtypes"`
	N      int        `json:"n"`
	Device DeviceInfo `json:"device"`
}

// Request is the plugin request for p and candidates.
func (p Problem) Request(candidates []Candidate) abi.Request {
	return abi.Request{
		ABI:        abi.Version,
		OpChain:    p.OpChain,
		Shapes:     p.Shapes,
		DTypes:     p.DTypes,
		N:          p.N,
		Device:     p.Device,
		Candidates: candidates,
	}
}

// Sources of a decision.
const (
	SourceRecorded  = "recorded"  // a measurement recorded by `widejit tune`
	SourceHeuristic = "heuristic" // the caller's Heuristic
	sourcePlugin    = "plugin:"   // followed by the plugin's name
)

// SourcePlugin is the source of a decision made by the named plugin.
func SourcePlugin(name string) string { return sourcePlugin + name }

// Decision is the candidate chosen for a problem, and why.
type Decision struct {
	CandidateID string
	// Source is SourceRecorded, SourcePlugin(name) or SourceHeuristic.
	Source string
	// Reused is true when the decision came from the store (a measurement, or a plugin's
	// earlier answer) rather than being made now.
	Reused bool
	Note   string
	// Ranking lists every candidate id considered usable, best first; CandidateID is first.
	Ranking []string
	// Timings holds the measurements behind a recorded decision.
	Timings []Timing
	// Key is the store key the decision is (or would be) recorded under.
	Key string
}

// Timing is the measurement of one candidate.
type Timing struct {
	CandidateID string        `json:"id"`
	Median      time.Duration `json:"median_ns"`
	Samples     int           `json:"samples"`
	Err         string        `json:"error,omitempty"` // the candidate failed to run; not ranked
}

// Heuristic ranks candidates without measuring: ids best first; ids it leaves out follow in
// the candidates' order. lowering supplies the built-in one.
type Heuristic func(p Problem, candidates []Candidate) []string

// Ranker is a strategy plugin as the tuner sees it; *plugins.Plugin implements it.
type Ranker interface {
	Name() string
	Hash() string
	Choose(ctx context.Context, req abi.Request) (abi.Response, error)
}

// DecisionStore keeps recorded decisions as opaque bytes under string keys; the kernel cache
// (cache/) implements it. Put may overwrite.
type DecisionStore interface {
	Get(key string) ([]byte, bool)
	Put(key string, value []byte) error
}
