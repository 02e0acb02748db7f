package syntax

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestAgainstCPythonAST parses every testdata/*.py file and compares the tree, node by node
// with exact spans, to CPython's ast module (golden files written by
// testdata/astdump/astdump.py).
func TestAgainstCPythonAST(t *testing.T) {
	files, err := filepath.Glob("testdata/*.py")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.py files (err %v)", err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".py")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", "golden", name+".ast"))
			if err != nil {
				t.Fatalf("missing golden file (regenerate with testdata/astdump/astdump.py): %v", err)
			}
			f, err := ParseFile(path, src)
			if err != nil {
				t.Fatalf("ParseFile: %v", err)
			}
			got := dumpTree(f)
			if got != string(want) {
				t.Errorf("tree differs from CPython's:\n%s", firstDiff(got, string(want)))
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
