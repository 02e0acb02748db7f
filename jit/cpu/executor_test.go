package cpu

import (
	"bytes"
	"github.com/widejit/widejit/internal/half"
	"math"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

var (
	i32   = ir.Scalar(ir.I32)
	ptr32 = ir.PtrTo(ir.F32)
)

func tileOf(d ir.DType, shape ...int) ir.Type { return ir.Tile(d, shape...) }
func ptrTile(d ir.DType, shape ...int) ir.Type {
	return ir.Type{Elem: d, Ptr: true, Shape: shape}
}

// vecAdd is Triton's tutorial vector add: out[i] = x[i] + y[i] for i < n, BLOCK per program.
// With masked false the store is unmasked (to provoke out-of-bounds errors).
func vecAdd(block int, masked bool) *ir.Func {
	x := newBuilder("add_kernel")
	xp, yp, op := x.param("x_ptr", ptr32), x.param("y_ptr", ptr32), x.param("out_ptr", ptr32)
	n := x.param("n_elements", i32)
	start := x.op(ir.Mul, i32, x.pid(0), x.ci(i32, int64(block)))
	offs := x.op(ir.Add, tileOf(ir.I32, block), x.splat(start, block), x.arange(0, block))
	mask := x.cmp(ir.CmpLT, offs, x.splat(n, block))
	pt := ptrTile(ir.F32, block)
	px := x.op(ir.PtrAdd, pt, x.splat(xp, block), offs)
	py := x.op(ir.PtrAdd, pt, x.splat(yp, block), offs)
	po := x.op(ir.PtrAdd, pt, x.splat(op, block), offs)
	zero := x.cf(tileOf(ir.F32, block), 0)
	a := x.load(px, mask, zero)
	b := x.load(py, mask, zero)
	s := x.op(ir.Add, tileOf(ir.F32, block), a, b)
	if masked {
		x.store(po, s, mask)
	} else {
		x.store(po, s)
	}
	return x.f
}

func TestVectorAddTailMaskAndSentinels(t *testing.T) {
	const n, block = 1000, 128
	grid := (n + block - 1) / block
	xs, ys := make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], ys[i] = float32(i)*0.5, float32(3*i)-7
	}
	// out is longer than n and filled with a sentinel: lanes past n are masked and must stay.
	outv := make([]float32, grid*block+5)
	for i := range outv {
		outv[i] = -12345
	}
	out := f32Buf(t, outv)
	mustRun(t, vecAdd(block, true), grid1(grid), buf(f32Buf(t, xs)), buf(f32Buf(t, ys)), buf(out), scalar(int64(n)))
	got := out.f32()
	for i := range got {
		want := float32(-12345)
		if i < n {
			want = xs[i] + ys[i]
		}
		if !bitsEq(got[i], want) {
			t.Fatalf("out[%d] = %v, want %v", i, got[i], want)
		}
	}
}

func TestOutOfBoundsStoreNamesKernelLineProgramAndOffset(t *testing.T) {
	const n, block = 1000, 128
	f := vecAdd(block, false)
	xs := make([]float32, 8*block) // inputs large enough: only the store overflows
	out := f32Buf(t, make([]float32, n))
	err := run(t, f, grid1(8), buf(f32Buf(t, xs)), buf(f32Buf(t, xs)), buf(out), scalar(int64(n)))
	if err == nil {
		t.Fatal("out-of-bounds store was not reported")
	}
	storeLine := f.Body.Instrs[len(f.Body.Instrs)-1].Pos.Line
	for _, want := range []string{"kernel add_kernel", "k.py:" + itoa(storeLine) + ":", "program (7, 0, 0)", "store out of bounds", "element offset 1000", "out_ptr", "holds 1000 elements"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// The in-bounds programs before the failing one may have run; nothing past n was written.
	if len(out.f32()) != n {
		t.Fatal("buffer changed size")
	}
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(i)) }
func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

func TestArgOffsetAndNegativeOffsetBounds(t *testing.T) {
	// out = x + y on a window of a larger buffer: Arg.Offset shifts the base, and the bound
	// is the buffer's end, not the window's.
	const block = 16
	big := f32Buf(t, make([]float32, 40))
	for i := range big.f32() {
		big.f32()[i] = float32(i)
	}
	out := f32Buf(t, make([]float32, 16))
	mustRun(t, vecAdd(block, true), grid1(1), jit.Arg{Buf: big, Offset: 10}, jit.Arg{Buf: big, Offset: 20}, buf(out), scalar(int64(16)))
	for i, v := range out.f32() {
		if want := float32(10+i) + float32(20+i); v != want {
			t.Fatalf("out[%d] = %v, want %v", i, v, want)
		}
	}
	// Offset 30 + 16 lanes reaches element 45 of a 40-element buffer.
	err := run(t, vecAdd(block, true), grid1(1), jit.Arg{Buf: big, Offset: 30}, jit.Arg{Buf: big}, buf(out), scalar(int64(16)))
	if err == nil || !strings.Contains(err.Error(), "load out of bounds") || !strings.Contains(err.Error(), "element offset 40") {
		t.Fatalf("err = %v, want a load out of bounds at element offset 40", err)
	}
	// A negative offset (pointer moved before the buffer) is reported as negative.
	x := newBuilder("neg")
	p := x.param("p", ptr32)
	q := x.op(ir.PtrAdd, ptr32, p, x.ci(i32, -3))
	x.store(q, x.cf(ir.Scalar(ir.F32), 1))
	err = run(t, x.f, grid1(1), buf(out))
	if err == nil || !strings.Contains(err.Error(), "element offset -3") {
		t.Fatalf("err = %v, want element offset -3", err)
	}
}

func TestMaskedLanesAreNeverTouched(t *testing.T) {
	// Pointers of masked lanes point far outside the buffer: no error, other is returned,
	// and the masked store leaves the sentinel in place.
	x := newBuilder("masked")
	p := x.param("p", ptr32)
	offs := x.op(ir.Mul, tileOf(ir.I32, 8), x.arange(0, 8), x.ci(tileOf(ir.I32, 8), 1000))
	ptrs := x.op(ir.PtrAdd, ptrTile(ir.F32, 8), x.splat(p, 8), offs)
	mask := x.cmp(ir.CmpEQ, offs, x.ci(tileOf(ir.I32, 8), 0))
	v := x.load(ptrs, mask, x.cf(tileOf(ir.F32, 8), 42))
	s := x.emit(ir.Reduce, []ir.Type{ir.Scalar(ir.F32)}, v)
	s.Ints = []int{ir.ReduceSum, 0}
	x.store(ptrs, x.op(ir.Add, tileOf(ir.F32, 8), v, x.splat(s.Result(), 8)), mask)
	b := f32Buf(t, []float32{1, -1, -1})
	mustRun(t, x.f, grid1(1), buf(b))
	// v = [1, 42 x 7], sum = 295, stored only to lane 0: 1 + 295.
	if got := b.f32(); got[0] != 296 || got[1] != -1 || got[2] != -1 {
		t.Fatalf("buffer = %v, want [296 -1 -1]", got)
	}
}

func TestHalfPrecisionRounding(t *testing.T) {
	// fp32 values stored to fp16 and bf16 buffers through a cast; expected bits by hand.
	in := []float32{
		1 + 1.0/2048,                // fp16: tie between 1 and 1+2^-10: even -> 1
		1 + 3.0/2048,                // fp16: tie between 1+2^-10 and 1+2^-9: even -> 1+2^-9
		65520,                       // fp16: tie between 65504 and 2^16 (inf): even -> inf
		float32(math.Ldexp(1, -25)), // fp16: half the smallest subnormal: even -> 0
		float32(math.Ldexp(3, -26)), // fp16: above half: smallest subnormal 2^-24
		-2.5,                        // exact
		float32(math.NaN()),         // stays NaN
		1 + 1.0/256,                 // bf16: tie between 1 and 1+2^-7: even -> 1
	}
	want16 := []uint16{0x3c00, 0x3c02, 0x7c00, 0x0000, 0x0001, 0xc100}
	x := newBuilder("half")
	src := x.param("src", ptr32)
	h := x.param("h", ir.PtrTo(ir.F16))
	bh := x.param("b", ir.PtrTo(ir.BF16))
	n := len(in)
	offs := x.arange(0, 8)
	v := x.load(x.op(ir.PtrAdd, ptrTile(ir.F32, n), x.splat(src, n), offs))
	x.store(x.op(ir.PtrAdd, ptrTile(ir.F16, n), x.splat(h, n), offs), x.cast(v, tileOf(ir.F16, n)))
	x.store(x.op(ir.PtrAdd, ptrTile(ir.BF16, n), x.splat(bh, n), offs), x.cast(v, tileOf(ir.BF16, n)))
	hb, _ := NewBuffer(ir.F16, n)
	bb, _ := NewBuffer(ir.BF16, n)
	mustRun(t, x.f, grid1(1), buf(f32Buf(t, in)), buf(hb), buf(bb))
	for i, w := range want16 {
		if g := hb.u16()[i]; g != w {
			t.Errorf("fp16(%v) = %#04x, want %#04x", in[i], g, w)
		}
	}
	if g := hb.u16()[6]; g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
		t.Errorf("fp16(NaN) = %#04x, not a NaN", g)
	}
	if g := bb.u16()[7]; g != 0x3f80 {
		t.Errorf("bf16(1+2^-8) = %#04x, want 0x3f80", g)
	}
	if g := bb.u16()[1]; g != 0x3f80 {
		t.Errorf("bf16(1+3*2^-11) = %#04x, want 0x3f80", g)
	}
	if g := bb.u16()[5]; g != 0xc020 {
		t.Errorf("bf16(-2.5) = %#04x, want 0xc020", g)
	}
	// fp16 arithmetic rounds each result: 2048 + 1 in fp16 is 2048 (spacing 2 there, tie to even).
	y := newBuilder("half_add")
	hp := y.param("h", ir.PtrTo(ir.F16))
	a := y.load(hp)
	s := y.op(ir.Add, ir.Scalar(ir.F16), a, y.cf(ir.Scalar(ir.F16), 1))
	y.store(hp, s)
	hb2, _ := NewBuffer(ir.F16, 1)
	hb2.u16()[0] = 0x6800 // 2048
	mustRun(t, y.f, grid1(1), buf(hb2))
	if g := hb2.u16()[0]; g != 0x6800 {
		t.Errorf("fp16 2048+1 = %#04x, want 0x6800", g)
	}
}

func TestHalfConversionsExhaustive(t *testing.T) {
	// Every finite fp16 value widens and narrows back to itself; the midpoint between two
	// neighbours rounds to the even one.
	for h := 0; h < 0x10000; h++ {
		u := uint16(h)
		if u&0x7c00 == 0x7c00 {
			continue
		}
		if back := half.F32ToF16(half.F16ToF32(u)); back != u {
			t.Fatalf("fp16 %#04x -> %v -> %#04x", u, half.F16ToF32(u), back)
		}
		if u&0x7fff < 0x7bff {
			lo, hi := half.F16ToF32(u), half.F16ToF32(u+1)
			mid := float32((float64(lo) + float64(hi)) / 2)
			want := u
			if u&1 == 1 {
				want = u + 1
			}
			if g := half.F32ToF16(mid); g != want && !(lo == 0 && hi == 0) {
				t.Fatalf("fp16 midpoint of %#04x and %#04x -> %#04x, want %#04x", u, u+1, g, want)
			}
		}
	}
}

// elementwise runs one binary op over two int tiles of dtype d and returns the result.
func intBinary(t *testing.T, op ir.Op, d ir.DType, a, b []int64) ([]int64, error) {
	n := len(a)
	x := newBuilder("int_" + op.String())
	pa, pb, pz := x.param("a", ir.PtrTo(d)), x.param("b", ir.PtrTo(d)), x.param("z", ir.PtrTo(d))
	offs := x.arange(0, n)
	la := x.load(x.op(ir.PtrAdd, ptrTile(d, n), x.splat(pa, n), offs))
	lb := x.load(x.op(ir.PtrAdd, ptrTile(d, n), x.splat(pb, n), offs))
	x.store(x.op(ir.PtrAdd, ptrTile(d, n), x.splat(pz, n), offs), x.op(op, tileOf(d, n), la, lb))
	z := intBuf(t, d, make([]int64, n))
	err := run(t, x.f, grid1(1), buf(intBuf(t, d, a)), buf(intBuf(t, d, b)), buf(z))
	return ints(z), err
}

func TestIntegerOpsFollowC(t *testing.T) {
	a := []int64{7, -7, 7, -7, math.MaxInt32, math.MinInt32, 100, -1}
	b := []int64{2, 2, -2, -2, 1, -1, 3, 1}
	cases := []struct {
		op   ir.Op
		d    ir.DType
		want []int64
	}{
		{ir.Div, ir.I32, []int64{3, -3, -3, 3, math.MaxInt32, math.MinInt32, 33, -1}},
		{ir.Rem, ir.I32, []int64{1, -1, 1, -1, 0, 0, 1, 0}},
		{ir.Add, ir.I32, []int64{9, -5, 5, -9, math.MinInt32, math.MaxInt32, 103, 0}},
		{ir.Mul, ir.I32, []int64{14, -14, -14, 14, math.MaxInt32, math.MinInt32, 300, -1}},
		{ir.Max, ir.I32, []int64{7, 2, 7, -2, math.MaxInt32, -1, 100, 1}},
		{ir.Shr, ir.I32, []int64{1, -2, 0, -1, 1<<30 - 1, -1 << 30, 12, -1}},
		{ir.MulHi, ir.I32, []int64{0, -1, -1, 0, 0, 0, 0, -1}},
	}
	for _, c := range cases {
		bb := b
		if c.op == ir.Shr {
			bb = []int64{2, 2, 31, 31, 1, 1, 3, 0}
			c.want[2], c.want[3] = 7>>31, -7>>31
		}
		got, err := intBinary(t, c.op, c.d, a, bb)
		if err != nil {
			t.Fatalf("%s: %v", c.op, err)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s %s: %d op %d = %d, want %d", c.d, c.op, a[i], bb[i], got[i], c.want[i])
			}
		}
	}
	// Unsigned: u32 division and comparison use the unsigned values.
	got, err := intBinary(t, ir.Div, ir.U32, []int64{0xffffffff, 10}, []int64{2, 3})
	if err != nil || got[0] != 0x7fffffff || got[1] != 3 {
		t.Errorf("u32 div = %v, %v", got, err)
	}
	got, err = intBinary(t, ir.MulHi, ir.U32, []int64{0xffffffff, 0xD2511F53}, []int64{0xffffffff, 0x12345678})
	if err != nil || got[0] != 0xfffffffe || got[1] != (0xD2511F53*0x12345678)>>32 {
		t.Errorf("u32 mulhi = %#x, %v", got, err)
	}
	got, err = intBinary(t, ir.Add, ir.I8, []int64{127, -128}, []int64{1, -1})
	if err != nil || got[0] != -128 || got[1] != 127 {
		t.Errorf("i8 add wraps: %v, %v", got, err)
	}
	// Division by zero stops the launch with a clear error.
	_, err = intBinary(t, ir.Div, ir.I32, []int64{1, 2}, []int64{1, 0})
	if err == nil || !strings.Contains(err.Error(), "integer division by zero") || !strings.Contains(err.Error(), "program (0, 0, 0)") {
		t.Errorf("division by zero: err = %v", err)
	}
}

// floatUnary applies op to v through an fp32 tile.
func floatOps(t *testing.T, op ir.Op, args ...[]float32) []float32 {
	n := len(args[0])
	x := newBuilder("f_" + op.String())
	var loaded []*ir.Value
	offs := x.arange(0, n)
	for i := range args {
		p := x.param("a"+fmtInt(i), ptr32)
		loaded = append(loaded, x.load(x.op(ir.PtrAdd, ptrTile(ir.F32, n), x.splat(p, n), offs)))
	}
	pz := x.param("z", ptr32)
	x.store(x.op(ir.PtrAdd, ptrTile(ir.F32, n), x.splat(pz, n), offs), x.op(op, tileOf(ir.F32, n), loaded...))
	z := f32Buf(t, make([]float32, n))
	var jargs []jit.Arg
	for _, a := range args {
		jargs = append(jargs, buf(f32Buf(t, a)))
	}
	mustRun(t, x.f, grid1(1), append(jargs, buf(z))...)
	return z.f32()
}

func TestFloatOps(t *testing.T) {
	nan := float32(math.NaN())
	a := []float32{1, -2, nan, 0.5}
	b := []float32{3, nan, 4, -0.25}
	check := func(name string, got, want []float32) {
		t.Helper()
		for i := range want {
			if !bitsEq(got[i], want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
				t.Errorf("%s[%d] = %v, want %v", name, i, got[i], want[i])
			}
		}
	}
	check("max", floatOps(t, ir.Max, a, b), []float32{3, -2, 4, 0.5})
	check("min", floatOps(t, ir.Min, a, b), []float32{1, -2, 4, -0.25})
	check("div", floatOps(t, ir.Div, a, b), []float32{1.0 / 3, nan, nan, -2})
	check("rem", floatOps(t, ir.Rem, []float32{7, -7, 5.5, 1}, []float32{2, 2, 2, 0}), []float32{1, -1, 1.5, nan})
	e := []float32{0, 1, -1, 10}
	var wantExp, wantSqrt, wantErf []float32
	for _, v := range e {
		wantExp = append(wantExp, float32(math.Exp(float64(v))))
		wantSqrt = append(wantSqrt, float32(math.Sqrt(float64(v))))
		wantErf = append(wantErf, float32(math.Erf(float64(v))))
	}
	check("exp", floatOps(t, ir.Exp, e), wantExp)
	check("sqrt", floatOps(t, ir.Sqrt, e), wantSqrt)
	check("erf", floatOps(t, ir.Erf, e), wantErf)
	check("exp2", floatOps(t, ir.Exp2, e), []float32{1, 2, 0.5, 1024})
	check("abs", floatOps(t, ir.Abs, []float32{-1, 2, float32(math.Copysign(0, -1)), -3}), []float32{1, 2, 0, 3})
	// fma rounds once: (1+2^-23)^2 - (1+2^-22) = 2^-46 exactly, lost by mul-then-add.
	u := float32(1 + math.Ldexp(1, -23))
	check("fma", floatOps(t, ir.FMA, []float32{u}, []float32{u}, []float32{-(1 + float32(math.Ldexp(1, -22)))}), []float32{float32(math.Ldexp(1, -46))})
}

func TestCasts(t *testing.T) {
	x := newBuilder("casts")
	p := x.param("f", ptr32)
	q := x.param("i", ir.PtrTo(ir.I32))
	u := x.param("u", ir.PtrTo(ir.U8))
	n := 4
	offs := x.arange(0, n)
	v := x.load(x.op(ir.PtrAdd, ptrTile(ir.F32, n), x.splat(p, n), offs))
	x.store(x.op(ir.PtrAdd, ptrTile(ir.I32, n), x.splat(q, n), offs), x.cast(v, tileOf(ir.I32, n)))
	// f32 -> i32 -> u8 wraps; i1 of the floats is != 0.
	w := x.cast(x.cast(v, tileOf(ir.I32, n)), tileOf(ir.U8, n))
	x.store(x.op(ir.PtrAdd, ptrTile(ir.U8, n), x.splat(u, n), offs), w)
	fb := f32Buf(t, []float32{-2.7, 2.7, 300.5, 0})
	ib := intBuf(t, ir.I32, make([]int64, n))
	ub := intBuf(t, ir.U8, make([]int64, n))
	mustRun(t, x.f, grid1(1), buf(fb), buf(ib), buf(ub))
	if got := ints(ib); got[0] != -2 || got[1] != 2 || got[2] != 300 || got[3] != 0 {
		t.Errorf("fp32->i32 = %v, want [-2 2 300 0]", got)
	}
	if got := ints(ub); got[0] != 254 || got[1] != 2 || got[2] != 44 || got[3] != 0 {
		t.Errorf("->u8 = %v, want [254 2 44 0]", got)
	}
	// bitcast fp32 <-> i32 keeps the bits.
	y := newBuilder("bitcast")
	pf := y.param("f", ptr32)
	pi := y.param("i", ir.PtrTo(ir.I32))
	bc := y.emit(ir.Cast, []ir.Type{ir.Scalar(ir.I32)}, y.load(pf))
	bc.Int = 1
	y.store(pi, bc.Result())
	ib2 := intBuf(t, ir.I32, []int64{0})
	mustRun(t, y.f, grid1(1), buf(f32Buf(t, []float32{-1.5})), buf(ib2))
	if got := ints(ib2)[0]; uint32(got) != math.Float32bits(-1.5) {
		t.Errorf("bitcast = %#x, want %#x", uint32(got), math.Float32bits(-1.5))
	}
}

// reduceKernel loads a [r, c] fp32 tile, reduces it along axis with kind, and stores the
// result (fp32, or i32 for arg kinds) contiguously.
func reduceKernel(t *testing.T, kind int, axis int, keep bool, r, c int, in []float32) []float64 {
	x := newBuilder("reduce")
	p, q := x.param("x", ptr32), x.param("z", ir.PtrTo(ir.F32))
	rows := x.op(ir.ExpandDims, tileOf(ir.I32, r, 1), x.arange(0, r))
	rows.Def.Int = 1
	cols := x.op(ir.ExpandDims, tileOf(ir.I32, 1, c), x.arange(0, c))
	offs := x.op(ir.Add, tileOf(ir.I32, r, c),
		x.op(ir.Mul, tileOf(ir.I32, r, c), x.op(ir.Broadcast, tileOf(ir.I32, r, c), rows), x.ci(tileOf(ir.I32, r, c), int64(c))),
		x.op(ir.Broadcast, tileOf(ir.I32, r, c), cols))
	v := x.load(x.op(ir.PtrAdd, ptrTile(ir.F32, r, c), x.splat(p, r, c), offs))
	outShape := []int{r, c}
	if keep {
		outShape[axis] = 1
	} else {
		outShape = append(outShape[:axis], outShape[axis+1:]...)
	}
	rd := ir.F32
	if kind == ir.ReduceArgMax || kind == ir.ReduceArgMin {
		rd = ir.I32
	}
	red := x.emit(ir.Reduce, []ir.Type{tileOf(rd, outShape...)}, v)
	red.Int = int64(axis)
	red.Ints = []int{kind, 0}
	if keep {
		red.Ints[1] = 1
	}
	res := red.Result()
	m := res.Type.NumElems()
	flat := x.op(ir.Reshape, tileOf(rd, m), res)
	if rd == ir.I32 {
		flat = x.cast(flat, tileOf(ir.F32, m))
	}
	x.store(x.op(ir.PtrAdd, ptrTile(ir.F32, m), x.splat(q, m), x.arange(0, m)), flat)
	z := f32Buf(t, make([]float32, m))
	mustRun(t, x.f, grid1(1), buf(f32Buf(t, in)), buf(z))
	out := make([]float64, m)
	for i, v := range z.f32() {
		out[i] = float64(v)
	}
	return out
}

func TestReductions(t *testing.T) {
	const r, c = 4, 8
	rng := rand.New(rand.NewSource(1))
	in := make([]float32, r*c)
	for i := range in {
		in[i] = float32(rng.Intn(21) - 10)
	}
	in[3] = float32(math.NaN()) // max ignores NaN
	for _, axis := range []int{0, 1} {
		for _, kind := range []int{ir.ReduceSum, ir.ReduceMax, ir.ReduceMin, ir.ReduceArgMax, ir.ReduceArgMin} {
			for _, keep := range []bool{false, true} {
				got := reduceKernel(t, kind, axis, keep, r, c, in)
				outer, inner := r, c
				if axis == 0 {
					outer, inner = c, r
				}
				for o := range outer {
					at := func(j int) float64 {
						if axis == 0 {
							return float64(in[j*c+o])
						}
						return float64(in[o*c+j])
					}
					var want float64
					switch kind {
					case ir.ReduceSum:
						for j := range inner {
							want += at(j)
						}
					case ir.ReduceMax, ir.ReduceArgMax, ir.ReduceMin, ir.ReduceArgMin:
						isMax := kind == ir.ReduceMax || kind == ir.ReduceArgMax
						bi, bv := -1, 0.0
						for j := range inner {
							v := at(j)
							if math.IsNaN(v) {
								continue
							}
							if bi < 0 || (isMax && v > bv) || (!isMax && v < bv) {
								bi, bv = j, v
							}
						}
						want = bv
						if kind == ir.ReduceArgMax || kind == ir.ReduceArgMin {
							want = float64(bi)
						}
					}
					if got[o] != want && !(math.IsNaN(got[o]) && math.IsNaN(want)) {
						t.Errorf("kind %d axis %d keep %v: out[%d] = %v, want %v", kind, axis, keep, o, got[o], want)
					}
				}
			}
		}
	}
}

func TestCustomReduceAndLoops(t *testing.T) {
	// A custom (max, argmax)-style combine over 2 operands, a For whose body yields its
	// carried values swapped, and a While counting down.
	x := newBuilder("loops")
	p := x.param("p", ir.PtrTo(ir.I32))
	n := x.param("n", i32)
	vals := x.load(x.op(ir.PtrAdd, ptrTile(ir.I32, 8), x.splat(p, 8), x.arange(0, 8)))
	idx := x.arange(0, 8)
	red := x.emit(ir.Reduce, []ir.Type{i32, i32}, vals, idx)
	red.Ints = []int{ir.ReduceCustom, 0}
	// The combine region takes (acc_v, acc_i, b_v, b_i): keep acc unless b_v > acc_v.
	red.Regions = []*ir.Block{x.region(func(a []*ir.Value) {
		gt := x.cmp(ir.CmpGT, a[2], a[0])
		x.yield(x.op(ir.Select, i32, gt, a[2], a[0]), x.op(ir.Select, i32, gt, a[3], a[1]))
	}, i32, i32, i32, i32)}
	maxV, maxI := red.Results[0], red.Results[1]
	// for i in range(0, n): (a, b) = (b, a + i)
	zero, one := x.ci(i32, 0), x.ci(i32, 1)
	loop := x.emit(ir.For, []ir.Type{i32, i32}, zero, n, one, maxV, maxI)
	loop.Regions = []*ir.Block{x.region(func(a []*ir.Value) {
		x.yield(a[2], x.op(ir.Add, i32, a[1], a[0]))
	}, i32, i32, i32)}
	// while k > 0: k -= 1; s += k
	wh := x.emit(ir.While, []ir.Type{i32, i32}, n, zero)
	wh.Regions = []*ir.Block{
		x.region(func(a []*ir.Value) { x.emit(ir.Condition, nil, x.cmp(ir.CmpGT, a[0], zero)) }, i32, i32),
		x.region(func(a []*ir.Value) {
			k := x.op(ir.Sub, i32, a[0], one)
			x.yield(k, x.op(ir.Add, i32, a[1], k))
		}, i32, i32),
	}
	out := func(i int64, v *ir.Value) { x.store(x.op(ir.PtrAdd, ir.PtrTo(ir.I32), p, x.ci(i32, i)), v) }
	out(0, maxV)
	out(1, maxI)
	out(2, loop.Results[0])
	out(3, loop.Results[1])
	out(4, wh.Results[1])
	in := []int64{3, 9, -1, 9, 4, 0, 2, 8}
	b := intBuf(t, ir.I32, in)
	mustRun(t, x.f, grid1(1), buf(b), scalar(int64(5)))
	// Reference: the loop in Go.
	a0, a1 := int64(9), int64(1)
	for i := int64(0); i < 5; i++ {
		a0, a1 = a1, a0+i
	}
	s := int64(0)
	for k := int64(5); k > 0; {
		k--
		s += k
	}
	got := ints(b)
	if got[0] != 9 || got[1] != 1 || got[2] != a0 || got[3] != a1 || got[4] != s {
		t.Fatalf("got %v, want [9 1 %d %d %d ...]", got[:5], a0, a1, s)
	}
}

func TestIfAndSelectOfPointersToDifferentBuffers(t *testing.T) {
	// if flag: p = a else p = b (pointers of different buffers through an If and a Select).
	x := newBuilder("ifsel")
	a, b := x.param("a", ptr32), x.param("b", ptr32)
	flag := x.param("flag", ir.Scalar(ir.I1))
	ifi := x.emit(ir.If, []ir.Type{ptr32}, flag)
	ifi.Regions = []*ir.Block{x.region(func([]*ir.Value) { x.yield(a) }), x.region(func([]*ir.Value) { x.yield(b) })}
	x.store(ifi.Result(), x.cf(ir.Scalar(ir.F32), 7))
	other := x.op(ir.Select, ptr32, flag, b, a)
	x.store(other, x.cf(ir.Scalar(ir.F32), 8))
	ab, bb := f32Buf(t, []float32{0}), f32Buf(t, []float32{0})
	mustRun(t, x.f, grid1(1), buf(ab), buf(bb), scalar(true))
	if ab.f32()[0] != 7 || bb.f32()[0] != 8 {
		t.Fatalf("flag=true: a=%v b=%v, want 7 8", ab.f32()[0], bb.f32()[0])
	}
	mustRun(t, x.f, grid1(1), buf(ab), buf(bb), scalar(false))
	if ab.f32()[0] != 8 || bb.f32()[0] != 7 {
		t.Fatalf("flag=false: a=%v b=%v, want 8 7", ab.f32()[0], bb.f32()[0])
	}
}

func TestShapeOps(t *testing.T) {
	// x[2,3,4] = arange; permute (2,0,1) -> [4,2,3]; broadcast a [1,4] row to [3,4].
	x := newBuilder("shapes")
	p := x.param("p", ir.PtrTo(ir.I32))
	q := x.param("q", ir.PtrTo(ir.I32))
	v := x.op(ir.Reshape, tileOf(ir.I32, 2, 3, 4), x.arange(0, 24))
	_ = v
	// Arange lengths are powers of two in the language, but the executor does not care.
	perm := x.emit(ir.Permute, []ir.Type{tileOf(ir.I32, 4, 2, 3)}, v)
	perm.Ints = []int{2, 0, 1}
	x.store(x.op(ir.PtrAdd, ptrTile(ir.I32, 24), x.splat(p, 24), x.arange(0, 24)), x.op(ir.Reshape, tileOf(ir.I32, 24), perm.Result()))
	row := x.op(ir.ExpandDims, tileOf(ir.I32, 1, 4), x.arange(10, 14))
	bc := x.op(ir.Broadcast, tileOf(ir.I32, 3, 4), row)
	x.store(x.op(ir.PtrAdd, ptrTile(ir.I32, 12), x.splat(q, 12), x.arange(0, 12)), x.op(ir.Reshape, tileOf(ir.I32, 12), bc))
	pb, qb := intBuf(t, ir.I32, make([]int64, 24)), intBuf(t, ir.I32, make([]int64, 12))
	mustRun(t, x.f, grid1(1), buf(pb), buf(qb))
	got := ints(pb)
	for i := range 4 {
		for j := range 2 {
			for k := range 3 {
				if want := int64(j*12 + k*4 + i); got[i*6+j*3+k] != want {
					t.Fatalf("permute[%d,%d,%d] = %d, want %d", i, j, k, got[i*6+j*3+k], want)
				}
			}
		}
	}
	for i, g := range ints(qb) {
		if g != int64(10+i%4) {
			t.Fatalf("broadcast[%d] = %d, want %d", i, g, 10+i%4)
		}
	}
}

// dotKernel computes z[m,n] = a[m,k] x b[k,n] + acc (acc loaded from z), all fp32, with
// batch > 1 as a batched 3-D dot.
func dotKernel(batch, m, n, k int) *ir.Func {
	x := newBuilder("dot")
	pa, pb, pz := x.param("a", ptr32), x.param("b", ptr32), x.param("z", ptr32)
	shape := func(r, c int) []int {
		if batch > 1 {
			return []int{batch, r, c}
		}
		return []int{r, c}
	}
	ld := func(p *ir.Value, r, c int) (*ir.Value, *ir.Value) {
		s := shape(r, c)
		cnt := batch * r * c
		ptrs := x.op(ir.Reshape, ptrTile(ir.F32, s...), x.op(ir.PtrAdd, ptrTile(ir.F32, cnt), x.splat(p, cnt), x.arange(0, cnt)))
		return x.load(ptrs), ptrs
	}
	a, _ := ld(pa, m, k)
	b, _ := ld(pb, k, n)
	acc, zp := ld(pz, m, n)
	x.store(zp, x.op(ir.Dot, tileOf(ir.F32, shape(m, n)...), a, b, acc))
	return x.f
}

func TestDotAgainstLoops(t *testing.T) {
	shapes := [][4]int{{1, 16, 16, 16}, {1, 64, 64, 32}, {1, 20, 40, 7}, {1, 128, 96, 64}, {3, 8, 32, 16}, {1, 3, 5, 1}}
	kernels := []bool{true, false}
	defer selectMicroKernel(true)
	for _, avx512 := range kernels {
		selectMicroKernel(avx512)
		for _, s := range shapes {
			batch, m, n, k := s[0], s[1], s[2], s[3]
			rng := rand.New(rand.NewSource(int64(m*n + k)))
			rnd := func(cnt int) []float32 {
				v := make([]float32, cnt)
				for i := range v {
					v[i] = float32(rng.Intn(17)-8) / 4 // exact products and sums: order cannot matter
				}
				return v
			}
			av, bv, zv := rnd(batch*m*k), rnd(batch*k*n), rnd(batch*m*n)
			want := append([]float32(nil), zv...)
			for bi := range batch {
				for i := range m {
					for j := range n {
						s := want[bi*m*n+i*n+j]
						for p := range k {
							s += av[bi*m*k+i*k+p] * bv[bi*k*n+p*n+j]
						}
						want[bi*m*n+i*n+j] = s
					}
				}
			}
			z := f32Buf(t, zv)
			mustRun(t, dotKernel(batch, m, n, k), grid1(1), buf(f32Buf(t, av)), buf(f32Buf(t, bv)), buf(z))
			for i, g := range z.f32() {
				if g != want[i] {
					t.Fatalf("%s, %v: z[%d] = %v, want %v", dotKernelName(), s, i, g, want[i])
				}
			}
		}
	}
}

func TestParallelAtomics(t *testing.T) {
	// 64 programs x 32 lanes add 1 (int) and 0.5 (fp32) to one counter each, take a max,
	// and every lane with an odd index is masked off (its old value is 0).
	x := newBuilder("atomics")
	pi, pf := x.param("ci", ir.PtrTo(ir.I32)), x.param("cf", ptr32)
	pm, pold := x.param("m", ir.PtrTo(ir.I32)), x.param("old", ir.PtrTo(ir.I32))
	lanes := x.arange(0, 32)
	mask := x.cmp(ir.CmpEQ, x.op(ir.And, tileOf(ir.I32, 32), lanes, x.ci(tileOf(ir.I32, 32), 1)), x.ci(tileOf(ir.I32, 32), 0))
	rmw := func(kind int64, p *ir.Value, d ir.DType, v *ir.Value) *ir.Value {
		in := x.emit(ir.AtomicRMW, []ir.Type{tileOf(d, 32)}, x.splat(p, 32), v, mask)
		in.Int = kind
		return in.Result()
	}
	old := rmw(ir.AtomicAdd, pi, ir.I32, x.ci(tileOf(ir.I32, 32), 1))
	rmw(ir.AtomicAdd, pf, ir.F32, x.cf(tileOf(ir.F32, 32), 0.5))
	pid := x.pid(0)
	rmw(ir.AtomicMax, pm, ir.I32, x.op(ir.Add, tileOf(ir.I32, 32), x.splat(x.op(ir.Mul, i32, pid, x.ci(i32, 100)), 32), lanes))
	// Store the old values of program 0... every program writes its own row.
	row := x.op(ir.Add, tileOf(ir.I32, 32), x.splat(x.op(ir.Mul, i32, pid, x.ci(i32, 32)), 32), lanes)
	x.store(x.op(ir.PtrAdd, ptrTile(ir.I32, 32), x.splat(pold, 32), row), old)
	ci, cf := intBuf(t, ir.I32, []int64{0}), f32Buf(t, []float32{0})
	m, olds := intBuf(t, ir.I32, []int64{-5}), intBuf(t, ir.I32, make([]int64, 64*32))
	d := NewDevice(8)
	mustRunOn := func() {
		if err := runOn(t, d, x.f, grid1(64), buf(ci), buf(cf), buf(m), buf(olds)); err != nil {
			t.Fatal(err)
		}
	}
	mustRunOn()
	if got := ints(ci)[0]; got != 64*16 {
		t.Errorf("int counter = %d, want %d", got, 64*16)
	}
	if got := cf.f32()[0]; got != 64*16*0.5 {
		t.Errorf("float counter = %v, want %v", got, 64*16*0.5)
	}
	if got := ints(m)[0]; got != 63*100+30 {
		t.Errorf("max = %d, want %d", got, 63*100+30)
	}
	// Old values of unmasked lanes are distinct: each of 0..1023 exactly once.
	seen := make([]bool, 64*16)
	for i, v := range ints(olds) {
		if i%2 == 1 {
			if v != 0 {
				t.Fatalf("masked lane %d returned %d, want 0", i, v)
			}
			continue
		}
		if v < 0 || v >= int64(len(seen)) || seen[v] {
			t.Fatalf("old value %d repeated or out of range", v)
		}
		seen[v] = true
	}
	// CAS: swap in 5 where the value is 0.
	y := newBuilder("cas")
	p := y.param("p", ir.PtrTo(ir.I32))
	ptrs := y.op(ir.PtrAdd, ptrTile(ir.I32, 4), y.splat(p, 4), y.arange(0, 4))
	old2 := y.op(ir.AtomicCAS, tileOf(ir.I32, 4), ptrs, y.ci(tileOf(ir.I32, 4), 0), y.ci(tileOf(ir.I32, 4), 5))
	y.store(y.op(ir.PtrAdd, ptrTile(ir.I32, 4), y.splat(p, 4), y.arange(4, 8)), old2)
	cb := intBuf(t, ir.I32, []int64{0, 3, 0, -1, 9, 9, 9, 9})
	mustRun(t, y.f, grid1(1), buf(cb))
	if got := ints(cb); !equalInts(got, []int64{5, 3, 5, -1, 0, 3, 0, -1}) {
		t.Errorf("cas = %v", got)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPrintAndProgramIDs(t *testing.T) {
	x := newBuilder("printer")
	pr := x.emit(ir.Print, nil, x.pid(0), x.pid(1), x.arange(0, 2))
	pr.Str = "ids:"
	np := x.emit(ir.NumPrograms, []ir.Type{i32})
	np.Int = 1
	p := x.param("p", ir.PtrTo(ir.I32))
	x.store(x.op(ir.PtrAdd, ir.PtrTo(ir.I32), p, x.op(ir.Add, i32, x.op(ir.Mul, i32, x.pid(0), np.Result()), x.pid(1))), x.pid(2))
	var out bytes.Buffer
	d := NewDevice(1)
	var mu sync.Mutex
	d.SetPrintWriter(lockedWriter{&out, &mu})
	b := intBuf(t, ir.I32, make([]int64, 6))
	if err := runOn(t, d, x.f, [3]int{2, 3, 1}, buf(b)); err != nil {
		t.Fatal(err)
	}
	if got := ints(b); !equalInts(got, make([]int64, 6)) {
		t.Errorf("pid(2) = %v", got)
	}
	if !strings.Contains(out.String(), "pid (1, 2, 0) ids: 1, 2, [0 1]\n") || strings.Count(out.String(), "\n") != 6 {
		t.Errorf("print output:\n%s", out.String())
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestLaunchArgumentErrors(t *testing.T) {
	f := vecAdd(16, true)
	d := NewDevice(2)
	k, err := d.LoadFunc(f)
	if err != nil {
		t.Fatal(err)
	}
	b := f32Buf(t, make([]float32, 16))
	h, _ := NewBuffer(ir.F16, 16)
	cases := map[string][]jit.Arg{
		"3 arguments for 4":   {buf(b), buf(b), buf(b)},
		"holds fp16":          {buf(b), buf(h), buf(b), scalar(int64(1))},
		"does not fit in i32": {buf(b), buf(b), buf(b), scalar(int64(1) << 40)},
		"pointer parameter":   {buf(b), {}, buf(b), scalar(int64(1))},
		"a float for a i32":   {buf(b), buf(b), buf(b), scalar(1.5)},
		"offset 17 outside":   {{Buf: b, Offset: 17}, buf(b), buf(b), scalar(int64(1))},
	}
	for want, args := range cases {
		err := k.Launch(grid1(1), args)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want one containing %q", err, want)
		}
	}
	if err := k.Launch([3]int{0, 1, 1}, nil); err == nil || !strings.Contains(err.Error(), "grid") {
		t.Errorf("zero grid: err = %v", err)
	}
}

func TestMalformedIRIsRejected(t *testing.T) {
	x := newBuilder("bad")
	a := x.ci(i32, 1)
	x.op(ir.Add, ir.Scalar(ir.F32), a, a) // type mismatch
	_, err := Target{}.Codegen(x.f, jit.Spec{})
	// The refusal is triton/ir's rule (rules.go), at the instruction's position.
	if err == nil || !strings.Contains(err.Error(), "kernel bad: k.py:3:5: add: result has type fp32, want i32") {
		t.Fatalf("err = %v", err)
	}
	y := newBuilder("bits")
	p := y.param("p", ptr32)
	y.emit(ir.AtomicRMW, []ir.Type{ir.Scalar(ir.F32)}, p, y.cf(ir.Scalar(ir.F32), 1), y.ci(ir.Scalar(ir.I1), 1)).Int = ir.AtomicAnd
	if _, err := NewDevice(1).LoadFunc(y.f); err == nil || !strings.Contains(err.Error(), "atomic_rmw: atomic and takes integers, got *fp32") {
		t.Fatalf("a bitwise atomic on fp32: %v", err)
	}
	if _, err := NewDevice(1).Load(&jit.Artifact{Kind: "ir", Payload: []byte("garbage")}); err == nil {
		t.Fatal("garbage artifact loaded")
	}
	if _, err := NewDevice(1).Load(&jit.Artifact{Kind: "ptx"}); err == nil {
		t.Fatal("ptx artifact loaded on the CPU")
	}
}

func TestLoopInvariantValuesYieldedFromALoop(t *testing.T) {
	// for i in range(0, n): inv = outer + 5 (loop-invariant, hoisted); yield (inv, acc + inv)
	// The hoisted value is yielded: it must be copied, not moved, or the second iteration
	// would read a stale slot.
	x := newBuilder("licm")
	p := x.param("p", ir.PtrTo(ir.I32))
	n := x.param("n", i32)
	outer := x.load(p)
	zero, one := x.ci(i32, 0), x.ci(i32, 1)
	loop := x.emit(ir.For, []ir.Type{i32, i32}, zero, n, one, zero, zero)
	loop.Regions = []*ir.Block{x.region(func(a []*ir.Value) {
		inv := x.op(ir.Add, i32, outer, x.ci(i32, 5))
		x.yield(inv, x.op(ir.Add, i32, a[2], x.op(ir.Add, i32, inv, a[0])))
	}, i32, i32, i32)}
	x.store(x.op(ir.PtrAdd, ir.PtrTo(ir.I32), p, x.ci(i32, 1)), loop.Results[0])
	x.store(x.op(ir.PtrAdd, ir.PtrTo(ir.I32), p, x.ci(i32, 2)), loop.Results[1])
	b := intBuf(t, ir.I32, []int64{10, 0, 0})
	mustRun(t, x.f, grid1(1), buf(b), scalar(int64(4)))
	// acc = sum over i<4 of (15 + i) = 60 + 6
	if got := ints(b); got[1] != 15 || got[2] != 66 {
		t.Fatalf("got %v, want [10 15 66]", got)
	}
}

func TestSplatOperandsReadAsScalars(t *testing.T) {
	// s - v, s / v, s < v, v - s with s a splat on either side (absorbed splats), against Go.
	x := newBuilder("splats")
	p, q := x.param("p", ptr32), x.param("q", ir.PtrTo(ir.I32))
	s := x.param("s", ir.Scalar(ir.F32))
	si := x.param("si", i32)
	n := 4
	offs := x.arange(0, n)
	v := x.load(x.op(ir.PtrAdd, ptrTile(ir.F32, n), x.splat(p, n), offs))
	ft := tileOf(ir.F32, n)
	r1 := x.op(ir.Sub, ft, x.splat(s, n), v)
	r2 := x.op(ir.Div, ft, x.splat(s, n), v)
	r3 := x.op(ir.Sub, ft, v, x.splat(s, n))
	lt := x.cmp(ir.CmpLT, x.splat(s, n), v)
	it := tileOf(ir.I32, n)
	r4 := x.op(ir.Sub, it, x.splat(si, n), offs) // i32: wraps
	store := func(k int, val *ir.Value) {
		x.store(x.op(ir.PtrAdd, ptrTile(ir.F32, n), x.splat(p, n), x.op(ir.Add, it, offs, x.ci(it, int64(k*n)))), val)
	}
	store(1, r1)
	store(2, r2)
	store(3, r3)
	store(4, x.cast(lt, ft))
	x.store(x.op(ir.PtrAdd, ptrTile(ir.I32, n), x.splat(q, n), offs), r4)
	in := []float32{1, -2, 4, 8}
	b := f32Buf(t, append(in, make([]float32, 4*n)...))
	qb := intBuf(t, ir.I32, make([]int64, n))
	mustRun(t, x.f, grid1(1), buf(b), buf(qb), scalar(3.0), scalar(int64(math.MinInt32+1)))
	got := b.f32()
	for i, v := range in {
		want := []float32{3 - v, 3 / v, v - 3, 0}
		if 3 < v {
			want[3] = 1
		}
		for k, w := range want {
			if got[(k+1)*n+i] != w {
				t.Errorf("result %d lane %d = %v, want %v", k, i, got[(k+1)*n+i], w)
			}
		}
	}
	if g := ints(qb); g[0] != math.MinInt32+1 || g[1] != math.MinInt32 || g[2] != math.MaxInt32 {
		t.Errorf("i32 s - arange = %v, want wrap-around", g)
	}
	// The splats were absorbed: no Splat step ran (they are not in the compiled program).
	if len(absorbSplats(x.f)) < 3 {
		t.Errorf("expected the splats of s and si to be absorbed")
	}
}

func TestInt8DotAccumulatesInI32(t *testing.T) {
	const m, n, k = 4, 8, 16
	x := newBuilder("dot_i8")
	pa, pb, pz := x.param("a", ir.PtrTo(ir.I8)), x.param("b", ir.PtrTo(ir.I8)), x.param("z", ir.PtrTo(ir.I32))
	ld := func(p *ir.Value, d ir.DType, r, c int) (*ir.Value, *ir.Value) {
		ptrs := x.op(ir.Reshape, ptrTile(d, r, c), x.op(ir.PtrAdd, ptrTile(d, r*c), x.splat(p, r*c), x.arange(0, r*c)))
		return x.load(ptrs), ptrs
	}
	a, _ := ld(pa, ir.I8, m, k)
	b, _ := ld(pb, ir.I8, k, n)
	acc, zp := ld(pz, ir.I32, m, n)
	x.store(zp, x.op(ir.Dot, tileOf(ir.I32, m, n), a, b, acc))
	rng := rand.New(rand.NewSource(8))
	av, bv, zv := make([]int64, m*k), make([]int64, k*n), make([]int64, m*n)
	for i := range av {
		av[i] = int64(rng.Intn(256) - 128)
	}
	for i := range bv {
		bv[i] = int64(rng.Intn(256) - 128)
	}
	for i := range zv {
		zv[i] = int64(rng.Intn(1000))
	}
	z := intBuf(t, ir.I32, zv)
	mustRun(t, x.f, grid1(1), buf(intBuf(t, ir.I8, av)), buf(intBuf(t, ir.I8, bv)), buf(z))
	got := ints(z)
	for i := range m {
		for j := range n {
			s := zv[i*n+j]
			for p := range k {
				s += av[i*k+p] * bv[p*n+j]
			}
			if got[i*n+j] != s {
				t.Fatalf("z[%d,%d] = %d, want %d", i, j, got[i*n+j], s)
			}
		}
	}
}

// unaryOnTile runs a one-operand op over an fp32 tile.
func TestRemainingFloatOps(t *testing.T) {
	in := []float32{0.5, 2, 3.75, -1.25}
	ops := []struct {
		op  ir.Op
		ref func(float64) float64
	}{
		{ir.Log, math.Log}, {ir.Log2, math.Log2}, {ir.Rsqrt, func(x float64) float64 { return 1 / math.Sqrt(x) }},
		{ir.Sin, math.Sin}, {ir.Cos, math.Cos}, {ir.Floor, math.Floor}, {ir.Ceil, math.Ceil},
		{ir.Neg, func(x float64) float64 { return -x }},
	}
	for _, o := range ops {
		got := floatOps(t, o.op, in)
		for i, v := range in {
			want := float32(o.ref(float64(v)))
			if !bitsEq(got[i], want) && !(got[i] != got[i] && want != want) {
				t.Errorf("%s(%v) = %v, want %v", o.op, v, got[i], want)
			}
		}
	}
}

func TestRemainingIntOpsAndPredicates(t *testing.T) {
	a := []int64{6, -6, 0x7fffffff, 1}
	b := []int64{3, 1, 1, 31}
	for _, c := range []struct {
		op   ir.Op
		want []int64
	}{
		{ir.Or, []int64{7, -5, 0x7fffffff, 31}},
		{ir.Xor, []int64{5, -5, 0x7ffffffe, 30}},
		{ir.Shl, []int64{48, -12, -2, math.MinInt32}},
		{ir.Min, []int64{3, -6, 1, 1}},
		{ir.Sub, []int64{3, -7, 0x7ffffffe, -30}},
	} {
		got, err := intBinary(t, c.op, ir.I32, a, b)
		if err != nil || !equalInts(got, c.want) {
			t.Errorf("i32 %s = %v (%v), want %v", c.op, got, err, c.want)
		}
	}
	// Unary int ops and i1 logic, and every comparison predicate on ints and floats.
	x := newBuilder("unary_int")
	p := x.param("p", ir.PtrTo(ir.I32))
	q := x.param("q", ir.PtrTo(ir.I32))
	f := x.param("f", ptr32)
	n := 4
	offs := x.arange(0, n)
	it := tileOf(ir.I32, n)
	v := x.load(x.op(ir.PtrAdd, ptrTile(ir.I32, n), x.splat(p, n), offs))
	fv := x.load(x.op(ir.PtrAdd, ptrTile(ir.F32, n), x.splat(f, n), offs))
	out := func(k int, val *ir.Value) {
		x.store(x.op(ir.PtrAdd, ptrTile(ir.I32, n), x.splat(q, n), x.op(ir.Add, it, offs, x.ci(it, int64(k*n)))), val)
	}
	out(0, x.op(ir.Neg, it, v))
	out(1, x.op(ir.Not, it, v))
	out(2, x.op(ir.Abs, it, v))
	isNeg := x.cmp(ir.CmpLT, v, x.ci(it, 0))
	out(3, x.cast(x.op(ir.Not, tileOf(ir.I1, n), isNeg), it))
	two := x.ci(it, 2)
	ftwo := x.cf(tileOf(ir.F32, n), 2)
	for k, pred := range []int64{ir.CmpEQ, ir.CmpNE, ir.CmpLT, ir.CmpLE, ir.CmpGT, ir.CmpGE} {
		out(4+k, x.cast(x.cmp(pred, v, two), it))
		out(10+k, x.cast(x.cmp(pred, fv, ftwo), it))
	}
	x.emit(ir.Barrier, nil)
	pb := intBuf(t, ir.I32, []int64{2, -3, math.MinInt32, 5})
	qb := intBuf(t, ir.I32, make([]int64, 16*n))
	nan := float32(math.NaN())
	mustRun(t, x.f, grid1(1), buf(pb), buf(qb), buf(f32Buf(t, []float32{2, nan, 1, 3})))
	got := ints(qb)
	want := [][]int64{
		{-2, 3, math.MinInt32, -5},                                                         // neg wraps MinInt32
		{-3, 2, math.MaxInt32, -6},                                                         // not
		{2, 3, math.MinInt32, 5},                                                           // abs wraps MinInt32
		{1, 0, 0, 1},                                                                       // not of i1
		{1, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 1, 0}, {1, 1, 1, 0}, {0, 0, 0, 1}, {1, 0, 0, 1}, // v vs 2
		{1, 0, 0, 0}, {0, 1, 1, 1}, {0, 0, 1, 0}, {1, 0, 1, 0}, {0, 0, 0, 1}, {1, 0, 0, 1}, // f vs 2, NaN only !=
	}
	for k, w := range want {
		if g := got[k*n : k*n+n]; !equalInts(g, w) {
			t.Errorf("row %d = %v, want %v", k, g, w)
		}
	}
}

func TestRemainingAtomicKinds(t *testing.T) {
	// One program, one lane per kind, on i32 cells; then float min/max/xchg.
	kinds := []struct {
		kind      int64
		init, val int64
		want      int64
	}{
		{ir.AtomicMin, 5, 3, 3}, {ir.AtomicAnd, 6, 3, 2}, {ir.AtomicOr, 4, 3, 7}, {ir.AtomicXor, 6, 3, 5}, {ir.AtomicXchg, 6, 9, 9},
	}
	for _, k := range kinds {
		x := newBuilder("atomic")
		p := x.param("p", ir.PtrTo(ir.I32))
		in := x.emit(ir.AtomicRMW, []ir.Type{tileOf(ir.I32, 1)}, x.splat(p, 1), x.ci(tileOf(ir.I32, 1), k.val), x.ci(tileOf(ir.I1, 1), 1))
		in.Int = k.kind
		x.store(x.op(ir.PtrAdd, ptrTile(ir.I32, 1), x.splat(p, 1), x.ci(tileOf(ir.I32, 1), 1)), in.Result())
		b := intBuf(t, ir.I32, []int64{k.init, 0})
		mustRun(t, x.f, grid1(1), buf(b))
		if got := ints(b); got[0] != k.want || got[1] != k.init {
			t.Errorf("atomic kind %d: memory %d old %d, want %d and %d", k.kind, got[0], got[1], k.want, k.init)
		}
	}
	for _, k := range []struct {
		kind      int64
		init, val float32
		want      float32
	}{{ir.AtomicMax, 1.5, 2.5, 2.5}, {ir.AtomicMin, 1.5, 2.5, 1.5}, {ir.AtomicXchg, 1.5, -4, -4}, {ir.AtomicAdd, 1.5, 0.25, 1.75}} {
		x := newBuilder("atomic_f")
		p := x.param("p", ptr32)
		in := x.emit(ir.AtomicRMW, []ir.Type{ir.Scalar(ir.F32)}, p, x.cf(ir.Scalar(ir.F32), float64(k.val)), x.ci(ir.Scalar(ir.I1), 1))
		in.Int = k.kind
		x.store(x.op(ir.PtrAdd, ptr32, p, x.ci(i32, 1)), in.Result())
		b := f32Buf(t, []float32{k.init, 0})
		mustRun(t, x.f, grid1(1), buf(b))
		if got := b.f32(); got[0] != k.want || got[1] != k.init {
			t.Errorf("float atomic kind %d: memory %v old %v, want %v and %v", k.kind, got[0], got[1], k.want, k.init)
		}
	}
}

func TestFloat64Path(t *testing.T) {
	// fp64 loads, arithmetic, math, a reduction and casts, against Go float64.
	x := newBuilder("f64")
	p := x.param("p", ir.PtrTo(ir.F64))
	q := x.param("q", ptr32)
	n := 4
	ft := tileOf(ir.F64, n)
	offs := x.arange(0, n)
	v := x.load(x.op(ir.PtrAdd, ptrTile(ir.F64, n), x.splat(p, n), offs))
	w := x.op(ir.Add, ft, x.op(ir.Mul, ft, v, v), x.op(ir.Sqrt, ft, v))
	e := x.op(ir.Exp, ft, v)
	red := x.emit(ir.Reduce, []ir.Type{ir.Scalar(ir.F64)}, w)
	red.Ints = []int{ir.ReduceSum, 0}
	outp := x.op(ir.PtrAdd, ptrTile(ir.F64, n), x.splat(p, n), x.op(ir.Add, tileOf(ir.I32, n), offs, x.ci(tileOf(ir.I32, n), int64(n))))
	x.store(outp, w)
	x.store(x.op(ir.PtrAdd, ir.PtrTo(ir.F64), p, x.ci(i32, int64(2*n))), red.Result())
	x.store(x.op(ir.PtrAdd, ptrTile(ir.F32, n), x.splat(q, n), offs), x.cast(e, tileOf(ir.F32, n)))
	in := []float64{0.25, 1, 2, 9}
	pb, _ := NewBuffer(ir.F64, 2*n+1)
	copy(pb.f64(), in)
	qb := f32Buf(t, make([]float32, n))
	mustRun(t, x.f, grid1(1), buf(pb), buf(qb))
	sum := 0.0
	for i, v := range in {
		want := v*v + math.Sqrt(v)
		sum += want
		if got := pb.f64()[n+i]; got != want {
			t.Errorf("w[%d] = %v, want %v", i, got, want)
		}
		if got := qb.f32()[i]; got != float32(math.Exp(v)) {
			t.Errorf("exp[%d] = %v, want %v", i, got, float32(math.Exp(v)))
		}
	}
	if got := pb.f64()[2*n]; math.Abs(got-sum) > 1e-12 {
		t.Errorf("sum = %v, want %v", got, sum)
	}
}

// BindHost takes host memory of the buffer's size at an 8-byte aligned address and nothing
// else; UnbindHost gives the buffer its own memory back.
func TestBindHost(t *testing.T) {
	dev := NewDevice(1)
	jb, _ := dev.Alloc(ir.F32, 4)
	b := jb.(*Buffer)
	own := &b.Bytes()[0]
	host := make([]byte, 24) // Go allocates it 8-byte aligned
	if dev.BindHost(b, host[:8]) || dev.BindHost(b, host[4:20]) {
		t.Fatal("BindHost took memory of the wrong size or alignment")
	}
	if &b.Bytes()[0] != own {
		t.Fatal("a refused BindHost changed the buffer")
	}
	if !dev.BindHost(b, host[8:24]) || &b.Bytes()[0] != &host[8] {
		t.Fatal("BindHost refused memory that suits the buffer")
	}
	dev.UnbindHost(b)
	if &b.Bytes()[0] != own {
		t.Fatal("UnbindHost did not give the buffer its own memory back")
	}
}
