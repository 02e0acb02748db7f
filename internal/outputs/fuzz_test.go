package outputs

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph/safetensors"
)

// FuzzMergePart feeds arbitrary metadata and an output's leading dim to the part reader of
// merge: it must never panic, and a part it accepts holds what its metadata says.
func FuzzMergePart(f *testing.F) {
	f.Add("0:2", "4", metaFormat, "id", "generated seed=1 batch=8", 2)
	f.Add("2:4", "4", metaFormat, "id", "file sha256:00", 2)
	f.Add("3:2", "4", metaFormat, "id", "x", 1)
	f.Add("0:9223372036854775807", "9223372036854775807", metaFormat, "id", "x", 0)
	f.Add("-1:1", "1", "1", "", "", 2)
	f.Add(":", "", "", "\x1b[2J", "\x00", 1)
	f.Fuzz(func(t *testing.T, models, n, format, identity, inputs string, rows int) {
		if rows < 0 || rows > 64 {
			return
		}
		meta := map[string]string{metaModels: models, metaN: n, metaVersion: format, metaIdentity: identity, metaInputs: inputs}
		p := filepath.Join(t.TempDir(), "part")
		y := safetensors.FromFloat32s("y", []int{rows, 3}, make([]float32, rows*3))
		if err := safetensors.Write(p, []*safetensors.Tensor{y}, meta); err != nil {
			return
		}
		part, err := openPart(p)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("the error does not name the part: %v", err)
			}
			return
		}
		defer part.file.Close()
		total, _ := strconv.Atoi(n)
		if part.lo < 0 || part.hi <= part.lo || part.hi > part.n || part.n != total || part.hi-part.lo != rows ||
			part.identity == "" || part.inputs == "" {
			t.Fatalf("accepted a part that is not what it says: %+v from %v", part, meta)
		}
	})
}
