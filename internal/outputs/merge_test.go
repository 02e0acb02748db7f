package outputs

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/widejit/widejit/graph/safetensors"
)

// TestMergeStreams: merging two 16 MiB parts writes their rows in model order, byte for
// byte, while allocating a small fraction of them (it used to hold every part's output
// and the merged copy at once).
func TestMergeStreams(t *testing.T) {
	dir := t.TempDir()
	const rows, cols = 2, 2 << 20 // per part: 2 models of 2 Mi float32s
	var want []byte
	var parts []string
	for i := range 2 {
		data := make([]byte, rows*cols*4)
		for j := range data {
			data[j] = byte(j*7 + i*13)
		}
		want = append(want, data...)
		meta := map[string]string{"graph": "g.json", metaModels: fmt.Sprintf("%d:%d", i*rows, (i+1)*rows), metaN: "4",
			metaIdentity: "id", metaInputs: InputsGenerated(1, 8), metaVersion: metaFormat}
		p := filepath.Join(dir, fmt.Sprint("part", i))
		if err := safetensors.Write(p, []*safetensors.Tensor{{Name: "y", DType: safetensors.F32, Shape: []int{rows, cols}, Data: data}}, meta); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
	}
	out := filepath.Join(dir, "all")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, _, err := Merge([]string{parts[1], parts[0]}, out); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Errorf("merging 32 MiB of parts allocated %d MiB", grew>>20)
	}
	f, err := safetensors.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	y, err := f.Read("y")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(y.Shape) != "[4 2097152]" || !bytes.Equal(y.Data, want) || f.Metadata()[metaInputs] != InputsGenerated(1, 8) {
		t.Errorf("merged: shape %v, equal %v, metadata %v", y.Shape, bytes.Equal(y.Data, want), f.Metadata())
	}
}
