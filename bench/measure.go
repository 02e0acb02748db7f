package main

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/device"
)

// contender is one way of running a cell's N models; Time runs it calls times back to back.
type contender interface {
	Name() string
	Time(calls int) (time.Duration, error)
}

// timing is one contender's figures in one cell.
type timing struct {
	MedianMS       float64   `json:"median_ms"`        // median per-call time over the samples
	MinMS          float64   `json:"min_ms"`           // fastest sample, per call
	FirstMS        float64   `json:"first_ms"`         // the untimed warm-up call
	CallsPerSample int       `json:"calls_per_sample"` // calls in one sample (>= --min-sample)
	SamplesMS      []float64 `json:"samples_ms"`       // per-call time of each sample, in order
	// Every contender is also timed standalone (standalone): then MedianMS and MinMS are the
	// faster of the interleaved and the standalone samples', both kept here.
	InterleavedMedianMS float64   `json:"interleaved_median_ms,omitempty"`
	StandaloneMedianMS  float64   `json:"standalone_median_ms,omitempty"`
	StandaloneMS        []float64 `json:"standalone_samples_ms,omitempty"`
}

// standaloneSamples is how many samples a contender gets back to back (standalone).
const standaloneSamples = 5

// standalone times a contender again as a user would run it alone: its samples back to back
// (after a quarter sample untimed), nothing of the other contenders' and no pause between them.
// An interleaved sample follows another contender's run, which evicts its weights from the
// caches and has read slower than the same call run alone, for PyTorch (issue #26) and for
// widejit alike; the report keeps the faster median, so each side is at its best, and says when
// the two differ by more than 10%.
func standalone(pv contender, calls int, t *timing) (string, error) {
	if _, err := pv.Time(max(1, calls/4)); err != nil {
		return "", err
	}
	var xs []float64
	for range standaloneSamples {
		d, err := pv.Time(calls)
		if err != nil {
			return "", err
		}
		xs = append(xs, round3(durMS(d)/float64(calls)))
	}
	t.InterleavedMedianMS, t.StandaloneMedianMS, t.StandaloneMS = t.MedianMS, round3(median(xs)), xs
	t.MedianMS, t.MinMS = min(t.MedianMS, t.StandaloneMedianMS), min(t.MinMS, slices.Min(xs))
	lo, hi := min(t.InterleavedMedianMS, t.StandaloneMedianMS), max(t.InterleavedMedianMS, t.StandaloneMedianMS)
	if hi <= 1.1*lo {
		return "", nil
	}
	return fmt.Sprintf("%s: interleaved median %s ms, standalone %s ms (the faster is reported)",
		pv.Name(), fmtMS(t.InterleavedMedianMS), fmtMS(t.StandaloneMedianMS)), nil
}

// cell is one (model, N) of the report.
type cell struct {
	Model       string  `json:"model"`
	N           int     `json:"n"`
	Reps        int     `json:"reps"`
	Wide        *timing `json:"widejit_wide"`
	Seq         *timing `json:"widejit_sequential"`
	WideCompile float64 `json:"widejit_wide_compile_ms"` // load: lowering, compiling, weights, prepare launches
	SeqCompile  float64 `json:"widejit_sequential_compile_ms"`
	// WideKernelMS is the wide plan's kernel compile time alone (Runner.CompileTime, kernels
	// compiled on every core) over its distinct kernels.
	WideKernelMS  float64            `json:"widejit_wide_compile_ms_per_kernel"`
	WideLaunches  int                `json:"widejit_wide_launches"`
	SeqLaunches   int                `json:"widejit_sequential_launches"`
	WideVsSeqRel  *float64           `json:"widejit_wide_vs_sequential_max_rel"`
	TorchLoop     *timing            `json:"torch_loop"`      // the faster thread count
	TorchLoopBest string             `json:"torch_loop_best"` // e.g. "loop@1t"
	TorchLoops    map[string]*timing `json:"torch_loops"`     // every thread count, "loop@2t"
	TorchBatched  map[string]*timing `json:"torch_batched"`   // "bmm@2t", "grouped@1t", ...
	TorchBest     string             `json:"torch_best_variant"`
	TorchBestMS   *float64           `json:"torch_best_ms"`
	Check         *peerCheck         `json:"torch_check"`
	// Speedups of widejit wide: other's median / wide's median (> 1: widejit is faster).
	SpeedupVsSeq       *float64 `json:"speedup_vs_widejit_sequential"`
	SpeedupVsTorchLoop *float64 `json:"speedup_vs_torch_loop"`
	SpeedupVsTorchBest *float64 `json:"speedup_vs_torch_best"`
	// GFLOPPerCall is the multiply-adds (x2) of one call of all N models (graphFLOPs).
	GFLOPPerCall float64 `json:"gflop_per_call"`
	// ExportError is why a real model did not export (the cell has no timings).
	ExportError string   `json:"export_error,omitempty"`
	Notes       []string `json:"notes"`
}

// report is the whole run.
type report struct {
	Section   string           `json:"section"`        // "zoo", "real" (--real) or "real_extra" (--real --extra)
	AVX2      bool             `json:"avx2,omitempty"` // both sides without AVX-512 (--avx2)
	Started   string           `json:"started"`
	Seconds   float64          `json:"seconds"`
	Machine   machine          `json:"machine"`
	Torch     any              `json:"torch"` // the peer's hello, or the reason it is n/a
	TorchNote string           `json:"torch_note,omitempty"`
	Reps      int              `json:"reps_requested"`
	Ns        []int            `json:"ns"`          // every N of the run
	NsByModel map[string][]int `json:"ns_by_model"` // each model's sweep
	Models    []string         `json:"models"`
	Cells     []*cell          `json:"cells"`
	// SgemmPeakGFLOPS is the machine's sgemm rate at --threads (torch.mm of 1024x1024 fp32, the
	// BLAS the peer loaded), the faster of a measurement before and after the cells.
	SgemmPeakGFLOPS *float64 `json:"sgemm_peak_gflops,omitempty"`
}

type machine struct {
	GOOS        string `json:"goos"`
	GOARCH      string `json:"goarch"`
	Go          string `json:"go"`
	Cores       int    `json:"cores"`
	Threads     int    `json:"threads"`
	LoadBefore  string `json:"loadavg_before"`
	LoadAfter   string `json:"loadavg_after"`
	CPUModel    string `json:"cpu_model,omitempty"`
	Executor    string `json:"executor"`
	Kernels     string `json:"kernels,omitempty"` // widejit's CPU device: its dot micro-kernels
	MinSampleMS int64  `json:"min_sample_ms"`
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// benchmark runs every cell.
func benchmark(c *config) (*report, error) {
	start := time.Now()
	section := "zoo"
	if c.real {
		section = "real"
		if c.extra {
			section = "real_extra"
		}
	}
	rep := &report{Section: section, Started: start.UTC().Format(time.RFC3339), Reps: c.reps, Models: c.models, NsByModel: map[string][]int{},
		Machine: machine{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, Go: runtime.Version(), Cores: runtime.NumCPU(),
			Threads: c.threads, LoadBefore: loadAvg(), CPUModel: cpuModel(), Executor: "jit/cpu",
			MinSampleMS: c.minSample.Milliseconds()}}
	var pr *peer
	if c.peers {
		var err error
		var note string
		pr, note, err = startPeer(c.python, c.peerScript, c.threads, c.avx2)
		if note != "" {
			rep.TorchNote = note
			c.logf("PyTorch peer: %s", note)
		}
		if err != nil {
			rep.Torch = noTorch
			rep.TorchNote = err.Error()
			c.logf("PyTorch peer unavailable: %v", err)
		} else {
			rep.Torch = pr.Hello
			defer pr.Close()
			measurePeak(c, pr, rep)
			defer measurePeak(c, pr, rep)
		}
	} else {
		rep.Torch = "n/a (--peers=false)"
	}
	sel, err := device.Select("cpu", 0, device.Options{Threads: c.threads})
	if err != nil {
		return nil, err
	}
	dev := sel.Device
	defer dev.Close()
	rep.Machine.Kernels, rep.AVX2 = dev.Info().Name, c.avx2
	if c.avx2 && strings.Contains(rep.Machine.Kernels, "AVX-512") {
		return nil, usageError{"--avx2: widejit chose AVX-512 kernels (" + rep.Machine.Kernels + "); run the bench with GODEBUG=cpu.avx512f=off, which Go reads when the process starts"}
	}
	tmp, err := os.MkdirTemp("", "widejit-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	// Small N first for every model, then larger N: the budget runs short, if at all, on the
	// largest cells, and each model's previous N predicts the next (see runCell's skip).
	type todo struct {
		model string
		n     int
	}
	var cells []todo
	for _, model := range c.models {
		rep.NsByModel[model] = c.nsFor(model)
		for _, n := range rep.NsByModel[model] {
			cells = append(cells, todo{model, n})
			rep.Ns = append(rep.Ns, n)
		}
	}
	slices.SortStableFunc(cells, func(a, b todo) int { return a.n - b.n })
	slices.Sort(rep.Ns)
	rep.Ns = slices.Compact(rep.Ns)
	prev := map[string]map[string]float64{} // model -> contender -> ms per call per model at its previous N
	deadline := start.Add(c.budget)
	for i, td := range cells {
		if prev[td.model] == nil {
			prev[td.model] = map[string]float64{}
		}
		left := max(time.Until(deadline), 0)
		budget := min(c.cellBudget, left/time.Duration(len(cells)-i))
		cl, err := runCell(c, dev, pr, td.model, td.n, budget, deadline, prev[td.model], filepath.Join(tmp, fmt.Sprintf("%s_%d", td.model, td.n)))
		if err != nil {
			return nil, err
		}
		rep.Cells = append(rep.Cells, cl)
	}
	order := map[string]int{}
	for i, m := range c.models {
		order[m] = i
	}
	sort.SliceStable(rep.Cells, func(i, j int) bool {
		a, b := rep.Cells[i], rep.Cells[j]
		if order[a.Model] != order[b.Model] {
			return order[a.Model] < order[b.Model]
		}
		return a.N < b.N
	})
	rep.Machine.LoadAfter = loadAvg()
	rep.Seconds = math.Round(time.Since(start).Seconds()*10) / 10
	return rep, nil
}

// measurePeak measures the sgemm peak at --threads through the peer and keeps the fastest
// figure of the run in rep (a failure leaves it as it was: the report says n/a).
func measurePeak(c *config, pr *peer, rep *report) {
	var reply struct {
		GFLOPS map[string]float64 `json:"gflops"`
	}
	if err := pr.call(map[string]any{"op": "sgemm_peak", "threads": []int{c.threads}, "size": 1024, "reps": 5}, &reply); err != nil {
		c.logf("sgemm peak: %v", err)
		return
	}
	if g, ok := reply.GFLOPS[fmt.Sprint(c.threads)]; ok && (rep.SgemmPeakGFLOPS == nil || g > *rep.SgemmPeakGFLOPS) {
		rep.SgemmPeakGFLOPS = &g
	}
}

// runCell compiles, checks and times one (model, N).
func runCell(c *config, dev jit.Device, pr *peer, model string, n int, budget time.Duration, deadline time.Time, prev map[string]float64, dir string) (*cell, error) {
	cl := &cell{Model: model, N: n, TorchBatched: map[string]*timing{}, TorchLoops: map[string]*timing{}}
	c.logf("%s N=%d: compiling", model, n)
	g, err := c.loadModel(model, n, dir)
	var refused exportError
	if errors.As(err, &refused) {
		c.logf("%s N=%d: does not export: %s", model, n, refused.msg)
		cl.ExportError = refused.msg
		cl.Notes = append(cl.Notes, "does not export yet: "+refused.msg)
		return cl, nil
	}
	if err != nil {
		return nil, err
	}
	inputs, err := g.GenerateInputs(c.seed)
	if err != nil {
		return nil, err
	}
	flops, uncounted := graphFLOPs(g)
	cl.GFLOPPerCall = flops * float64(n) / 1e9
	if len(uncounted) > 0 {
		cl.Notes = append(cl.Notes, "GFLOP/s count no work of "+strings.Join(uncounted, ", "))
	}
	// skip says whether a contender is predicted (linearly in N from the previous N) to be
	// slower than --max-run per call, or to overrun the run's --budget with its warm-up and
	// one repetition.
	skip := func(name string) bool {
		perModel, ok := prev[name]
		if !ok {
			return false
		}
		predicted := time.Duration(perModel * float64(n) * float64(time.Millisecond))
		switch {
		case predicted > c.maxRun:
			cl.Notes = append(cl.Notes, fmt.Sprintf("%s skipped: predicted %.1f s per call (> --max-run %s)", name, predicted.Seconds(), c.maxRun))
			return true
		case 2*predicted > time.Until(deadline):
			cl.Notes = append(cl.Notes, fmt.Sprintf("%s skipped: predicted %.1f s per call, %.0f s left of --budget %s", name, predicted.Seconds(), max(time.Until(deadline), 0).Seconds(), c.budget))
			return true
		}
		return false
	}
	var contenders []contender
	first := map[contender]time.Duration{}
	var wideOut, seqOut map[string]*safetensors.Tensor
	for _, mode := range []string{"wide", "sequential"} {
		if skip("widejit " + mode) {
			continue
		}
		p, err := newWidejitPlan(g, dev, mode, inputs)
		if err != nil {
			return nil, err
		}
		defer p.Close()
		t0 := time.Now()
		out, err := p.runner.Run(inputs)
		if err != nil {
			return nil, fmt.Errorf("%s N=%d: %s: %w", model, n, p.Name(), err)
		}
		first[p] = time.Since(t0)
		ms := durMS(p.compile)
		if mode == "wide" {
			wideOut, cl.WideCompile, cl.WideLaunches = out, ms, len(p.plan.Launches)
			cl.WideKernelMS = durMS(p.runner.CompileTime) / float64(max(len(p.plan.Kernels()), 1))
		} else {
			seqOut, cl.SeqCompile, cl.SeqLaunches = out, ms, len(p.plan.Launches)
		}
		contenders = append(contenders, p)
	}
	if wideOut != nil && seqOut != nil {
		rel, err := maxRelDiff(wideOut, seqOut)
		if err != nil {
			cl.Notes = append(cl.Notes, "widejit wide vs sequential: "+err.Error())
		} else {
			cl.WideVsSeqRel = &rel
		}
	}
	if pr != nil {
		peerContenders, err := setupPeerCell(c, pr, cl, dir, g, inputs, wideOut)
		if err != nil {
			cl.Notes = append(cl.Notes, "torch: "+err.Error())
		}
		for _, pc := range peerContenders {
			if skip(pc.Name()) {
				continue
			}
			d, err := pc.Time(1) // warm-up
			if err != nil {
				cl.Notes = append(cl.Notes, "torch: "+err.Error())
				continue
			}
			first[pc] = d
			contenders = append(contenders, pc)
		}
	}

	// Calls per sample: from the fastest of a few calls after the warm-up (the warm-up itself
	// pays one-time costs), so a sample lasts at least --min-sample; then repetitions, each
	// running every contender once in a shuffled order, so drifts in machine load and the
	// after-effects of one contender on the next spread evenly.
	// A widejit failure fails the run; a peer failure drops that contender with a note.
	failed := map[contender]bool{}
	fail := func(ct contender, err error) error {
		if _, isPeer := ct.(*peerVariant); !isPeer {
			return fmt.Errorf("%s N=%d: %w", model, n, err)
		}
		failed[ct] = true
		cl.Notes = append(cl.Notes, fmt.Sprintf("%s dropped: %v", ct.Name(), err))
		return nil
	}
	calls := map[contender]int{}
	ests := map[contender]time.Duration{}
	for _, ct := range contenders {
		est, err := estimateCall(ct, first[ct], c.minSample)
		if err != nil {
			if err := fail(ct, err); err != nil {
				return nil, err
			}
			continue
		}
		calls[ct] = max(1, min(10000, int(math.Ceil(float64(c.minSample)/float64(max(est, time.Microsecond))))))
		ests[ct] = est
	}
	// A PyTorch variant far slower at one thread count than at the other is not timed at the
	// slower one: the report keeps the faster anyway, and on a loaded machine OpenMP's barriers
	// make the multi-threaded runs 10-100x slower, which would eat the budget of the cell.
	for _, ct := range contenders {
		pv, ok := ct.(*peerVariant)
		if !ok || failed[ct] || ests[ct] == 0 {
			continue
		}
		for _, other := range contenders {
			po, ok := other.(*peerVariant)
			if ok && po != pv && po.variant == pv.variant && !failed[other] && ests[other] > 0 &&
				ests[ct] > slowerThreads*ests[other] {
				failed[ct] = true
				prev[ct.Name()] = durMS(ests[ct]) / float64(n) // so that --budget and --max-run predict it at the next N
				cl.Notes = append(cl.Notes, fmt.Sprintf("torch %s not timed: one call took %s, over %gx %s's %s (the faster thread count is the one reported)",
					pv.key(), ests[ct].Round(time.Microsecond), slowerThreads, po.key(), ests[other].Round(time.Microsecond)))
				break
			}
		}
	}
	samples := map[contender][]float64{}
	c.logf("%s N=%d: timing %d contenders (cell budget %s)", model, n, len(contenders), budget.Round(time.Second))
	start := time.Now()
	reps := 0
	// Each repetition times the contenders in a new order (seeded, so runs repeat): a fixed
	// cycle, even rotated, always put widejit wide right after PyTorch's last variant, and
	// whichever contender follows PyTorch reads slower (measured: 10-45%).
	order := rand.New(rand.NewPCG(uint64(n), uint64(len(model))))
	for reps < c.reps && (reps == 0 || time.Since(start) < budget) {
		for _, i := range order.Perm(len(contenders)) {
			ct := contenders[i]
			if failed[ct] {
				continue
			}
			// untimed calls first (a quarter of a sample): the previous contender (another
			// process, for PyTorch) has evicted this one's data from the caches, and after the
			// pause below the cores run slower for a few milliseconds; measured: whichever
			// contender came first after PyTorch read 10-30% slower
			_, err := ct.Time(max(1, calls[ct]/4))
			var d time.Duration
			if err == nil {
				d, err = ct.Time(calls[ct])
			}
			// OpenMP's workers spin for a while after the peer's call returns (libgomp's
			// GOMP_SPINCOUNT): let them go idle before the next contender is timed, or that
			// one runs on a core they hold. Every contender's sample is followed by the same
			// pause, so each starts from the same state of the machine (pausing after
			// PyTorch's only put a pause before nearly every widejit sample and few PyTorch
			// ones).
			time.Sleep(peerSettle)
			if err != nil {
				if err := fail(ct, err); err != nil {
					return nil, err
				}
				continue
			}
			samples[ct] = append(samples[ct], durMS(d)/float64(calls[ct]))
		}
		reps++
	}
	contenders = slices.DeleteFunc(contenders, func(ct contender) bool { return failed[ct] })
	if reps < c.reps && len(contenders) > 0 {
		cl.Notes = append(cl.Notes, fmt.Sprintf("%d of %d repetitions (cell budget %s)", reps, c.reps, budget.Round(time.Second)))
	}
	cl.Reps = reps
	for _, ct := range contenders {
		t := summarize(samples[ct], calls[ct], first[ct])
		note, err := standalone(ct, calls[ct], t)
		if err != nil {
			cl.Notes = append(cl.Notes, fmt.Sprintf("%s standalone: %v", ct.Name(), err))
		} else if note != "" {
			cl.Notes = append(cl.Notes, note)
		}
		prev[ct.Name()] = t.MedianMS / float64(n)
		switch v := ct.(type) {
		case *widejitPlan:
			if v.mode == "wide" {
				cl.Wide = t
			} else {
				cl.Seq = t
			}
		case *peerVariant:
			if v.variant == "loop" {
				cl.TorchLoops[v.key()] = t
				if cl.TorchLoop == nil || t.MedianMS < cl.TorchLoop.MedianMS {
					cl.TorchLoop, cl.TorchLoopBest = t, v.key()
				}
			} else {
				cl.TorchBatched[v.key()] = t
			}
		}
	}
	for name, t := range cl.TorchBatched {
		if cl.TorchBestMS == nil || t.MedianMS < *cl.TorchBestMS || (t.MedianMS == *cl.TorchBestMS && name < cl.TorchBest) {
			ms := t.MedianMS
			cl.TorchBest, cl.TorchBestMS = name, &ms
		}
	}
	if cl.Wide != nil {
		ratio := func(other float64) *float64 { r := other / cl.Wide.MedianMS; return &r }
		if cl.Seq != nil {
			cl.SpeedupVsSeq = ratio(cl.Seq.MedianMS)
		}
		if cl.TorchLoop != nil {
			cl.SpeedupVsTorchLoop = ratio(cl.TorchLoop.MedianMS)
		}
		if cl.TorchBestMS != nil {
			cl.SpeedupVsTorchBest = ratio(*cl.TorchBestMS)
		}
	}
	c.logf("%s N=%d: %d reps, %s", model, n, reps, summaryLine(cl))
	return cl, nil
}

// setupPeerCell writes the cell's params, inputs and widejit's wide outputs to dir and has the
// peer build and check its modules; it returns the peer's contenders, the loop first.
func setupPeerCell(c *config, pr *peer, cl *cell, dir string, g *graph.Graph, inputs, wideOut map[string]*safetensors.Tensor) ([]contender, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var params []*safetensors.Tensor
	for _, p := range g.Params {
		t, err := g.ParamTensor(p.Name)
		if err != nil {
			return nil, err
		}
		t.Name = p.Name
		params = append(params, t)
	}
	if err := safetensors.Write(filepath.Join(dir, "params.safetensors"), params, nil); err != nil {
		return nil, err
	}
	var ins []*safetensors.Tensor
	for name, t := range inputs {
		t.Name = name
		ins = append(ins, t)
	}
	if err := safetensors.Write(filepath.Join(dir, "inputs.safetensors"), ins, nil); err != nil {
		return nil, err
	}
	if wideOut != nil {
		var outs []*safetensors.Tensor
		for name, t := range wideOut {
			t.Name = name
			outs = append(outs, t)
		}
		if err := safetensors.Write(filepath.Join(dir, "widejit.safetensors"), outs, nil); err != nil {
			return nil, err
		}
	}
	variants, check, err := pr.setup(cl.Model, cl.N, c.threads, dir, g.Inputs[0].PerModel)
	if err != nil {
		return nil, err
	}
	cl.Check = check
	for _, name := range slices.Sorted(maps.Keys(check.Rejected)) {
		cl.Notes = append(cl.Notes, fmt.Sprintf("torch %s rejected (not timed): %s", name, check.Rejected[name]))
	}
	for _, name := range slices.Sorted(maps.Keys(check.Unavailable)) {
		cl.Notes = append(cl.Notes, fmt.Sprintf("torch %s unavailable on this torch (not timed): %s", name, check.Unavailable[name]))
	}
	for _, name := range slices.Sorted(maps.Keys(check.Notes)) {
		cl.Notes = append(cl.Notes, fmt.Sprintf("torch %s %s", name, check.Notes[name]))
	}
	if check.WidejitError != "" {
		cl.Notes = append(cl.Notes, "widejit output check: "+check.WidejitError)
	}
	// Every variant at --threads and, when that is more than one, at one thread: on a loaded
	// machine OpenMP's barriers can make PyTorch's multi-threaded runs far slower than its
	// single-threaded ones, and the report keeps the better of the two.
	threadCounts := []int{c.threads}
	if c.threads > 1 {
		threadCounts = append(threadCounts, 1)
	}
	var out []contender
	for _, v := range variants {
		for _, t := range threadCounts {
			out = append(out, &peerVariant{p: pr, variant: v, threads: t})
		}
	}
	return out, nil
}

// slowerThreads: a PyTorch variant whose estimated call at one thread count is more than this
// many times its estimate at the other is timed at the faster only.
const slowerThreads = 3.0

// peerSettle is the pause after each sample: libgomp's idle workers spin about 300,000
// iterations (a few milliseconds) before they sleep.
const peerSettle = 20 * time.Millisecond

// estimateCall estimates one call's time: the fastest of up to 3 calls (stopping once they
// add up to 3 samples' worth); a contender whose warm-up took over a second gets k = 1 anyway,
// so it is not run again.
func estimateCall(ct contender, first, minSample time.Duration) (time.Duration, error) {
	if first > time.Second {
		return first, nil
	}
	est, total := first, time.Duration(0)
	for i := 0; i < 3 && total < 3*minSample; i++ {
		d, err := ct.Time(1)
		if err != nil {
			return 0, err
		}
		est, total = min(est, d), total+d
	}
	return est, nil
}

func summarize(samples []float64, calls int, first time.Duration) *timing {
	t := &timing{CallsPerSample: calls, FirstMS: round3(durMS(first))}
	for _, s := range samples {
		t.SamplesMS = append(t.SamplesMS, round3(s))
	}
	t.MedianMS = round3(median(samples))
	t.MinMS = round3(slices.Min(samples))
	return t
}

// median of xs (the mean of the two middle values for an even count); xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

func durMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// round3 keeps 3 significant decimals below 1 ms and 3 decimals above, enough for the report.
func round3(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	scale := math.Pow(10, 3-math.Ceil(math.Log10(math.Abs(x))))
	scale = max(scale, 1000)
	return math.Round(x*scale) / scale
}

func summaryLine(cl *cell) string {
	f := func(t *timing) string {
		if t == nil {
			return "-"
		}
		return fmt.Sprintf("%.3f ms", t.MedianMS)
	}
	best := "-"
	if cl.TorchBestMS != nil {
		best = fmt.Sprintf("%.3f ms (%s)", *cl.TorchBestMS, cl.TorchBest)
	}
	return fmt.Sprintf("wide %s, seq %s, torch loop %s, torch best %s", f(cl.Wide), f(cl.Seq), f(cl.TorchLoop), best)
}
