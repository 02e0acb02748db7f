package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/widejit/widejit/internal/half"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cuda"
	"github.com/widejit/widejit/jit/ptx"
	"github.com/widejit/widejit/lowering"
	"github.com/widejit/widejit/triton/ir"
)

// gemmResult is one device-resident GEMM timing: the kernel alone, its operands already on
// the device, timed with CUDA events (median of reps single launches), and how far its
// output is from a float64 reference at sampled elements.
type gemmResult struct {
	Case     string  `json:"case"`
	Arch     string  `json:"arch"`
	Tunables string  `json:"tunables"`
	MedianMS float64 `json:"median_ms"`
	TFLOPs   float64 `json:"tflops"`
	// MaxErr is the largest |got - want| / tolerance over the sampled outputs (<= 1: correct).
	MaxErr float64 `json:"max_err_over_tol"`
}

const gemmSize = 4096

// gemmSamples is how many output elements are checked against the host's float64 dot.
const gemmSamples = 512

// benchGEMM times the 4096^3 Linear of every gemmCase as widejit compiles it for each of
// archs on dev, first with the tile a run on such a device gets (on sm_90a also with the
// generic 64x64 one and every other Hopper tile), and checks its output against a float64
// reference computed on the host.
func benchGEMM(dev *cuda.Device, comp *jit.Compiler, reps int, archs []string) ([]gemmResult, error) {
	var out []gemmResult
	var failed []string
	for _, c := range gemmCases {
		l, err := gemmLaunch(c)
		if err != nil {
			return nil, err
		}
		in, err := newGEMMInputs(c)
		if err != nil {
			return nil, err
		}
		for _, arch := range archs {
			// first the tile a run on a device loading arch gets (sm_90a: the built-in Hopper
			// tile), then, on sm_90a, the generic 64x64 one and the other Hopper tiles
			def, err := gemmLaunchOn(c, cuda.GenericDevice(arch))
			if err != nil {
				return nil, err
			}
			launches := []*lowering.Launch{def}
			if arch == "sm_90a" {
				hopper, err := hopperGEMMLaunches(c)
				if err != nil {
					return nil, err
				}
				for _, h := range append([]*lowering.Launch{l}, hopper...) {
					if h.TunablesID != def.TunablesID {
						launches = append(launches, h)
					}
				}
			}
			for _, l := range launches {
				r, err := timeGEMM(dev, comp, l, in, ptx.Target{Arch: arch}, reps)
				if err != nil {
					return nil, fmt.Errorf("GEMM %s (%s) on %s: %w", c, l.TunablesID, arch, err)
				}
				r.Case, r.Arch = c.String(), arch
				verdict := "ok"
				if !(r.MaxErr <= 1) {
					verdict = "WRONG"
					failed = append(failed, r.Case+" "+arch+" "+r.Tunables)
				}
				fmt.Printf("GEMM 4096^3 %-16s %-7s %-22s %8.3f ms  %7.1f TFLOP/s  err/tol %.3f %s\n", r.Case, arch, r.Tunables, r.MedianMS, r.TFLOPs, r.MaxErr, verdict)
				out = append(out, r)
			}
		}
	}
	if len(failed) > 0 {
		return out, fmt.Errorf("GEMM outputs off the float64 reference: %v", failed)
	}
	return out, nil
}

// gemmInputs are x [M, K] and the weight [N, K] of y = x @ W^T, as device bytes and as the
// float32 values those bytes hold, and the tolerance of c's arithmetic.
type gemmInputs struct {
	dt        ir.DType
	x, w      []float32
	xb, wb    []byte
	outEps    float64 // relative to the result: the output dtype's rounding (and TF32's bias)
	dotRelTol float64 // relative to sum |x w| over K: fp32 accumulation (and TF32's scatter)
}

func newGEMMInputs(c gemmCase) (*gemmInputs, error) {
	dt, ok := ir.ParseDType(map[string]string{"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}[c.dtype])
	if !ok {
		return nil, fmt.Errorf("GEMM dtype %s", c.dtype)
	}
	// fp32 accumulation over K = 4096 errs by ~sqrt(K) * 2^-24 * |products|, far under 2e-5 of
	// sum |products|, while a lost 16-wide K slice costs ~0.3% of it
	in := &gemmInputs{dt: dt, outEps: 0x1p-23, dotRelTol: 2e-5}
	switch {
	case dt == ir.F16:
		in.outEps = 0x1p-11
	case dt == ir.BF16:
		in.outEps = 0x1p-8
	case c.precision == lowering.PrecisionHigh:
		// both operands truncated to 10 mantissa bits: the products shrink by ~2^-10 on
		// average (a bias proportional to the result) and scatter by up to 2^-9
		in.outEps, in.dotRelTol = 0x1p-9, 2e-4
	}
	rng := rand.New(rand.NewPCG(1, uint64(len(c.String()))))
	gen := func() ([]float32, []byte) {
		vals := make([]float32, gemmSize*gemmSize)
		b := make([]byte, len(vals)*dt.Size())
		for i := range vals {
			v := rng.Float32()*2 - 1
			switch dt {
			case ir.F16:
				h := half.F32ToF16(v)
				binary.LittleEndian.PutUint16(b[2*i:], h)
				v = half.F16ToF32(h)
			case ir.BF16:
				h := half.F32ToBF16(v)
				binary.LittleEndian.PutUint16(b[2*i:], h)
				v = half.BF16ToF32(h)
			default:
				binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
			}
			vals[i] = v
		}
		return vals, b
	}
	in.x, in.xb = gen()
	in.w, in.wb = gen()
	return in, nil
}

// check returns max |y - ref| / tol over gemmSamples sampled elements of y ([M, N] bytes of
// in.dt), NaN if any is not finite.
func (in *gemmInputs) check(y []byte) float64 {
	rng := rand.New(rand.NewPCG(7, 7))
	worst := 0.0
	for range gemmSamples {
		i, j := rng.IntN(gemmSize), rng.IntN(gemmSize)
		var ref, abs float64
		for k := range gemmSize {
			p := float64(in.x[i*gemmSize+k]) * float64(in.w[j*gemmSize+k])
			ref += p
			abs += math.Abs(p)
		}
		var got float64
		e := i*gemmSize + j
		switch in.dt {
		case ir.F16:
			got = float64(half.F16ToF32(binary.LittleEndian.Uint16(y[2*e:])))
		case ir.BF16:
			got = float64(half.BF16ToF32(binary.LittleEndian.Uint16(y[2*e:])))
		default:
			got = float64(math.Float32frombits(binary.LittleEndian.Uint32(y[4*e:])))
		}
		tol := in.outEps*math.Abs(ref) + in.dotRelTol*abs + 1e-6
		r := math.Abs(got-ref) / tol
		if math.IsNaN(r) {
			return r
		}
		worst = max(worst, r)
	}
	return worst
}

// timeGEMM compiles l's kernel for target, runs it on in's operands, times reps launches and
// checks the output.
func timeGEMM(dev *cuda.Device, comp *jit.Compiler, l *lowering.Launch, in *gemmInputs, target jit.Target, reps int) (gemmResult, error) {
	art, err := comp.Compile(l.Kernel.Source, l.Spec(), target)
	if err != nil {
		return gemmResult{}, err
	}
	k, err := dev.Load(art)
	if err != nil {
		return gemmResult{}, err
	}
	var args []jit.Arg
	var bufs []jit.Buffer
	defer func() {
		for _, b := range bufs {
			dev.Free(b)
		}
	}()
	var y jit.Buffer
	for _, a := range l.Args {
		switch a.Kind {
		case lowering.PtrArg:
			dt, err := lowering.DeviceDType(a.Buf.DType)
			if err != nil {
				return gemmResult{}, err
			}
			buf, err := dev.Alloc(dt, a.Buf.Elems)
			if err != nil {
				return gemmResult{}, err
			}
			bufs = append(bufs, buf)
			args = append(args, jit.Arg{Buf: buf, Offset: a.Offset})
			var data []byte
			switch a.Buf.Kind {
			case lowering.InputBuffer:
				data = in.xb
			case lowering.ParamBuffer:
				data = in.wb
			default:
				y = buf
			}
			if data != nil {
				if dt != in.dt || a.Offset != 0 || len(data) != a.Buf.Elems*dt.Size() {
					return gemmResult{}, fmt.Errorf("buffer %s: %s x %d at offset %d, not the %s operand expected", a.Buf.Name, dt, a.Buf.Elems, a.Offset, in.dt)
				}
				if err := dev.Upload(buf, data); err != nil {
					return gemmResult{}, err
				}
			}
		case lowering.IntArg:
			args = append(args, jit.Arg{Scalar: a.Int})
		default:
			args = append(args, jit.Arg{Scalar: a.Float})
		}
	}
	if y == nil {
		return gemmResult{}, fmt.Errorf("the launch has no output buffer")
	}
	launch := func() error { return k.Launch(l.Grid, args) }
	if err := launch(); err != nil {
		return gemmResult{}, err
	}
	var ts []time.Duration
	for range reps {
		d, err := dev.Time(launch)
		if err != nil {
			return gemmResult{}, err
		}
		ts = append(ts, d)
	}
	host := make([]byte, y.Len()*y.DType().Size())
	if err := dev.Download(y, host); err != nil {
		return gemmResult{}, err
	}
	m := median(ts)
	return gemmResult{Tunables: l.TunablesID, MedianMS: float64(m) / 1e6, TFLOPs: 2 * gemmSize * gemmSize * gemmSize / m.Seconds() / 1e12,
		MaxErr: in.check(host)}, nil
}
