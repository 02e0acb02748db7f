package plugins

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/widejit/widejit/plugins/abi"
)

// A CheckSample is one sample request of `widejit plugin check`.
type CheckSample struct {
	Label   string
	Request abi.Request
}

// CheckSamples are the sample requests of `widejit plugin check`: a linear layer and an MLP
// block at N = 1, 8 and 64, on a CPU and on an H100, each with a sequential, two batched and
// two fused candidates.
func CheckSamples() []CheckSample {
	devices := []abi.Device{
		{Kind: "cpu", Name: runtime.GOARCH + " CPU", MemoryBytes: 16 << 30, Cores: runtime.NumCPU(),
			Capabilities: abi.Capabilities{Version: abi.CapabilitiesVersion, HostThreads: true, SIMDWidth: 8}},
		{Kind: "cuda", Name: "NVIDIA H100 80GB HBM3", ComputeCapability: "9.0", MemoryBytes: 80 << 30, Cores: 132,
			Capabilities: abi.Capabilities{Version: abi.CapabilitiesVersion, WarpSize: 32, SharedMemoryBytes: 227 << 10, TensorCores: true, DiscreteMemory: true}},
	}
	blocks := func(strategy, prefix string, ms ...int) []abi.Candidate {
		var out []abi.Candidate
		for _, m := range ms {
			out = append(out, abi.Candidate{ID: fmt.Sprintf("%s-m%d", prefix, m), Strategy: strategy,
				Params: map[string]int{"BLOCK_M": m, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2}})
		}
		return out
	}
	groups := []struct {
		label  string
		ops    []string
		shapes [][]int
	}{
		{"linear 64x256->256", []string{"linear"}, [][]int{{64, 256}, {256, 256}, {256}}},
		{"mlp 64x1024->4096->1024", []string{"linear", "gelu", "linear"}, [][]int{{64, 1024}, {4096, 1024}, {4096}, {1024, 4096}, {1024}}},
	}
	var samples []CheckSample
	for _, g := range groups {
		dtypes := make([]string, len(g.shapes))
		for i := range dtypes {
			dtypes[i] = "float32"
		}
		for _, dev := range devices {
			for _, n := range []int{1, 8, 64} {
				cands := []abi.Candidate{{ID: "sequential", Strategy: abi.StrategySequential}}
				cands = append(cands, blocks(abi.StrategyBatched, "batched", 32, 64)...)
				cands = append(cands, blocks(abi.StrategyFused, "fused", 32, 64)...)
				samples = append(samples, CheckSample{
					Label:   fmt.Sprintf("%s N=%d %s", g.label, n, dev.Kind),
					Request: abi.Request{ABI: abi.Version, OpChain: g.ops, Shapes: g.shapes, DTypes: dtypes, N: n, Device: dev, Candidates: cands},
				})
			}
		}
	}
	return samples
}

// A Chooser answers requests; *Plugin is one.
type Chooser interface {
	Choose(ctx context.Context, req abi.Request) (abi.Response, error)
}

// A CheckAnswer is what a chooser answered to one sample, over up to reps calls.
type CheckAnswer struct {
	Sample      CheckSample
	Median, Max time.Duration // of the calls' latencies
	Response    abi.Response  // the last call's
	Err         error         // the call that failed (the calls stop at the first failure)
}

// Ask sends each sample to p reps times, stopping a sample at its first failure.
func Ask(ctx context.Context, p Chooser, samples []CheckSample, reps int) []CheckAnswer {
	var out []CheckAnswer
	for _, s := range samples {
		var latencies []time.Duration
		a := CheckAnswer{Sample: s}
		for i := 0; i < reps && a.Err == nil; i++ {
			t0 := time.Now()
			a.Response, a.Err = p.Choose(ctx, s.Request)
			latencies = append(latencies, time.Since(t0))
		}
		slices.Sort(latencies)
		a.Median, a.Max = latencies[len(latencies)/2], latencies[len(latencies)-1]
		out = append(out, a)
	}
	return out
}
