// Package streamtest holds the helpers that the tests of jit/cuda (against the fake libcuda)
// and of jit/cuda/cudatest (the stub driver) share: the tutorial's add kernel, streams,
// events and pinned memory of a jit.StreamDevice, fp32 bytes. Only tests import it.
package streamtest

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/widejit/widejit/jit"
)

// LoadAdd loads the tutorial's add_kernel (out = x + y over n fp32 values, blocks of 64) on d.
func LoadAdd(t *testing.T, d jit.Device) jit.Kernel {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	text, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "triton", "testdata", "kernels", "vector_add.py"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := jit.NewCompiler(jit.CompilerOptions{}).Load(d, jit.Source{File: "vector_add.py", Text: string(text), Fn: "add_kernel"}, jit.Spec{
		Sig: map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}, Consts: map[string]any{"BLOCK_SIZE": int64(64)}})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// F32s is vals as little-endian bytes.
func F32s(vals ...float32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// ReadF32s reads little-endian fp32 values.
func ReadF32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// NewStream is a stream of d, closed when the test ends.
func NewStream(t *testing.T, d jit.StreamDevice) jit.Stream {
	t.Helper()
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// NewEvent is an event of d, closed when the test ends.
func NewEvent(t *testing.T, d jit.StreamDevice, timing bool) jit.Event {
	t.Helper()
	e, err := d.NewEvent(timing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// Pinned is page-locked memory of d holding data, freed when the test ends.
func Pinned(t *testing.T, d jit.StreamDevice, data []byte) []byte {
	t.Helper()
	p, err := d.AllocPinned(len(data))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Free() })
	copy(p.Bytes(), data)
	return p.Bytes()
}
