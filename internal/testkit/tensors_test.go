package testkit

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/widejit/widejit/graph/safetensors"
)

func TestCompareTensors(t *testing.T) {
	want := safetensors.FromFloat32s("y", []int{2, 2}, []float32{1, -100, 3, float32(math.NaN())})
	for _, c := range []struct {
		name string
		got  *safetensors.Tensor
		err  string // "" when the comparison must pass
	}{
		// bound = 1e-5 + 1e-4 * 100 = 0.01001
		{"within the bound", safetensors.FromFloat32s("y", []int{2, 2}, []float32{1.01, -100, 3, float32(math.NaN())}), ""},
		{"beyond the bound", safetensors.FromFloat32s("y", []int{2, 2}, []float32{1, -100, 3.02, float32(math.NaN())}), "flat index 2"},
		{"NaN against a number", safetensors.FromFloat32s("y", []int{2, 2}, []float32{1, -100, 3, 0}), "flat index 3"},
		{"shape", safetensors.FromFloat32s("y", []int{4}, []float32{1, -100, 3, float32(math.NaN())}), "shape [4]"},
		{"missing", nil, "missing"},
	} {
		err := CompareTensors(c.got, want)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.err)
		}
	}
}

// Half-precision references get their dtype's looser rtol (bfloat16 1.6e-2, float16 1e-3).
func TestCompareTensorsHalfPrecision(t *testing.T) {
	want := safetensors.FromFloat32s("y", []int{2}, []float32{4, -1})
	got := safetensors.FromFloat32s("y", []int{2}, []float32{4.03, -1}) // 0.75% of the scale
	if CompareTensors(got, want) == nil {
		t.Fatal("an fp32 reference accepted a 0.75% error")
	}
	for _, c := range []struct {
		dt safetensors.DType
		ok bool
	}{{safetensors.BF16, true}, {safetensors.F16, false}} {
		w, g := *want, *got
		w.DType, g.DType = c.dt, c.dt
		w.Data, g.Data = halfBytes(t, want, c.dt), halfBytes(t, got, c.dt)
		if err := CompareTensors(&g, &w); (err == nil) != c.ok {
			t.Errorf("%s: error %v, want ok=%v", c.dt, err, c.ok)
		}
	}
}

// halfBytes converts an F32 tensor's values to dt's encoding (rounded).
func halfBytes(t *testing.T, x *safetensors.Tensor, dt safetensors.DType) []byte {
	t.Helper()
	v, err := x.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	h, err := safetensors.FromFloat64s(x.Name, dt, x.Shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return h.Data
}

func TestReadTensorsAndCheckOutputs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.safetensors")
	a := safetensors.FromFloat32s("a", []int{3}, []float32{1, 2, 3})
	b := safetensors.FromFloat32s("b", []int{1}, []float32{4})
	if err := safetensors.Write(path, []*safetensors.Tensor{a, b}, nil); err != nil {
		t.Fatal(err)
	}
	m := ReadTensors(t, path)
	if len(m) != 2 || CompareTensors(m["a"], a) != nil || CompareTensors(m["b"], b) != nil {
		t.Fatalf("read back %v", m)
	}
	rec := &recorder{T: t}
	CheckOutputs(rec, map[string]*safetensors.Tensor{"a": safetensors.FromFloat32s("a", []int{3}, []float32{1, 2, 4})}, m)
	if len(rec.errs) != 2 || !strings.Contains(strings.Join(rec.errs, "\n"), "output b missing") {
		t.Errorf("CheckOutputs reported %q, want a mismatch for a and b missing", rec.errs)
	}
}

// recorder collects Errorf calls instead of failing the test.
type recorder struct {
	*testing.T
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Helper() {}
