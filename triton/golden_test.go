package triton

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/triton/ir"
)

var update = flag.Bool("update", false, "rewrite the golden IR files in testdata/")

type kernelCase struct {
	name   string // golden file testdata/<name>.ir
	file   string
	fn     string
	sig    map[string]string
	consts map[string]any
}

var goldenCases = []kernelCase{
	{"vector_add", "testdata/kernels/vector_add.py", "add_kernel",
		map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
		map[string]any{"BLOCK_SIZE": 16}},
	{"constructs_double", "testdata/constructs.py", "constructs_kernel",
		map[string]string{"x_ptr": "*fp16", "out_ptr": "*fp32", "n": "i32", "flag": "i32"},
		map[string]any{"BLOCK": 16, "MODE": "double"}},
	{"constructs_other", "testdata/constructs.py", "constructs_kernel",
		map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "flag": "i32"},
		map[string]any{"BLOCK": 8, "MODE": "other"}},
	{"blockptr", "testdata/blockptr.py", "copy_tiles",
		map[string]string{"src": "*fp32", "dst": "*fp32", "M": "i32", "N": "i32", "stride_m": "i32"},
		map[string]any{"BLOCK_M": 4, "BLOCK_N": 8}},
	{"reduce", "testdata/reduce.py", "reduce_kernel",
		map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32"},
		map[string]any{"BLOCK_M": 4, "BLOCK_N": 8}},
}

func specializeFile(t testing.TB, c kernelCase) *ir.Func {
	t.Helper()
	src, err := os.ReadFile(c.file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Specialize(c.file, string(src), c.fn, c.sig, c.consts)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	return f
}

func TestGoldenIR(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			got := specializeFile(t, c).String()
			path := filepath.Join("testdata", c.name+".ir")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./triton -run TestGoldenIR -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("IR differs from %s (rerun with -update after checking the change):\n%s", path, diffLines(string(want), got))
			}
		})
	}
}

// diffLines shows the first differing lines of two texts.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, a, b)
		}
	}
	return "(no line differs)"
}
