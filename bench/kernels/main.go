package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/widejit/widejit/bench/internal/openblas"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
	"github.com/widejit/widejit/triton/ir"
)

var elemBlock *int

type result struct {
	Name        string  `json:"name"`
	Threads     int     `json:"threads"`
	Seconds     float64 `json:"seconds"`     // best wall time
	CPUSeconds  float64 `json:"cpu_seconds"` // best thread CPU time (1-thread runs only)
	Peer        string  `json:"peer"`
	PeerSeconds float64 `json:"peer_seconds"` // best wall time
	PeerCPU     float64 `json:"peer_cpu_seconds"`
	Ratio       float64 `json:"ratio"`     // peer wall / our wall: >= 1 means faster than the peer
	CPURatio    float64 `json:"cpu_ratio"` // peer CPU / our CPU (1-thread runs), robust on a shared machine
	Note        string  `json:"note,omitempty"`
}

func main() {
	reps := flag.Int("reps", 5, "repetitions; the best time counts")
	elems := flag.Int("elems", 64<<20, "element-wise kernel size")
	size := flag.Int("n", 1024, "matmul M=N=K")
	outDir := flag.String("out", "bench/results", "directory for kernels.md and kernels.json")
	python := flag.String("python", "/usr/bin/python3", "python with numpy")
	elemBlock = flag.Int("block", 16384, "element-wise kernel BLOCK_SIZE")
	flag.Parse()
	if err := run(*reps, *elems, *size, *outDir, *python); err != nil {
		fmt.Fprintln(os.Stderr, "bench/kernels:", err)
		os.Exit(1)
	}
}

func testdata(name string) (string, string, error) {
	_, self, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(self), "..", "..", "triton", "testdata", "kernels", name)
	b, err := os.ReadFile(path)
	return path, string(b), err
}

func load(dev *cpu.Device, file, fn string, sig map[string]string, consts map[string]any) (jit.Kernel, error) {
	path, text, err := testdata(file)
	if err != nil {
		return nil, err
	}
	c := jit.NewCompiler(jit.CompilerOptions{Version: "bench"})
	return c.Load(dev, jit.Source{File: path, Text: text, Fn: fn}, jit.Spec{Sig: sig, Consts: consts})
}

// best runs f reps times and returns the best wall time and the best CPU time of the
// calling thread. With one worker the executor runs on the calling goroutine, locked to its
// thread here, so the thread CPU time is the kernel's own, unaffected by other processes
// sharing the machine.
func best(reps int, f func() error) (wall, cpuTime float64, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for i := range reps {
		c0 := threadCPU()
		start := time.Now()
		if err := f(); err != nil {
			return 0, 0, err
		}
		w, c := time.Since(start).Seconds(), threadCPU()-c0
		if i == 0 || w < wall {
			wall = w
		}
		if i == 0 || c < cpuTime {
			cpuTime = c
		}
	}
	return wall, cpuTime, nil
}

// numpyMatmul times numpy's float32 n x n matmul on one OpenBLAS thread. It reruns with
// OPENBLAS_CORETYPE set when OpenBLAS took the CPU for an older one than its features say
// (package openblas); core is the core type the timed run used.
func numpyMatmul(python string, n, reps int) (wall, cpuTime float64, core string, err error) {
	wall, cpuTime, core, err = numpyMatmulAs(python, n, reps, "")
	if better, ok := openblas.Override(core); err == nil && ok {
		return numpyMatmulAs(python, n, reps, better)
	}
	return wall, cpuTime, core, err
}

func numpyMatmulAs(python string, n, reps int, coreType string) (wall, cpuTime float64, core string, err error) {
	script := fmt.Sprintf(`
import ctypes, time, numpy as np
core = "-"
for line in open("/proc/self/maps"):
    path = line.split()[-1]
    if "openblas" in path and ".so" in path:
        lib = ctypes.CDLL(path)
        lib.openblas_get_corename.restype = ctypes.c_char_p
        core = lib.openblas_get_corename().decode() or "-"
        break
a = np.random.rand(%d, %d).astype(np.float32); b = np.random.rand(%d, %d).astype(np.float32)
a @ b
walls, cpus = [], []
for _ in range(%d):
    w, c = time.perf_counter(), time.thread_time()
    a @ b
    walls.append(time.perf_counter() - w); cpus.append(time.thread_time() - c)
print(min(walls), min(cpus), core)`, n, n, n, n, reps)
	cmd := exec.Command(python, "-c", script)
	env := []string{"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1"}
	if coreType != "" {
		env = append(env, "OPENBLAS_CORETYPE="+coreType)
	}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "OPENBLAS_") && !strings.HasPrefix(e, "OMP_NUM_THREADS=") {
			env = append(env, e)
		}
	}
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, "", fmt.Errorf("numpy peer: %v (%s)", err, out)
	}
	f := strings.Fields(string(out))
	if len(f) != 3 {
		return 0, 0, "", fmt.Errorf("numpy peer printed %q", out)
	}
	if f[2] != "-" {
		core = f[2]
	}
	if wall, err = strconv.ParseFloat(f[0], 64); err == nil {
		cpuTime, err = strconv.ParseFloat(f[1], 64)
	}
	return wall, cpuTime, core, err
}

func run(reps, elems, n int, outDir, python string) error {
	var results []result
	// Matmul: one thread against one-thread OpenBLAS, then all threads.
	for _, threads := range []int{1, runtime.GOMAXPROCS(0)} {
		dev := cpu.NewDevice(threads)
		const bm, bn, bk = 256, 256, 64
		k, err := load(dev, "matmul.py", "matmul_kernel", map[string]string{
			"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
			"stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32", "stride_cn": "i32",
		}, map[string]any{"BLOCK_SIZE_M": int64(bm), "BLOCK_SIZE_N": int64(bn), "BLOCK_SIZE_K": int64(bk), "GROUP_SIZE_M": int64(4), "ACTIVATION": ""})
		if err != nil {
			return err
		}
		a, _ := cpu.NewBuffer(ir.F32, n*n)
		b, _ := cpu.NewBuffer(ir.F32, n*n)
		c, _ := cpu.NewBuffer(ir.F32, n*n)
		for i := range n * n {
			putF32(a.Bytes(), i, float32(i%7)*0.25)
			putF32(b.Bytes(), i, float32(i%5)*0.5)
		}
		grid := [3]int{((n + bm - 1) / bm) * ((n + bn - 1) / bn), 1, 1}
		i64 := func(v int) jit.Arg { return jit.Arg{Scalar: int64(v)} }
		args := []jit.Arg{{Buf: a}, {Buf: b}, {Buf: c}, i64(n), i64(n), i64(n), i64(n), i64(1), i64(n), i64(1), i64(n), i64(1)}
		ours, oursCPU, err := best(reps, func() error { return k.Launch(grid, args) })
		if err != nil {
			return err
		}
		peer, peerCPU, core, err := numpyMatmul(python, n, reps)
		if err != nil {
			return err
		}
		peerName := "numpy float32 matmul, OpenBLAS 1 thread"
		if core != "" {
			peerName += ", core " + core
		}
		flop := 2 * float64(n) * float64(n) * float64(n)
		results = append(results, finish(result{
			Name: fmt.Sprintf("matmul %dx%dx%d fp32 (tl.dot, blocks %dx%dx%d)", n, n, n, bm, bn, bk), Threads: threads,
			Seconds: ours, CPUSeconds: oursCPU, Peer: peerName, PeerSeconds: peer, PeerCPU: peerCPU,
			Note: fmt.Sprintf("wall %.1f GFLOP/s vs %.1f; dot micro-kernel: %s", flop/ours/1e9, flop/peer/1e9, dev.Info().Name),
		}))
	}
	// Element-wise chain over elems floats vs copying the same bytes.
	for _, threads := range []int{1, runtime.GOMAXPROCS(0)} {
		dev := cpu.NewDevice(threads)
		block := *elemBlock
		k, err := load(dev, "vector_add.py", "scale_shift_kernel", map[string]string{
			"x_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32", "scale": "fp32", "shift": "fp32"},
			map[string]any{"BLOCK_SIZE": int64(block)})
		if err != nil {
			return err
		}
		x, _ := cpu.NewBuffer(ir.F32, elems)
		y, _ := cpu.NewBuffer(ir.F32, elems)
		for i := 0; i < elems; i += 1024 {
			putF32(x.Bytes(), i, float32(i))
		}
		args := []jit.Arg{{Buf: x}, {Buf: y}, {Scalar: int64(elems)}, {Scalar: 2.0}, {Scalar: 1.0}}
		grid := [3]int{(elems + block - 1) / block, 1, 1}
		ours, oursCPU, err := best(reps, func() error { return k.Launch(grid, args) })
		if err != nil {
			return err
		}
		peer, peerCPU, _ := best(reps, func() error { copy(y.Bytes(), x.Bytes()); return nil })
		results = append(results, finish(result{
			Name: fmt.Sprintf("element-wise x*scale+shift, %d fp32 (BLOCK %d)", elems, block), Threads: threads,
			Seconds: ours, CPUSeconds: oursCPU, Peer: "Go copy of the same bytes (1 thread)", PeerSeconds: peer, PeerCPU: peerCPU,
			Note: fmt.Sprintf("wall %.2f GB/s read+written vs %.2f", 8*float64(elems)/ours/1e9, 8*float64(elems)/peer/1e9),
		}))
	}
	return write(outDir, results)
}

// finish fills the ratios; CPU time only means something for one-thread runs (with more
// workers the launching thread mostly waits).
func finish(r result) result {
	r.Ratio = r.PeerSeconds / r.Seconds
	if r.Threads == 1 && r.CPUSeconds > 0 {
		r.CPURatio = r.PeerCPU / r.CPUSeconds
	} else {
		r.CPUSeconds, r.CPURatio = 0, 0
	}
	return r
}

func putF32(b []byte, i int, v float32) {
	u := mathFloat32bits(v)
	b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}

func write(dir string, results []result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(map[string]any{
		"date": time.Now().UTC().Format(time.RFC3339), "goos": runtime.GOOS, "goarch": runtime.GOARCH,
		"gomaxprocs": runtime.GOMAXPROCS(0), "results": results}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "kernels.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# CPU kernel benchmarks\n\nGenerated by `go run ./bench/kernels` on %s (%s/%s, GOMAXPROCS %d, load average %s).\n"+
		"Best of the runs. ratio = peer time / widejit time (higher is better). For one-thread rows the CPU-time ratio\n"+
		"(thread CPU time of both sides) is the figure to trust on a shared machine; wall time includes waiting for a core.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), loadAverage())
	b.WriteString("| kernel | threads | widejit wall (s) | widejit CPU (s) | peer | peer wall (s) | peer CPU (s) | wall ratio | CPU ratio | note |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		cpuCols := "-"
		cpuRatio := "-"
		if r.CPURatio > 0 {
			cpuCols = fmt.Sprintf("%.4f", r.CPUSeconds)
			cpuRatio = fmt.Sprintf("**%.2fx**", r.CPURatio)
		}
		fmt.Fprintf(&b, "| %s | %d | %.4f | %s | %s | %.4f | %.4f | %.2fx | %s | %s |\n", r.Name, r.Threads, r.Seconds, cpuCols, r.Peer, r.PeerSeconds, r.PeerCPU, r.Ratio, cpuRatio, r.Note)
	}
	fmt.Print(b.String())
	return os.WriteFile(filepath.Join(dir, "kernels.md"), []byte(b.String()), 0o644)
}

func mathFloat32bits(v float32) uint32 { return math.Float32bits(v) }

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
