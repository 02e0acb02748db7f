package cpu

import (
	"github.com/widejit/widejit/internal/half"
	"github.com/widejit/widejit/triton/ir"
)

func (l *launch) nameOfTag(tag int) string {
	if tag >= 1 && tag <= len(l.names) {
		return l.names[tag-1]
	}
	return "?"
}

// resolve finds the buffer and element offset of an encoded pointer and checks the bounds.
func (fr *frame) resolve(pos ir.Pos, what string, p int64, n int) (*Buffer, int, error) {
	return fr.resolveAt(pos, what, int64(ptrTag(p)), ptrOffset(p), n)
}

// resolveAt checks n elements from element offset off of the buffer with tag, in int64 (a
// symbolic tile's offsets never pass through the 48-bit encoding).
func (fr *frame) resolveAt(pos ir.Pos, what string, tag, off int64, n int) (*Buffer, int, error) {
	l := fr.launch
	if tag&tagWild != 0 {
		name := "?"
		if t := tag &^ tagWild; t >= 1 && t <= int64(len(l.bufs)) {
			name = l.names[t-1]
		}
		return nil, 0, fr.errf(pos, "%s out of bounds: element offset %s of %s, beyond the 2^47 elements a pointer can address",
			what, fr.wildOff, name)
	}
	if tag < 1 || tag > int64(len(l.bufs)) || l.bufs[tag-1] == nil {
		return nil, 0, fr.errf(pos, "%s through a pointer that is not derived from a pointer argument", what)
	}
	b := l.bufs[tag-1]
	if off < 0 || off > int64(b.n)-int64(n) {
		bad := off
		if off >= 0 {
			bad = max(off, int64(b.n))
		}
		return nil, 0, fr.errf(pos, "%s out of bounds: element offset %d of %s, whose buffer holds %d elements of %s",
			what, bad, l.names[tag-1], b.n, b.dt)
	}
	return b, int(off), nil
}

// contiguous reports whether row is p, p+1, p+2, ... (same buffer, consecutive elements).
func contiguous(row []int64) bool {
	p0 := row[0]
	for j, p := range row {
		if p != p0+int64(j) {
			return false
		}
	}
	return true
}

// forRuns calls fn(j, n) for each maximal run of lanes j..j+n-1 of a row that are live
// (mask nil or nonzero) and address consecutive elements of one buffer, in order: a gathered
// row that is piecewise contiguous (a pixel tile crossing image rows) moves run by run, one
// bounds check each, instead of lane by lane.
func forRuns(ptrs, mask []int64, fn func(j, n int) error) error {
	for j := 0; j < len(ptrs); {
		if mask != nil && mask[j] == 0 {
			j++
			continue
		}
		n := 1
		for j+n < len(ptrs) && (mask == nil || mask[j+n] != 0) && ptrs[j+n] == ptrs[j+n-1]+1 {
			n++
		}
		if err := fn(j, n); err != nil {
			return err
		}
		j += n
	}
	return nil
}

// maskState classifies a row of a mask: all lanes on, all off, or mixed.
func maskState(m []int64) int {
	on := 0
	for _, v := range m {
		if v != 0 {
			on++
		}
	}
	switch on {
	case len(m):
		return maskAllOn
	case 0:
		return maskAllOff
	}
	return maskMixed
}

const (
	maskAllOn = iota
	maskAllOff
	maskMixed
)

func (c *compiler) compileLoad(in *ir.Instr, args []int, z int) (step, error) {
	tp, tz := c.p.slotType[args[0]], c.p.slotType[z]
	mask, other := -1, -1
	if len(args) == 3 {
		mask, other = args[1], args[2]
	}
	p := args[0]
	rowLen := 1
	if tp.Rank() > 0 {
		rowLen = tp.Shape[tp.Rank()-1]
	}
	cls := c.p.slotClass[z]
	d := tz.Elem
	tracked, full := c.tracksExtent(in), extent{tp.NumElems() / rowLen, rowLen}
	return func(fr *frame) error {
		if tracked {
			fr.ext[z], fr.partial[z] = full, false // the whole tile is written
		}
		ptrs := fr.ints[p]
		for r := 0; r < len(ptrs); r += rowLen {
			row := ptrs[r : r+rowLen]
			state := maskAllOn
			if mask >= 0 {
				state = maskState(fr.ints[mask][r : r+rowLen])
			}
			if state == maskAllOff {
				fr.copyRange(cls, z, other, r, rowLen)
				continue
			}
			if state == maskAllOn && contiguous(row) {
				b, off, err := fr.resolve(in.Pos, "load", row[0], rowLen)
				if err != nil {
					return err
				}
				fr.loadRow(cls, d, b, off, z, r, rowLen)
				continue
			}
			var mrow []int64
			if mask >= 0 {
				mrow = fr.ints[mask][r : r+rowLen]
				for j, on := range mrow {
					if on == 0 {
						fr.copyRange(cls, z, other, r+j, 1)
					}
				}
			}
			err := forRuns(row, mrow, func(j, n int) error {
				b, off, err := fr.resolve(in.Pos, "load", row[j], n)
				if err == nil {
					fr.loadRow(cls, d, b, off, z, r+j, n)
				}
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	}, nil
}

func (fr *frame) copyRange(cls class, dst, src, at, n int) {
	switch cls {
	case clsInt:
		copy(fr.ints[dst][at:at+n], fr.ints[src][at:at+n])
	case clsF32:
		copy(fr.f32[dst][at:at+n], fr.f32[src][at:at+n])
	default:
		copy(fr.f64[dst][at:at+n], fr.f64[src][at:at+n])
	}
}

// loadRow reads n consecutive elements of b from off into slot z at at.
func (fr *frame) loadRow(cls class, d ir.DType, b *Buffer, off, z, at, n int) {
	switch cls {
	case clsF32:
		dst := fr.f32[z][at : at+n]
		switch d {
		case ir.F32:
			copy(dst, b.f32()[off:off+n])
		case ir.F16:
			for j, h := range b.u16()[off : off+n] {
				dst[j] = half.F16ToF32(h)
			}
		default:
			for j, h := range b.u16()[off : off+n] {
				dst[j] = half.BF16ToF32(h)
			}
		}
	case clsF64:
		copy(fr.f64[z][at:at+n], b.f64()[off:off+n])
	default:
		dst := fr.ints[z][at : at+n]
		for j := range dst {
			dst[j] = b.getInt(d, off+j)
		}
	}
}

// getInt reads element i of an integer buffer, extended by d's signedness.
func (b *Buffer) getInt(d ir.DType, i int) int64 {
	switch d.Size() {
	case 1:
		v := b.data[i]
		switch d {
		case ir.I1:
			return b2i(v != 0)
		case ir.I8:
			return int64(int8(v))
		}
		return int64(v)
	case 2:
		v := b.u16()[i]
		if d == ir.I16 {
			return int64(int16(v))
		}
		return int64(v)
	case 4:
		v := b.u32()[i]
		if d == ir.I32 {
			return int64(int32(v))
		}
		return int64(v)
	}
	return int64(b.u64()[i])
}

func (b *Buffer) setInt(d ir.DType, i int, v int64) {
	switch d.Size() {
	case 1:
		if d == ir.I1 {
			v = b2i(v != 0)
		}
		b.data[i] = byte(v)
	case 2:
		b.u16()[i] = uint16(v)
	case 4:
		b.u32()[i] = uint32(v)
	default:
		b.u64()[i] = uint64(v)
	}
}

// storeRow writes n elements of slot v from at into b at off, rounding fp16/bf16 to nearest even.
// Streaming stores pay off only for outputs far larger than the caches (the lines would be
// evicted before anyone reads them again), written in long runs (storeF32 on amd64).
const (
	streamMinBufferBytes = 64 << 20
	streamMinRow         = 4096
)

func (fr *frame) storeRow(cls class, d ir.DType, b *Buffer, off, v, at, n int) {
	switch cls {
	case clsF32:
		src := fr.f32[v][at : at+n]
		switch d {
		case ir.F32:
			storeF32(b.f32()[off:off+n], src, len(b.data))
		case ir.F16:
			dst := b.u16()[off : off+n]
			for j, x := range src {
				dst[j] = half.F32ToF16(x)
			}
		default:
			dst := b.u16()[off : off+n]
			for j, x := range src {
				dst[j] = half.F32ToBF16(x)
			}
		}
	case clsF64:
		copy(b.f64()[off:off+n], fr.f64[v][at:at+n])
	default:
		for j, x := range fr.ints[v][at : at+n] {
			b.setInt(d, off+j, x)
		}
	}
}

func (c *compiler) compileStore(in *ir.Instr, args []int) (step, error) {
	p, v := args[0], args[1]
	tp, tv := c.p.slotType[p], c.p.slotType[v]
	mask := -1
	if len(args) == 3 {
		mask = args[2]
	}
	rowLen := 1
	if tp.Rank() > 0 {
		rowLen = tp.Shape[tp.Rank()-1]
	}
	cls := c.p.slotClass[v]
	d := tv.Elem
	return func(fr *frame) error {
		ptrs := fr.ints[p]
		for r := 0; r < len(ptrs); r += rowLen {
			row := ptrs[r : r+rowLen]
			state := maskAllOn
			if mask >= 0 {
				state = maskState(fr.ints[mask][r : r+rowLen])
			}
			if state == maskAllOff {
				continue
			}
			if state == maskAllOn && contiguous(row) {
				b, off, err := fr.resolve(in.Pos, "store", row[0], rowLen)
				if err != nil {
					return err
				}
				fr.storeRow(cls, d, b, off, v, r, rowLen)
				continue
			}
			var mrow []int64
			if mask >= 0 {
				mrow = fr.ints[mask][r : r+rowLen]
			}
			err := forRuns(row, mrow, func(j, n int) error {
				b, off, err := fr.resolve(in.Pos, "store", row[j], n)
				if err == nil {
					fr.storeRow(cls, d, b, off, v, r+j, n)
				}
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	}, nil
}

func (c *compiler) compileAtomic(in *ir.Instr, args []int, z int) (step, error) {
	p, v := args[0], args[1]
	tz := c.p.slotType[z]
	var mask, cmp int = -1, -1
	if in.Op == ir.AtomicRMW {
		mask = args[2]
	} else {
		cmp, v = args[1], args[2]
	}
	d := tz.Elem
	kind := in.Int
	isFloat := d.IsFloat()
	cls := c.p.slotClass[z]
	return func(fr *frame) error {
		ptrs := fr.ints[p]
		for i, ptr := range ptrs {
			if mask >= 0 && fr.ints[mask][i] == 0 {
				fr.setZero(cls, z, i)
				continue
			}
			b, off, err := fr.resolve(in.Pos, "atomic", ptr, 1)
			if err != nil {
				return err
			}
			b.atomicMu.Lock()
			if isFloat {
				old := b.getFloat(d, off)
				val := fr.getFloat(cls, v, i)
				var nv float64
				store := true
				switch {
				case cmp >= 0:
					store = old == fr.getFloat(cls, cmp, i)
					nv = val
				case kind == ir.AtomicAdd:
					nv = old + val
				case kind == ir.AtomicMax:
					nv = maxNum64(old, val)
				case kind == ir.AtomicMin:
					nv = minNum64(old, val)
				default: // xchg
					nv = val
				}
				if store {
					b.setFloat(d, off, nv)
				}
				b.atomicMu.Unlock()
				fr.setFloat(cls, z, i, old)
				continue
			}
			old := b.getInt(d, off)
			val := fr.ints[v][i]
			nv, store := val, true
			switch {
			case cmp >= 0:
				store = old == fr.ints[cmp][i]
			case kind == ir.AtomicAdd:
				nv = old + val
			case kind == ir.AtomicMax:
				if lessInt(d, val, old) {
					nv = old
				}
			case kind == ir.AtomicMin:
				if lessInt(d, old, val) {
					nv = old
				}
			case kind == ir.AtomicAnd:
				nv = old & val
			case kind == ir.AtomicOr:
				nv = old | val
			case kind == ir.AtomicXor:
				nv = old ^ val
			}
			if store {
				b.setInt(d, off, nv)
			}
			b.atomicMu.Unlock()
			fr.ints[z][i] = old
		}
		return nil
	}, nil
}

func (fr *frame) setZero(cls class, z, i int) {
	switch cls {
	case clsInt:
		fr.ints[z][i] = 0
	case clsF32:
		fr.f32[z][i] = 0
	default:
		fr.f64[z][i] = 0
	}
}

func (fr *frame) getFloat(cls class, s, i int) float64 {
	if cls == clsF64 {
		return fr.f64[s][i]
	}
	return float64(fr.f32[s][i])
}

func (fr *frame) setFloat(cls class, s, i int, v float64) {
	if cls == clsF64 {
		fr.f64[s][i] = v
		return
	}
	fr.f32[s][i] = float32(v)
}

func (b *Buffer) getFloat(d ir.DType, i int) float64 {
	switch d {
	case ir.F16:
		return float64(half.F16ToF32(b.u16()[i]))
	case ir.BF16:
		return float64(half.BF16ToF32(b.u16()[i]))
	case ir.F32:
		return float64(b.f32()[i])
	}
	return b.f64()[i]
}

// setFloat stores v rounded once to d (fp16/bf16 through fp32: values here are sums of
// representable values, where the double rounding cannot matter for fp16 atomics' purpose).
func (b *Buffer) setFloat(d ir.DType, i int, v float64) {
	switch d {
	case ir.F16:
		b.u16()[i] = half.F32ToF16(float32(v))
	case ir.BF16:
		b.u16()[i] = half.F32ToBF16(float32(v))
	case ir.F32:
		b.f32()[i] = float32(v)
	default:
		b.f64()[i] = v
	}
}
