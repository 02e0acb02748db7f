package ptx

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/testkit"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/lowering"
	"github.com/widejit/widejit/runner"
	"github.com/widejit/widejit/triton/ir"
)

// emuDevice runs PTX artifacts on the emulator as a jit.Device, so whole plans can run
// through the PTX backend without a GPU.
type emuDevice struct {
	mu  sync.Mutex
	mem emuMemory
}

type emuBuffer struct {
	dt   ir.DType
	n    int
	idx  int
	addr uint64
}

func (b *emuBuffer) DType() ir.DType { return b.dt }
func (b *emuBuffer) Len() int        { return b.n }

type emuKernel struct {
	dev    *emuDevice
	prog   *emuProgram
	params []ir.Type
	smem   int
}

func (d *emuDevice) Info() jit.DeviceInfo { return jit.DeviceInfo{Kind: "cuda", Name: "PTX emulator"} }
func (d *emuDevice) Target() jit.Target   { return Target{Arch: "sm_90"} }
func (d *emuDevice) Load(a *jit.Artifact) (jit.Kernel, error) {
	prog, err := parseEmu(string(a.Payload))
	if err != nil {
		return nil, err
	}
	params, err := ParamTypes(a)
	if err != nil {
		return nil, err
	}
	smem, _ := strconv.Atoi(a.Meta["shared_bytes"])
	return &emuKernel{dev: d, prog: prog, params: params, smem: smem}, nil
}
func (d *emuDevice) Alloc(dt ir.DType, n int) (jit.Buffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	addr := d.mem.alloc(max(n*dt.Size(), 1))
	return &emuBuffer{dt: dt, n: n, idx: len(d.mem.bufs) - 1, addr: addr}, nil
}
func (d *emuDevice) Free(jit.Buffer) {}
func (d *emuDevice) Upload(dst jit.Buffer, src []byte) error {
	copy(d.mem.bufs[dst.(*emuBuffer).idx], src)
	return nil
}
func (d *emuDevice) Download(src jit.Buffer, dst []byte) error {
	copy(dst, d.mem.bufs[src.(*emuBuffer).idx])
	return nil
}
func (d *emuDevice) Sync() error  { return nil }
func (d *emuDevice) Close() error { return nil }

func (k *emuKernel) Name() string { return k.prog.name }
func (k *emuKernel) Launch(grid [3]int, args []jit.Arg) error {
	params := make([]uint64, len(args))
	for i, t := range k.params {
		a := args[i]
		switch {
		case t.Ptr:
			b := a.Buf.(*emuBuffer)
			params[i] = b.addr + uint64(a.Offset*b.dt.Size())
		case t.Elem == ir.F32:
			switch v := a.Scalar.(type) {
			case float64:
				params[i] = uint64(math.Float32bits(float32(v)))
			case int64:
				params[i] = uint64(math.Float32bits(float32(v)))
			default:
				return fmt.Errorf("scalar %T for fp32", a.Scalar)
			}
		default:
			switch v := a.Scalar.(type) {
			case int64:
				params[i] = uint64(v)
			case int:
				params[i] = uint64(v)
			case bool:
				params[i] = b2u(v)
			default:
				return fmt.Errorf("scalar %T for %s", a.Scalar, t)
			}
		}
	}
	k.dev.mu.Lock()
	defer k.dev.mu.Unlock()
	return emulate(k.prog, &k.dev.mem, grid, params, k.smem)
}

// slowExamples have convolutions whose emulation takes minutes.
var slowExamples = map[string]bool{"convnet": true, "resblock": true}

// TestExamplePlansOnEmulatedPTX runs every example's (and recurrent fixture's) default plan (with WIDEJIT_EMULATE_ALL=1
// also the unfused, sequential and model-major plans, and the slow convolution examples) through the PTX backend
// (on the emulator) and compares the outputs with PyTorch's (expected.safetensors), with the
// tolerance the lowering tests use for the CPU backend.
func TestExamplePlansOnEmulatedPTX(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: emulates every kernel of every example")
	}
	paths, _ := filepath.Glob("../../examples/*/graph.json")
	if len(paths) == 0 {
		t.Fatal("no example graphs")
	}
	// lowering's recurrent fixtures: rnn.py passes the hidden state between the threads of a
	// program through memory, a barrier per step
	rnn, _ := filepath.Glob("../../lowering/testdata/rnn/*_n3/graph.json")
	paths = append(paths, rnn...)
	// the bf16 MLP fixture: tensor-core dots whose accumulators stay in registers across the
	// K loops (acc += tl.dot(...), mmaloop.go)
	paths = append(paths, "../../lowering/testdata/idioms/halfmlp_bf16_n3/graph.json")
	variants := []struct {
		name string
		opts lowering.Options
	}{{"default", lowering.Options{}}}
	if os.Getenv("WIDEJIT_EMULATE_ALL") != "" {
		variants = append(variants, struct {
			name string
			opts lowering.Options
		}{"unfused", lowering.Options{NoFusion: true}}, struct {
			name string
			opts lowering.Options
		}{"sequential", lowering.Options{Strategy: lowering.Sequential}}, struct {
			name string
			opts lowering.Options
		}{"model-major", lowering.Options{ModelMajor: true}})
	}
	for _, p := range paths {
		dir := filepath.Dir(p)
		for _, v := range variants {
			t.Run(filepath.Base(dir)+"/"+v.name, func(t *testing.T) {
				if slowExamples[filepath.Base(dir)] && os.Getenv("WIDEJIT_EMULATE_ALL") == "" {
					t.Skip("takes minutes on the emulator: set WIDEJIT_EMULATE_ALL=1 (it passed when written)")
				}
				g, err := graph.Load(p)
				if err != nil {
					t.Fatal(err)
				}
				plan, err := lowering.Lower(g, v.opts)
				if err != nil {
					t.Skipf("lowering: %v", err)
				}
				r, err := runner.New(plan, &emuDevice{}, jit.NewCompiler(jit.CompilerOptions{}), g)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				outs, err := r.Run(testkit.ReadTensors(t, filepath.Join(dir, "inputs.safetensors")))
				if err != nil {
					t.Fatal(err)
				}
				testkit.CheckOutputs(t, outs, testkit.ReadTensors(t, filepath.Join(dir, "expected.safetensors")))
			})
		}
	}
}

// TestTF32PlanOnEmulatedPTX runs the MLP example at --float32-matmul-precision high (its
// Linears' fp32 dots on TF32 tensor cores, the weight read as B^T through ldmatrix) on the
// emulator against PyTorch's fp32 outputs, within TF32's error (10 mantissa bits per
// operand: 1e-2 of the output's scale).
func TestTF32PlanOnEmulatedPTX(t *testing.T) {
	dir := "../../examples/mlp"
	g, err := graph.Load(filepath.Join(dir, "graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := lowering.Lower(g, lowering.Options{Float32MatmulPrecision: lowering.PrecisionHigh})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(plan, &emuDevice{}, jit.NewCompiler(jit.CompilerOptions{}), g)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	outs, err := r.Run(testkit.ReadTensors(t, filepath.Join(dir, "inputs.safetensors")))
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range testkit.ReadTensors(t, filepath.Join(dir, "expected.safetensors")) {
		got, err := outs[name].Float64s()
		if err != nil {
			t.Fatal(err)
		}
		want, err := w.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		scale, maxd := 0.0, 0.0
		for i := range want {
			scale = math.Max(scale, math.Abs(want[i]))
			maxd = math.Max(maxd, math.Abs(got[i]-want[i]))
		}
		if maxd > 1e-2*scale || maxd == 0 {
			t.Errorf("%s: max |diff| %.3g against PyTorch, scale %.3g: want within TF32's 1e-2 of the scale (and not 0: TF32 rounds)", name, maxd, scale)
		}
	}
}
