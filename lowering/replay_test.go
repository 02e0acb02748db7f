package lowering

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph"
)

// The replay tests run plans through testdata/run_plan.py: an independent executor (numpy,
// with a stand-in for triton.language) of the dumped kernels, compared with PyTorch's
// outputs. They check the kernels' text and the plan (addressing, offsets, strategies, buffer
// reuse) before and besides the Go pipeline.

const python = "/usr/bin/python3"

func needPython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		t.Skip("needs /usr/bin/python3 with numpy (bash .ci/setup)")
	}
	if err := exec.Command(python, "-c", "import numpy").Run(); err != nil {
		t.Skip("needs numpy for /usr/bin/python3 (bash .ci/setup)")
	}
}

// replayJob is one plan to replay and the files it runs on.
type replayJob struct {
	name                               string
	plan                               *Plan
	weights, inputs, expected, dumpDir string
}

// replayAll dumps every plan and replays them in one Python process (starting Python and
// numpy once), failing the test for each plan whose outputs differ from the expected ones.
func replayAll(t *testing.T, jobs []replayJob) {
	t.Helper()
	dir := t.TempDir()
	var spec []map[string]string
	for i := range jobs {
		jobs[i].dumpDir = filepath.Join(dir, fmt.Sprint(i))
		if _, err := jobs[i].plan.WriteDump(jobs[i].dumpDir); err != nil {
			t.Fatal(err)
		}
		spec = append(spec, map[string]string{"dump": jobs[i].dumpDir, "weights": jobs[i].weights,
			"inputs": jobs[i].inputs, "expected": jobs[i].expected})
	}
	js, _ := json.Marshal(spec)
	jobsPath := filepath.Join(dir, "jobs.json")
	if err := os.WriteFile(jobsPath, js, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command(python, "testdata/run_plan.py", "--jobs", jobsPath).CombinedOutput()
	results := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		var r struct {
			Dump string `json:"dump"`
			OK   bool   `json:"ok"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.Dump != "" {
			if r.OK {
				results[r.Dump] = "ok"
			} else {
				results[r.Dump] = line
			}
		}
	}
	for _, j := range jobs {
		switch res := results[j.dumpDir]; res {
		case "ok":
		case "":
			t.Errorf("%s: no result from run_plan.py:\n%s", j.name, out)
		default:
			t.Errorf("%s: replay differs: %s\nplan:\n%s", j.name, res, j.plan)
		}
	}
}

var exampleVariants = []struct {
	name string
	opts Options
}{
	{"fused-batched", Options{}},
	{"unfused", Options{NoFusion: true}},
	{"sequential", Options{Strategy: Sequential}},
	{"model-major", Options{ModelMajor: true}},
	// the CPU executor's own tiles and layouts (CPU-sized dot tiles, weights transposed once)
	{"cpu", Options{Device: testDevice("cpu")}},
}

// TestReplay replays the examples (the default plan) and the fixtures at N=3 (every variant);
// the Go pipeline runs every fixture at every N.
func TestReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("replays every plan in Python; skipped with -short")
	}
	needPython(t)
	var jobs []replayJob
	paths, _ := filepath.Glob("../examples/*/graph.json")
	fixtures, _ := filepath.Glob("testdata/fixtures/*/graph.json")
	if len(fixtures) == 0 {
		t.Fatal("no fixtures: run /usr/bin/python3 lowering/testdata/make_fixtures.py")
	}
	for _, p := range append(paths, fixtures...) {
		g, err := graph.Load(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		dir := filepath.Dir(p)
		for _, v := range exampleVariants {
			fixture := strings.HasPrefix(p, "testdata")
			if fixture && !strings.HasSuffix(dir, "_n3") || !fixture && v.name != "fused-batched" {
				continue
			}
			plan, err := Lower(g, v.opts)
			if err != nil {
				if strings.Contains(err.Error(), "is not lowered yet") {
					t.Logf("%s: skipped: %v", p, err)
					break
				}
				t.Errorf("%s %s: %v", p, v.name, err)
				continue
			}
			jobs = append(jobs, replayJob{name: filepath.Base(dir) + "/" + v.name, plan: plan,
				weights: filepath.Join(dir, "weights.safetensors"), inputs: filepath.Join(dir, "inputs.safetensors"),
				expected: filepath.Join(dir, "expected.safetensors")})
		}
	}
	replayAll(t, jobs)
}
