package ptx

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden PTX files in testdata/")

// goldenCases are small kernels whose PTX is checked in, so codegen changes show in review.
var goldenCases = []kernelCase{
	{"vector_add", "../../triton/testdata/kernels/vector_add.py", "add_kernel",
		map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
		map[string]any{"BLOCK_SIZE": 256}, 1},
	{"reduce", "../../triton/testdata/reduce.py", "reduce_kernel",
		map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32"},
		map[string]any{"BLOCK_M": 4, "BLOCK_N": 8}, 1},
	{"dot", "testdata/dot.py", "small_dot",
		map[string]string{"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"},
		map[string]any{"BLOCK": 16}, 1},
}

func TestGoldenPTX(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			got := string(c.codegen(t, "sm_90").Payload)
			path := filepath.Join("testdata", c.name+".ptx")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./jit/ptx -run Golden -update)", err)
			}
			if got != string(want) {
				t.Errorf("PTX of %s differs from %s (run with -update and review the diff)", c.name, path)
			}
		})
	}
}
