package ptx

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/internal/half"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx/ptxemu"
	"github.com/widejit/widejit/lowering"
	"github.com/widejit/widejit/runner"
)

// stagesChooser picks, for every strategy decision with tunables, the batched candidate with
// the given num_stages (the built-in tiles: the first such candidate); the rest as the
// heuristic does.
type stagesChooser struct{ stages int }

func (c stagesChooser) Choose(p autotune.Problem, cands []autotune.Candidate) (lowering.Choice, error) {
	for _, cd := range cands {
		if cd.Strategy == lowering.Batched && cd.Params[lowering.NumStagesParam] == c.stages {
			return lowering.Choice{ID: cd.ID, Reason: "test"}, nil
		}
	}
	return lowering.HeuristicChooser{}.Choose(p, cands)
}

// The lowering's num_stages tunable reaches the PTX: an fp16 Linear at sizes no tile divides,
// planned with 2, 3 (built in) and 4 stages, gives three different kernels (cp.async.wait_group
// 0, 1, 2: the copies run 1, 2, 3 steps ahead), named by their tunables in the plan's
// explanation (and, for 2 and 4, in plan.json), whose outputs on the emulator are the same
// bits (the depth changes when operands arrive, not the arithmetic) and the product of the
// fp16 inputs within fp32 accumulation's error.
func TestNumStagesTunablePTX(t *testing.T) {
	// K = 80: 16-byte rows (cp.async copies fp16 operands 16 bytes at a time), a K tail
	const m, k, n = 77, 80, 72
	g := linearGraph(t, "float16", m, k, n, 4)
	xs := make([]float32, m*k)
	rng := rand.New(rand.NewSource(6))
	for i := range xs {
		xs[i] = half.F16ToF32(half.F32ToF16(float32(rng.NormFloat64())))
	}
	x, err := safetensors.FromFloat64s("x", safetensors.F16, []int{m, k}, float64s(xs))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := g.ParamFloat32s("w")
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]int{}
	var first []float32
	for _, stages := range []int{2, 3, 4} {
		plan, err := lowering.Lower(g, lowering.Options{Chooser: stagesChooser{stages}})
		if err != nil {
			t.Fatal(err)
		}
		l := plan.Launches[0]
		if got := l.Tunables[lowering.NumStagesParam]; got != stages {
			t.Fatalf("num_stages %d chosen, the launch has %d", stages, got)
		}
		if ex, want := lowering.Explain(plan), fmt.Sprintf("-s%d (", stages); !strings.Contains(ex, want) || !strings.Contains(ex, fmt.Sprintf("num_stages=%d", stages)) {
			t.Errorf("num_stages %d: the explanation does not show it:\n%s", stages, ex)
		}
		js, err := plan.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if inJSON, want := strings.Contains(string(js), fmt.Sprintf(`"num_stages": %d`, stages)), stages != 3; inJSON != want {
			t.Errorf("num_stages %d: in plan.json %v, want %v (only a depth other than the default)", stages, inJSON, want)
		}
		a, err := jit.NewCompiler(jit.CompilerOptions{}).Compile(l.Kernel.Source, l.Spec(), Target{Arch: "sm_80"})
		if err != nil {
			t.Fatal(err)
		}
		text := string(a.Payload)
		if want := fmt.Sprintf("cp.async.wait_group %d;", stages-2); !strings.Contains(text, want) {
			t.Errorf("num_stages %d: the PTX has no %s", stages, want)
		}
		if s, dup := texts[text]; dup {
			t.Errorf("num_stages %d and %d give the same PTX", s, stages)
		}
		texts[text] = stages

		r, err := runner.New(plan, ptxemu.NewDevice(Target{Arch: "sm_80"}, ParamTypes), jit.NewCompiler(jit.CompilerOptions{}), g)
		if err != nil {
			t.Fatal(err)
		}
		outs, err := r.Run(map[string]*safetensors.Tensor{"x": x})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		got, err := outs["fc"].Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = got
			for i := range m {
				for j := range n {
					var want, mag float64
					for kk := range k {
						p := float64(xs[i*k+kk]) * float64(ws[j*k+kk])
						want, mag = want+p, mag+math.Abs(p)
					}
					// fp32 accumulation of K exact fp16 products, then rounded to fp16
					if d := math.Abs(float64(got[i*n+j]) - want); d > k*0x1p-23*mag+0x1p-11*math.Abs(want)+1e-7 {
						t.Fatalf("fc[%d,%d] = %g, want %g", i, j, got[i*n+j], want)
					}
				}
			}
			continue
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
				t.Fatalf("num_stages %d: fc[%d] = %g, with 2 stages %g", stages, i, got[i], first[i])
			}
		}
	}
}

func float64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
