package python_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// python is Debian's interpreter, which has python3-torch; the pyenv python3 first on some
// PATHs does not.
const python = "/usr/bin/python3"

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
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			torchMissing = python + " cannot import torch and numpy: " + lines[len(lines)-1]
		}
	})
	if torchMissing != "" {
		t.Skipf("%s: install python3-torch (bash .ci/setup, or apt-get install python3-torch)", torchMissing)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// buildWidejit builds cmd/widejit into a temporary directory and returns the binary's path.
func buildWidejit(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "widejit")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/widejit")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/widejit: %v\n%s", err, out)
	}
	return bin
}

// runPython runs python with args in dir, with env added to the environment; it returns the
// combined output and fails the test on a non-zero exit.
func runPython(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(python, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", python, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// TestPythonPackage runs python/tests (unittest) with the package importable through
// PYTHONPATH=python, as the README says, and the freshly built binary in $WIDEJIT: three trained
// modules exported with widejit.export and run with widejit.run equal the modules run one by
// one; pack/unpack round trips; the errors users meet name what is wrong.
func TestPythonPackage(t *testing.T) {
	needTorch(t)
	root := repoRoot(t)
	out := runPython(t, root, []string{"PYTHONPATH=" + filepath.Join(root, "python"), "WIDEJIT=" + buildWidejit(t)},
		"-m", "unittest", "discover", "-s", filepath.Join(root, "python", "tests"), "-v")
	if !strings.Contains(out, "\nOK") || strings.Contains(out, "skipped") {
		t.Errorf("unittest did not run every test:\n%s", out)
	}
	t.Logf("%s", out)
}

// TestPipInstall installs the package with pip from a copy of the checkout (python/ and the
// exporter its links point to) into a target directory, and exports and packs with the
// installed copy: pyproject.toml is complete and the links became files.
func TestPipInstall(t *testing.T) {
	needTorch(t)
	if out, err := exec.Command(python, "-c", "import pip, setuptools").CombinedOutput(); err != nil {
		t.Skipf("%s has no pip or setuptools (apt-get install python3-pip python3-setuptools): %s", python, out)
	}
	root := repoRoot(t)
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	if err := os.MkdirAll(filepath.Join(src, "exporters"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{{"python", "python"}, {"exporters/torch", "exporters/torch"}} {
		if out, err := exec.Command("cp", "-a", filepath.Join(root, c[0]), filepath.Join(src, c[1])).CombinedOutput(); err != nil {
			t.Fatalf("cp -a %s: %v\n%s", c[0], err, out)
		}
	}
	site := filepath.Join(tmp, "site")
	runPython(t, tmp, nil, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps", "--no-index",
		"--target", site, filepath.Join(src, "python"))
	out := runPython(t, tmp, []string{"PYTHONPATH=" + site}, "-c", `
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
    assert g["n"] == 3 and sorted(os.listdir(d)) == ["expected.safetensors", "graph.json", "inputs.safetensors", "weights.safetensors"], os.listdir(d)
print("installed ok", len(widejit.unpack(torch.zeros(3, 2))))
`)
	if !strings.Contains(out, "installed ok 3") {
		t.Errorf("installed package check:\n%s", out)
	}
}
