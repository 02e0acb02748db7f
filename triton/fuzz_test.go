package triton

import (
	"errors"
	"os"
	"testing"
	"time"
)

// FuzzSpecialize feeds arbitrary kernel text through the specializer: it may fail, but never
// with a panic or an internal (verifier) error.
func FuzzSpecialize(f *testing.F) {
	for _, name := range []string{"kernels/vector_add.py", "constructs.py", "blockptr.py", "reduce.py"} {
		src, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(src))
	}
	f.Add(helperKernel)
	f.Add(typeKernel)
	f.Fuzz(func(t *testing.T, src string) {
		sig := map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp16", "out_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32", "n": "i32", "flag": "i32", "p": "*fp32"}
		for _, fn := range []string{"add_kernel", "constructs_kernel", "helpers", "k"} {
			done := make(chan error, 1)
			go func() {
				_, err := Specialize("fuzz.py", src, fn, sig, map[string]any{"BLOCK_SIZE": 16, "BLOCK": 16, "MODE": "double"})
				done <- err
			}()
			select {
			case err := <-done:
				var se *Error
				if errors.As(err, &se) && se.Internal {
					t.Fatalf("internal error: %v\nsource:\n%s", err, src)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("specializing %s took more than 5s; source:\n%s", fn, src)
			}
		}
	})
}
