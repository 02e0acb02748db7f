package cpu

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

// builder writes IR by hand; every emitted instruction gets the next line number of k.py,
// so tests can assert the line an error names.
type builder struct {
	f    *ir.Func
	b    *ir.Block
	line int
}

func newBuilder(name string) *builder {
	f := &ir.Func{Name: name, File: "k.py", Body: &ir.Block{}}
	return &builder{f: f, b: f.Body, line: 1}
}

func (x *builder) param(name string, t ir.Type) *ir.Value { return x.f.NewParam(name, t) }

func (x *builder) emit(op ir.Op, res []ir.Type, args ...*ir.Value) *ir.Instr {
	x.line++
	return x.f.Emit(x.b, op, ir.Pos{File: "k.py", Line: x.line, Col: 5}, res, args...)
}

func (x *builder) op(op ir.Op, t ir.Type, args ...*ir.Value) *ir.Value {
	return x.emit(op, []ir.Type{t}, args...).Result()
}

func (x *builder) ci(t ir.Type, v int64) *ir.Value {
	in := x.emit(ir.Const, []ir.Type{t})
	in.Int = v
	return in.Result()
}

func (x *builder) cf(t ir.Type, v float64) *ir.Value {
	in := x.emit(ir.Const, []ir.Type{t})
	in.Float = v
	return in.Result()
}

func (x *builder) pid(axis int64) *ir.Value {
	in := x.emit(ir.ProgramID, []ir.Type{ir.Scalar(ir.I32)})
	in.Int = axis
	return in.Result()
}

func (x *builder) arange(start, end int) *ir.Value {
	in := x.emit(ir.Arange, []ir.Type{ir.Tile(ir.I32, end-start)})
	in.Ints = []int{start, end}
	return in.Result()
}

func (x *builder) splat(v *ir.Value, shape ...int) *ir.Value {
	return x.op(ir.Splat, v.Type.WithShape(shape), v)
}

func (x *builder) cmp(pred int64, a, b *ir.Value) *ir.Value {
	in := x.emit(ir.Cmp, []ir.Type{{Elem: ir.I1, Shape: a.Type.Shape}}, a, b)
	in.Int = pred
	return in.Result()
}

func (x *builder) cast(v *ir.Value, t ir.Type) *ir.Value { return x.op(ir.Cast, t, v) }

func (x *builder) load(p *ir.Value, maskOther ...*ir.Value) *ir.Value {
	t := p.Type
	t.Ptr = false
	return x.op(ir.Load, t, append([]*ir.Value{p}, maskOther...)...)
}

func (x *builder) store(p, v *ir.Value, mask ...*ir.Value) {
	x.emit(ir.Store, nil, append([]*ir.Value{p, v}, mask...)...)
}

// region runs fill with the builder pointed at a fresh block with args of the given types.
func (x *builder) region(fill func(args []*ir.Value), types ...ir.Type) *ir.Block {
	blk := x.f.NewBlock(types...)
	saved := x.b
	x.b = blk
	fill(blk.Args)
	x.b = saved
	return blk
}

func (x *builder) yield(vs ...*ir.Value) { x.emit(ir.Yield, nil, vs...) }

// run loads f (through Encode/Decode, as the compiler would) and launches it.
func run(t *testing.T, f *ir.Func, grid [3]int, args ...jit.Arg) error {
	t.Helper()
	return runOn(t, NewDevice(4), f, grid, args...)
}

func runOn(t *testing.T, d *Device, f *ir.Func, grid [3]int, args ...jit.Arg) error {
	t.Helper()
	a, err := Target{}.Codegen(f, jit.Spec{})
	if err != nil {
		t.Fatalf("codegen: %v\n%s", err, f)
	}
	k, err := d.Load(a)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return k.Launch(grid, args)
}

func mustRun(t *testing.T, f *ir.Func, grid [3]int, args ...jit.Arg) {
	t.Helper()
	if err := run(t, f, grid, args...); err != nil {
		t.Fatalf("launch: %v\n%s", err, f)
	}
}

func f32Buf(t *testing.T, v []float32) *Buffer {
	b, err := NewBuffer(ir.F32, len(v))
	if err != nil {
		t.Fatal(err)
	}
	copy(b.f32(), v)
	return b
}

func intBuf(t *testing.T, d ir.DType, v []int64) *Buffer {
	b, err := NewBuffer(d, len(v))
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range v {
		b.setInt(d, i, x)
	}
	return b
}

func ints(b *Buffer) []int64 {
	out := make([]int64, b.n)
	for i := range out {
		out[i] = b.getInt(b.dt, i)
	}
	return out
}

func buf(b *Buffer) jit.Arg        { return jit.Arg{Buf: b} }
func scalar(v any) jit.Arg         { return jit.Arg{Scalar: v} }
func grid1(n int) [3]int           { return [3]int{n, 1, 1} }
func bitsEq(a, b float32) bool     { return math.Float32bits(a) == math.Float32bits(b) }
func le32(b []byte, i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])) }

// eachMicroKernel runs f under every micro-kernel set: AVX-512 with 12-row tiles (AMD's) and
// with 8-row ones (Intel's), and AVX2/FMA; on a CPU without AVX-512 the first two are AVX2's.
func eachMicroKernel(f func()) {
	defer func(tall bool) { tallRows = tall; selectMicroKernel(true) }(tallRows)
	for _, c := range []struct{ avx512, tall bool }{{true, true}, {true, false}, {false, false}} {
		tallRows = c.tall
		selectMicroKernel(c.avx512)
		f()
	}
}
