package engine

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/cache"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/errkind"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
	"github.com/widejit/widejit/jit/cuda"
	"github.com/widejit/widejit/jit/ptx"
	"github.com/widejit/widejit/lowering"
)

// populate.go: `widejit cache populate`, ahead-of-time compilation of every kernel a graph
// needs, for the CPU or for GPU archs, on a machine without a GPU.

// PopulateOptions are what `widejit cache populate` compiles besides the plans a run makes.
type PopulateOptions struct {
	AllStrategies bool // also every alternative a run could choose instead, and the unfused plan
	Cubin         bool // also assemble each PTX kernel with ptxas and store the cubin
	// Progress, if set, is told before each kernel: done of total, and which kernel.
	Progress func(done, total int, label string)
}

// PopulateReport is what Populate compiled, per target.
type PopulateReport struct {
	CacheDir     string
	Targets      []PopulateCount
	Total        PopulateCount // Target "all"
	Failures     []string      // one line per kernel that failed
	PtxasVersion string        // of the ptxas that assembled cubins; "" when none did
}

// PopulateTarget is one target of populate and the device the plan is chosen for.
type PopulateTarget struct {
	target jit.Target
	arch   string // "" for the CPU
	device jit.DeviceInfo
	// archOption is the cuda backend's arch option a run needs to load this arch's PTX
	// (sm_90 on a cc 9.0 device, which loads sm_90a by default); "" when the device's default
	archOption string
}

// AddShardSizes adds to graphs one model range of each shard size of each K of ks
// (floor(N/K) and ceil(N/K) models): kernels are specialized for the models they serve, so
// a cache that every shard of `run --shard I/K` (or --device with K devices) hits needs
// those sizes.
func AddShardSizes(graphs []*graph.Graph, ks []int) ([]*graph.Graph, error) {
	out := graphs
	for _, g := range graphs {
		seen := map[int]bool{g.N: true}
		for _, k := range ks {
			if k > g.N {
				return nil, errkind.Usagef("--shards %d: K=%d shards of N=%d models would leave some empty; need K <= N", k, k, g.N)
			}
			for i := range k {
				lo, hi := graph.ShardRange(i, k, g.N)
				if seen[hi-lo] {
					continue
				}
				seen[hi-lo] = true
				sub, err := g.Models(lo, hi)
				if err != nil {
					return nil, err
				}
				out = append(out, sub)
			}
		}
	}
	return out, nil
}

// populateItem is one kernel to compile for one target.
type populateItem struct {
	t    PopulateTarget
	comp *jit.Compiler // with the backend options of a run on t's device
	n    int
	src  jit.Source
	spec jit.Spec
}

// PopulateCount is populate's summary for one target.
type PopulateCount struct {
	Target      string `json:"target"`
	Ns          []int  `json:"n"`
	Kernels     int    `json:"kernels"`
	Hits        int    `json:"hits"`
	Misses      int    `json:"misses"`
	Failed      int    `json:"failed"`
	CubinHits   int    `json:"cubin_hits,omitempty"`
	CubinMisses int    `json:"cubin_misses,omitempty"`
}

// PTXArchs are the GPU archs that populate (and kernel dump) generate PTX for.
var PTXArchs = ptx.AllArchs

// PopulateTargets are the targets of `cache populate --arch`: each GPU arch of the
// comma-separated list (a generic GPU of that arch chooses the plan), or, for "", the CPU
// with threads workers. An arch that its GPUs load only when told (sm_90a, the cuda
// backend's arch option) is populated under that option's keys, e.g. sm_90 under those of
// `run --backend-opt arch=sm_90` (a cc 9.0 device loads sm_90a by default).
func PopulateTargets(archList string, threads int) ([]PopulateTarget, error) {
	if strings.TrimSpace(archList) == "" {
		info := cpu.NewDevice(threads).Info()
		return []PopulateTarget{{target: cpu.Target{}, device: info}}, nil
	}
	var out []PopulateTarget
	for _, arch := range strings.Split(archList, ",") {
		arch = strings.TrimSpace(arch)
		if !slices.Contains(ptx.AllArchs, arch) {
			return nil, errkind.Usagef("--arch: %q is not one of %s", arch, strings.Join(ptx.AllArchs, ", "))
		}
		t := PopulateTarget{target: ptx.Target{Arch: arch}, arch: arch, device: cuda.GenericDevice(arch)}
		if def, err := ptx.ArchForCapability(t.device.ComputeCapability); err != nil || def != arch {
			t.archOption = arch
		}
		out = append(out, t)
	}
	return out, nil
}

// forTarget is c as a run on t's device sees it: with the backend's arch option t needs.
func (c Config) forTarget(t PopulateTarget) (Config, error) {
	if a, ok := c.BackendOptions["arch"]; ok && t.arch != "" && a != t.arch {
		return c, errkind.Usagef("--arch %s with --backend-opt arch=%s: the backend option picks the PTX a device loads, so it must name the populated arch (or be left out: populate sets it where %s needs it)", t.arch, a, t.arch)
	}
	if t.archOption == "" {
		return c, nil
	}
	opts := maps.Clone(c.BackendOptions)
	if opts == nil {
		opts = map[string]string{}
	}
	opts["arch"] = t.archOption
	c.BackendOptions = opts
	return c, nil
}

// Populate compiles every kernel of the plans a run of each graph would make on each target
// (with AllStrategies, of every alternative too) into the kernel cache; a kernel that fails
// is counted and listed in the report, not an error.
func (c Config) Populate(ctx context.Context, graphs []*graph.Graph, targets []PopulateTarget, o PopulateOptions) (*PopulateReport, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	progress := o.Progress
	if progress == nil {
		progress = func(int, int, string) {}
	}
	var err error
	assemblers := map[string]assembler{} // by arch; none when --cubin is not given
	if o.Cubin {
		if len(targets) == 1 && targets[0].arch == "" {
			return nil, errkind.Usagef("--cubin needs --arch (cubins are GPU code)")
		}
		if assemblers, err = findAssemblers(targets, c.Warning); err != nil {
			return nil, err
		}
	}
	store := c.OpenCache()
	if store.Mode() == cache.ModeReadOnly {
		store.Close()
		return nil, fmt.Errorf("cache populate: cache dir %s is read-only for this run (cache_read_only is set, or see the warning above: not writable, or its filesystem is full): nothing could be stored", store.Dir())
	}
	closed := false
	defer func() {
		if !closed {
			store.Close()
		}
	}()
	tuning := c.NewTuning(ctx, store)
	defer tuning.Close()
	var items []populateItem
	for _, t := range targets {
		// the same options as `run` on t's device, so that run finds these entries (same keys)
		tc, err := c.forTarget(t)
		if err != nil {
			return nil, err
		}
		comp := tc.Compiler(store)
		for _, g := range graphs {
			plans, err := populatePlans(g, t, tc.loweringOptions(t.device), tuning.Tuner, o.AllStrategies)
			if err != nil {
				return nil, err
			}
			seen := map[string]bool{}
			for _, plan := range plans {
				for _, l := range plan.Launches {
					src, spec := l.Kernel.Source, l.Spec()
					key, err := comp.Key(src, spec, t.target)
					if err != nil {
						return nil, err
					}
					if !seen[key.String()] {
						seen[key.String()] = true
						items = append(items, populateItem{t: t, comp: comp, n: g.N, src: src, spec: spec})
					}
				}
			}
		}
	}
	counts := map[string]*PopulateCount{}
	var order []string
	var failures []string
	for i, it := range items {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tk := it.t.target.Key()
		count := counts[tk]
		if count == nil {
			count = &PopulateCount{Target: tk}
			counts[tk] = count
			order = append(order, tk)
		}
		if !slices.Contains(count.Ns, it.n) {
			count.Ns = append(count.Ns, it.n)
		}
		progress(i, len(items), fmt.Sprintf("%s n=%d %s", tk, it.n, it.src.Fn))
		before := store.Counters()
		art, err := it.comp.Compile(it.src, it.spec, it.t.target)
		count.Kernels++
		if err != nil {
			count.Failed++
			failures = append(failures, fmt.Sprintf("%s n=%d: %v", tk, it.n, err))
			continue
		}
		if store.Counters().Hits > before.Hits {
			count.Hits++
		} else {
			count.Misses++
		}
		if as, ok := assemblers[it.t.arch]; ok && art.Kind == ptx.ArtifactKind {
			hit, err := populateCubin(ctx, store, it, art, as)
			switch {
			case err != nil:
				count.Failed++
				failures = append(failures, fmt.Sprintf("%s n=%d: cubin: %v", tk, it.n, err))
			case hit:
				count.CubinHits++
			default:
				count.CubinMisses++
			}
		}
	}
	progress(len(items), len(items), "done")
	rep := &PopulateReport{CacheDir: store.Dir(), Failures: append([]string{}, failures...), Total: PopulateCount{Target: "all"},
		PtxasVersion: assemblerVersions(assemblers)}
	closed = true
	c.closeCache(store)
	rep.Targets = make([]PopulateCount, 0, len(order))
	for _, tk := range order {
		count := counts[tk]
		rep.Targets = append(rep.Targets, *count)
		rep.Total.Kernels += count.Kernels
		rep.Total.Hits += count.Hits
		rep.Total.Misses += count.Misses
		rep.Total.Failed += count.Failed
	}
	return rep, nil
}

// populatePlans lowers g the way a run on t's device would, and with --all-strategies also
// every single-decision alternative and the unfused plan.
func populatePlans(gr *graph.Graph, t PopulateTarget, opts lowering.Options, tuner *autotune.Tuner, all bool) ([]*lowering.Plan, error) {
	plan, points, err := lowering.LowerWithDecisions(gr, opts, tuner, nil)
	if err != nil {
		return nil, err
	}
	plans := []*lowering.Plan{plan}
	if !all {
		return plans, nil
	}
	for _, p := range points {
		for _, c := range p.Candidates {
			if c.ID == p.Decision.CandidateID {
				continue
			}
			alt, _, err := lowering.LowerWithDecisions(gr, opts, tuner, map[int]string{p.Index: c.ID})
			if err != nil {
				return nil, fmt.Errorf("alternative %s for %s: %w", c.ID, p.Label(), err)
			}
			plans = append(plans, alt)
		}
	}
	opts.NoFusion = true
	unfused, _, err := lowering.LowerWithDecisions(gr, opts, tuner, nil)
	if err != nil {
		return nil, err
	}
	return append(plans, unfused), nil
}

// assembler is a ptxas and its version.
type assembler struct{ path, version string }

// findAssemblers finds the ptxas that assembles each GPU target's arch: the one FindPtxas
// finds, or for PTX ISA 8.0 (sm_90a), which 11.8's refuses, one of CUDA 12. Without any
// ptxas the cubins are skipped with a warning; without CUDA 12's for sm_90a it is an error.
func findAssemblers(targets []PopulateTarget, warn func(string)) (map[string]assembler, error) {
	out := map[string]assembler{}
	path, version, findErr := FindPtxas()
	for _, t := range targets {
		switch {
		case t.arch == "":
		case ptx.ISAFor(t.arch) == ptx.ISAHopper:
			as, err := findCUDA12Ptxas(path, version)
			if err != nil {
				return nil, fmt.Errorf("--cubin for %s: %w", t.arch, err)
			}
			out[t.arch] = as
		case findErr == nil:
			out[t.arch] = assembler{path, version}
		default:
			warn(fmt.Sprintf("--cubin: %v; storing %s's PTX only", findErr, t.arch))
		}
	}
	return out, nil
}

// findCUDA12Ptxas is the ptxas found (path, version) when it is CUDA 12's or newer, else
// the one .ci/setup puts in .tools/cuda12/bin above the working directory or the executable.
func findCUDA12Ptxas(path, version string) (assembler, error) {
	if major, _, _ := strings.Cut(version, "."); path != "" && atoi(major) >= 12 {
		return assembler{path, version}, nil
	}
	p, err := ptx.FindCUDA12Tool(".", "ptxas")
	if err != nil {
		exe, exeErr := os.Executable()
		if exeErr != nil {
			return assembler{}, err
		}
		if p, err = ptx.FindCUDA12Tool(filepath.Dir(exe), "ptxas"); err != nil {
			found := "no ptxas"
			if path != "" {
				found = fmt.Sprintf("only ptxas %s (%s)", version, path)
			}
			return assembler{}, fmt.Errorf("PTX ISA %s needs CUDA 12's ptxas, and there is %s: put a CUDA 12 ptxas on PATH, or %v", ptx.ISAHopper, found, err)
		}
	}
	v, err := ptxasVersion(p)
	if err != nil {
		return assembler{}, err
	}
	return assembler{p, v}, nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// assemblerVersions lists the versions of the ptxas used, sorted, comma-separated.
func assemblerVersions(as map[string]assembler) string {
	var vs []string
	for _, a := range as {
		if !slices.Contains(vs, a.version) {
			vs = append(vs, a.version)
		}
	}
	slices.Sort(vs)
	return strings.Join(vs, ", ")
}

// FindPtxas finds ptxas (PATH, then .tools/bin above the working directory or the
// executable) and its version.
func FindPtxas() (path, version string, err error) {
	path, err = ptx.FindPtxas(".")
	if err != nil {
		// a checkout's binary: look above the executable too
		exe, exeErr := os.Executable()
		if exeErr != nil {
			return "", "", err
		}
		if path, err = ptx.FindPtxas(filepath.Dir(exe)); err != nil {
			return "", "", err
		}
	}
	version, err = ptxasVersion(path)
	return path, version, err
}

func ptxasVersion(path string) (string, error) {
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", path, err)
	}
	m := regexp.MustCompile(`V(\d+\.\d+\.\d+)`).FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%s --version: no version in %q", path, strings.TrimSpace(string(out)))
	}
	return string(m[1]), nil
}

// populateCubin assembles art (PTX) into a cubin for its arch with as and stores it under a
// key made of the PTX entry's key, the arch and the ptxas version. It reports whether it
// was a hit.
func populateCubin(ctx context.Context, store *cache.Store, it populateItem, art *jit.Artifact, as assembler) (bool, error) {
	ptxKey, err := it.comp.Key(it.src, it.spec, it.t.target)
	if err != nil {
		return false, err
	}
	key, err := cache.NewKey(cache.KindKernel).String("ptx_key", ptxKey.String()).String("artifact_kind", "cubin").
		String("arch", it.t.arch).String("ptxas_version", as.version).Key()
	if err != nil {
		return false, err
	}
	if _, ok := store.Get(key); ok {
		return true, nil
	}
	start := time.Now()
	cubin, err := assembleCubin(ctx, as.path, it.t.arch, art.Payload)
	if err != nil {
		return false, err
	}
	store.RecordCompile(time.Since(start))
	target := it.t.target.Key() + "+ptxas" + as.version
	rec := &cache.Record{Name: art.Name, Backend: "cubin", Target: target,
		Meta: map[string]string{"artifact_kind": "cubin", "entry": art.Name, "ptxas_version": as.version}, Payload: cubin}
	return false, store.Put(key, rec)
}

func assembleCubin(ctx context.Context, ptxas, arch string, text []byte) ([]byte, error) {
	dir, err := os.MkdirTemp("", "widejit-cubin")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "k.ptx"), filepath.Join(dir, "k.cubin")
	if err := os.WriteFile(in, text, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, ptxas, "-arch="+arch, "-o", out, in) // killed when populate is interrupted
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ptxas -arch=%s: %v: %s", arch, err, strings.TrimSpace(msg.String()))
	}
	return os.ReadFile(out)
}
