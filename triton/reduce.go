package triton

import (
	"github.com/widejit/widejit/triton/ir"
	"slices"
)

// This file implements tl.sum/max/min/argmax/argmin and tl.reduce.

func registerReductions(t map[string]builtinFn) {
	t["tl.sum"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.sum", ca, []string{"input", "axis", "keep_dims", "dtype"})
		x := s.tensorArg("tl.sum", "input", a[0])
		d := x.Type.Elem
		// Triton's _pick_sum_dtype: narrow ints accumulate in 32 bits, bf16 in fp32.
		switch {
		case !isNone(a[3]):
			d = s.dtypeArg("tl.sum", "dtype", a[3]).Elem
		case tritonUnsigned(d) && d.Bits() < 32:
			d = ir.U32
		case d.IsInt() && d.Bits() < 32:
			d = ir.I32
		case d == ir.BF16:
			d = ir.F32
		}
		x = s.cast(x, d)
		return s.reduceBuiltin("tl.sum", ir.ReduceSum, x, a[1], a[2])
	}
	for _, mm := range []struct {
		name       string
		kind, akin int
	}{{"max", ir.ReduceMax, ir.ReduceArgMax}, {"min", ir.ReduceMin, ir.ReduceArgMin}} {
		mm := mm
		fn := "tl." + mm.name
		t[fn] = func(s *spec, ca callArgs) value {
			a := s.bind(fn, ca, []string{"input", "axis", "return_indices", "return_indices_tie_break_left", "keep_dims"})
			x := s.tensorArg(fn, "input", a[0])
			if x.Type.Ptr {
				s.fail("%s on pointers", fn)
			}
			if x.Type.Elem == ir.BF16 {
				x = s.cast(x, ir.F32)
			}
			if s.boolArg(fn, "return_indices", a[2], false) {
				vals := s.reduceBuiltin(fn, mm.kind, x, a[1], a[4])
				idx := s.reduceBuiltin(fn, mm.akin, x, a[1], a[4])
				return cTuple{vals, idx}
			}
			// Triton's max/min upcast narrower-than-32-bit inputs: floats to fp32, ints to i32.
			if x.Type.Elem.Bits() < 32 {
				if x.Type.Elem.IsFloat() {
					x = s.cast(x, ir.F32)
				} else {
					x = s.cast(x, ir.I32)
				}
			}
			return s.reduceBuiltin(fn, mm.kind, x, a[1], a[4])
		}
		afn := "tl.arg" + mm.name
		t[afn] = func(s *spec, ca callArgs) value {
			a := s.bind(afn, ca, []string{"input", "axis", "tie_break_left", "keep_dims"})
			x := s.tensorArg(afn, "input", a[0])
			if x.Type.Ptr {
				s.fail("%s on pointers", afn)
			}
			if isNone(a[1]) {
				s.fail("%s needs an axis", afn)
			}
			if !s.boolArg(afn, "tie_break_left", a[2], true) {
				s.fail("%s: tie_break_left=False is not supported", afn)
			}
			return s.reduceBuiltin(afn, mm.akin, x, a[1], a[3])
		}
	}
	t["tl.reduce"] = func(s *spec, ca callArgs) value {
		a := s.bind("tl.reduce", ca, []string{"input", "axis", "combine_fn", "keep_dims"})
		return s.reduceCustom(a[0], a[1], a[2], a[3])
	}
}

// reduceAxis prepares a reduction: axis None reshapes to 1-D and reduces axis 0.
func (s *spec) reduceAxis(fn string, xs []*ir.Value, axisv value) ([]*ir.Value, int, bool) {
	if xs[0].Type.IsScalar() {
		s.fail("%s: cannot reduce a scalar", fn)
	}
	if isNone(axisv) {
		out := make([]*ir.Value, len(xs))
		for i, x := range xs {
			out[i] = s.reshape(x, []int{x.Type.NumElems()})
		}
		return out, 0, true
	}
	axis := s.normAxis(fn, s.intArg(fn, "axis", axisv), xs[0].Type.Rank())
	return xs, axis, false
}

func reducedShape(shape []int, axis int, keep bool) []int {
	out := append([]int(nil), shape[:axis]...)
	if keep {
		out = append(out, 1)
	}
	return append(out, shape[axis+1:]...)
}

func (s *spec) reduceBuiltin(fn string, kind int, x *ir.Value, axisv, keepv value) value {
	keep := s.boolArg(fn, "keep_dims", keepv, false)
	orig := x.Type.Shape
	xs, axis, all := s.reduceAxis(fn, []*ir.Value{x}, axisv)
	x = xs[0]
	rt := x.Type.WithShape(reducedShape(x.Type.Shape, axis, keep && !all))
	if kind == ir.ReduceArgMax || kind == ir.ReduceArgMin {
		rt.Elem = ir.I32
	}
	in := s.emitInstr(ir.Reduce, []ir.Type{rt}, x)
	in.Int = int64(axis)
	in.Ints = []int{kind, boolInt(keep && !all)}
	r := in.Result()
	if all && keep {
		ones := make([]int, len(orig))
		for i := range ones {
			ones[i] = 1
		}
		r = s.reshape(r, ones)
	}
	return r
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// reduceCustom is tl.reduce with a @triton.jit combine function, inlined into the Reduce
// region on scalars.
func (s *spec) reduceCustom(inputv, axisv, fnv, keepv value) value {
	const fn = "tl.reduce"
	combine, ok := fnv.(cJitFn)
	if !ok {
		s.fail("tl.reduce: combine_fn must be a @triton.jit function, got %s", typeName(fnv))
	}
	keep := s.boolArg(fn, "keep_dims", keepv, false)
	var xs []*ir.Value
	tuple := false
	switch v := inputv.(type) {
	case cTuple:
		tuple = true
		for _, e := range v {
			xs = append(xs, s.tensorArg(fn, "input", e))
		}
	default:
		xs = []*ir.Value{s.tensorArg(fn, "input", v)}
	}
	if len(xs) == 0 {
		s.fail("tl.reduce: no inputs")
	}
	for _, x := range xs[1:] {
		if !slices.Equal(x.Type.Shape, xs[0].Type.Shape) {
			s.fail("tl.reduce: inputs must have one shape, got %v and %v", xs[0].Type.Shape, x.Type.Shape)
		}
	}
	orig := xs[0].Type.Shape
	xs, axis, all := s.reduceAxis(fn, xs, axisv)
	k := len(xs)
	argTypes := make([]ir.Type, 0, 2*k)
	for range 2 {
		for _, x := range xs {
			argTypes = append(argTypes, x.Type.ScalarType())
		}
	}
	region := s.f.NewBlock(argTypes...)
	parent := s.blk
	s.blk = region
	args := make([]value, 2*k)
	for i, a := range region.Args {
		args[i] = a
	}
	res := s.inline(combine, callArgs{pos: args, kw: map[string]value{}})
	var outs []value
	if t, ok := res.(cTuple); ok {
		outs = t
	} else {
		outs = []value{res}
	}
	if len(outs) != k {
		s.fail("tl.reduce: combine function %s returns %d values for %d inputs", combine.def.Name, len(outs), k)
	}
	yields := make([]*ir.Value, k)
	for i, o := range outs {
		want := argTypes[i]
		var v *ir.Value
		if isPyNumber(o) {
			v = s.constant(want, o)
		} else {
			v = s.tensorArg(fn, "combine result", o)
		}
		if !v.Type.Equal(want) {
			s.fail("tl.reduce: combine function %s returns %s for an input of %s", combine.def.Name, v.Type, want)
		}
		yields[i] = v
	}
	s.emitInstr(ir.Yield, nil, yields...)
	s.blk = parent
	rts := make([]ir.Type, k)
	for i, x := range xs {
		rts[i] = x.Type.WithShape(reducedShape(x.Type.Shape, axis, keep && !all))
	}
	in := s.emitInstr(ir.Reduce, rts, xs...)
	in.Int = int64(axis)
	in.Ints = []int{ir.ReduceCustom, boolInt(keep && !all)}
	in.Regions = []*ir.Block{region}
	results := make(cTuple, k)
	for i, r := range in.Results {
		if all && keep {
			ones := make([]int, len(orig))
			for j := range ones {
				ones[j] = 1
			}
			r = s.reshape(r, ones)
		}
		results[i] = r
	}
	if !tuple {
		return results[0]
	}
	return results
}
