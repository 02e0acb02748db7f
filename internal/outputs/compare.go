package outputs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/widejit/widejit/graph"
	"github.com/widejit/widejit/graph/safetensors"
)

// ReadExpected loads EXPECTED.safetensors: every graph output with its [N, ...] shape and
// dtype, and nothing else; for a model range (--shard), N is the whole graph's and the
// range's rows are read.
func ReadExpected(g *graph.Graph, path string) (map[string]*safetensors.Tensor, error) {
	lo, hi, total := g.ModelRange()
	file, err := safetensors.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var probs []string
	out := map[string]*safetensors.Tensor{}
	for _, o := range g.Outputs {
		want := append([]int{total}, o.Type.Shape...)
		info, ok := file.Info(o.Name)
		switch {
		case !ok:
			probs = append(probs, fmt.Sprintf("output %q is missing", o.Name))
			continue
		case !slices.Equal(info.Shape, want) || info.DType != o.Type.DType.Safetensors():
			probs = append(probs, fmt.Sprintf("output %q is %s%v, expected %s%v", o.Name, info.DType, info.Shape, o.Type.DType.Safetensors(), want))
			continue
		}
		t, err := file.ReadRows(o.Name, lo, hi)
		if err != nil {
			return nil, err
		}
		out[o.Name] = t
	}
	for _, name := range file.Names() {
		if _, isOut := out[name]; !isOut && !isGraphOutput(g, name) {
			probs = append(probs, fmt.Sprintf("tensor %q is not a graph output", name))
		}
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("expected outputs %s:\n  %s", path, strings.Join(probs, "\n  "))
	}
	return out, nil
}

func isGraphOutput(g *graph.Graph, name string) bool {
	for _, o := range g.Outputs {
		if o.Name == name {
			return true
		}
	}
	return false
}

// CheckPresent guards against an executor returning too little or the wrong shapes.
func CheckPresent(g *graph.Graph, got map[string]*safetensors.Tensor) error {
	for _, o := range g.Outputs {
		t := got[o.Name]
		want := append([]int{g.N}, o.Type.Shape...)
		if t == nil {
			return fmt.Errorf("internal error: the executor returned no output %q", o.Name)
		}
		if !slices.Equal(t.Shape, want) || len(t.Data) != t.Numel()*t.DType.Size() {
			return fmt.Errorf("internal error: the executor returned output %q as %s%v (%d bytes), expected %v", o.Name, t.DType, t.Shape, len(t.Data), want)
		}
		t.Name = o.Name
	}
	return nil
}

// Diff compares one output with its expected value.
type Diff struct {
	Name   string  `json:"name"`
	MaxAbs float64 `json:"max_abs"` // max |got - expected|
	MaxRel float64 `json:"max_rel"` // MaxAbs / max|expected| (the output's scale)
	Scale  float64 `json:"scale"`   // max |expected|
	RTol   float64 `json:"rtol"`    // the relative tolerance applied (--rtol, or the dtype's default)
	Bound  float64 `json:"bound"`   // atol + rtol * Scale
	NaNs   int     `json:"nan_mismatches"`
	OK     bool    `json:"ok"`
	Err    string  `json:"error,omitempty"`
}

// Compare applies |got - exp| <= atol + rtol * max|exp| per output; rtol < 0 takes the
// expected dtype's default (safetensors.DType.CheckRTol). A NaN where the expected value is not
// NaN (or the reverse) fails; NaN against NaN, and equal infinities, agree.
func Compare(g *graph.Graph, got, expected map[string]*safetensors.Tensor, rtol, atol float64) []Diff {
	var out []Diff
	for _, o := range g.Outputs {
		d := Diff{Name: o.Name}
		gt, et := got[o.Name], expected[o.Name]
		gv, err1 := gt.Float64s()
		ev, err2 := et.Float64s()
		switch {
		case err1 != nil || err2 != nil:
			d.Err = fmt.Sprint(errors.Join(err1, err2))
		case !slices.Equal(gt.Shape, et.Shape):
			d.Err = fmt.Sprintf("shape %v, expected %v", gt.Shape, et.Shape)
		}
		if d.Err != "" {
			out = append(out, d)
			continue
		}
		for _, e := range ev {
			if a := math.Abs(e); !math.IsInf(a, 0) && !math.IsNaN(a) && a > d.Scale {
				d.Scale = a
			}
		}
		for i := range gv {
			x, e := gv[i], ev[i]
			switch {
			case math.IsNaN(x) || math.IsNaN(e):
				if math.IsNaN(x) != math.IsNaN(e) {
					d.NaNs++
				}
				continue
			case math.IsInf(x, 0) || math.IsInf(e, 0):
				if x != e {
					d.MaxAbs = math.Inf(1)
				}
				continue
			}
			if diff := math.Abs(x - e); diff > d.MaxAbs {
				d.MaxAbs = diff
			}
		}
		if d.Scale > 0 {
			d.MaxRel = d.MaxAbs / d.Scale
		} else if d.MaxAbs > 0 {
			d.MaxRel = math.Inf(1)
		}
		d.RTol = rtol
		if rtol < 0 {
			d.RTol = et.DType.CheckRTol()
		}
		d.Bound = atol + d.RTol*d.Scale
		d.OK = d.NaNs == 0 && d.MaxAbs <= d.Bound
		out = append(out, d)
	}
	return out
}

// Checksum is the sum of t's values (0 for a dtype without them) and a prefix of the SHA-256 of
// its bytes.
func Checksum(t *safetensors.Tensor) (sum float64, digest string) {
	vals, err := t.Float64s()
	if err == nil {
		for _, v := range vals {
			sum += v
		}
	}
	h := sha256.Sum256(t.Data)
	return sum, hex.EncodeToString(h[:8])
}

// JSONSafe replaces infinities (which JSON cannot carry) with a large finite marker.
func JSONSafe(ds []Diff) []Diff {
	out := append([]Diff(nil), ds...)
	for i := range out {
		for _, p := range []*float64{&out[i].MaxAbs, &out[i].MaxRel} {
			if math.IsInf(*p, 0) {
				*p = math.MaxFloat64
			}
		}
	}
	return out
}

// MaxAbsDiff is the largest |a - b| over the outputs both hold.
func MaxAbsDiff(a, b map[string]*safetensors.Tensor) float64 {
	worst := 0.0
	for name, ta := range a {
		tb := b[name]
		if tb == nil {
			continue
		}
		va, err1 := ta.Float64s()
		vb, err2 := tb.Float64s()
		if err1 != nil || err2 != nil || len(va) != len(vb) {
			continue
		}
		for i := range va {
			if d := va[i] - vb[i]; d > worst {
				worst = d
			} else if -d > worst {
				worst = -d
			}
		}
	}
	return worst
}
