package torch_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/widejit/widejit/graph/safetensors"
)

// python is Debian's interpreter, which has python3-torch; the pyenv python3 first on some
// PATHs does not.
const python = "/usr/bin/python3"

// repoRoot is where the exporter's relative paths (examples/models.py) resolve.
const repoRoot = "../.."

var exampleFiles = []string{"graph.json", "weights.safetensors", "inputs.safetensors", "expected.safetensors"}

var (
	torchOnce    sync.Once
	torchMissing string
)

func needTorch(t *testing.T) {
	t.Helper()
	torchOnce.Do(func() {
		if _, err := os.Stat(python); err != nil {
			torchMissing = python + " not found"
			return
		}
		if out, err := exec.Command(python, "-c", "import torch, numpy").CombinedOutput(); err != nil {
			torchMissing = python + " cannot import torch and numpy: " + lastLine(out)
		}
	})
	if torchMissing != "" {
		t.Skipf("%s: install python3-torch (bash .ci/setup)", torchMissing)
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// runPy runs a Python script from the repository root and returns its exit code, stdout and
// stderr.
func runPy(t *testing.T, stdin []byte, args ...string) (int, string, string) {
	t.Helper()
	return runPyEnv(t, nil, stdin, args...)
}

// runPyEnv is runPy with env (KEY=VALUE) added to the environment.
func runPyEnv(t *testing.T, env []string, stdin []byte, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(python, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	default:
		t.Fatalf("running %s %v: %v", python, args, err)
		return -1, "", ""
	}
}

type job struct {
	Tool string   `json:"tool"` // "export" or "reference"
	Argv []string `json:"argv"`
}

type result struct {
	RC     int    `json:"rc"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
}

// batch runs export.py / reference.py command lines, in order, in one Python process
// (testdata/batch.py), since importing torch dominates the cost of each.
func batch(t *testing.T, jobs []job) []result {
	t.Helper()
	in, err := json.Marshal(jobs)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runPy(t, in, "exporters/torch/testdata/batch.py")
	if code != 0 {
		t.Fatalf("batch.py exited %d:\n%s", code, stderr)
	}
	var results []result
	if err := json.Unmarshal([]byte(stdout), &results); err != nil || len(results) != len(jobs) {
		t.Fatalf("batch.py output (%v): %s\nstderr:\n%s", err, stdout, stderr)
	}
	return results
}

func committedExamples(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(repoRoot, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(repoRoot, "examples", e.Name(), "graph.json")); err == nil {
				names = append(names, e.Name())
			}
		}
	}
	sort.Strings(names)
	return names
}

// regenerate runs a fixture script with --out into a temporary directory; it returns the
// directory and the script's stdout.
func regenerate(t *testing.T, script string) (string, string) {
	t.Helper()
	needTorch(t)
	out := t.TempDir()
	code, stdout, stderr := runPy(t, nil, script, "--out", out)
	if code != 0 {
		t.Fatalf("%s exited %d\nstdout:\n%s\nstderr:\n%s", script, code, stdout, stderr)
	}
	return out, stdout
}

// TestExamplesAreReproducible re-exports every example and requires the committed graph,
// weights and inputs to be byte-identical: the fixtures are what the exporter makes, not
// hand-edited, and the exporter is deterministic. The expected outputs are PyTorch's results,
// whose last bits depend on the BLAS kernels of the machine (OpenBLAS picks its summation order
// by CPU type), so they must agree within float rounding: |diff| <= 1e-5 * max|expected|.
// make_examples.py also re-executes each graph with reference.py.
func TestExamplesAreReproducible(t *testing.T) {
	out, stdout := regenerate(t, "exporters/torch/make_examples.py")
	committed := committedExamples(t)
	if len(committed) < 8 {
		t.Fatalf("examples/ holds %d examples (%v), want the 8 of make_examples.py", len(committed), committed)
	}
	regenerated, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range regenerated {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if strings.Join(names, ",") != strings.Join(committed, ",") {
		t.Fatalf("make_examples.py writes %v but examples/ holds %v", names, committed)
	}
	for _, name := range committed {
		for _, file := range exampleFiles {
			want, err := os.ReadFile(filepath.Join(repoRoot, "examples", name, file))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			got, err := os.ReadFile(filepath.Join(out, name, file))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if file == "expected.safetensors" && !bytes.Equal(got, want) {
				if err := sameUpToRounding(filepath.Join(out, name, file), filepath.Join(repoRoot, "examples", name, file)); err != nil {
					t.Errorf("examples/%s/%s: a fresh export differs beyond float rounding: %v; regenerate with "+
						"/usr/bin/python3 exporters/torch/make_examples.py", name, file, err)
				}
				continue
			}
			if !bytes.Equal(got, want) {
				t.Errorf("examples/%s/%s differs from a fresh export (%d vs %d bytes); regenerate with "+
					"/usr/bin/python3 exporters/torch/make_examples.py", name, file, len(want), len(got))
			}
		}
		if !strings.Contains(stdout, name+": reference check ok") {
			t.Errorf("%s: no reference check in make_examples.py output:\n%s", name, stdout)
		}
	}
}

// TestIdiomFixturesReproducible re-exports lowering's idiom fixtures (PyTorch written as people
// write it: indexing, masks, shape-derived scalars, nn.Transformer* layers, Flux blocks, SDPA,
// bfloat16), re-checks each with reference.py, requires the committed graph, weights and inputs
// to be what the exporter makes today and the Go loader to infer PyTorch's output types.
func TestIdiomFixturesReproducible(t *testing.T) {
	out, stdout := regenerate(t, "lowering/testdata/make_idiom_fixtures.py")
	committed, _ := filepath.Glob(filepath.Join(repoRoot, "lowering", "testdata", "idioms", "*", "graph.json"))
	if len(committed) < 10 {
		t.Fatalf("lowering/testdata/idioms holds %d fixtures, want the 10 of make_idiom_fixtures.py", len(committed))
	}
	for _, g := range committed {
		dir := filepath.Dir(g)
		name := filepath.Base(dir)
		for _, file := range exampleFiles {
			want, err1 := os.ReadFile(filepath.Join(dir, file))
			got, err2 := os.ReadFile(filepath.Join(out, name, file))
			switch {
			case err1 != nil || err2 != nil:
				t.Errorf("%s/%s: %v %v", name, file, err1, err2)
			case file == "expected.safetensors":
				if err := sameUpToRounding(filepath.Join(out, name, file), filepath.Join(dir, file)); err != nil && !strings.HasPrefix(name, "half") {
					t.Errorf("%s/%s: a fresh export differs beyond float rounding: %v", name, file, err)
				}
			case !bytes.Equal(got, want):
				t.Errorf("lowering/testdata/idioms/%s/%s differs from a fresh export; regenerate with "+
					"/usr/bin/python3 lowering/testdata/make_idiom_fixtures.py", name, file)
			}
		}
		if !strings.Contains(stdout, strings.TrimSuffix(name, "_n3")+": reference check ok") {
			t.Errorf("%s: no reference check in make_idiom_fixtures.py output", name)
		}
		checkLoaderAgrees(t, filepath.Join(out, name, "graph.json"))
	}
}

// TestCommandLineRefusal runs export.py as a user would on a module with an op outside the
// vocabulary: exit code 1, one clear line naming the node, op and target, nothing written.
func TestCommandLineRefusal(t *testing.T) {
	needTorch(t)
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runPy(t, nil, "exporters/torch/export.py",
		"--module", "exporters/torch/testdata/unsupported.py:Erfinv", "--n", "2", "--input", "x=3,8", "--out", out)
	want := "export.py: error: Erfinv: node 'erfinv' (call_function torch.erfinv) at unsupported.py:15 " +
		"`return self.fc(torch.erfinv(torch.tanh(x)))`: call_function torch.erfinv " +
		"is not in the widejit vocabulary; see docs/graph-format.md for the ops widejit supports\n"
	if code != 1 || stderr != want {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and:\n%s", code, stderr, want)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written although the export was refused", out)
	}
}

// TestRefusesUnsupported checks that models the vocabulary cannot express are refused with the
// fx node, its op and target, and why.
func TestRefusesUnsupported(t *testing.T) {
	needTorch(t)
	cases := []struct {
		class string
		want  []string
	}{
		{"UnknownModule", []string{"node 'bilinear' (call_function torch.bilinear)", "is not in the widejit vocabulary"}},
		{"AdvancedIndex", []string{"node 'getitem' (call_function operator.getitem) at unsupported.py:",
			"`return x[x > 0]`", "indexing a tensor", "advanced indexing"}},
		{"DataDependent", []string{"node 'item' (call_method Tensor.item) at unsupported.py:", "depends on tensor values"}},
		{"TrainModeBatchNorm", []string{"node 'bn' (call_module bn) at unsupported.py:", "`return self.bn(x)`",
			"BatchNorm1d is in training mode", "call .eval()"}},
		{"ControlFlow", []string{"torch.fx could not trace ControlFlow at unsupported.py:", "`if x.sum() > 0:`", "control flow"}},
		{"BitwiseNot", []string{"at unsupported.py:", "bitwise not (~) of a non-bool operand"}},
		{"LSTMProj", []string{"node 'lstm' (call_module lstm)", "LSTM with proj_size=3 is not supported (only proj_size=0)"}},
		{"EinsumTrace", []string{"node 'einsum' (call_function torch.einsum) at unsupported.py:", "an index repeated within one operand ('ii': a diagonal or trace) is not supported"}},
		{"IntCast", []string{"node 'long' (call_method Tensor.long)", "Tensor.long casts torch.float32 to torch.int64; widejit casts float and bool tensors to float dtypes only"}},
		{"Bicubic", []string{"node 'interpolate' (call_function torch.nn.functional.interpolate)", "mode='bicubic' is not supported (nearest, linear, bilinear, trilinear)"}},
		{"TensorClamp", []string{"node 'clamp' (call_method Tensor.clamp)", "min must be a constant, not the tensor 'mean'"}},
	}
	dir := t.TempDir()
	var jobs []job
	for _, c := range cases {
		jobs = append(jobs, job{"export", []string{"--module", "exporters/torch/testdata/unsupported.py:" + c.class,
			"--n", "2", "--input", "x=3,8", "--out", filepath.Join(dir, c.class)}})
	}
	for i, r := range batch(t, jobs) {
		c := cases[i]
		prefix := "export.py: error: " + c.class + ": "
		if c.class == "ControlFlow" {
			prefix = "export.py: error: torch.fx could not trace " + c.class + " at "
		}
		if r.RC != 1 || !strings.HasPrefix(r.Stderr, prefix) {
			t.Errorf("%s: exit %d, stderr:\n%s", c.class, r.RC, r.Stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(r.Stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", c.class, w, r.Stderr)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, c.class)); err == nil {
			t.Errorf("%s: output written although the export was refused", c.class)
		}
	}
}

// TestBadCommandLines checks errors in how export.py is called.
func TestBadCommandLines(t *testing.T) {
	needTorch(t)
	models := "examples/models.py"
	cases := []struct {
		name string
		args []string
		rc   int
		want string
	}{
		{"integer input without range", []string{"--module", models + ":EmbeddingBag", "--n", "2", "--input", "tok=4,11:int64"},
			1, "integer inputs need a range"},
		{"unknown dtype", []string{"--module", models + ":MLP", "--n", "2", "--input", "x=32,64:float8"}, 1, "unknown dtype 'float8'"},
		{"input the forward lacks", []string{"--module", models + ":MLP", "--n", "2", "--input", "x=32,64", "--input", "y=3"},
			1, "MLP.forward has no argument 'y'"},
		{"missing input", []string{"--module", models + ":MLP", "--n", "2"}, 1, "argument 'x' has no --input"},
		{"no such class", []string{"--module", models + ":Nope", "--n", "2", "--input", "x=1"}, 1, "no torch.nn.Module subclass or factory function named Nope"},
		{"bad kwargs", []string{"--module", models + ":MLP", "--kwargs", "{hidden", "--n", "2", "--input", "x=32,64"}, 1, "--kwargs: not valid JSON"},
		{"unknown kwarg", []string{"--module", models + ":MLP", "--kwargs", `{"hidden_size": 3}`, "--n", "2", "--input", "x=32,64"},
			1, "MLP(**{\"hidden_size\": 3}) failed: TypeError"},
		{"wrong input shape", []string{"--module", models + ":MLP", "--n", "2", "--input", "x=32,65"}, 1, "MLP.forward failed on the sample inputs"},
		{"zero models", []string{"--module", models + ":MLP", "--n", "0", "--input", "x=32,64"}, 1, "--n must be >= 1"},
		{"missing --n", []string{"--module", models + ":MLP", "--input", "x=32,64"}, 2, "the following arguments are required: --n"},
		{"prefix without checkpoints", []string{"--module", models + ":MLP", "--n", "2", "--input", "x=32,64", "--strip-prefix", "m."},
			1, "--strip-prefix and --add-prefix apply to --state-dict files; none given"},
		{"both prefix flags", []string{"--module", models + ":MLP", "--n", "2", "--input", "x=32,64", "--strip-prefix", "a.", "--add-prefix", "b."},
			2, "not allowed with argument"},
		{"no such package", []string{"--module", "no_such_package_xyz:f", "--n", "2", "--input", "x=32,64"}, 1,
			"cannot import no_such_package_xyz"},
		{"dynamic without a dim", []string{"--module", models + ":MLP", "--n", "2", "--input", "x=32,64", "--dynamic", "x"}, 1,
			"--dynamic x: expected NAME:DIM"},
		{"dynamic batch", []string{"--module", models + ":MLP", "--n", "2", "--input", "x=32,64", "--dynamic", "x:0"}, 1,
			"dynamic x:0: dim 0 is the batch, dynamic already"},
		{"dynamic unknown input", []string{"--module", models + ":MLP", "--n", "2", "--input", "x=32,64", "--dynamic", "y:1"}, 1,
			"dynamic names 'y', which is not one of the --input (x)"},
		{"dynamic out of range", []string{"--module", models + ":MLP", "--n", "2", "--input", "x=32,64", "--dynamic", "x:2"}, 1,
			"dynamic x:2: --input 'x' has shape [32, 64], so a dim is 0 to 1"},
		{"dynamic dim the model cannot grow", []string{"--module", models + ":MLP", "--n", "2", "--input", "x=32,64", "--dynamic", "x:1"}, 1,
			"does not run with dim 1 of its input 0 one longer"},
	}
	dir := t.TempDir()
	var jobs []job
	for i, c := range cases {
		jobs = append(jobs, job{"export", append(c.args, "--out", filepath.Join(dir, string(rune('a'+i))))})
	}
	for i, r := range batch(t, jobs) {
		c := cases[i]
		if r.RC != c.rc || !strings.Contains(r.Stderr, c.want) || strings.Contains(r.Stderr, "Traceback") {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit %d and %q", c.name, r.RC, r.Stderr, c.rc, c.want)
		}
	}
}

// TestMoreOpsMatchReference exports models using ops the examples do not (grouped, dilated,
// 'same', 3-d and transposed convs (output_size too), norms, 1-d to 3-d pools, GRU/RNN, cross attention with kdim/vdim, stack,
// split, functional forms, defaulted forward arguments), re-executes the graphs with
// reference.py and loads them with the Go loader.
func TestMoreOpsMatchReference(t *testing.T) {
	needTorch(t)
	cases := []struct {
		class string
		args  []string
	}{
		{"Vision", []string{"--input", "img=2,3,8,8", "--input", "sig=2,3,16"}},
		{"Sequence", []string{"--input", "tok=5,2:int64:0:20", "--input", "mem_k=7,2,6", "--input", "mem_v=7,2,5",
			"--input", "h0=2,2,8"}},
		{"Defaults", []string{"--input", "x=3,4"}},
		{"Functional", []string{"--input", "tok=2,5:int64:0:10", "--input", "img=2,4,5,5"}},
		{"Volumes", []string{"--input", "vol=2,3,5,6,7", "--input", "img=2,3,4,5"}},
	}
	dir := t.TempDir()
	var jobs []job
	for _, c := range cases {
		out := filepath.Join(dir, c.class)
		jobs = append(jobs,
			job{"export", append([]string{"--module", "exporters/torch/testdata/more_ops.py:" + c.class,
				"--n", "3", "--out", out}, c.args...)},
			job{"reference", []string{filepath.Join(out, "graph.json")}})
	}
	results := batch(t, jobs)
	for i, c := range cases {
		t.Run(c.class, func(t *testing.T) {
			exp, ref := results[2*i], results[2*i+1]
			if exp.RC != 0 {
				t.Fatalf("export exited %d:\n%s", exp.RC, exp.Stderr)
			}
			if ref.RC != 0 || !strings.Contains(ref.Stdout, ": ok (3 models") {
				t.Fatalf("reference check exited %d:\n%s%s", ref.RC, ref.Stdout, ref.Stderr)
			}
			checkLoaderAgrees(t, filepath.Join(dir, c.class, "graph.json"))
		})
	}
}

// TestReferenceCatchesWrongGraphs makes sure the reference check can fail: the classifier with
// log_softmax over the wrong dim, or with its BatchNorm's running statistics swapped, must not
// match its expected outputs.
func TestReferenceCatchesWrongGraphs(t *testing.T) {
	needTorch(t)
	edits := map[string][2]string{
		"softmax dim": {`"op": "log_softmax", "inputs": ["fc"], "attrs": {"dim": 1}`,
			`"op": "log_softmax", "inputs": ["fc"], "attrs": {"dim": 0}`},
		"bn stats swapped": {`"running_mean": "bn.running_mean", "running_var": "bn.running_var"`,
			`"running_mean": "bn.running_var", "running_var": "bn.running_mean"`},
	}
	var names []string
	var jobs []job
	for name, edit := range edits {
		dir := filepath.Join(t.TempDir(), "classifier")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, file := range exampleFiles {
			b, err := os.ReadFile(filepath.Join(repoRoot, "examples", "classifier", file))
			if err != nil {
				t.Fatal(err)
			}
			if file == "graph.json" {
				if !bytes.Contains(b, []byte(edit[0])) {
					t.Fatalf("examples/classifier/graph.json lacks %s", edit[0])
				}
				b = bytes.Replace(b, []byte(edit[0]), []byte(edit[1]), 1)
			}
			if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		names = append(names, name)
		jobs = append(jobs, job{"reference", []string{filepath.Join(dir, "graph.json")}})
	}
	for i, r := range batch(t, jobs) {
		if r.RC != 1 || !strings.Contains(r.Stderr, "differs from expected") {
			t.Errorf("%s: reference.py accepted a wrong graph: exit %d\n%s%s", names[i], r.RC, r.Stdout, r.Stderr)
		}
	}
}

// sameUpToRounding compares two safetensors files holding the same tensors (names, dtypes,
// shapes) whose values differ at most by float rounding: 1e-5 relative to each tensor's scale.
func sameUpToRounding(gotPath, wantPath string) error {
	got, err := safetensors.Open(gotPath)
	if err != nil {
		return err
	}
	defer got.Close()
	want, err := safetensors.Open(wantPath)
	if err != nil {
		return err
	}
	defer want.Close()
	if g, w := strings.Join(got.Names(), ","), strings.Join(want.Names(), ","); g != w {
		return fmt.Errorf("tensors %s, want %s", g, w)
	}
	for _, name := range want.Names() {
		g, err := got.Read(name)
		if err != nil {
			return err
		}
		w, err := want.Read(name)
		if err != nil {
			return err
		}
		if g.DType != w.DType || fmt.Sprint(g.Shape) != fmt.Sprint(w.Shape) {
			return fmt.Errorf("%s: %s%v, want %s%v", name, g.DType, g.Shape, w.DType, w.Shape)
		}
		gv, err := g.Float64s()
		if err != nil {
			return err
		}
		wv, err := w.Float64s()
		if err != nil {
			return err
		}
		scale := 0.0
		for _, v := range wv {
			scale = math.Max(scale, math.Abs(v))
		}
		for i := range wv {
			if d := math.Abs(gv[i] - wv[i]); !(d <= 1e-5*scale) && !(math.IsNaN(gv[i]) && math.IsNaN(wv[i])) {
				return fmt.Errorf("%s[%d] = %g, want %g", name, i, gv[i], wv[i])
			}
		}
	}
	return nil
}

// TestStateDictCheckpoints exports trained weights from checkpoint files (--state-dict: bare
// state dicts and training-loop dicts, repeated or globbed) and requires weights.safetensors to
// hold exactly the checkpoints' tensors, the reference check to pass, and every checkpoint that
// does not fit the architecture to be refused naming the file and the key, before anything is
// written.
func TestStateDictCheckpoints(t *testing.T) {
	needTorch(t)
	ck := t.TempDir()
	if code, _, stderr := runPy(t, nil, "exporters/torch/testdata/make_checkpoints.py", "--out", ck); code != 0 {
		t.Fatalf("make_checkpoints.py exited %d:\n%s", code, stderr)
	}
	p := func(name string) string { return filepath.Join(ck, name) }
	if err := syscall.Mkfifo(p("fifo.pt"), 0o644); err != nil { // nobody writes it: opening it would block
		t.Fatal(err)
	}
	if err := os.Symlink(p("gone.pt"), p("dangling.pt")); err != nil {
		t.Fatal(err)
	}
	base := []string{"--module", "examples/models.py:MLP", "--kwargs", `{"d_in": 6, "hidden": 5, "d_out": 3}`, "--input", "x=4,6"}
	fits := "MLP(**{\"d_in\": 6, \"hidden\": 5, \"d_out\": 3}): "
	cases := []struct {
		name string
		args []string
		rc   int
		want string // in stderr, or for rc 0 the graph's output directory is checked
	}{
		{"glob", []string{"--state-dict", p("good_*.pt")}, 0, ""},
		{"repeated", []string{"--state-dict", p("good_0.pt"), "--state-dict", p("good_1.pt"), "--state-dict", p("good_2.pt")}, 0, ""},
		{"one flag, several files (a shell glob)", []string{"--n", "3", "--state-dict", p("good_0.pt"), p("good_1.pt"), p("good_2.pt")}, 0, ""},
		{"--n disagrees", []string{"--n", "2", "--state-dict", p("good_*.pt")}, 1, "--n 2 disagrees with the 3 --state-dict files"},
		{"missing key", []string{"--state-dict", p("good_0.pt"), "--state-dict", p("missing_key.pt")}, 1,
			"--state-dict " + p("missing_key.pt") + " does not fit " + fits + "missing key 'fc2.bias'"},
		{"extra key", []string{"--state-dict", p("good_0.pt"), p("extra_key.pt")}, 1,
			"--state-dict " + p("extra_key.pt") + " does not fit " + fits + "unexpected key 'fc3.weight'"},
		{"shape", []string{"--state-dict", p("shape.pt"), p("good_1.pt")}, 1,
			"--state-dict " + p("shape.pt") + " does not fit " + fits + "key 'fc1.weight' has shape [7, 6], expected [5, 6]"},
		{"dtype", []string{"--state-dict", p("good_1.pt"), p("dtype.pt")}, 1,
			"--state-dict " + p("dtype.pt") + " does not fit " + fits + "key 'fc1.weight' has dtype float64, expected float32"},
		{"DataParallel prefix", []string{"--state-dict", p("dataparallel.pt")}, 1, "missing key 'fc1.weight'"},
		{"DataParallel hint", []string{"--state-dict", p("dataparallel.pt")}, 1, "save model.module.state_dict()"},
		{"not a dict", []string{"--state-dict", p("list.pt")}, 1, p("list.pt") + ": holds a list, not a state dict"},
		{"unknown wrapper", []string{"--state-dict", p("other_key.pt")}, 1,
			p("other_key.pt") + `: not a state dict (a dict of tensors), nor a dict holding one under "state_dict" or "model"; its keys: 'weights'`},
		{"pickle beyond weights_only", []string{"--state-dict", p("floats.pt")}, 1,
			p("floats.pt") + ": torch.load(weights_only=True) refused it"},
		{"trusted pickle", []string{"--state-dict", p("floats.pt"), p("good_1.pt"), p("good_2.pt"), "--trust-checkpoints"}, 0, ""},
		{"not a checkpoint", []string{"--state-dict", p("text.pt")}, 1, p("text.pt") + ": not a file written by torch.save"},
		{"TorchScript archive", []string{"--state-dict", p("scripted.pt")}, 1,
			p("scripted.pt") + ": a TorchScript archive (it holds 'scripted/code/__torch__.py'), not a state dict: loading it would run the code it carries"},
		{"glob matches nothing", []string{"--state-dict", p("nope_*.pt")}, 1, "--state-dict " + p("nope_*.pt") + " matches no file"},
		{"no such file", []string{"--state-dict", p("nope.pt")}, 1, "--state-dict " + p("nope.pt") + ": no such file"},
		{"a directory", []string{"--state-dict", ck}, 1, "--state-dict " + ck + ": a directory (give the checkpoint files in it, e.g. '" + ck + "/*.pt'), not a checkpoint file"},
		{"a FIFO", []string{"--state-dict", p("fifo.pt")}, 1, "--state-dict " + p("fifo.pt") + ": a named pipe (FIFO), not a checkpoint file"},
		{"/dev/zero", []string{"--state-dict", "/dev/zero"}, 1, "--state-dict /dev/zero: a character device, not a checkpoint file"},
		{"a dangling link", []string{"--state-dict", p("dangling.pt")}, 1, "--state-dict " + p("dangling.pt") + ": a symbolic link to a missing file"},
		{"file twice", []string{"--state-dict", p("good_*.pt"), "--state-dict", p("good_1.pt")}, 1,
			"--state-dict " + p("good_1.pt") + ": the file is given twice"},
	}
	canary := readFile(t, p("canary.txt"))
	stacked := func(t *testing.T, out string) {
		if err := sameUpToRounding(filepath.Join(out, "weights.safetensors"), p("stacked.safetensors")); err != nil {
			t.Errorf("weights.safetensors does not hold the checkpoints' tensors: %v", err)
		}
		if got, want := readFile(t, filepath.Join(out, "weights.safetensors")), readFile(t, p("stacked.safetensors")); !bytes.Equal(got, want) {
			t.Errorf("weights.safetensors is not byte-identical to the checkpoints stacked")
		}
	}
	var runs []exportRun
	for _, c := range cases {
		r := exportRun{name: c.name, args: append(append([]string{}, base...), c.args...), want: c.want}
		if c.rc == 0 {
			r.check = stacked
		}
		runs = append(runs, r)
	}
	runExports(t, runs)
	// The scripted module's __setstate__ overwrites canary.txt if the archive is ever loaded.
	if got := readFile(t, p("canary.txt")); !bytes.Equal(got, canary) {
		t.Errorf("code from the TorchScript checkpoint ran: canary.txt now holds %q, was %q", got, canary)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestModuleFactoriesPrefixesAndBatchStats: --module takes a factory of an installed package
// (torchvision.models:resnet18, checked against PyTorch by reference.py) and refuses one that
// returns something else; --state-dict names the prefix by which keys differ and the flag that
// fixes it, and --strip-prefix / --add-prefix load the checkpoints' exact tensors;
// --train-batchnorm exports a BatchNorm in training mode with per-model batch statistics.
func TestModuleFactoriesPrefixesAndBatchStats(t *testing.T) {
	needTorch(t)
	if code, _, _ := runPy(t, nil, "-c", "import torchvision"); code != 0 {
		t.Skip("needs torchvision (python3-torchvision; bash .ci/setup installs it)")
	}
	ck := t.TempDir()
	if code, _, stderr := runPy(t, nil, "exporters/torch/testdata/make_checkpoints.py", "--out", ck); code != 0 {
		t.Fatalf("make_checkpoints.py exited %d:\n%s", code, stderr)
	}
	p := func(name string) string { return filepath.Join(ck, name) }
	mlp := []string{"--kwargs", `{"d_in": 6, "hidden": 5, "d_out": 3}`, "--input", "x=4,6"}
	wrapped := append([]string{"--module", "exporters/torch/testdata/wrapped.py:Wrapped"}, mlp...)
	plain := append([]string{"--module", "examples/models.py:MLP"}, mlp...)
	cases := []struct {
		name    string
		args    []string
		want    string // in stderr; "" for success
		stacked bool   // weights.safetensors must be the checkpoints' tensors
	}{
		{"factory", []string{"--module", "torchvision.models:resnet18", "--kwargs", `{"num_classes": 5}`, "--n", "2",
			"--input", "x=1,3,32,32"}, "", false},
		{"factory of no module", []string{"--module", "json:dumps", "--kwargs", `{"obj": 1}`, "--n", "1", "--input", "x=2"},
			`dumps(**{"obj": 1}) returned a str, not a torch.nn.Module`, false},
		{"no such name", []string{"--module", "torchvision.models:resnet1800", "--n", "1", "--input", "x=2"},
			"torchvision.models has no torch.nn.Module subclass or factory function named resnet1800", false},
		{"prefix hint", append(append([]string{}, wrapped...), "--state-dict", p("good_0.pt")),
			"the keys differ only by the prefix 'm.': pass --add-prefix m.", false},
		{"strip hint", append(append([]string{}, plain...), "--state-dict", p("dataparallel.pt")), "--strip-prefix module.", false},
		{"add prefix", append(append([]string{}, wrapped...), "--state-dict", p("good_*.pt"), "--add-prefix", "m."), "", false},
		{"strip prefix", append(append([]string{}, plain...), "--state-dict", p("dataparallel*.pt"), "--strip-prefix", "module."), "", true},
		{"strip a prefix a file lacks", append(append([]string{}, plain...), "--state-dict", p("good_0.pt"), "--strip-prefix", "module."),
			"has keys without that prefix", false},
		{"batch statistics", []string{"--module", "examples/models.py:Classifier", "--n", "3", "--input", "x=5,3,16,16",
			"--train-batchnorm"}, "", false},
		{"batch statistics refused", []string{"--module", "exporters/torch/testdata/unsupported.py:TrainModeBatchNorm", "--n", "1",
			"--input", "x=2,8"}, "or export it with batch statistics with --train-batchnorm", false},
		{"batch statistics of a model's own train()", []string{"--module", "exporters/torch/testdata/unsupported.py:TrainModeBatchNorm",
			"--n", "3", "--input", "x=5,8", "--train-batchnorm"}, "", false},
	}
	var runs []exportRun
	for _, c := range cases {
		r := exportRun{name: c.name, args: c.args, want: c.want}
		if c.want == "" {
			r.check = func(*testing.T, string) {}
			if c.stacked {
				r.check = func(t *testing.T, out string) {
					if !bytes.Equal(readFile(t, filepath.Join(out, "weights.safetensors")), readFile(t, p("stacked.safetensors"))) {
						t.Errorf("weights.safetensors is not byte-identical to the checkpoints stacked")
					}
				}
			}
		}
		runs = append(runs, r)
	}
	runExports(t, runs)
}

// exportRun is one export.py command line: refused (exit 1, want in stderr, nothing written)
// when check is nil, else exported, re-checked by reference.py and then by check.
type exportRun struct {
	name  string
	args  []string
	want  string
	check func(t *testing.T, out string)
}

// runExports runs every export (in one Python process) and checks each as its exportRun says.
func runExports(t *testing.T, runs []exportRun) {
	t.Helper()
	dir := t.TempDir()
	var jobs []job
	for i, r := range runs {
		out := filepath.Join(dir, fmt.Sprint(i))
		jobs = append(jobs, job{"export", append(append([]string{}, r.args...), "--out", out)})
		if r.check != nil {
			jobs = append(jobs, job{"reference", []string{filepath.Join(out, "graph.json")}})
		}
	}
	results := batch(t, jobs)
	for i, c := range runs {
		r := results[0]
		results = results[1:]
		out := filepath.Join(dir, fmt.Sprint(i))
		if c.check == nil {
			if r.RC != 1 || !strings.Contains(r.Stderr, c.want) || strings.Contains(r.Stderr, "Traceback") {
				t.Errorf("%s: exit %d, stderr:\n%s\nwant exit 1 and %q", c.name, r.RC, r.Stderr, c.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s: %s was written although the export was refused", c.name, out)
			}
			continue
		}
		ref := results[0]
		results = results[1:]
		if r.RC != 0 {
			t.Errorf("%s: exit %d:\n%s", c.name, r.RC, r.Stderr)
			continue
		}
		if ref.RC != 0 || !strings.Contains(ref.Stdout, ": ok (") {
			t.Errorf("%s: reference check exited %d:\n%s%s", c.name, ref.RC, ref.Stdout, ref.Stderr)
		}
		t.Run(c.name, func(t *testing.T) { c.check(t, out) })
	}
}

// TestTorchvisionClassifiers exports a representative subset of torchvision 0.14's classifiers
// (testdata/torchvision_zoo.py: resnet, mobilenet v2/v3, efficientnet, shufflenet, squeezenet,
// regnet, mnasnet, convnext; N = 3, per-model inputs [2, 3, 32, 32]) and runs each with the
// widejit binary on the CPU, checked against the 3 PyTorch modules run one by one (--check).
func TestTorchvisionClassifiers(t *testing.T) {
	if testing.Short() {
		t.Skip("exports and runs nine torchvision classifiers; skipped with -short")
	}
	needTorch(t)
	if code, _, _ := runPy(t, nil, "-c", "import torchvision"); code != 0 {
		t.Skip("needs torchvision (python3-torchvision; bash .ci/setup installs it)")
	}
	out := t.TempDir()
	code, stdout, stderr := runPy(t, nil, "exporters/torch/testdata/torchvision_zoo.py", "--out", out)
	if code != 0 {
		t.Fatalf("torchvision_zoo.py exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	bin := buildWidejit(t)
	dirs, _ := filepath.Glob(filepath.Join(out, "*", "graph.json"))
	if len(dirs) < 9 {
		t.Fatalf("torchvision_zoo.py wrote %d graphs, want 9:\n%s", len(dirs), stdout)
	}
	for _, g := range dirs {
		dir := filepath.Dir(g)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			cmd := exec.Command(bin, "run", g, "--device", "cpu", "--inputs", filepath.Join(dir, "inputs.safetensors"),
				"--check", filepath.Join(dir, "expected.safetensors"), "--json")
			cmd.Env = append(os.Environ(), "WIDEJIT_CACHE_DIR="+t.TempDir())
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("widejit run --check: %v\n%s", err, b)
			}
		})
	}
}
