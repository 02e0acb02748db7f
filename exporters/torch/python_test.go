package torch_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The Go side of the widejit Python package (python/widejit: export, run, pack, unpack over
// export.py and the widejit binary).

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
// PYTHONPATH=python, as the README says, and the freshly built binary in $WIDEJIT: three trained
// modules exported with widejit.export and run with widejit.run equal the modules run one by
// one; pack/unpack round trips; the errors users meet name what is wrong.
func TestPythonPackage(t *testing.T) {
	needTorch(t)
	root := absRoot(t)
	code, stdout, stderr := runPyEnv(t, []string{"PYTHONPATH=" + filepath.Join(root, "python"), "WIDEJIT=" + buildWidejit(t)},
		nil, "-m", "unittest", "discover", "-s", filepath.Join(root, "python", "tests"), "-v")
	out := stdout + stderr
	if code != 0 {
		t.Fatalf("python3 -m unittest exited %d:\n%s", code, out)
	}
	if !strings.Contains(out, "\nOK") || strings.Contains(out, "skipped") {
		t.Errorf("unittest did not run every test:\n%s", out)
	}
}

// TestPythonVenvInstall installs the package the way the README says, into a fresh virtual
// environment that sees Debian's torch and numpy:
//
//	/usr/bin/python3 -m venv --system-site-packages V
//	V/bin/pip install --no-build-isolation --no-index ./python
//
// from a copy of the checkout (python/ and the exporter its links point to, so the checkout
// gets no build/), with pip's configuration files and PIP_* variables ignored so nothing but
// the command's flags applies. Then, from a directory outside any checkout and without
// PYTHONPATH, the venv's python imports widejit, exports and packs: pyproject.toml is
// complete, its requirements are met by Debian's packages without a download, and the links
// became files.
func TestPythonVenvInstall(t *testing.T) {
	needTorch(t)
	tmp := t.TempDir()
	env := []string{"PIP_CONFIG_FILE=" + os.DevNull, "PYTHONNOUSERSITE=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PIP_") && !strings.HasPrefix(kv, "PYTHONPATH=") && !strings.HasPrefix(kv, "PYTHONHOME=") {
			env = append(env, kv)
		}
	}
	// run runs name args... in dir with env and fails the test, showing its output, unless
	// it exits 0.
	run := func(dir, name string, args ...string) string {
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
	vpy := filepath.Join(venv, "bin", "python")
	check := exec.Command(vpy, "-c", "import setuptools, wheel, pip") // setuptools first: it replaces distutils
	check.Env = env
	if out, err := check.CombinedOutput(); err != nil {
		t.Skipf("the venv cannot build a package offline (apt-get install python3-pip python3-setuptools python3-wheel, or bash .ci/setup): %s", lastLine(out))
	}
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
	run(src, filepath.Join(venv, "bin", "pip"), "install", "--no-build-isolation", "--no-index", "./python")
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
print("installed ok", len(widejit.unpack(torch.zeros(3, 2))))
`)
	if !strings.Contains(out, "installed ok 3") {
		t.Errorf("the installed package printed:\n%s", out)
	}
}
