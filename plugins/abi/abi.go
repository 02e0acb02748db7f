package abi

import (
	"fmt"
	"strings"
)

// Version is the ABI version this package describes; a plugin's widejit_abi export must
// return it.
const Version = 1

// Export names every plugin must provide.
const (
	ExportMemory = "memory"
	ExportAlloc  = "alloc"
	ExportABI    = "widejit_abi"
	ExportChoose = "choose"
)

// Strategy names widejit's lowering uses; a plugin must not assume the list is closed.
const (
	StrategySequential = "sequential" // N launches of the single-model kernel
	StrategyBatched    = "batched"    // one launch whose grid covers the N models
	StrategyFused      = "fused"      // the group with its neighbours in one kernel for all N
)

// Request asks a plugin to rank the candidate kernels of one kernel group.
type Request struct {
	ABI int `json:"abi"` // Version
	// OpChain names the ops of the group in execution order, e.g. ["linear", "gelu", "linear"].
	OpChain []string `json:"op_chain"`
	// Shapes holds the per-model shape of each input of the group (the leading N is not
	// included; N is below). By convention the first input is the activation with its rows
	// flattened into dimension 0, e.g. [[B, in], [out, in], [out]] for a linear with bias.
	Shapes [][]int `json:"shapes"`
	// DTypes holds the dtype of each input, parallel to Shapes ("float32", "float16", ...).
	DTypes []string `json:"dtypes"`
	// N is the number of models served at once.
	N          int         `json:"n"`
	Device     Device      `json:"device"`
	Candidates []Candidate `json:"candidates"`
}

// Device describes where the kernels will run.
type Device struct {
	// Kind is the backend's registered name ("cpu", "cuda", or an out-of-tree backend's):
	// a label. What the device can do is in Capabilities; decide on those.
	Kind string `json:"kind"`
	Name string `json:"name"` // e.g. "NVIDIA H100 80GB HBM3", or the CPU model
	// ComputeCapability is "major.minor" for CUDA devices ("9.0"), empty for the CPU.
	ComputeCapability string `json:"compute_capability,omitempty"`
	MemoryBytes       int64  `json:"memory_bytes"`
	// Cores is the number of CPU worker threads, or of streaming multiprocessors on a GPU.
	Cores        int          `json:"cores"`
	Capabilities Capabilities `json:"capabilities"`
	// BackendOptions are the options the backend was opened with (--backend-opt k=v).
	BackendOptions map[string]string `json:"backend_options,omitempty"`
}

// CapabilitiesVersion is the version of Capabilities. Fields are added without changing it
// (a plugin ignores fields it does not know); it changes when a field changes meaning or
// goes away. A request from a widejit without capabilities has version 0.
const CapabilitiesVersion = 1

// Legacy is d with the capabilities its kind implied when a device had no capabilities field
// (version 0: written by a widejit before them, e.g. a timings file from `tune --export`,
// whose only kinds were cpu and cuda); a device with capabilities is returned unchanged. The
// one place that reads capabilities from a kind's name, for data from before them.
func (d Device) Legacy() Device {
	if d.Capabilities.Version != 0 {
		return d
	}
	switch d.Kind {
	case "cpu":
		d.Capabilities = Capabilities{Version: CapabilitiesVersion, HostThreads: true}
	case "cuda":
		d.Capabilities = Capabilities{Version: CapabilitiesVersion, WarpSize: 32, DiscreteMemory: true}
	}
	return d
}

// Capabilities say what the device can do, independent of its backend's name.
type Capabilities struct {
	Version int `json:"version"` // CapabilitiesVersion
	// HostThreads: each program runs on one CPU thread (num_warps changes nothing);
	// false: programs run as warps of WarpSize threads.
	HostThreads bool `json:"host_threads"`
	// SIMDWidth is the fp32 lanes of the host's vector instructions; 0 off host threads.
	SIMDWidth int `json:"simd_width"`
	// WarpSize is the threads that run in lockstep (32 on NVIDIA GPUs); 0 on host threads.
	WarpSize int `json:"warp_size"`
	// SharedMemoryBytes is the shared memory one program may use; 0 when unknown.
	SharedMemoryBytes int `json:"shared_memory_bytes"`
	// TensorCores: dots with eligible dtypes and shapes run on matrix units.
	TensorCores bool `json:"tensor_cores"`
	// DiscreteMemory: the device has memory of its own, reached by copies (a GPU); false:
	// kernels work in host memory.
	DiscreteMemory bool `json:"discrete_memory"`
	// WarpgroupMMA: dots run on Hopper's warpgroup MMA (sm_90a's wgmma), which larger tiles
	// feed (128 rows over two warpgroups). Omitted when false, so other devices' keys stay.
	WarpgroupMMA bool `json:"warpgroup_mma,omitempty"`
}

// Candidate is one way to compute the group: a strategy and its tunables (block sizes,
// num_warps, num_stages, ...). IDs are unique within a request.
type Candidate struct {
	ID       string         `json:"id"`
	Strategy string         `json:"strategy"`
	Params   map[string]int `json:"params,omitempty"`
}

// Response is a plugin's answer: candidate ids, best first, and an optional note that widejit
// shows in `--explain` and `plugin check`.
//
// A partial ranking is allowed: the ids it leaves out follow in the order of the built-in
// heuristic. Unknown ids, duplicate ids and an empty ranking are errors.
type Response struct {
	Ranking []string `json:"ranking"`
	Note    string   `json:"note,omitempty"`
}

// CheckRanking reports why ranking is not a valid answer to a request with these candidates:
// empty, an id that is not a candidate, or an id listed twice. It returns nil for a valid,
// possibly partial, ranking.
func CheckRanking(ranking []string, candidates []Candidate) error {
	if len(ranking) == 0 {
		return fmt.Errorf("empty ranking (expected at least one of %d candidate ids)", len(candidates))
	}
	known := make(map[string]bool, len(candidates))
	for _, c := range candidates {
		known[c.ID] = true
	}
	seen := make(map[string]int, len(ranking))
	for i, id := range ranking {
		if !known[id] {
			return fmt.Errorf("ranking[%d]: unknown candidate id %q (candidates: %s)", i, id, idList(candidates))
		}
		if j, dup := seen[id]; dup {
			return fmt.Errorf("ranking[%d]: duplicate candidate id %q (also at ranking[%d])", i, id, j)
		}
		seen[id] = i
	}
	return nil
}

func idList(candidates []Candidate) string {
	const show = 8
	ids := make([]string, 0, show)
	for i, c := range candidates {
		if i == show {
			ids = append(ids, fmt.Sprintf("... %d more", len(candidates)-show))
			break
		}
		ids = append(ids, fmt.Sprintf("%q", c.ID))
	}
	return strings.Join(ids, ", ")
}

// Complete returns ranking followed by the ids of fallback that ranking does not list, in
// fallback's order: how a partial ranking is filled in by the built-in heuristic's order.
func Complete(ranking, fallback []string) []string {
	out := make([]string, 0, len(fallback))
	listed := make(map[string]bool, len(ranking))
	for _, id := range ranking {
		listed[id] = true
		out = append(out, id)
	}
	for _, id := range fallback {
		if !listed[id] {
			out = append(out, id)
		}
	}
	return out
}
