package ir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// EncodingFormat is the number written first in every encoded function. It changes whenever
// the layout below changes; Decode rejects any other number, so a stale cached artifact is
// recompiled rather than misread.
const EncodingFormat = 1

// encodingMagic opens every encoding so that unrelated bytes are rejected at once.
var encodingMagic = [4]byte{'W', 'J', 'I', 'R'}

// Limits that Decode enforces so that garbage cannot make it allocate without bound.
const (
	maxEncodedRank  = 8
	maxEncodedElems = 1 << 24
	maxEncodedDepth = MaxRegionDepth
)

// MaxRegionDepth bounds how deeply blocks nest in a function (its body counts as one): the
// decoder and the backends recurse per level. The specializer refuses deeper kernels at the
// source line that goes past it.
const MaxRegionDepth = 64

// Encode writes f in a compact binary form: the magic "WJIR", the format number, then the
// function (name, file, constexprs, parameters, body), with every value defined by its ID,
// type and name before it is used, and every instruction's position kept.
func Encode(f *Func) []byte {
	e := &encoder{}
	e.buf = append(e.buf, encodingMagic[:]...)
	e.uvarint(EncodingFormat)
	e.str(f.Name)
	e.str(f.File)
	e.uvarint(uint64(len(f.Consts)))
	for _, c := range f.Consts {
		e.str(c.Name)
		e.str(c.Value)
	}
	e.uvarint(uint64(len(f.Params)))
	for _, p := range f.Params {
		e.value(p)
	}
	body := f.Body
	if body == nil {
		body = &Block{}
	}
	e.block(body, f.File)
	return e.buf
}

type encoder struct{ buf []byte }

func (e *encoder) uvarint(x uint64) { e.buf = binary.AppendUvarint(e.buf, x) }
func (e *encoder) varint(x int64)   { e.buf = binary.AppendVarint(e.buf, x) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.buf = append(e.buf, s...) }

func (e *encoder) value(v *Value) {
	e.uvarint(uint64(v.ID))
	e.buf = append(e.buf, byte(v.Type.Elem))
	if v.Type.Ptr {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
	e.uvarint(uint64(len(v.Type.Shape)))
	for _, d := range v.Type.Shape {
		e.uvarint(uint64(d))
	}
	e.str(v.Name)
}

func (e *encoder) block(b *Block, file string) {
	e.uvarint(uint64(len(b.Args)))
	for _, a := range b.Args {
		e.value(a)
	}
	e.uvarint(uint64(len(b.Instrs)))
	for _, in := range b.Instrs {
		e.buf = append(e.buf, byte(in.Op))
		e.uvarint(uint64(len(in.Args)))
		for _, a := range in.Args {
			if a == nil {
				e.uvarint(0)
				continue
			}
			e.uvarint(uint64(a.ID))
		}
		e.uvarint(uint64(len(in.Results)))
		for _, r := range in.Results {
			e.value(r)
		}
		e.varint(in.Int)
		e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(in.Float))
		e.uvarint(uint64(len(in.Ints)))
		for _, x := range in.Ints {
			e.varint(int64(x))
		}
		e.str(in.Str)
		// Positions name the function's file almost always: a flag avoids repeating it.
		if in.Pos.File == file {
			e.buf = append(e.buf, 0)
		} else {
			e.buf = append(e.buf, 1)
			e.str(in.Pos.File)
		}
		e.uvarint(uint64(max(in.Pos.Line, 0)))
		e.uvarint(uint64(max(in.Pos.Col, 0)))
		e.uvarint(uint64(len(in.Regions)))
		for _, r := range in.Regions {
			e.block(r, file)
		}
	}
}

// Decode reads what Encode wrote. Bytes that are not such an encoding (another format
// number, truncation, a value used before it is defined, impossible types or counts) give an
// error, never a panic.
func Decode(data []byte) (*Func, error) {
	d := &decoder{data: data, values: map[int]*Value{}}
	f, err := d.function()
	if err != nil {
		return nil, fmt.Errorf("decode IR: at byte %d: %w", d.pos, err)
	}
	return f, nil
}

type decoder struct {
	data   []byte
	pos    int
	values map[int]*Value
	maxID  int
	depth  int
}

var errTruncated = errors.New("truncated")

func (d *decoder) function() (*Func, error) {
	if len(d.data) < len(encodingMagic) || [4]byte(d.data[:4]) != encodingMagic {
		return nil, errors.New("not an encoded widejit IR function (bad magic)")
	}
	d.pos = 4
	format, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if format != EncodingFormat {
		return nil, fmt.Errorf("IR encoding format %d, this build reads format %d", format, EncodingFormat)
	}
	f := &Func{}
	if f.Name, err = d.str(); err != nil {
		return nil, err
	}
	if f.File, err = d.str(); err != nil {
		return nil, err
	}
	n, err := d.count()
	if err != nil {
		return nil, err
	}
	for range n {
		var c ConstBinding
		if c.Name, err = d.str(); err != nil {
			return nil, err
		}
		if c.Value, err = d.str(); err != nil {
			return nil, err
		}
		f.Consts = append(f.Consts, c)
	}
	if n, err = d.count(); err != nil {
		return nil, err
	}
	for range n {
		p, err := d.value(nil)
		if err != nil {
			return nil, err
		}
		f.Params = append(f.Params, p)
	}
	if f.Body, err = d.block(f.File); err != nil {
		return nil, err
	}
	if d.pos != len(d.data) {
		return nil, fmt.Errorf("%d trailing bytes", len(d.data)-d.pos)
	}
	f.nextID = d.maxID
	return f, nil
}

func (d *decoder) uvarint() (uint64, error) {
	x, n := binary.Uvarint(d.data[d.pos:])
	return x, d.advance(n)
}

func (d *decoder) varint() (int64, error) {
	x, n := binary.Varint(d.data[d.pos:])
	return x, d.advance(n)
}

// advance moves past a varint of n bytes, as encoding/binary reports it: 0 means the input
// ended, a negative n an overflow of 64 bits.
func (d *decoder) advance(n int) error {
	switch {
	case n == 0:
		return errTruncated
	case n < 0:
		return errors.New("varint overflows 64 bits")
	}
	d.pos += n
	return nil
}

// count reads a length; every counted item takes at least one byte, so a count larger than
// the bytes left is garbage (this bounds every allocation by the input size).
func (d *decoder) count() (int, error) {
	x, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if x > uint64(len(d.data)-d.pos) {
		return 0, fmt.Errorf("count %d exceeds the %d bytes left", x, len(d.data)-d.pos)
	}
	return int(x), nil
}

func (d *decoder) byte() (byte, error) {
	if d.pos >= len(d.data) {
		return 0, errTruncated
	}
	b := d.data[d.pos]
	d.pos++
	return b, nil
}

func (d *decoder) str() (string, error) {
	n, err := d.count()
	if err != nil {
		return "", err
	}
	s := string(d.data[d.pos : d.pos+n])
	d.pos += n
	return s, nil
}

func (d *decoder) value(def *Instr) (*Value, error) {
	id, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if id == 0 || id > math.MaxInt32 {
		return nil, fmt.Errorf("value ID %d out of range", id)
	}
	if _, dup := d.values[int(id)]; dup {
		return nil, fmt.Errorf("value %%%d defined twice", id)
	}
	elem, err := d.byte()
	if err != nil {
		return nil, err
	}
	if elem == byte(Invalid) || int(elem) >= len(dtypeNames) {
		return nil, fmt.Errorf("value %%%d: bad dtype %d", id, elem)
	}
	ptr, err := d.byte()
	if err != nil {
		return nil, err
	}
	if ptr > 1 {
		return nil, fmt.Errorf("value %%%d: bad pointer flag %d", id, ptr)
	}
	rank, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if rank > maxEncodedRank {
		return nil, fmt.Errorf("value %%%d: rank %d exceeds %d", id, rank, maxEncodedRank)
	}
	t := Type{Elem: DType(elem), Ptr: ptr == 1}
	elems := uint64(1)
	for range rank {
		dim, err := d.uvarint()
		if err != nil {
			return nil, err
		}
		elems *= max(dim, 1)
		if dim == 0 || elems > maxEncodedElems {
			return nil, fmt.Errorf("value %%%d: shape dimension %d out of range (tiles hold 1..%d elements)", id, dim, maxEncodedElems)
		}
		t.Shape = append(t.Shape, int(dim))
	}
	name, err := d.str()
	if err != nil {
		return nil, err
	}
	v := &Value{ID: int(id), Type: t, Def: def, Name: name}
	d.values[v.ID] = v
	d.maxID = max(d.maxID, v.ID)
	return v, nil
}

func (d *decoder) block(file string) (*Block, error) {
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > maxEncodedDepth {
		return nil, fmt.Errorf("regions nested deeper than %d", maxEncodedDepth)
	}
	b := &Block{}
	n, err := d.count()
	if err != nil {
		return nil, err
	}
	for range n {
		a, err := d.value(nil)
		if err != nil {
			return nil, err
		}
		b.Args = append(b.Args, a)
	}
	if n, err = d.count(); err != nil {
		return nil, err
	}
	for range n {
		in, err := d.instr(file)
		if err != nil {
			return nil, err
		}
		b.Instrs = append(b.Instrs, in)
	}
	return b, nil
}

func (d *decoder) instr(file string) (*Instr, error) {
	op, err := d.byte()
	if err != nil {
		return nil, err
	}
	if op == byte(OpInvalid) || Op(op) >= numOps {
		return nil, fmt.Errorf("bad op code %d", op)
	}
	in := &Instr{Op: Op(op)}
	n, err := d.count()
	if err != nil {
		return nil, err
	}
	for range n {
		id, err := d.uvarint()
		if err != nil {
			return nil, err
		}
		v, ok := d.values[int(min(id, math.MaxInt32))]
		if !ok {
			return nil, fmt.Errorf("%s uses value %%%d before it is defined", in.Op, id)
		}
		in.Args = append(in.Args, v)
	}
	if n, err = d.count(); err != nil {
		return nil, err
	}
	for range n {
		r, err := d.value(in)
		if err != nil {
			return nil, err
		}
		in.Results = append(in.Results, r)
	}
	if in.Int, err = d.varint(); err != nil {
		return nil, err
	}
	if d.pos+8 > len(d.data) {
		return nil, errTruncated
	}
	in.Float = math.Float64frombits(binary.LittleEndian.Uint64(d.data[d.pos:]))
	d.pos += 8
	if n, err = d.count(); err != nil {
		return nil, err
	}
	for range n {
		x, err := d.varint()
		if err != nil {
			return nil, err
		}
		if x < math.MinInt32 || x > math.MaxInt32 {
			return nil, fmt.Errorf("%s: integer attribute %d out of range", in.Op, x)
		}
		in.Ints = append(in.Ints, int(x))
	}
	if in.Str, err = d.str(); err != nil {
		return nil, err
	}
	flag, err := d.byte()
	if err != nil {
		return nil, err
	}
	switch flag {
	case 0:
		in.Pos.File = file
	case 1:
		if in.Pos.File, err = d.str(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("bad position flag %d", flag)
	}
	line, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	col, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if line > math.MaxInt32 || col > math.MaxInt32 {
		return nil, errors.New("position out of range")
	}
	in.Pos.Line, in.Pos.Col = int(line), int(col)
	if n, err = d.count(); err != nil {
		return nil, err
	}
	for range n {
		r, err := d.block(file)
		if err != nil {
			return nil, err
		}
		in.Regions = append(in.Regions, r)
	}
	return in, nil
}
