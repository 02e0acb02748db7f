package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cuda"
	"github.com/widejit/widejit/jit/ptx"
	"github.com/widejit/widejit/triton/ir"
)

type kernelBench struct {
	name, file, fn string
	sig            map[string]string
	consts         map[string]any
	warps          int
	// setup returns the buffers' element counts (by pointer parameter), scalar args, the grid
	// and the bytes one launch reads and writes.
	setup func() (lens map[string]int, scalars map[string]any, grid [3]int, bytes int64)
}

const elems = 1 << 26 // 64 Mi fp32 values: 256 MiB per vector

var benches = []kernelBench{
	{"vector_add fp32 (3 x 256 MiB)", "triton/testdata/kernels/vector_add.py", "add_kernel",
		map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
		map[string]any{"BLOCK_SIZE": int64(1024)}, 4,
		func() (map[string]int, map[string]any, [3]int, int64) {
			return map[string]int{"x_ptr": elems, "y_ptr": elems, "output_ptr": elems}, map[string]any{"n_elements": int64(elems)},
				[3]int{elems / 1024, 1, 1}, 3 * 4 * elems
		}},
	{"softmax rows fp32 (65536 x 1024)", "triton/testdata/kernels/softmax.py", "softmax_kernel",
		map[string]string{"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32", "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
		map[string]any{"BLOCK_SIZE": int64(1024), "num_stages": int64(2)}, 4,
		func() (map[string]int, map[string]any, [3]int, int64) {
			const rows, cols = 65536, 1024
			return map[string]int{"output_ptr": rows * cols, "input_ptr": rows * cols},
				map[string]any{"input_row_stride": int64(cols), "output_row_stride": int64(cols), "n_rows": int64(rows), "n_cols": int64(cols)},
				[3]int{rows, 1, 1}, 2 * 4 * rows * cols
		}},
	{"layer norm rows fp16 (65536 x 1024)", "triton/testdata/kernels/layer_norm.py", "_layer_norm_fwd_fused",
		map[string]string{"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32", "Rstd": "*fp32", "stride": "i32", "N": "i32", "eps": "fp32"},
		map[string]any{"BLOCK_SIZE": int64(1024)}, 4,
		func() (map[string]int, map[string]any, [3]int, int64) {
			const rows, cols = 65536, 1024
			return map[string]int{"X": rows * cols, "Y": rows * cols, "W": cols, "B": cols, "Mean": rows, "Rstd": rows},
				map[string]any{"stride": int64(cols), "N": int64(cols), "eps": 1e-5},
				[3]int{rows, 1, 1}, 2*2*rows*cols + 8*rows
		}},
}

// spec specializes the kernel for its launch as Triton (and widejit's lowering) does: device
// allocations are 256-byte aligned, so every pointer is 16-byte aligned; integer arguments
// divisible by 16 or equal to 1 are facts of the compiled kernel.
func (b kernelBench) spec() jit.Spec {
	s := jit.Spec{Sig: b.sig, Consts: b.consts, NumWarps: b.warps}
	_, scalars, _, _ := b.setup()
	for name, typ := range b.sig {
		v, isInt := scalars[name].(int64)
		switch {
		case strings.HasPrefix(typ, "*"), isInt && v%16 == 0:
			s.Align16 = append(s.Align16, name)
		case isInt && v == 1:
			s.EqualTo1 = append(s.EqualTo1, name)
		}
	}
	sort.Strings(s.Align16)
	sort.Strings(s.EqualTo1)
	return s
}

type result struct {
	Kernel    string  `json:"kernel"`
	MedianMS  float64 `json:"median_ms"`
	GBs       float64 `json:"gb_per_s"`
	CopyGBs   float64 `json:"copy_gb_per_s"`
	VsCopy    float64 `json:"ratio_vs_copy"`
	Registers string  `json:"tile_registers"`
	Shared    string  `json:"shared_bytes"`
}

func main() {
	reps := flag.Int("reps", 50, "timed launches per kernel (median of single-launch event timings)")
	jsonOut := flag.String("json", "", "also write the results as JSON here")
	archList := flag.String("archs", "", "comma-separated PTX archs to run the GEMM for (default: the device's; on a compute capability 9.0 GPU sm_90a, its default, and sm_90)")
	sass := flag.String("sass", "", "no GPU needed: write the SASS report (Markdown) of the GEMM and the benchmark's kernels here (\"-\": stdout only)")
	flag.Parse()
	if *sass != "" {
		if err := sassReport(strings.TrimPrefix(*sass, "-")); err != nil {
			fmt.Fprintln(os.Stderr, "widejit-gpubench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*reps, *jsonOut, *archList); err != nil {
		fmt.Fprintln(os.Stderr, "widejit-gpubench:", err)
		os.Exit(1)
	}
}

func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

func run(reps int, jsonOut, archList string) error {
	dev, err := cuda.Open(0)
	if err != nil {
		return err
	}
	defer dev.Close()
	info := dev.Info()
	fmt.Printf("device: %s (cc %s, %d SMs, driver %s)\n", info.Name, info.ComputeCapability, info.Cores, info.DriverVersion)
	comp := jit.NewCompiler(jit.CompilerOptions{})
	archs, err := gemmArchs(info, archList)
	if err != nil {
		return err
	}
	// a wrong GEMM is reported after the other kernels' timings, which do not depend on it
	gemms, gemmErr := benchGEMM(dev, comp, reps, archs)
	if gemms == nil && gemmErr != nil {
		return gemmErr
	}
	var results []result
	for _, b := range benches {
		text, err := os.ReadFile(b.file)
		if err != nil {
			return fmt.Errorf("%v (run from the repository root)", err)
		}
		src := jit.Source{File: b.file, Text: string(text), Fn: b.fn}
		spec := b.spec()
		art, err := comp.Compile(src, spec, dev.Target())
		if err != nil {
			return err
		}
		k, err := dev.Load(art)
		if err != nil {
			return err
		}
		lens, scalars, grid, bytes := b.setup()
		f, err := paramOrder(b)
		if err != nil {
			return err
		}
		var args []jit.Arg
		var bufs []jit.Buffer
		for _, p := range f {
			if n, ok := lens[p.name]; ok {
				buf, err := dev.Alloc(p.dt, n)
				if err != nil {
					return err
				}
				bufs = append(bufs, buf)
				args = append(args, jit.Arg{Buf: buf})
			} else {
				args = append(args, jit.Arg{Scalar: scalars[p.name]})
			}
		}
		launch := func() error { return k.Launch(grid, args) }
		if err := launch(); err != nil { // warm-up
			return err
		}
		var ts []time.Duration
		for range reps {
			d, err := dev.Time(launch)
			if err != nil {
				return err
			}
			ts = append(ts, d)
		}
		// The copy reference moves the same bytes: half read, half written.
		src1, err := dev.Alloc(ir.U8, int(bytes/2))
		if err != nil {
			return err
		}
		dst1, err := dev.Alloc(ir.U8, int(bytes/2))
		if err != nil {
			return err
		}
		var cs []time.Duration
		for range reps {
			d, err := dev.Time(func() error { return dev.CopyAsync(dst1, src1) })
			if err != nil {
				return err
			}
			cs = append(cs, d)
		}
		dev.Free(src1)
		dev.Free(dst1)
		for _, buf := range bufs {
			dev.Free(buf)
		}
		km, cm := median(ts), median(cs)
		r := result{Kernel: b.name, MedianMS: float64(km) / 1e6, GBs: float64(bytes) / km.Seconds() / 1e9,
			CopyGBs: float64(bytes) / cm.Seconds() / 1e9, Registers: art.Meta["tile_registers"], Shared: art.Meta["shared_bytes"]}
		r.VsCopy = r.GBs / r.CopyGBs
		results = append(results, r)
		fmt.Printf("%-40s %8.3f ms  %7.1f GB/s  copy %7.1f GB/s  ratio %.2f\n", r.Kernel, r.MedianMS, r.GBs, r.CopyGBs, r.VsCopy)
	}
	if jsonOut != "" {
		js, _ := json.MarshalIndent(map[string]any{"device": info, "results": results, "gemm": gemms}, "", "  ")
		if err := os.WriteFile(jsonOut, append(js, '\n'), 0o644); err != nil {
			return err
		}
	}
	return gemmErr
}

// gemmArchs are the PTX archs of archList, each checked against the device, or by default
// the device's own and, on a cc 9.0 GPU (which loads sm_90a), sm_90 as well: mma.sync's K
// loops, timed next to wgmma's and checked like them.
func gemmArchs(info jit.DeviceInfo, archList string) ([]string, error) {
	cudaVersion := 0
	if major, minor, ok := strings.Cut(info.DriverVersion, "."); ok {
		a, _ := strconv.Atoi(major)
		b, _ := strconv.Atoi(minor)
		cudaVersion = a*1000 + b*10
	}
	if archList != "" {
		archs := strings.Split(archList, ",")
		for _, a := range archs {
			if err := ptx.CheckArch(a, info.ComputeCapability, cudaVersion); err != nil {
				return nil, fmt.Errorf("--archs: %w", err)
			}
		}
		return archs, nil
	}
	def, err := ptx.ArchForCapability(info.ComputeCapability)
	if err != nil {
		return nil, err
	}
	def = ptx.FallbackArch(def, info.ComputeCapability, cudaVersion)
	archs := []string{def}
	if ptx.CheckArch("sm_90a", info.ComputeCapability, cudaVersion) == nil { // a cc 9.0 card: wgmma and mma.sync
		archs = []string{"sm_90a", "sm_90"}
	}
	return archs, nil
}

type param struct {
	name string
	dt   ir.DType
}

// paramOrder lists the runtime parameters in signature order (from the kernel's IR).
func paramOrder(b kernelBench) ([]param, error) {
	text, err := os.ReadFile(b.file)
	if err != nil {
		return nil, err
	}
	f, err := specialize(b.file, string(text), b.fn, b.sig, b.consts)
	if err != nil {
		return nil, err
	}
	var out []param
	for _, p := range f.Params {
		out = append(out, param{p.Name, p.Type.Elem})
	}
	return out, nil
}
