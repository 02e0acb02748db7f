package torch_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// The Go side of the widejit Python package (python/widejit: export, run, pack, unpack over
// export.py and the widejit binary; compile and WideModel over the shared library).

// library is the shared library (cmd/libwidejit), built once per test run into dir.
var library struct {
	once           sync.Once
	dir, path, err string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if library.dir != "" {
		os.RemoveAll(library.dir)
	}
	os.Exit(code)
}

// buildLibrary builds cmd/libwidejit with cgo once per test run and returns its path; it
// skips the test without a C compiler.
func buildLibrary(t *testing.T) string {
	t.Helper()
	library.once.Do(func() {
		if _, err := exec.LookPath("gcc"); err != nil && os.Getenv("CC") == "" {
			library.err = "no C compiler for cgo: apt-get install gcc (or bash .ci/setup)"
			return
		}
		dir, err := os.MkdirTemp("", "widejit-lib-")
		if err != nil {
			library.err = err.Error()
			return
		}
		library.dir = dir
		path := filepath.Join(dir, "libwidejit.so")
		// -trimpath as setup.py builds it: the wheel's build, from a copy of the checkout
		// elsewhere, then finds every package in Go's build cache
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", path, "./cmd/libwidejit")
		cmd.Dir, cmd.Env = repoRoot, append(os.Environ(), "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			library.err = fmt.Sprintf("go build -buildmode=c-shared ./cmd/libwidejit: %v\n%s", err, out)
			return
		}
		library.path = path
	})
	if library.path == "" {
		if strings.HasPrefix(library.err, "no C compiler") {
			t.Skip(library.err)
		}
		t.Fatal(library.err)
	}
	return library.path
}

// buildWidejit builds cmd/widejit into a temporary directory and returns the binary's path.
func buildWidejit(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "widejit")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/widejit")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/widejit: %v\n%s", err, out)
	}
	return bin
}

func absRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestPythonPackage runs python/tests (unittest) with the package importable through
// PYTHONPATH=python, as the README says, the freshly built binary in $WIDEJIT and library in
// $WIDEJIT_LIB: three trained modules exported with widejit.export and run with widejit.run
// equal the modules run one by one; pack/unpack round trips; widejit.compile runs MLPs, a CNN,
// a causal transformer and an LSTM in process as PyTorch does; the errors users meet name
// what is wrong.
func TestPythonPackage(t *testing.T) {
	needTorch(t)
	root := absRoot(t)
	lib := buildLibrary(t)
	code, stdout, stderr := runPyEnv(t, []string{"PYTHONPATH=" + filepath.Join(root, "python"), "WIDEJIT=" + buildWidejit(t),
		"WIDEJIT_LIB=" + lib},
		nil, "-m", "unittest", "discover", "-s", filepath.Join(root, "python", "tests"), "-v")
	out := stdout + stderr
	if code != 0 {
		t.Fatalf("python3 -m unittest exited %d:\n%s", code, out)
	}
	if !strings.Contains(out, "\nOK") || strings.Contains(out, "skipped") {
		t.Errorf("unittest did not run every test:\n%s", out)
	}
}

// venvEnv is a fresh virtual environment in tmp that sees Debian's torch and numpy (its
// python's path), the environment for pip and Python (pip's configuration files, PIP_*,
// PYTHONPATH and WIDEJIT_LIB ignored, so nothing but a command's flags applies), and run,
// which runs name args... in dir with env and fails the test, showing the output, unless it
// exits 0. It skips without venv, pip, setuptools or wheel.
func venvEnv(t *testing.T, tmp string) (vpy string, env []string, run func(dir, name string, args ...string) string) {
	t.Helper()
	env = []string{"PIP_CONFIG_FILE=" + os.DevNull, "PYTHONNOUSERSITE=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PIP_") && !strings.HasPrefix(kv, "PYTHONPATH=") && !strings.HasPrefix(kv, "PYTHONHOME=") &&
			!strings.HasPrefix(kv, "WIDEJIT_LIB=") {
			env = append(env, kv)
		}
	}
	run = func(dir, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	venv := filepath.Join(tmp, "venv")
	if out, err := exec.Command(python, "-m", "venv", "--system-site-packages", venv).CombinedOutput(); err != nil {
		t.Skipf("%s -m venv does not work (apt-get install python3-venv, or bash .ci/setup): %s", python, lastLine(out))
	}
	vpy = filepath.Join(venv, "bin", "python")
	check := exec.Command(vpy, "-c", "import setuptools, wheel, pip") // setuptools first: it replaces distutils
	check.Env = env
	if out, err := check.CombinedOutput(); err != nil {
		t.Skipf("the venv cannot build a package offline (apt-get install python3-pip python3-setuptools python3-wheel, or bash .ci/setup): %s", lastLine(out))
	}
	return vpy, env, run
}

// TestPythonVenvInstall installs the package the way the README says, into a fresh virtual
// environment that sees Debian's torch and numpy:
//
//	/usr/bin/python3 -m venv --system-site-packages V
//	V/bin/pip install --no-build-isolation --no-index ./python
//
// from a copy of python/ and the exporter its links point to, outside a checkout (so no
// shared library can be built: the package installs without it and says why when
// widejit.compile is called). Then, from a directory outside any checkout and without
// PYTHONPATH, the venv's python imports widejit, exports and packs: pyproject.toml is
// complete, its requirements are met by Debian's packages without a download, and the links
// became files. TestPythonWheel installs with the library.
func TestPythonVenvInstall(t *testing.T) {
	needTorch(t)
	tmp := t.TempDir()
	vpy, _, run := venvEnv(t, tmp)
	root := absRoot(t)
	src := filepath.Join(tmp, "src")
	if err := os.MkdirAll(filepath.Join(src, "exporters"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"python", "exporters/torch"} {
		if out, err := exec.Command("cp", "-a", filepath.Join(root, dir), filepath.Join(src, dir)).CombinedOutput(); err != nil {
			t.Fatalf("cp -a %s: %v\n%s", dir, err, out)
		}
	}
	os.RemoveAll(filepath.Join(src, "python", "build")) // a build of the checkout's own, if any
	run(src, filepath.Join(filepath.Dir(vpy), "pip"), "install", "--no-build-isolation", "--no-index", "./python")
	elsewhere := filepath.Join(tmp, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	out := run(elsewhere, vpy, "-c", `
import os, sys, tempfile, torch, widejit
pkg = os.path.dirname(widejit.__file__)
assert pkg.startswith(sys.prefix + os.sep) and sys.prefix != sys.base_prefix, (pkg, sys.prefix)
for f in ("export.py", "reference.py", "safetensors_io.py"):
    p = os.path.join(pkg, "_exporter", f)
    assert os.path.isfile(p) and not os.path.islink(p), p
assert os.path.isfile(os.path.join(pkg, "py.typed"))
models = [torch.nn.Linear(4, 2) for _ in range(3)]
with tempfile.TemporaryDirectory() as d:
    g = widejit.export(models, {"input": widejit.pack([torch.randn(5, 4)] * 3)}, d)
    files = sorted(os.listdir(d))
    assert g["n"] == 3 and files == ["expected.safetensors", "graph.json", "inputs.safetensors", "weights.safetensors"], files
assert not os.path.exists(os.path.join(pkg, "libwidejit.so"))
try:
    widejit.compile(models, torch.randn(3, 5, 4))
    raise AssertionError("compile without the library")
except widejit.LibraryNotFoundError as e:
    assert "at install, the package is not being built from a widejit checkout" in str(e), e
print("installed ok", len(widejit.unpack(torch.zeros(3, 2))))
`)
	if !strings.Contains(out, "installed ok 3") {
		t.Errorf("the installed package printed:\n%s", out)
	}
}

// TestPythonWheel builds the wheel from a copy of the checkout with the README's one command
//
//	pip wheel --no-build-isolation --no-index --no-deps -w dist ./python
//
// checks that it holds the shared library and is tagged for this platform and any Python 3,
// installs it into a fresh virtual environment and, from outside any checkout, runs
// widejit.compile in process against PyTorch. Without a C compiler, an install that requires
// the library (WIDEJIT_REQUIRE_LIBRARY=1) fails saying so.
func TestPythonWheel(t *testing.T) {
	needTorch(t)
	buildLibrary(t) // skips without gcc; warms the Go build cache for the wheel's build
	tmp := t.TempDir()
	vpy, env, run := venvEnv(t, tmp)
	root := absRoot(t)
	src := filepath.Join(tmp, "src")
	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	files, err := ls.Output()
	if err != nil {
		t.Skipf("git ls-files (the wheel is built from a copy of the checkout's files): %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		if st, err := os.Lstat(filepath.Join(root, f)); err != nil || st.IsDir() {
			continue // deleted in the work tree, or a submodule
		}
		if err := os.MkdirAll(filepath.Join(src, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", "-P", filepath.Join(root, f), filepath.Join(src, f)).CombinedOutput(); err != nil {
			t.Fatalf("cp %s: %v\n%s", f, err, out)
		}
	}
	pip := filepath.Join(filepath.Dir(vpy), "pip")
	run(src, pip, "wheel", "--no-build-isolation", "--no-index", "--no-deps", "-w", "dist", "./python")
	wheels, _ := filepath.Glob(filepath.Join(src, "dist", "*.whl"))
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	if len(wheels) != 1 || filepath.Base(wheels[0]) != "widejit-0.1.0-py3-none-linux_"+arch+".whl" {
		t.Fatalf("pip wheel made %v, want one widejit-0.1.0-py3-none-linux_%s.whl", wheels, arch)
	}
	if out := run(src, vpy, "-m", "zipfile", "-l", wheels[0]); !strings.Contains(out, "widejit/libwidejit.so") {
		t.Fatalf("the wheel holds no widejit/libwidejit.so:\n%s", out)
	}
	run(src, pip, "install", "--no-index", wheels[0])
	elsewhere := filepath.Join(tmp, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	out := run(elsewhere, vpy, "-c", `
import os, torch, widejit
assert widejit.library_path() == os.path.join(os.path.dirname(widejit.__file__), "libwidejit.so")
torch.manual_seed(0)
models = [torch.nn.Linear(4, 2) for _ in range(3)]
x = torch.randn(3, 5, 4)
with widejit.compile(models, x, device="cpu", no_cache=True) as wide:
    want = torch.stack([m(xi) for m, xi in zip(models, x)]).detach()
    assert (wide(x) - want).abs().max() < 1e-5
print("wheel ok")
`)
	if !strings.Contains(out, "wheel ok") {
		t.Errorf("the installed wheel printed:\n%s", out)
	}

	cmd := exec.Command(pip, "install", "--no-build-isolation", "--no-index", "./python")
	cmd.Dir, cmd.Env = src, append(env, "CC=/nonexistent/cc", "WIDEJIT_REQUIRE_LIBRARY=1")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "no C compiler for cgo: /nonexistent/cc is not on PATH") {
		t.Errorf("an install that requires the library, without a C compiler: %v\n%s", err, out)
	}
}
