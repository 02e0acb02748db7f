package graph

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/widejit/widejit/graph/safetensors"
)

// within runs f and fails the test if it has not returned after a minute (a hang).
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s did not return within a minute", what)
		return nil
	}
}

// hostileFiles are paths that are not regular files: a FIFO nobody writes to (opening it
// used to block forever), /dev/zero (never ends) and a directory.
func hostileFiles(t *testing.T) map[string]string {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"a named pipe": fifo, "a directory": dir}
	if _, err := os.Stat("/dev/zero"); err == nil {
		files["a character device"] = "/dev/zero"
	}
	return files
}

// TestHostileGraphInputsAndWeightsFiles: FIFOs, /dev/zero and directories given as the graph,
// the inputs or the weights are refused at once with an error naming the file and its kind.
func TestHostileGraphInputsAndWeightsFiles(t *testing.T) {
	g, err := Load("testdata/hostile/init_mlp.json")
	if err != nil {
		t.Fatal(err)
	}
	for kind, path := range hostileFiles(t) {
		for what, load := range map[string]func() error{
			"graph":  func() error { _, err := Load(path); return err },
			"inputs": func() error { _, err := g.ReadInputs(path); return err },
			"safetensors": func() error {
				f, err := safetensors.Open(path)
				if err == nil {
					f.Close()
				}
				return err
			},
		} {
			err := within(t, what+" from "+kind, load)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), kind) {
				t.Errorf("%s from %s: got %v, want an error naming %s and %q", what, kind, err, path, kind)
			}
		}
	}
	// A graph whose weights file is a FIFO.
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/hostile/weights_mlp.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "graph.json"), src, 0o644)
	if err := syscall.Mkfifo(filepath.Join(dir, "weights.safetensors"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = within(t, "a graph with FIFO weights", func() error { _, err := Load(filepath.Join(dir, "graph.json")); return err })
	if err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Fatalf("FIFO weights: got %v", err)
	}
}

// TestHugeFilesAreReadWithinLimits: a graph file over its limit is refused by size, and a
// sparse safetensors file whose one tensor claims a terabyte is refused before allocating.
func TestHugeFilesAreReadWithinLimits(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(strings.Repeat(" ", 4096)+"{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadWithOptions(big, Options{MaxGraphBytes: 1024})
	if err == nil || !strings.Contains(err.Error(), "more than the limit of 1024") {
		t.Fatalf("oversized graph: got %v", err)
	}

	// Header: one F32 tensor of 2^38 elements (1 TiB), then a sparse data area.
	sparse := filepath.Join(dir, "sparse.safetensors")
	header := `{"w":{"dtype":"F32","shape":[262144,1048576],"data_offsets":[0,1099511627776]}}`
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	f.Write(n[:])
	f.WriteString(header)
	if err := f.Truncate(int64(8+len(header)) + 1<<40); err != nil {
		f.Close()
		t.Skipf("no sparse files here: %v", err)
	}
	f.Close()
	sf, err := safetensors.OpenWithOptions(sparse, safetensors.Options{MaxTensorBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	_, err = sf.Read("w")
	if err == nil || !strings.Contains(err.Error(), `tensor "w" is 1.0 TiB`) || !strings.Contains(err.Error(), "1.0 GiB") {
		t.Fatalf("terabyte tensor: got %v", err)
	}
}

// TestInitSizesAreCheckedBeforeAllocating: n = 10^8 on an init graph (weights initialised in
// memory, inputs generated) is refused with the figure and the limit, not a Go out-of-memory
// crash.
func TestInitSizesAreCheckedBeforeAllocating(t *testing.T) {
	g, err := LoadWithOptions("testdata/hostile/init_mlp.json", Options{N: 100000000, MemoryLimit: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.ParamTensor("fc1.weight")
	if err == nil || !strings.Contains(err.Error(), `initialising param "fc1.weight" for 100000000 models`) ||
		!strings.Contains(err.Error(), "limit of 1.0 GiB") {
		t.Fatalf("param: got %v", err)
	}
	_, err = g.GenerateInputs(1)
	// 10^8 models x 32 x 64 float32 elements, 4 bytes each plus the 8-byte scratch copy
	if err == nil || !strings.Contains(err.Error(), `"x" [100000000 32 64]: 204800000000 elements of float32, 4 bytes each`) ||
		!strings.Contains(err.Error(), "needs 2.2 TiB (2457600000000 bytes)") {
		t.Fatalf("inputs: got %v", err)
	}
	// The default limit (a share of physical memory) refuses it too.
	g, err = LoadWithOptions("testdata/hostile/init_mlp.json", Options{N: 100000000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.ParamTensor("fc1.weight"); err == nil || !strings.Contains(err.Error(), "more than the limit") {
		t.Fatalf("default limit: got %v", err)
	}
}

// TestDeepNestingIsALocatedError: 3 million unclosed "[" used to overflow the Go stack, and
// 2 million balanced levels took about 1 GB to refuse; both are now a syntax error at the
// first list nested past MaxNesting, found with little memory.
func TestDeepNestingIsALocatedError(t *testing.T) {
	prefix := `{"format": "widejit.graph/v1", "n": 2,` + "\n" + `"attrs": `
	// the refused opening is the one at level MaxNesting+1, the top-level object being 1
	col := len(`"attrs": `) + MaxNesting
	for name, data := range map[string][]byte{
		"3 million unclosed": []byte(prefix + strings.Repeat("[", 3_000_000)),
		"2 million balanced": []byte(prefix + strings.Repeat("[", 2_000_000) + strings.Repeat("]", 2_000_000) + "}"),
		"objects":            []byte(prefix + strings.Repeat(`{"a":`, 1_000_000)),
	} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Parse("deep.json", data, Options{})
			runtime.ReadMemStats(&after)
			ge, ok := err.(*Error)
			if !ok || len(ge.Problems) != 1 {
				t.Fatalf("want one located problem, got %v", err)
			}
			p := ge.Problems[0]
			c := col
			if name == "objects" {
				c = len(`"attrs": `) + 1 + (MaxNesting-1)*len(`{"a":`)
			}
			if p.Line != 2 || p.Col != c || !strings.Contains(p.Msg, fmt.Sprintf("nested more than %d deep", MaxNesting)) {
				t.Fatalf("want line 2, col %d, nesting message; got %+v", c, p)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Fatalf("refusing allocated %d MiB", grew>>20)
			}
		})
	}
}
