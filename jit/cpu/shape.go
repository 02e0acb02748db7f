package cpu

import (
	"fmt"
	"math"
	"strings"

	"github.com/widejit/widejit/triton/ir"
)

func (c *compiler) compileShape(in *ir.Instr, a, z int) (step, error) {
	ts, tz := c.p.slotType[a], c.p.slotType[z]
	cls := c.p.slotClass[z]
	switch in.Op {
	case ir.Splat:
		return func(fr *frame) error {
			switch cls {
			case clsInt:
				fill(fr.ints[z], fr.ints[a][0])
			case clsF32:
				fill(fr.f32[z], fr.f32[a][0])
			default:
				fill(fr.f64[z], fr.f64[a][0])
			}
			return nil
		}, nil
	case ir.ExpandDims, ir.Reshape: // row-major order is kept: the elements do not move
		return func(fr *frame) error { fr.copySlot(cls, z, a); return nil }, nil
	case ir.Broadcast:
		strides := rowMajorStrides(ts.Shape)
		for d := range ts.Shape {
			if ts.Shape[d] != tz.Shape[d] { // a 1 repeated (ir.CheckBroadcast)
				strides[d] = 0
			}
		}
		return stridedCopyStep(cls, a, z, tz.Shape, strides), nil
	case ir.Permute:
		src := rowMajorStrides(ts.Shape)
		strides := make([]int, tz.Rank())
		for i, o := range in.Ints {
			strides[i] = src[o]
		}
		if cls == clsF32 && tz.Rank() == 2 && in.Ints[0] == 1 {
			// tl.trans of a loaded weight tile feeding tl.dot: the hot permute
			if c.lazyTranspose(in) {
				return func(*frame) error { return nil }, nil // the dot transposes it if it must (gemv.go)
			}
			rows, cols := ts.Shape[0], ts.Shape[1]
			tracked := c.tracked(in.Args[0])
			// a zero-padded tile carries its live extent over (extent.go)
			live := tracked && c.feedsOneDot(in.Results[0], false)
			return func(fr *frame) error {
				fr.transpose2D(z, a, rows, cols, tracked, live)
				return nil
			}, nil
		}
		return stridedCopyStep(cls, a, z, tz.Shape, strides), nil
	}
	return nil, c.errf(in.Pos, in.Op, "not a shape op")
}

func rowMajorStrides(shape []int) []int {
	s := make([]int, len(shape))
	n := 1
	for d := len(shape) - 1; d >= 0; d-- {
		s[d] = n
		n *= shape[d]
	}
	return s
}

func stridedCopyStep(cls class, a, z int, shape, strides []int) step {
	return func(fr *frame) error {
		switch cls {
		case clsInt:
			stridedCopy(fr.ints[z], fr.ints[a], shape, strides)
		case clsF32:
			stridedCopy(fr.f32[z], fr.f32[a], shape, strides)
		default:
			stridedCopy(fr.f64[z], fr.f64[a], shape, strides)
		}
		return nil
	}
}

// stridedCopy fills dst (row-major, of shape) with src[sum(idx[d]*strides[d])], a row of
// the last dimension at a time.
func stridedCopy[T any](dst, src []T, shape, strides []int) {
	if len(shape) == 0 {
		dst[0] = src[0]
		return
	}
	r := len(shape) - 1
	n, s := shape[r], strides[r]
	var idx [ir8]int
	for base := 0; base < len(dst); base += n {
		off := 0
		for d := 0; d < r; d++ {
			off += idx[d] * strides[d]
		}
		row := dst[base : base+n]
		switch s {
		case 0:
			fill(row, src[off])
		case 1:
			copy(row, src[off:off+n])
		default:
			for j := range row {
				row[j] = src[off+j*s]
			}
		}
		for d := r - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
}

// transposeF32 writes the [cols, rows] transpose of src [rows, cols] into dst: 8x8 blocks
// in AVX2 where it can, the edges four source rows at a time (sequential reads, 16-byte
// writes).
func transposeF32(dst, src []float32, rows, cols int) {
	dst, src = dst[:rows*cols], src[:rows*cols]
	r8, c8 := transposeBlocks(dst, src, rows, cols)
	if c8 < cols {
		transposeGo(dst, src, rows, cols, 0, r8, c8)
	}
	transposeGo(dst, src, rows, cols, r8, rows, 0)
}

// transposeGo transposes source rows [r0, r1), columns [c0, cols).
func transposeGo(dst, src []float32, rows, cols, r0, r1, c0 int) {
	i := r0
	for ; i+4 <= r1; i += 4 {
		s0 := src[i*cols+c0 : i*cols+cols]
		s1 := src[(i+1)*cols+c0 : (i+1)*cols+cols]
		s2 := src[(i+2)*cols+c0 : (i+2)*cols+cols]
		s3 := src[(i+3)*cols+c0 : (i+3)*cols+cols]
		s1, s2, s3 = s1[:len(s0)], s2[:len(s0)], s3[:len(s0)]
		for j, v := range s0 {
			o := (c0+j)*rows + i
			d := dst[o : o+4]
			d[0], d[1], d[2], d[3] = v, s1[j], s2[j], s3[j]
		}
	}
	for ; i < r1; i++ {
		for j, v := range src[i*cols+c0 : i*cols+cols] {
			dst[(c0+j)*rows+i] = v
		}
	}
}

// ir8 is the highest rank a tile may have here.
const ir8 = 8

func (c *compiler) compileReduce(in *ir.Instr, args, results []int) (step, error) {
	kind := in.Ints[0]
	ts := c.p.slotType[args[0]]
	axis := int(in.Int)
	outer, n, inner := 1, ts.Shape[axis], 1
	for _, d := range ts.Shape[:axis] {
		outer *= d
	}
	for _, d := range ts.Shape[axis+1:] {
		inner *= d
	}
	geo := reduceGeometry{outer: outer, n: n, inner: inner}
	if kind == ir.ReduceCustom {
		return c.compileCustomReduce(in, args, results, geo)
	}
	a, z := args[0], results[0] // a built-in reduction: one input (ir.ReduceResult)
	d := ts.Elem
	cls := c.p.slotClass[a]
	return func(fr *frame) error {
		switch cls {
		case clsF32:
			x := fr.f32[a]
			if inner == 1 && kind != ir.ReduceArgMax && kind != ir.ReduceArgMin {
				// rows along the last dim: direct loops, no per-element call
				for o := range outer {
					fr.f32[z][o] = reduceRowF32(kind, x[o*n:o*n+n])
				}
				roundTo(d, fr.f32[z])
				return nil
			}
			if n > 0 && (kind == ir.ReduceSum || kind == ir.ReduceMax || kind == ir.ReduceMin) {
				reduceColsF32(kind, x, fr.f32[z], geo)
				roundTo(d, fr.f32[z])
				return nil
			}
			geo.each(func(o, base, stride int) {
				if kind == ir.ReduceArgMax || kind == ir.ReduceArgMin {
					fr.ints[z][o] = int64(argExtreme(kind == ir.ReduceArgMax, n, func(j int) float64 { return float64(x[base+j*stride]) }))
					return
				}
				fr.f32[z][o] = float32(reduceFloat(kind, n, func(j int) float64 { return float64(x[base+j*stride]) }))
			})
			roundTo(d, fr.f32[z])
		case clsF64:
			x := fr.f64[a]
			geo.each(func(o, base, stride int) {
				if kind == ir.ReduceArgMax || kind == ir.ReduceArgMin {
					fr.ints[z][o] = int64(argExtreme(kind == ir.ReduceArgMax, n, func(j int) float64 { return x[base+j*stride] }))
					return
				}
				fr.f64[z][o] = reduceFloat(kind, n, func(j int) float64 { return x[base+j*stride] })
			})
		default:
			x := fr.ints[a]
			geo.each(func(o, base, stride int) {
				best, bi := x[base], 0
				for j := 1; j < n; j++ {
					v := x[base+j*stride]
					switch kind {
					case ir.ReduceSum:
						best += v
					case ir.ReduceMax, ir.ReduceArgMax:
						if lessInt(d, best, v) {
							best, bi = v, j
						}
					default:
						if lessInt(d, v, best) {
							best, bi = v, j
						}
					}
				}
				if kind == ir.ReduceArgMax || kind == ir.ReduceArgMin {
					fr.ints[z][o] = int64(bi)
				} else {
					fr.ints[z][o] = normInt(d, best)
				}
			})
		}
		return nil
	}, nil
}

type reduceGeometry struct{ outer, n, inner int }

// each calls f for every output element o with the input offset of its first reduced
// element and the stride between reduced elements.
func (g reduceGeometry) each(f func(o, base, stride int)) {
	for i := 0; i < g.outer; i++ {
		for k := 0; k < g.inner; k++ {
			f(i*g.inner+k, i*g.n*g.inner+k, g.inner)
		}
	}
}

// reduceFloat sums (in fp64, for accuracy: the order of combination is unspecified anyway)
// or takes maxnum/minnum.
func reduceFloat(kind, n int, x func(j int) float64) float64 {
	switch kind {
	case ir.ReduceSum:
		s := 0.0
		for j := 0; j < n; j++ {
			s += x(j)
		}
		return s
	case ir.ReduceMax:
		m := x(0)
		for j := 1; j < n; j++ {
			m = maxNum64(m, x(j))
		}
		return m
	}
	m := x(0)
	for j := 1; j < n; j++ {
		m = minNum64(m, x(j))
	}
	return m
}

// reduceColsF32 is reduceFloat over each column of x's [n, inner] slabs (a reduction along a
// dim that has dims after it, as tl.sum(t, axis=0)), for sum, max and min (n >= 1) into z. It
// walks a slab row by row, so the loads are contiguous and the columns' folds are independent
// chains instead of one call per element; each column folds in reduceFloat's order from its
// start value, in fp64, so the results are the same bit for bit.
func reduceColsF32(kind int, x, z []float32, g reduceGeometry) {
	var acc [64]float64
	n, inner := g.n, g.inner
	for i := range g.outer {
		slab := x[i*n*inner : (i+1)*n*inner]
		for k0 := 0; k0 < inner; k0 += len(acc) {
			a := acc[:min(len(acc), inner-k0)]
			first := 0
			if kind == ir.ReduceSum {
				clear(a)
			} else {
				for k := range a {
					a[k] = float64(slab[k0+k])
				}
				first = 1
			}
			for j := first; j < n; j++ {
				row := slab[j*inner+k0 : j*inner+k0+len(a)]
				switch kind {
				case ir.ReduceSum:
					for k, v := range row {
						a[k] += float64(v)
					}
				case ir.ReduceMax:
					for k, v := range row {
						a[k] = maxNum64(a[k], float64(v))
					}
				default:
					for k, v := range row {
						a[k] = minNum64(a[k], float64(v))
					}
				}
			}
			out := z[i*inner+k0 : i*inner+k0+len(a)]
			for k, v := range a {
				out[k] = float32(v)
			}
		}
	}
}

// reduceRowF32 is reduceFloat over a contiguous fp32 row: the sum in fp64 over four
// interleaved partial sums (the order of combination is unspecified, as on the GPU), maxnum
// and minnum in fp32, where they are exact.
func reduceRowF32(kind int, x []float32) float32 {
	switch kind {
	case ir.ReduceSum:
		var s0, s1, s2, s3 float64
		j := 0
		if haveVecAVX2 && len(x) >= 16 {
			j = len(x) &^ 15
			s0 = sumRowAVX2(&x[0], j)
		}
		for ; j+4 <= len(x); j += 4 {
			s0 += float64(x[j])
			s1 += float64(x[j+1])
			s2 += float64(x[j+2])
			s3 += float64(x[j+3])
		}
		for ; j < len(x); j++ {
			s0 += float64(x[j])
		}
		return float32((s0 + s1) + (s2 + s3))
	case ir.ReduceMax:
		if m := maxRow(x); m != 0 {
			return m
		}
		return foldRow(x, maxNum32) // +0 and -0 compare equal: let maxnum order them
	}
	if m := minRow(x); m != 0 {
		return m
	}
	return foldRow(x, minNum32)
}

// maxRow is maxnum over x with plain comparisons, four chains: NaN lanes are skipped (a NaN
// accumulator takes the next value), so it equals foldRow(x, maxNum32) whenever the result
// is not a zero, whose sign maxnum orders and a comparison does not.
func maxRow(x []float32) float32 {
	if haveVecAVX2 && len(x) >= 32 {
		return extremeRow(x, 0, maxNum32)
	}
	m0 := x[0]
	m1, m2, m3 := m0, m0, m0
	j := 1
	for ; j+4 <= len(x); j += 4 {
		if v := x[j]; v > m0 || m0 != m0 {
			m0 = v
		}
		if v := x[j+1]; v > m1 || m1 != m1 {
			m1 = v
		}
		if v := x[j+2]; v > m2 || m2 != m2 {
			m2 = v
		}
		if v := x[j+3]; v > m3 || m3 != m3 {
			m3 = v
		}
	}
	for ; j < len(x); j++ {
		if v := x[j]; v > m0 || m0 != m0 {
			m0 = v
		}
	}
	return maxNum32(maxNum32(m0, m1), maxNum32(m2, m3))
}

// extremeRow is maxRow (op 0, fold maxNum32) or minRow (op 1, minNum32) on AVX2: the
// non-NaN lanes' extreme, or 0 (the callers then fold exactly) when the result is a zero or
// an infinity of the starting sign, which all-NaN rows also give.
func extremeRow(x []float32, op int, fold func(a, b float32) float32) float32 {
	j := len(x) &^ 31
	m := extremeRowAVX2(&x[0], j, op)
	for _, v := range x[j:] {
		if v == v {
			m = fold(m, v)
		}
	}
	if math.IsInf(float64(m), 2*op-1) {
		return 0
	}
	return m
}

// minRow is maxRow for minnum.
func minRow(x []float32) float32 {
	if haveVecAVX2 && len(x) >= 32 {
		return extremeRow(x, 1, minNum32)
	}
	m0 := x[0]
	m1, m2, m3 := m0, m0, m0
	j := 1
	for ; j+4 <= len(x); j += 4 {
		if v := x[j]; v < m0 || m0 != m0 {
			m0 = v
		}
		if v := x[j+1]; v < m1 || m1 != m1 {
			m1 = v
		}
		if v := x[j+2]; v < m2 || m2 != m2 {
			m2 = v
		}
		if v := x[j+3]; v < m3 || m3 != m3 {
			m3 = v
		}
	}
	for ; j < len(x); j++ {
		if v := x[j]; v < m0 || m0 != m0 {
			m0 = v
		}
	}
	return minNum32(minNum32(m0, m1), minNum32(m2, m3))
}

// foldRow combines x with op (maxnum or minnum: exact, associative and commutative) over four
// independent chains.
func foldRow(x []float32, op func(a, b float32) float32) float32 {
	if len(x) < 8 {
		m := x[0]
		for _, v := range x[1:] {
			m = op(m, v)
		}
		return m
	}
	m0, m1, m2, m3 := x[0], x[1], x[2], x[3]
	j := 4
	for ; j+4 <= len(x); j += 4 {
		m0, m1, m2, m3 = op(m0, x[j]), op(m1, x[j+1]), op(m2, x[j+2]), op(m3, x[j+3])
	}
	for ; j < len(x); j++ {
		m0 = op(m0, x[j])
	}
	return op(op(m0, m1), op(m2, m3))
}

// argExtreme is the first index of the maximum (or minimum); NaNs are ignored as maxnum does,
// and an all-NaN row gives 0.
func argExtreme(isMax bool, n int, x func(j int) float64) int {
	bi := -1
	var best float64
	for j := 0; j < n; j++ {
		v := x(j)
		if math.IsNaN(v) {
			continue
		}
		if bi < 0 || (isMax && v > best) || (!isMax && v < best) {
			best, bi = v, j
		}
	}
	return max(bi, 0)
}

func (c *compiler) compileCustomReduce(in *ir.Instr, args, results []int, geo reduceGeometry) (step, error) {
	k := len(args)
	comb, err := c.region(in.Regions[0], in)
	if err != nil {
		return nil, err
	}
	cls := c.classes(args)
	combine := comb.all()
	return func(fr *frame) error {
		var err error
		geo.each(func(o, base, stride int) {
			if err != nil {
				return
			}
			for i := range k {
				fr.copyElem(cls[i], comb.args[i], 0, args[i], base)
			}
			for j := 1; j < geo.n; j++ {
				for i := range k {
					fr.copyElem(cls[i], comb.args[k+i], 0, args[i], base+j*stride)
				}
				if err = runSteps(fr, combine); err != nil {
					return
				}
				for i := range k {
					fr.copyElem(cls[i], comb.args[i], 0, comb.term[i], 0)
				}
			}
			for i := range k {
				fr.copyElem(cls[i], results[i], o, comb.args[i], 0)
			}
		})
		return err
	}, nil
}

func (fr *frame) copyElem(cls class, dst, di, src, si int) {
	switch cls {
	case clsInt:
		fr.ints[dst][di] = fr.ints[src][si]
	case clsF32:
		fr.f32[dst][di] = fr.f32[src][si]
	default:
		fr.f64[dst][di] = fr.f64[src][si]
	}
}

func (c *compiler) compilePrint(in *ir.Instr, args []int) (step, error) {
	types := make([]ir.Type, len(args))
	for i, a := range args {
		types[i] = c.p.slotType[a]
	}
	return func(fr *frame) error {
		var b strings.Builder
		fmt.Fprintf(&b, "pid (%d, %d, %d) %s", fr.pid[0], fr.pid[1], fr.pid[2], in.Str)
		for i, a := range args {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(" ")
			t := types[i]
			n := t.NumElems()
			if !t.IsScalar() {
				b.WriteString("[")
			}
			for j := range n {
				if j > 0 {
					b.WriteString(" ")
				}
				switch {
				case t.Ptr:
					fmt.Fprintf(&b, "%s+%d", fr.launch.nameOfTag(ptrTag(fr.ints[a][j])), ptrOffset(fr.ints[a][j]))
				case t.Elem == ir.F64:
					fmt.Fprint(&b, fr.f64[a][j])
				case t.Elem.IsFloat():
					fmt.Fprint(&b, fr.f32[a][j])
				case t.Elem == ir.U64:
					fmt.Fprint(&b, uint64(fr.ints[a][j]))
				default:
					fmt.Fprint(&b, fr.ints[a][j])
				}
			}
			if !t.IsScalar() {
				b.WriteString("]")
			}
		}
		b.WriteString("\n")
		d := fr.launch.k.dev
		d.printMu.Lock()
		_, err := d.printW.Write([]byte(b.String()))
		d.printMu.Unlock()
		if err != nil {
			return fr.errf(in.Pos, "device_print: %v", err)
		}
		return nil
	}, nil
}
