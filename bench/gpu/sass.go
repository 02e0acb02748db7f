package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cuda"
	"github.com/widejit/widejit/jit/ptx"
	"github.com/widejit/widejit/lowering"
)

// The SASS report (--sass FILE) needs no GPU: it compiles the GEMM of a 4096x4096 Linear (the
// kernel `widejit kernel dump --arch` writes for it) and the memory-bound kernels of the
// benchmark to PTX, assembles them with CUDA 12.4's ptxas for sm_80 and sm_90a, and counts
// what the SASS of each kernel and of its main loop does.

// sassArchs pairs each PTX arch widejit generates with the SASS arch the report assembles
// for: Hopper's is sm_90a PTX (wgmma K loops).
var sassArchs = []struct{ ptx, sass string }{{"sm_80", "sm_80"}, {"sm_90a", "sm_90a"}}

// gemmGraph is a 4096x4096 Linear without bias on a 4096-row batch in dtype, one model.
func gemmGraph(dtype string) string {
	return fmt.Sprintf(`{"format": "widejit.graph/v1", "n": 1,
  "inputs": [{"name": "x", "shape": [4096, 4096], "dtype": %[1]q, "per_model": true}],
  "params": [{"name": "fc.weight", "shape": [4096, 4096], "dtype": %[1]q}],
  "nodes": [{"name": "fc", "op": "linear", "inputs": ["x"], "params": {"weight": "fc.weight"}, "attrs": {"in_features": 4096, "out_features": 4096, "bias": false}}],
  "outputs": ["fc"], "init": {"seed": 1}}`, dtype)
}

type sassKernel struct {
	name  string
	src   jit.Source
	spec  jit.Spec
	archs []string // the SASS archs it is reported for (nil: all of sassArchs)
}

// gemmCase is one GEMM of the report and of --gemm: a dtype and, for float32, the precision.
type gemmCase struct{ dtype, precision string }

var gemmCases = []gemmCase{{"float16", ""}, {"bfloat16", ""}, {"float32", lowering.PrecisionHigh}, {"float32", lowering.PrecisionHighest}}

func (c gemmCase) String() string {
	if c.precision == "" {
		return c.dtype
	}
	return c.dtype + " " + c.precision
}

// gemmLaunch is the generic GPU plan's one launch for the 4096^3 Linear of c.
func gemmLaunch(c gemmCase) (*lowering.Launch, error) { return gemmLaunchOn(c, jit.DeviceInfo{}) }

// gemmLaunchOn is the launch of the 4096^3 Linear of c in the plan a run on dev makes (the
// zero DeviceInfo: the generic GPU's).
func gemmLaunchOn(c gemmCase, dev jit.DeviceInfo) (*lowering.Launch, error) {
	name := "linear_" + c.dtype + ".json"
	g, err := graph.Parse(name, []byte(gemmGraph(c.dtype)), graph.Options{})
	if err != nil {
		return nil, err
	}
	plan, err := lowering.Lower(g, lowering.Options{Device: dev, Float32MatmulPrecision: c.precision})
	if err != nil {
		return nil, err
	}
	if len(plan.Launches) != 1 {
		return nil, fmt.Errorf("%s: expected one launch, the plan has %d", name, len(plan.Launches))
	}
	return plan.Launches[0], nil
}

func gemmKernel(c gemmCase) (sassKernel, error) {
	l, err := gemmLaunch(c)
	if err != nil {
		return sassKernel{}, err
	}
	return sassKernel{fmt.Sprintf("GEMM 4096^3 %s (Linear, %s)", c, l.TunablesID), l.Kernel.Source, l.Spec(), nil}, nil
}

// hopperGEMMLaunches are the launches of the 4096^3 Linear of c with each Hopper tile that
// lowering offers a GPU running sm_90a (none for fp32).
func hopperGEMMLaunches(c gemmCase) ([]*lowering.Launch, error) {
	g, err := graph.Parse("linear_"+c.dtype+".json", []byte(gemmGraph(c.dtype)), graph.Options{})
	if err != nil {
		return nil, err
	}
	opts := lowering.Options{Device: cuda.GenericDevice("sm_90a"), BackendOptions: map[string]string{"arch": "sm_90a"},
		Float32MatmulPrecision: c.precision}
	_, points, err := lowering.LowerWithDecisions(g, opts, nil, nil)
	if err != nil {
		return nil, err
	}
	var out []*lowering.Launch
	for _, p := range points {
		for _, cand := range p.Candidates {
			if cand.Strategy != lowering.Batched || cand.Params["BLOCK_M"] != 128 || cand.Params[lowering.NumWarpsParam] != 8 {
				continue
			}
			plan, _, err := lowering.LowerWithDecisions(g, opts, nil, map[int]string{p.Index: cand.ID})
			if err != nil {
				return nil, err
			}
			out = append(out, plan.Launches[0])
		}
	}
	return out, nil
}

func sassReport(out string) error {
	ptxas, err := ptx.FindCUDA12Tool(".", "ptxas")
	if err != nil {
		return err
	}
	cuobjdump, err := ptx.FindCUDA12Tool(".", "cuobjdump")
	if err != nil {
		return err
	}
	var kernels []sassKernel
	for _, c := range gemmCases {
		k, err := gemmKernel(c)
		if err != nil {
			return err
		}
		kernels = append(kernels, k)
		hopper, err := hopperGEMMLaunches(c)
		if err != nil {
			return err
		}
		for _, l := range hopper {
			kernels = append(kernels, sassKernel{fmt.Sprintf("GEMM 4096^3 %s (Linear, Hopper tile %s)", c, l.TunablesID), l.Kernel.Source, l.Spec(), []string{"sm_90a"}})
		}
	}
	for _, b := range benches {
		text, err := os.ReadFile(b.file)
		if err != nil {
			return fmt.Errorf("%v (run from the repository root)", err)
		}
		kernels = append(kernels, sassKernel{b.name, jit.Source{File: b.file, Text: string(text), Fn: b.fn}, b.spec(), nil})
	}
	comp := jit.NewCompiler(jit.CompilerOptions{})
	var md strings.Builder
	md.WriteString("| kernel | arch | regs | spills (B) | kernel instrs | main loop instrs | tensor instrs* | TF32 | FLOPs/instr | issue ceiling | barriers | LDSM | LDGSTS | LDG / STG (16-byte) | LDS / STS | SHFL |\n")
	md.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range kernels {
		for _, a := range sassArchs {
			if k.archs != nil && !slices.Contains(k.archs, a.sass) {
				continue
			}
			art, err := comp.Compile(k.src, k.spec, ptx.Target{Arch: a.ptx})
			if err != nil {
				return fmt.Errorf("%s: %w", k.name, err)
			}
			cubin, asm, err := ptx.AssembleCubin(ptxas, a.sass, string(art.Payload))
			if err != nil {
				return fmt.Errorf("%s: %w", k.name, err)
			}
			text, err := ptx.Disassemble(cuobjdump, cubin)
			if err != nil {
				return fmt.Errorf("%s: %w", k.name, err)
			}
			fns := ptx.ParseSASS(text)
			if len(fns) != 1 {
				return fmt.Errorf("%s: expected one function in the SASS, found %d", k.name, len(fns))
			}
			rep := ptx.Analyze(fns[0])
			c, loop := rep.Whole, "-"
			if rep.Main >= 0 {
				c = rep.Loops[rep.Main].SASSCounts
				loop = fmt.Sprint(c.Instrs)
			}
			fmt.Fprintf(&md, "| %s | %s | %d | %d | %d | %s | %d | %d | %.0f | %.1f%% | %d | %d | %d | %d / %d (%d) | %d / %d | %d |\n",
				k.name, a.sass, asm.Registers, asm.SpillStores+asm.SpillLoads, rep.Whole.Instrs, loop, c.Tensor, c.TF32,
				c.FLOPsPerIns, 100*ptx.IssueCeiling(c), c.Barriers, c.LDSM, c.LDGSTS, c.LDG, c.STG, c.Vector128, c.LDS, c.STS, c.Shuffles)
		}
	}
	md.WriteString("\n*From this column on: the main loop's counts (a kernel without a loop: the whole kernel's). Static counts: each instruction once. Issue ceiling: tensor FLOPs per issued instruction over the 1024 (TF32: 512) that H100/H200 peak needs.\n")
	fmt.Print(md.String())
	if out == "" {
		return nil
	}
	return os.WriteFile(out, []byte(md.String()), 0o644)
}
