package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/widejit/widejit/bench/internal/openblas"
)

// noTorch is what the peer columns say when PyTorch cannot run.
const noTorch = "n/a (install python3-torch: bash .ci/setup)"

// peer is the PyTorch peer process (bench/peers/torch_zoo.py), driven over JSON lines so its
// runs interleave with widejit's.
type peer struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *tailBuffer
	Hello  map[string]any
}

// peerCheck is what the peer found when it set a cell up.
type peerCheck struct {
	RTol          float64            `json:"rtol"`
	BatchedMaxRel map[string]float64 `json:"batched_max_rel"`
	Rejected      map[string]string  `json:"rejected"`    // wrong result: not timed
	Unavailable   map[string]string  `json:"unavailable"` // this torch cannot run it: not timed
	Notes         map[string]string  `json:"notes"`       // e.g. vmap falling back to a loop
	WidejitMaxRel *float64           `json:"widejit_max_rel,omitempty"`
	WidejitError  string             `json:"widejit_error,omitempty"`
}

// findPeerScript resolves the script path against the working directory, then against this
// source file's directory (go test runs in bench/, go run from anywhere in the module).
func findPeerScript(path string) (string, error) {
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		alt := filepath.Join(filepath.Dir(file), "peers", filepath.Base(path))
		if _, err := os.Stat(alt); err == nil {
			return alt, nil
		}
	}
	return "", fmt.Errorf("peer script %s not found (run from the repository root, or pass --peer-script)", path)
}

// startPeer starts the peer and says hello; an error means the peer columns are n/a. When
// OpenBLAS takes the CPU for an older one than it is (package openblas), the peer is started
// again with OPENBLAS_CORETYPE set: the baseline is PyTorch at its best on this machine, not
// a misdetection. With avx2 it runs OpenBLAS's Haswell kernels and oneDNN's AVX2 ones, as on
// a CPU without AVX-512. note says so.
func startPeer(python, script string, threads int, avx2 bool) (p *peer, note string, err error) {
	script, err = findPeerScript(script)
	if err != nil {
		return nil, "", err
	}
	if avx2 {
		env := append(peerEnv(os.Environ(), threads, "Haswell"), "ONEDNN_MAX_CPU_ISA=AVX2", "DNNL_MAX_CPU_ISA=AVX2")
		if p, err = launchPeer(python, script, env); err != nil {
			return nil, "", err
		}
		return p, "--avx2: OPENBLAS_CORETYPE=Haswell, ONEDNN_MAX_CPU_ISA=AVX2 (no AVX-512 on either side)", nil
	}
	if p, err = launchPeer(python, script, peerEnv(os.Environ(), threads, "")); err != nil {
		return nil, "", err
	}
	detected := p.openBLASCore()
	want, ok := openblas.Override(detected)
	if !ok {
		return p, "", nil
	}
	p.Close()
	if p, err = launchPeer(python, script, peerEnv(os.Environ(), threads, want)); err != nil {
		return nil, "", err
	}
	return p, fmt.Sprintf("OPENBLAS_CORETYPE=%s: OpenBLAS's own detection chose %s, whose kernels do not use this CPU's vector units", want, detected), nil
}

// launchPeer starts the peer script with env and says hello.
func launchPeer(python, script string, env []string) (*peer, error) {
	cmd := exec.Command(python, script)
	cmd.Env = withAllocator(env, findTCMalloc())
	p := &peer{cmd: cmd, stderr: &tailBuffer{max: 4096}}
	cmd.Stderr = p.stderr
	var err error
	if p.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = bufio.NewReaderSize(stdout, 1<<16)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", python, err)
	}
	if err := p.call(map[string]any{"op": "hello"}, &p.Hello); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// openBLASCore is the core type the peer's OpenBLAS runs ("" when torch loaded no OpenBLAS).
func (p *peer) openBLASCore() string {
	blas, _ := p.Hello["blas"].(map[string]any)
	ob, _ := blas["openblas"].(map[string]any)
	core, _ := ob["core"].(string)
	return core
}

// peerEnv is the environment of the peer: OPENBLAS_CORETYPE unset (it forces a slower kernel
// on some machines) unless coreType names one, and the BLAS/OpenMP thread counts pinned to
// widejit's.
func peerEnv(env []string, threads int, coreType string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS":
			continue
		}
		out = append(out, kv)
	}
	t := strconv.Itoa(threads)
	out = append(out, "OPENBLAS_NUM_THREADS="+t, "OMP_NUM_THREADS="+t, "MKL_NUM_THREADS="+t)
	if coreType != "" {
		out = append(out, "OPENBLAS_CORETYPE="+coreType)
	}
	return out
}

// tcmallocGlobs are where Debian's libtcmalloc-minimal4 (and other distributions) put tcmalloc.
var tcmallocGlobs = []string{"/usr/lib/*/libtcmalloc_minimal.so.4", "/usr/lib64/libtcmalloc_minimal.so.4", "/usr/lib/libtcmalloc_minimal.so.4"}

// findTCMalloc is the path of tcmalloc's shared library, "" when it is not installed.
func findTCMalloc() string {
	for _, g := range tcmallocGlobs {
		if m, _ := filepath.Glob(g); len(m) > 0 {
			return m[0]
		}
	}
	return ""
}

// withAllocator gives the peer the allocator PyTorch's CPU tuning guide advises: tcmalloc
// (preloaded, in the peer's environment only) when installed, else glibc's malloc with its
// mmap and trim thresholds raised. Under glibc's defaults every large activation is an mmap
// freed back to the kernel after the call, so each call faults its pages in again (measured on
// the conv3x3 case: 15-16 ms against 10.8 ms). The peer reports which one it runs (hello's
// "allocator").
func withAllocator(env []string, tcmalloc string) []string {
	out := slices.Clone(env)
	if tcmalloc != "" {
		for i, kv := range out {
			if v, ok := strings.CutPrefix(kv, "LD_PRELOAD="); ok {
				out[i] = "LD_PRELOAD=" + tcmalloc + ":" + v
				return out
			}
		}
		return append(out, "LD_PRELOAD="+tcmalloc)
	}
	// 32 MiB is the largest mmap threshold glibc accepts on 64-bit; freed memory is kept
	return append(out, "MALLOC_MMAP_THRESHOLD_=33554432", "MALLOC_TRIM_THRESHOLD_=17179869184")
}

// call sends one request and decodes the reply into reply.
func (p *peer) call(req map[string]any, reply any) error {
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		return p.died(err)
	}
	resp, err := p.out.ReadBytes('\n')
	if err != nil {
		return p.died(err)
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(resp, &e); err != nil {
		return fmt.Errorf("peer: reply %q is not JSON: %w", strings.TrimSpace(string(resp)), err)
	}
	if e.Error != "" {
		return fmt.Errorf("peer: %s", e.Error)
	}
	return json.Unmarshal(resp, reply)
}

func (p *peer) died(err error) error {
	msg := strings.TrimSpace(p.stderr.String())
	if msg == "" {
		msg = err.Error()
	}
	return fmt.Errorf("peer exited: %s", msg)
}

// setup prepares the cell held in dir (see torch_zoo.py) and returns the variants to time.
func (p *peer) setup(model string, n, threads int, dir string, perModel bool) ([]string, *peerCheck, error) {
	var reply struct {
		Variants []string  `json:"variants"`
		Check    peerCheck `json:"check"`
	}
	err := p.call(map[string]any{"op": "setup", "model": model, "n": n, "threads": threads, "dir": dir,
		"inputs": map[string]any{"x": map[string]any{"per_model": perModel}}}, &reply)
	if err != nil {
		return nil, nil, err
	}
	return reply.Variants, &reply.Check, nil
}

func (p *peer) Close() {
	if p.in != nil {
		p.in.Write([]byte(`{"op": "quit"}` + "\n"))
		p.in.Close()
	}
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// peerVariant is one PyTorch strategy at one thread count as a contender.
type peerVariant struct {
	p       *peer
	variant string
	threads int
}

// key names the variant and its thread count, e.g. "bmm@1t".
func (v *peerVariant) key() string { return fmt.Sprintf("%s@%dt", v.variant, v.threads) }

func (v *peerVariant) Name() string { return "torch " + v.key() }

func (v *peerVariant) Time(calls int) (time.Duration, error) {
	var reply struct {
		Seconds *float64 `json:"seconds"`
	}
	if err := v.p.call(map[string]any{"op": "time", "variant": v.variant, "calls": calls, "threads": v.threads}, &reply); err != nil {
		return 0, err
	}
	if reply.Seconds == nil {
		return 0, errors.New("peer: time reply without seconds")
	}
	return time.Duration(*reply.Seconds * float64(time.Second)), nil
}

// tailBuffer keeps the last max bytes written (the peer's stderr, for error messages).
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(b)
	if extra := t.buf.Len() - t.max; extra > 0 {
		t.buf.Next(extra)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
