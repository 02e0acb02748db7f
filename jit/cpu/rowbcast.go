package cpu

import "github.com/widejit/widejit/triton/ir"

// Row and column broadcasts read in place. A bias added to a matmul tile arrives as a [1, N]
// (or, for a transposed tile, [M, 1]) load broadcast to [M, N]; filling the [M, N] tile only
// to read it once costs a pass over memory.
// When every consumer of such a Broadcast is an fp32 binary op (add, sub, mul, div, min, max)
// in the same block, after it, with no store, atomic or region in between (the source cannot
// change), the Broadcast emits no step and each consumer walks its other operand row by row
// against the [N] source. The same holds for an i1 row [1, N] broadcast as the condition of
// fp32 selects (a column mask, such as the dropped columns of conv_flat.py's padded store):
// each select copies runs of lanes, found once from the row, instead of choosing lane by lane
// under an [M, N] mask of 64-bit lanes.

func (c *compiler) findRowBroadcasts(f *ir.Func) map[*ir.Value]*ir.Value {
	out := map[*ir.Value]*ir.Value{}
	var walk func(b *ir.Block)
	walk = func(b *ir.Block) {
		if b == nil {
			return
		}
		for i, in := range b.Instrs {
			if in == nil {
				continue
			}
			for _, r := range in.Regions {
				walk(r)
			}
			if in.Op != ir.Broadcast || len(in.Args) != 1 || len(in.Results) != 1 {
				continue
			}
			v, src := in.Results[0], in.Args[0]
			if !rowVectorBroadcast(src.Type, v.Type) && !rowMaskBroadcast(src.Type, v.Type) {
				continue
			}
			n, last, ok := 0, i, true
			for j, use := range b.Instrs[i+1:] {
				if use == nil {
					ok = false
					break
				}
				k := 0
				for _, a := range use.Args {
					if a == v {
						k++
					}
				}
				if k > 0 {
					ok = ok && k == 1 && rowBroadcastConsumer(c, use, v)
					n += k
					last = i + 1 + j
				}
			}
			if !ok || n == 0 || n != c.uses[v] {
				continue
			}
			for _, between := range b.Instrs[i+1 : last] {
				if between.Op == ir.Store || between.Op == ir.AtomicRMW || between.Op == ir.AtomicCAS || len(between.Regions) > 0 {
					ok = false
				}
			}
			if ok {
				out[v] = src
			}
		}
	}
	walk(f.Body)
	return out
}

// rowVectorBroadcast: [1, ..., 1, N] -> [..., N] (a row vector against every row) or
// [..., M, 1] -> [..., M, N] (one value per row) of an fp32-class element type.
func rowVectorBroadcast(src, dst ir.Type) bool {
	r := dst.Rank()
	if dst.Ptr || src.Ptr || classOf(dst) != clsF32 || src.Elem != dst.Elem || r < 2 || src.Rank() != r {
		return false
	}
	return isRowVector(src, dst) || isColumnVector(src, dst)
}

// rowMaskBroadcast: an i1 row [1, ..., 1, N] -> [..., N].
func rowMaskBroadcast(src, dst ir.Type) bool {
	return !dst.Ptr && !src.Ptr && src.Elem == ir.I1 && dst.Elem == ir.I1 && dst.Rank() >= 2 &&
		src.Rank() == dst.Rank() && isRowVector(src, dst)
}

func isRowVector(src, dst ir.Type) bool {
	r := dst.Rank()
	for d := 0; d < r-1; d++ {
		if src.Shape[d] != 1 {
			return false
		}
	}
	return src.Shape[r-1] == dst.Shape[r-1]
}

func isColumnVector(src, dst ir.Type) bool {
	r := dst.Rank()
	for d := 0; d < r-1; d++ {
		if src.Shape[d] != dst.Shape[d] {
			return false
		}
	}
	return src.Shape[r-1] == 1
}

func rowBroadcastConsumer(c *compiler, use *ir.Instr, v *ir.Value) bool {
	if v.Type.Elem == ir.I1 {
		// the condition of an fp32 select whose operands are plain tiles
		return use.Op == ir.Select && len(use.Args) == 3 && use.Args[0] == v && use.Args[1] != v && use.Args[2] != v &&
			len(use.Results) == 1 && classOf(use.Results[0].Type) == clsF32
	}
	switch use.Op {
	case ir.Add, ir.Sub, ir.Mul, ir.Div, ir.Max, ir.Min:
	default:
		return false
	}
	if len(use.Args) != 2 || len(use.Results) != 1 || classOf(use.Results[0].Type) != clsF32 {
		return false
	}
	other := use.Args[0]
	if other == v {
		other = use.Args[1]
	}
	// the other operand must be a plain tile (not a scalar read in place, not another broadcast)
	return !c.absorbed[other] && !(other.Def != nil && other.Def.Op == ir.Broadcast)
}

// rowBroadcastStep runs binary with one operand read row by row from its [N] source.
func (c *compiler) rowBroadcastStep(in *ir.Instr, args []int, z int, d ir.DType, binary func(a, b, z []float32)) (step, bool) {
	vecFirst := true
	src, ok := c.rowBcast[in.Args[0]]
	other := args[1]
	if !ok {
		vecFirst = false
		if src, ok = c.rowBcast[in.Args[1]]; !ok {
			return nil, false
		}
		other = args[0]
	}
	vs, ok := c.slots[src]
	if !ok {
		return nil, false
	}
	t := c.p.slotType[z]
	n := t.Shape[t.Rank()-1]
	rows, _ := tileRows(t)
	obs := c.observedBy[in.Results[0]] // observed.go
	if isColumnVector(src.Type, t) && !isRowVector(src.Type, t) {
		switch in.Op {
		case ir.Add, ir.Sub, ir.Mul, ir.Div:
			// one value per row: the vector-scalar loops of absorbed splats
			op := in.Op
			vop := map[ir.Op]byte{ir.Add: '+', ir.Mul: '*'}[op] // commutative: either operand order
			fn := func(fr *frame, lo, hi int) {
				col, x, zz := fr.f32[vs], fr.f32[other], fr.f32[z]
				// rows are short (a tile's): one division per span, none per row
				for r, o := lo/n, lo; o < hi; {
					if o%n == 0 && vop != 0 {
						// whole rows from here: one call for all of them
						if k := vecColumnRows(vop, x[o:hi], col[r:], zz[o:hi], n); k > 0 {
							r, o = r+k, o+k*n
							continue
						}
					}
					end := min(hi, (r+1)*n)
					arithScalarF32(op, vecFirst, x[o:end], col[r], zz[o:end])
					r, o = r+1, end
				}
				roundTo(d, zz[lo:hi])
			}
			if x, ok := c.scaledRows(in.Results[0]); ok && op == ir.Mul {
				// the product keeps x's live extent where the scale is finite (scaledRows);
				// x's own slot holds it (an in-place step runs with z in x's place)
				xs := c.slots[x]
				c.scaledExtent[in.Results[0]] = true
				return func(fr *frame) error {
					e := fr.ext[xs] // read first: z may share x's slot
					fr.spans(obs, rows, n, fn)
					if !allFiniteGo(fr.f32[vs][:rows]) {
						e = extent{rows, n}
					}
					fr.ext[z], fr.partial[z] = e, false
					return nil
				}, true
			}
			return func(fr *frame) error { fr.spans(obs, rows, n, fn); return nil }, true
		}
		// min, max: spread the row's value over a row-long scratch (in L1), then the vector loop
		return func(fr *frame) error {
			if cap(fr.bcastScratch) < n {
				fr.bcastScratch = make([]float32, n)
			}
			row, col, x, zz := fr.bcastScratch[:n], fr.f32[vs], fr.f32[other], fr.f32[z]
			for r := 0; r < len(zz); r += n {
				fill(row, col[r/n])
				if vecFirst {
					binary(row, x[r:r+n], zz[r:r+n])
				} else {
					binary(x[r:r+n], row, zz[r:r+n])
				}
			}
			if d != ir.F32 {
				roundTo(d, zz)
			}
			return nil
		}, true
	}
	fn := func(fr *frame, lo, hi int) {
		vec, x, zz := fr.f32[vs][:n], fr.f32[other], fr.f32[z]
		for o, start := lo, lo-lo%n; o < hi; start += n {
			end := min(hi, start+n)
			if vecFirst {
				binary(vec[o-start:end-start], x[o:end], zz[o:end])
			} else {
				binary(x[o:end], vec[o-start:end-start], zz[o:end])
			}
			o = end
		}
		roundTo(d, zz[lo:hi])
	}
	return func(fr *frame) error { fr.spans(obs, rows, n, fn); return nil }, true
}

// rowMaskSelectStep is Select under a row mask read in place: the lanes of the [N] source that
// hold split each row into runs, copied from a or from b.
func (c *compiler) rowMaskSelectStep(in *ir.Instr, args []int, z int) (step, bool) {
	src, ok := c.rowBcast[in.Args[0]]
	if !ok || c.p.slotClass[z] != clsF32 {
		return nil, false
	}
	ms, ok := c.slots[src]
	if !ok {
		return nil, false
	}
	a, b := args[1], args[2]
	t := c.p.slotType[z]
	n := t.Shape[t.Rank()-1]
	return func(fr *frame) error {
		fr.need(ms) // a symbolic mask row is filled in first
		runs := appendMaskRuns(fr.maskRuns[:0], fr.ints[ms][:n], false)
		fr.maskRuns = runs
		av, bv, zz := fr.f32[a], fr.f32[b], fr.f32[z]
		for r := 0; r < len(zz); r += n {
			for _, run := range runs {
				from := bv
				if run.on {
					from = av
				}
				copy(zz[r+run.lo:r+run.hi], from[r+run.lo:r+run.hi])
			}
		}
		return nil
	}, true
}

// appendMaskRuns appends the runs of mask row m, each on where the mask holds (fails, if
// invert).
func appendMaskRuns(runs []maskRun, m []int64, invert bool) []maskRun {
	for j := 0; j < len(m); {
		k := j + 1
		for k < len(m) && (m[k] != 0) == (m[j] != 0) {
			k++
		}
		runs = append(runs, maskRun{j, k, (m[j] != 0) != invert})
		j = k
	}
	return runs
}

// maskRun is lanes [lo, hi) of a mask row, all on or all off.
type maskRun struct {
	lo, hi int
	on     bool
}
