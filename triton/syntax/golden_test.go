package syntax

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// kernelFiles lists the parser's test kernels: its own (testdata/*.py, parser constructs) and
// the tutorial kernels shared with the specializer and backend tests (triton/testdata/kernels).
// Each file's CPython dump is golden/<name>.ast in the file's directory.
func kernelFiles(tb testing.TB) []string {
	tb.Helper()
	own, err1 := filepath.Glob("testdata/*.py")
	shared, err2 := filepath.Glob("../testdata/kernels/*.py")
	if err1 != nil || err2 != nil || len(own) == 0 || len(shared) == 0 {
		tb.Fatalf("no test kernels: testdata/*.py %d, ../testdata/kernels/*.py %d (errors %v, %v)", len(own), len(shared), err1, err2)
	}
	return append(own, shared...)
}

// TestAgainstCPythonAST parses every test kernel (kernelFiles) and compares the tree, node by
// node with exact spans, to CPython's ast module (golden files written by
// testdata/astdump/astdump.py).
func TestAgainstCPythonAST(t *testing.T) {
	for _, path := range kernelFiles(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".py")
		t.Run(strings.TrimPrefix(path, "../"), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join(filepath.Dir(path), "golden", name+".ast")
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("missing golden file (regenerate with testdata/astdump/astdump.py): %v", err)
			}
			f, err := ParseFile(path, src)
			if err != nil {
				t.Fatalf("ParseFile: %v", err)
			}
			got := dumpTree(f)
			if got != string(want) {
				t.Errorf("tree differs from CPython's (%s):\n%s", golden, firstDiff(got, string(want)))
			}
		})
	}
}

// firstDiff shows the first differing line of two dumps with some context.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			lo := max(0, i-6)
			return "context:\n" + strings.Join(w[lo:i], "\n") + "\nline " + itoa(i+1) + ":\n got: " + gl + "\nwant: " + wl
		}
	}
	return "(equal)"
}

func itoa(i int) string { return strconv.Itoa(i) }
