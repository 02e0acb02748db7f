package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config is everything one benchmark run is told by its flags.
type config struct {
	ns           []int // --n for every model; nil: each model's zooDefaultNs
	models       []string
	reps         int
	out          string
	threads      int           // CPU threads for widejit and torch alike
	peers        bool          // run the PyTorch peer
	python       string        // interpreter of the peer
	peerScript   string        // bench/peers/torch_zoo.py
	minSample    time.Duration // one timed sample lasts at least this long (several calls when needed)
	cellBudget   time.Duration // soft cap on one (model, N) cell's timed repetitions
	budget       time.Duration // soft cap on the whole run; cells share what is left
	maxRun       time.Duration // a contender predicted slower than this per call is skipped
	seed         int64         // inputs seed
	real         bool          // the real-models section (real.go) instead of the zoo
	extra        bool          // with real: the families' other members (realExtraModels)
	exportScript string        // exporters/torch/export.py, for the real models
	avx2         bool          // both sides without AVX-512 (--avx2)
	progress     io.Writer
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		var u usageError
		fmt.Fprintln(os.Stderr, "bench:", err)
		if errors.As(err, &u) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func parseArgs(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var nText, modelText string
	c := &config{}
	fs.StringVar(&nText, "n", "", "comma-separated numbers of models, for every selected case (default: each case's own sweep, bench/README.md)")
	fs.StringVar(&modelText, "models", strings.Join(zooModels, ","), "comma-separated zoo models")
	fs.IntVar(&c.reps, "reps", 15, "timed repetitions per contender and cell (fewer when --cell-budget runs out; at least 1)")
	fs.StringVar(&c.out, "out", "bench/results", "directory for zoo.md, zoo.json and zoo.png")
	fs.IntVar(&c.threads, "threads", 0, "CPU threads for widejit and PyTorch (0: all cores)")
	fs.BoolVar(&c.peers, "peers", true, "run the PyTorch peer")
	fs.StringVar(&c.python, "python", "/usr/bin/python3", "Python interpreter with torch and numpy (Debian's)")
	fs.StringVar(&c.peerScript, "peer-script", "bench/peers/torch_zoo.py", "the PyTorch peer script")
	fs.DurationVar(&c.minSample, "min-sample", 20*time.Millisecond, "minimum duration of one timed sample")
	fs.DurationVar(&c.cellBudget, "cell-budget", 40*time.Second, "soft time cap on one cell's repetitions")
	fs.DurationVar(&c.budget, "budget", 9*time.Minute, "soft time cap on the whole run")
	fs.DurationVar(&c.maxRun, "max-run", 30*time.Second, "skip a contender predicted (from the previous N) to take longer than this per call")
	fs.Int64Var(&c.seed, "seed", 0, "seed of the generated inputs (and, for --real, of the exported models' weights)")
	fs.BoolVar(&c.real, "real", false, "the real-models section instead of the zoo: torchvision CNNs, a GPT-style LM, a ViT, an MLP-Mixer and a dilated temporal conv net (bench/peers/real_models.py) exported with exporters/torch/export.py, N = 3 and 8; writes real.md, real.json and real.png")
	fs.BoolVar(&c.extra, "extra", false, "the real-models section on the families' other members instead (implies --real): resnet34, resnet50, regnet_x_400mf, regnet_y_800mf, mobilenet_v3_large, efficientnet_b1, shufflenet_v2_x1_0, a wider GPT and a ViT of 8x8 patches; writes real_extra.md, real_extra.json and real_extra.png")
	fs.StringVar(&c.exportScript, "export-script", "exporters/torch/export.py", "the PyTorch exporter (--real)")
	fs.BoolVar(&c.avx2, "avx2", false, "time both sides as on a CPU without AVX-512: widejit's AVX2/FMA kernels (run with GODEBUG=cpu.avx512f=off) and PyTorch's with OPENBLAS_CORETYPE=Haswell and oneDNN capped at AVX2")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	if err := fs.Parse(args); err != nil {
		return nil, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Sprintf("unexpected arguments %q", fs.Args())}
	}
	for _, f := range strings.Split(nText, ",") {
		if nText == "" {
			break
		}
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, usageError{fmt.Sprintf("--n: %q is not a positive integer", f)}
		}
		c.ns = append(c.ns, n)
	}
	modelsGiven := false
	fs.Visit(func(f *flag.Flag) { modelsGiven = modelsGiven || f.Name == "models" })
	c.real = c.real || c.extra
	if c.real && !modelsGiven {
		modelText = strings.Join(realModels, ",")
		if c.extra {
			modelText = strings.Join(realExtraModels, ",")
		}
	}
	for _, m := range strings.Split(modelText, ",") {
		m = strings.TrimSpace(m)
		if !isZooModel(m) && !(c.real && isRealModel(m)) {
			return nil, usageError{fmt.Sprintf("--models: unknown model %q (the zoo has %s; with --real: %s)", m, strings.Join(zooModels, ", "), strings.Join(append(slices.Clone(realModels), realExtraModels...), ", "))}
		}
		c.models = append(c.models, m)
	}
	if c.reps < 1 {
		return nil, usageError{fmt.Sprintf("--reps must be >= 1, got %d", c.reps)}
	}
	if c.threads < 0 {
		return nil, usageError{fmt.Sprintf("--threads must be >= 0, got %d", c.threads)}
	}
	if c.threads == 0 {
		c.threads = runtime.GOMAXPROCS(0)
	}
	if c.minSample <= 0 || c.cellBudget <= 0 || c.budget <= 0 || c.maxRun <= 0 {
		return nil, usageError{"--min-sample, --cell-budget, --budget and --max-run must be positive"}
	}
	if !*quiet {
		c.progress = stderr
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parseArgs(args, stderr)
	if err != nil {
		return err
	}
	rep, err := benchmark(c)
	if err != nil {
		return err
	}
	paths, err := writeReport(c.out, rep)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, markdownTable(rep))
	fmt.Fprintf(stdout, "\nwrote %s\n", strings.Join(paths, ", "))
	return nil
}

// nsFor is the sorted, deduplicated N sweep of one model: --n, or the model's default.
func (c *config) nsFor(model string) []int {
	ns := c.ns
	if ns == nil {
		ns = zooDefaultNs[model]
		if isRealModel(model) {
			ns = realDefaultNs
		}
	}
	ns = slices.Clone(ns)
	slices.Sort(ns)
	return slices.Compact(ns)
}

func (c *config) logf(format string, args ...any) {
	if c.progress != nil {
		fmt.Fprintf(c.progress, format+"\n", args...)
	}
}
