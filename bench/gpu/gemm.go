package main

import (
	"fmt"
	"time"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cuda"
	"github.com/widejit/widejit/lowering"
)

// gemmResult is one device-resident GEMM timing: the kernel alone, its operands already on
// the device, timed with CUDA events (median of reps single launches).
type gemmResult struct {
	Case     string  `json:"case"`
	Tunables string  `json:"tunables"`
	MedianMS float64 `json:"median_ms"`
	TFLOPs   float64 `json:"tflops"`
}

// benchGEMM times the 4096^3 Linear of every gemmCase as widejit compiles it for dev.
func benchGEMM(dev *cuda.Device, comp *jit.Compiler, reps int) ([]gemmResult, error) {
	var out []gemmResult
	for _, c := range gemmCases {
		l, err := gemmLaunch(c)
		if err != nil {
			return nil, err
		}
		art, err := comp.Compile(l.Kernel.Source, l.Spec(), dev.Target())
		if err != nil {
			return nil, fmt.Errorf("GEMM %s: %w", c, err)
		}
		k, err := dev.Load(art)
		if err != nil {
			return nil, err
		}
		var args []jit.Arg
		var bufs []jit.Buffer
		for _, a := range l.Args {
			switch a.Kind {
			case lowering.PtrArg:
				dt, err := lowering.DeviceDType(a.Buf.DType)
				if err != nil {
					return nil, err
				}
				buf, err := dev.Alloc(dt, a.Buf.Elems)
				if err != nil {
					return nil, err
				}
				bufs = append(bufs, buf)
				args = append(args, jit.Arg{Buf: buf, Offset: a.Offset})
			case lowering.IntArg:
				args = append(args, jit.Arg{Scalar: a.Int})
			default:
				args = append(args, jit.Arg{Scalar: a.Float})
			}
		}
		launch := func() error { return k.Launch(l.Grid, args) }
		if err := launch(); err != nil {
			return nil, err
		}
		var ts []time.Duration
		for range reps {
			d, err := dev.Time(launch)
			if err != nil {
				return nil, err
			}
			ts = append(ts, d)
		}
		for _, b := range bufs {
			dev.Free(b)
		}
		m := median(ts)
		r := gemmResult{Case: c.String(), Tunables: l.TunablesID, MedianMS: float64(m) / 1e6, TFLOPs: 2 * 4096 * 4096 * 4096 / m.Seconds() / 1e12}
		fmt.Printf("GEMM 4096^3 %-18s %-18s %8.3f ms  %7.1f TFLOP/s\n", r.Case, r.Tunables, r.MedianMS, r.TFLOPs)
		out = append(out, r)
	}
	return out, nil
}
