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

// TestPythonPipInstall installs the package with pip from a copy of the checkout (python/ and
// the exporter its links point to) into a target directory, then exports and packs with the
// installed copy: pyproject.toml is complete and the links became files.
func TestPythonPipInstall(t *testing.T) {
	needTorch(t)
	for _, args := range [][]string{{"-c", "import setuptools"}, {"-m", "pip", "--version"}} {
		if out, err := exec.Command(python, args...).CombinedOutput(); err != nil {
			t.Skipf("%s has no pip or setuptools (apt-get install python3-pip python3-setuptools): %s", python, lastLine(out))
		}
	}
	root := absRoot(t)
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	if err := os.MkdirAll(filepath.Join(src, "exporters"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"python", "exporters/torch"} {
		if out, err := exec.Command("cp", "-a", filepath.Join(root, dir), filepath.Join(src, dir)).CombinedOutput(); err != nil {
			t.Fatalf("cp -a %s: %v\n%s", dir, err, out)
		}
	}
	site := filepath.Join(tmp, "site")
	if code, stdout, stderr := runPy(t, nil, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps",
		"--no-index", "--target", site, filepath.Join(src, "python")); code != 0 {
		t.Fatalf("pip install ./python exited %d:\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr := runPyEnv(t, []string{"PYTHONPATH=" + site}, nil, "-c", `
import os, tempfile, torch, widejit
pkg = os.path.dirname(widejit.__file__)
assert pkg.startswith(os.environ["PYTHONPATH"]), pkg
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
	if code != 0 || !strings.Contains(stdout, "installed ok 3") {
		t.Errorf("the installed package (exit %d):\n%s%s", code, stdout, stderr)
	}
}
