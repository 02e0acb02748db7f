package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/autotune"
	"github.com/widejit/widejit/cache"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/internal/engine"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
	"github.com/widejit/widejit/jit/ptx"
	"github.com/widejit/widejit/lowering"
)

// populate.go: `widejit cache populate`, ahead-of-time compilation of every kernel a graph
// needs, for the CPU or for GPU archs, on a machine without a GPU.

func init() { extend("cache", func(a *app, c *cobra.Command) { c.AddCommand(newCachePopulateCmd(a)) }) }

type populateFlags struct {
	nList, archList string
	allStrategies   bool
	cubin, asJSON   bool
}

func newCachePopulateCmd(a *app) *cobra.Command {
	var f populateFlags
	cmd := &cobra.Command{
		Use:   "populate GRAPH.json",
		Short: "Compile every kernel a graph needs into the cache, ahead of time (no GPU needed)",
		Long: `Lower GRAPH.json for each N of --n and compile every kernel of the plan into the kernel cache
for each target: PTX for each --arch (sm_80, sm_90; no GPU needed), else the CPU. A later
'widejit run' on that target then only loads them. The plan is the one a run would make:
strategy decisions recorded by 'widejit tune' for this machine's CPU (GPU archs: decisions are
device-specific, so the plugins and the heuristic decide for a generic GPU of that arch), then
--plugin / config plugins, then the heuristic. --all-strategies also compiles every kernel of
every alternative a run could choose instead (each decision flipped to each other candidate,
and the unfused plan), so any recorded or plugin decision on the target finds its kernels.
--cubin also assembles each PTX kernel with ptxas (found on PATH or in .tools/bin) and stores
the cubin (kind "cubin", the ptxas version in its key and target).
Init graphs take any N; a graph with a weights file only its own n.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runPopulate(cmd, a, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.nList, "n", "", "comma-separated model counts (default: the graph's n)")
	fl.StringVar(&f.archList, "arch", "", "comma-separated GPU archs to generate PTX for: "+strings.Join(ptx.Archs, ", ")+" (default: the CPU)")
	fl.BoolVar(&f.allStrategies, "all-strategies", false, "also compile the kernels of every alternative strategy")
	fl.BoolVar(&f.cubin, "cubin", false, "also assemble cubins with ptxas")
	fl.BoolVar(&f.asJSON, "json", false, "print a JSON summary (no progress bar)")
	addPluginFlag(cmd)
	return cmd
}

// populateTarget is one target of populate and the device the plan is chosen for.
type populateTarget struct {
	target jit.Target
	arch   string // "" for the CPU
	device autotune.DeviceInfo
}

// populateItem is one kernel to compile for one target.
type populateItem struct {
	t    populateTarget
	n    int
	src  jit.Source
	spec jit.Spec
}

// populateCount is populate's summary for one target.
type populateCount struct {
	Target      string `json:"target"`
	Ns          []int  `json:"n"`
	Kernels     int    `json:"kernels"`
	Hits        int    `json:"hits"`
	Misses      int    `json:"misses"`
	Failed      int    `json:"failed"`
	CubinHits   int    `json:"cubin_hits,omitempty"`
	CubinMisses int    `json:"cubin_misses,omitempty"`
}

func populateTargets(a *app, archList string) ([]populateTarget, error) {
	if strings.TrimSpace(archList) == "" {
		info := cpu.NewDevice(a.v.GetInt("threads")).Info()
		return []populateTarget{{target: cpu.Target{}, device: engine.DeviceInfo(info)}}, nil
	}
	var out []populateTarget
	for _, arch := range strings.Split(archList, ",") {
		arch = strings.TrimSpace(arch)
		if !slices.Contains(ptx.Archs, arch) {
			return nil, usagef("--arch: %q is not one of %s", arch, strings.Join(ptx.Archs, ", "))
		}
		cc := strings.TrimPrefix(arch, "sm_")
		cc = cc[:len(cc)-1] + "." + cc[len(cc)-1:]
		out = append(out, populateTarget{target: ptx.Target{Arch: arch}, arch: arch,
			device: autotune.DeviceInfo{Kind: "cuda", Name: "generic " + arch, ComputeCapability: cc}})
	}
	return out, nil
}

func runPopulate(cmd *cobra.Command, a *app, path string, f populateFlags) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if a.v.GetBool("no_cache") {
		return usagef("cache populate: --no-cache (or WIDEJIT_NO_CACHE) leaves nothing to populate")
	}
	ns, err := parseNList(f.nList)
	if err != nil {
		return err
	}
	targets, err := populateTargets(a, f.archList)
	if err != nil {
		return err
	}
	graphs, err := loadGraphsForNs(path, ns)
	if err != nil {
		return err
	}
	if graphs, err = shardGraphsFor(cmd, graphs); err != nil {
		return err
	}
	var ptxas, ptxasVersion string
	if f.cubin {
		if len(targets) == 1 && targets[0].arch == "" {
			return usagef("--cubin needs --arch (cubins are GPU code)")
		}
		if ptxas, ptxasVersion, err = findPtxas(); err != nil {
			fmt.Fprintf(a.stderr, "widejit: warning: --cubin: %v; storing PTX only\n", err)
		}
	}
	store := openCacheStore(a)
	if store.Mode() == cache.ModeReadOnly {
		store.Close()
		return fmt.Errorf("cache populate: the cache dir %s is read-only (not writable, or cache_read_only is set): nothing could be stored", store.Dir())
	}
	closed := false
	closeStore := func() error {
		if closed {
			return nil
		}
		closed = true
		return store.Close()
	}
	defer closeStore()
	tuning := engineConfig(a, pluginFlag(cmd)).NewTuning(ctx, store)
	defer tuning.Close()
	// the same compiler options as `run`, so that run finds these entries (same keys)
	comp := jit.NewCompiler(jit.CompilerOptions{Store: store, Version: buildVersion(), Warn: cacheWarner(a)})

	var items []populateItem
	for _, t := range targets {
		for _, g := range graphs {
			plans, err := populatePlans(g, t, tuning.Tuner, f.allStrategies)
			if err != nil {
				return err
			}
			seen := map[string]bool{}
			for _, plan := range plans {
				for _, l := range plan.Launches {
					src, spec := l.Kernel.Source, l.Spec()
					key, err := comp.Key(src, spec, t.target)
					if err != nil {
						return err
					}
					if !seen[key.String()] {
						seen[key.String()] = true
						items = append(items, populateItem{t: t, n: g.N, src: src, spec: spec})
					}
				}
			}
		}
	}
	counts := map[string]*populateCount{}
	var order []string
	var failures []string
	bar := newProgressBar(a.stderr, !f.asJSON)
	for i, it := range items {
		if err := ctx.Err(); err != nil {
			return err
		}
		tk := it.t.target.Key()
		c := counts[tk]
		if c == nil {
			c = &populateCount{Target: tk}
			counts[tk] = c
			order = append(order, tk)
		}
		if !slices.Contains(c.Ns, it.n) {
			c.Ns = append(c.Ns, it.n)
		}
		bar.show(i, len(items), fmt.Sprintf("%s n=%d %s", tk, it.n, it.src.Fn))
		before := store.Counters()
		art, err := comp.Compile(it.src, it.spec, it.t.target)
		c.Kernels++
		if err != nil {
			c.Failed++
			failures = append(failures, fmt.Sprintf("%s n=%d: %v", tk, it.n, err))
			continue
		}
		if store.Counters().Hits > before.Hits {
			c.Hits++
		} else {
			c.Misses++
		}
		if ptxas != "" && art.Kind == ptx.ArtifactKind {
			hit, err := populateCubin(store, comp, it, art, ptxas, ptxasVersion)
			switch {
			case err != nil:
				c.Failed++
				failures = append(failures, fmt.Sprintf("%s n=%d: cubin: %v", tk, it.n, err))
			case hit:
				c.CubinHits++
			default:
				c.CubinMisses++
			}
		}
	}
	bar.show(len(items), len(items), "done")
	bar.done()
	dir := store.Dir()
	if err := closeStore(); err != nil {
		fmt.Fprintf(a.stderr, "widejit: warning: closing the kernel cache: %v\n", err)
	}
	summary := make([]populateCount, 0, len(order))
	total := populateCount{Target: "all"}
	for _, tk := range order {
		c := counts[tk]
		summary = append(summary, *c)
		total.Kernels += c.Kernels
		total.Hits += c.Hits
		total.Misses += c.Misses
		total.Failed += c.Failed
	}
	if f.asJSON {
		err = printJSON(a.stdout, map[string]any{"graph": path, "cache_dir": dir, "targets": summary,
			"kernels": total.Kernels, "hits": total.Hits, "misses": total.Misses, "failed": total.Failed,
			"failures": append([]string{}, failures...), "ptxas": ptxasVersion})
	} else {
		err = printPopulateTable(a, path, dir, summary, ptxas != "")
	}
	if err != nil {
		return err
	}
	if len(failures) > 0 {
		return exitCodeError{1, fmt.Errorf("%d kernels could not be compiled:\n  %s", len(failures), strings.Join(failures, "\n  "))}
	}
	return nil
}

// populatePlans lowers g the way a run on t's device would, and with --all-strategies also
// every single-decision alternative and the unfused plan.
func populatePlans(gr *graph.Graph, t populateTarget, tuner *autotune.Tuner, all bool) ([]*lowering.Plan, error) {
	opts := lowering.Options{Device: t.device}
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

func printPopulateTable(a *app, path, dir string, summary []populateCount, cubins bool) error {
	fmt.Fprintf(a.stdout, "%s: kernels compiled into %s\n", path, dir)
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	header := "TARGET\tN\tKERNELS\tHITS\tMISSES\tFAILED"
	if cubins {
		header += "\tCUBIN HITS\tCUBIN MISSES"
	}
	fmt.Fprintln(tw, header)
	for _, c := range summary {
		ns := make([]string, len(c.Ns))
		for i, n := range c.Ns {
			ns[i] = fmt.Sprint(n)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d", c.Target, strings.Join(ns, ","), c.Kernels, c.Hits, c.Misses, c.Failed)
		if cubins {
			fmt.Fprintf(tw, "\t%d\t%d", c.CubinHits, c.CubinMisses)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// findPtxas finds ptxas (PATH, then .tools/bin above the working directory) and its version.
func findPtxas() (path, version string, err error) {
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
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("%s --version: %v", path, err)
	}
	m := regexp.MustCompile(`V(\d+\.\d+\.\d+)`).FindSubmatch(out)
	if m == nil {
		return "", "", fmt.Errorf("%s --version: no version in %q", path, strings.TrimSpace(string(out)))
	}
	return path, string(m[1]), nil
}

// populateCubin assembles art (PTX) into a cubin for its arch and stores it under a key made
// of the PTX entry's key, the arch and the ptxas version. It reports whether it was a hit.
func populateCubin(store *cache.Store, comp *jit.Compiler, it populateItem, art *jit.Artifact, ptxas, version string) (bool, error) {
	ptxKey, err := comp.Key(it.src, it.spec, it.t.target)
	if err != nil {
		return false, err
	}
	key, err := cache.NewKey(cache.KindKernel).String("ptx_key", ptxKey.String()).String("artifact_kind", "cubin").
		String("arch", it.t.arch).String("ptxas_version", version).Key()
	if err != nil {
		return false, err
	}
	if _, ok := store.Get(key); ok {
		return true, nil
	}
	start := time.Now()
	cubin, err := assembleCubin(ptxas, it.t.arch, art.Payload)
	if err != nil {
		return false, err
	}
	store.RecordCompile(time.Since(start))
	target := it.t.target.Key() + "+ptxas" + version
	rec := &cache.Record{Name: art.Name, Backend: "cubin", Target: target,
		Meta: map[string]string{"artifact_kind": "cubin", "entry": art.Name, "ptxas_version": version}, Payload: cubin}
	return false, store.Put(key, rec)
}

func assembleCubin(ptxas, arch string, text []byte) ([]byte, error) {
	dir, err := os.MkdirTemp("", "widejit-cubin")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "k.ptx"), filepath.Join(dir, "k.cubin")
	if err := os.WriteFile(in, text, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(ptxas, "-arch="+arch, "-o", out, in)
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ptxas -arch=%s: %v: %s", arch, err, strings.TrimSpace(msg.String()))
	}
	return os.ReadFile(out)
}
