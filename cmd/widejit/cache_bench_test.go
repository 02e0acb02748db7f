package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/widejit/widejit/cache"
	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx"
	"github.com/widejit/widejit/lowering"
)

// Figures in bench/results/cache.md:
//
//	go test ./cmd/widejit -run '^$' -bench 'BenchmarkCache' -benchtime 5x

var cacheBenchExamples = []string{"mlp", "deep_mlp", "classifier", "convnet", "embedding", "patterns", "resblock", "transformer"}

// BenchmarkCacheRun times `widejit run` (in process, CPU) end to end with a cold cache (a
// fresh directory each time) and a warm one, and reports the store's compile and load time.
func BenchmarkCacheRun(b *testing.B) {
	b.Setenv("XDG_CONFIG_HOME", b.TempDir())
	for _, ex := range cacheBenchExamples {
		dir := filepath.Join("../../examples", ex)
		args := func(cacheDir string) []string {
			return []string{"--cache-dir", cacheDir, "run", filepath.Join(dir, "graph.json"), "--device", "cpu", "--json",
				"--inputs", filepath.Join(dir, "inputs.safetensors")}
		}
		run := func(b *testing.B, cacheDir string) runJSON {
			var out, errb bytes.Buffer
			if code := execute(args(cacheDir), &out, &errb); code != 0 {
				b.Fatalf("%s: exit %d: %s", ex, code, errb.String())
			}
			var r runJSON
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				b.Fatal(err)
			}
			return r
		}
		report := func(b *testing.B, sum runJSON, runs int) {
			k := float64(sum.Plan.Kernels)
			b.ReportMetric((sum.Cache.CompileMS+sum.Cache.LoadMS)/float64(runs), "cache-ms/run")
			b.ReportMetric(sum.Cache.CompileMS/float64(runs)/k, "compile-ms/kernel")
			b.ReportMetric(sum.Cache.LoadMS/float64(runs)/k, "load-ms/kernel")
		}
		b.Run(ex+"/cold", func(b *testing.B) {
			root := b.TempDir()
			var sum runJSON
			for i := 0; b.Loop(); i++ {
				r := run(b, filepath.Join(root, "kc"+strconv.Itoa(i)))
				sum.Cache.CompileMS += r.Cache.CompileMS
				sum.Cache.LoadMS += r.Cache.LoadMS
				sum.Plan.Kernels = r.Plan.Kernels
			}
			report(b, sum, b.N)
		})
		b.Run(ex+"/warm", func(b *testing.B) {
			cacheDir := filepath.Join(b.TempDir(), "kc")
			run(b, cacheDir)
			var sum runJSON
			for b.Loop() {
				r := run(b, cacheDir)
				if r.Cache.Misses != 0 {
					b.Fatalf("%s: warm run missed: %+v", ex, r.Cache)
				}
				sum.Cache.CompileMS += r.Cache.CompileMS
				sum.Cache.LoadMS += r.Cache.LoadMS
				sum.Plan.Kernels = r.Plan.Kernels
			}
			report(b, sum, b.N)
		})
	}
}

// BenchmarkCachePTX compiles every kernel of each example's plan to PTX for sm_90 with an
// empty store (cold: codegen and Put) and reads them back from a filled one (warm: Get and
// checksum); Badger's Open and Close are not timed.
func BenchmarkCachePTX(b *testing.B) {
	for _, ex := range cacheBenchExamples {
		g, err := graph.Load(filepath.Join("../../examples", ex, "graph.json"))
		if err != nil {
			b.Fatal(err)
		}
		plan, err := lowering.Lower(g, lowering.Options{})
		if err != nil {
			b.Fatal(err)
		}
		target := ptx.Target{Arch: "sm_90"}
		compileAll := func(b *testing.B, store *cache.Store) {
			comp := jit.NewCompiler(jit.CompilerOptions{Store: store, Version: buildVersion()})
			for _, l := range plan.Launches {
				if _, err := comp.Compile(l.Kernel.Source, l.Spec(), target); err != nil {
					b.Fatalf("%s: %v", ex, err)
				}
			}
		}
		open := func(b *testing.B, dir string) *cache.Store {
			s, err := cache.Open(dir, cache.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}
		kernels := float64(len(plan.Launches))
		b.Run(ex+"/cold", func(b *testing.B) {
			root := b.TempDir()
			i := 0
			for b.Loop() {
				i++
				b.StopTimer() // opening and closing Badger is not compilation
				s := open(b, filepath.Join(root, strconv.Itoa(i)))
				b.StartTimer()
				compileAll(b, s)
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N)/kernels, "ms/kernel")
		})
		b.Run(ex+"/warm", func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "kc")
			s := open(b, dir)
			compileAll(b, s)
			s.Close()
			s = open(b, dir)
			defer s.Close()
			for b.Loop() {
				compileAll(b, s)
			}
			if c := s.Counters(); c.Misses != 0 {
				b.Fatalf("%s: warm compile missed %d times", ex, c.Misses)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N)/kernels, "ms/kernel")
		})
	}
}
