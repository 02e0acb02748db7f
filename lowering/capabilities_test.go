package lowering

import (
	"path/filepath"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/jit"
)

// Plans follow a device's capabilities, never its backend's name: a backend lowering has
// never heard of gets the CPU's plan when its programs run on host threads and the GPU's when
// they run as warps, and the two plans differ.
func TestPlansFollowCapabilitiesNotNames(t *testing.T) {
	paths, _ := filepath.Glob("../examples/*/graph.json")
	if len(paths) == 0 {
		t.Fatal("no example graphs")
	}
	plan := func(g *graph.Graph, d jit.DeviceInfo) string {
		t.Helper()
		p, err := Lower(g, Options{Device: d})
		if err != nil {
			t.Fatal(err)
		}
		return p.String()
	}
	differ := 0
	for _, p := range paths {
		g, err := graph.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		cpu, gpu := testDevice("cpu"), testDevice("cuda")
		hostBackend, warpBackend := cpu, gpu
		hostBackend.Kind, warpBackend.Kind = "a_new_host_backend", "a_new_gpu_backend"
		cpuPlan, gpuPlan := plan(g, cpu), plan(g, gpu)
		if got := plan(g, hostBackend); got != cpuPlan {
			t.Errorf("%s: a backend on host threads got another plan than the CPU's:\n%s\nCPU:\n%s", p, got, cpuPlan)
		}
		if got := plan(g, warpBackend); got != gpuPlan {
			t.Errorf("%s: a backend with warps got another plan than the GPU's:\n%s\nGPU:\n%s", p, got, gpuPlan)
		}
		if cpuPlan != gpuPlan {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("no example's CPU and GPU plans differ: the test shows nothing")
	}
}
