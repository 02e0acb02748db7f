package testkit

import (
	"fmt"
	"math"
	"testing"

	"github.com/widejit/widejit/graph/safetensors"
)

// ReadTensors reads every tensor of a safetensors file, by name.
func ReadTensors(tb testing.TB, path string) map[string]*safetensors.Tensor {
	tb.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	ts, err := f.ReadAll()
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	m := make(map[string]*safetensors.Tensor, len(ts))
	for _, x := range ts {
		m[x.Name] = x
	}
	return m
}

// CompareTensors checks got against want: equal shapes and |got - want| <= 1e-5 + rtol *
// max|want| (over its finite values) everywhere, rtol = want.DType.CheckRTol() (fp32: 1e-4,
// a backend computes exactly and the difference is summation order; bfloat16 1.6e-2 and
// float16 1e-3, the references round every op to the half type). A NaN matches only a NaN,
// an infinity only itself. The error names the worst element.
func CompareTensors(got, want *safetensors.Tensor) error {
	if want == nil {
		return fmt.Errorf("tensor missing (got %v, want false)", got != nil)
	}
	return CompareTensorsRTol(got, want, want.DType.CheckRTol())
}

// CompareTensorsRTol is CompareTensors with the relative tolerance rtol (a test's own,
// e.g. one derived from a dtype's epsilon and a reduction length).
func CompareTensorsRTol(got, want *safetensors.Tensor, rtol float64) error {
	if got == nil || want == nil {
		return fmt.Errorf("tensor missing (got %v, want %v)", got != nil, want != nil)
	}
	if fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) {
		return fmt.Errorf("shape %v, want %v", got.Shape, want.Shape)
	}
	g, err := got.Float64s()
	if err != nil {
		return err
	}
	w, err := want.Float64s()
	if err != nil {
		return err
	}
	if len(g) != len(w) {
		return fmt.Errorf("%d elements, want %d", len(g), len(w))
	}
	scale, maxd, at := 0.0, 0.0, -1
	for _, v := range w {
		if !nonFinite(v) { // a NaN or an infinity would make the bound NaN or infinite and let everything pass
			scale = math.Max(scale, math.Abs(v))
		}
	}
	for i := range g {
		d := math.Abs(g[i] - w[i])
		if nonFinite(g[i]) || nonFinite(w[i]) { // exactly: NaN for NaN, an infinity of the same sign
			d = 0
			if !(math.IsNaN(g[i]) && math.IsNaN(w[i]) || g[i] == w[i]) {
				d = math.Inf(1)
			}
		}
		if d > maxd {
			maxd, at = d, i
		}
	}
	if bound := 1e-5 + rtol*scale; maxd > bound {
		return fmt.Errorf("max |diff| %.3g at flat index %d (got %g, want %g) > bound %.3g", maxd, at, g[at], w[at], bound)
	}
	return nil
}

// CheckOutputs reports, without stopping the test, every tensor of want that got lacks or
// that differs beyond CompareTensors' tolerance.
func CheckOutputs(tb testing.TB, got, want map[string]*safetensors.Tensor) {
	tb.Helper()
	for name, w := range want {
		g := got[name]
		if g == nil {
			tb.Errorf("output %s missing", name)
			continue
		}
		if err := CompareTensors(g, w); err != nil {
			tb.Errorf("output %s: %v", name, err)
		}
	}
}

func nonFinite(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
