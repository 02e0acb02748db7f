package triton

import (
	"fmt"
	"math"
	"math/bits"
	"testing"

	"github.com/widejit/widejit/triton/ir"
)

// scalarEval is a tiny reference interpreter for straight-line scalar IR (the ops Philox and
// uint_to_uniform_float lower to). It lets this package check tl.philox/tl.rand numerically
// without depending on a backend. Integers are kept as uint64 bit patterns of their dtype;
// floats as float64 rounded to the dtype.
type scalarEval struct {
	t    *testing.T
	vals map[*ir.Value]sv
	mem  map[uint64]sv // stores by address (pointer values are plain integers here)
}

type sv struct {
	u uint64
	f float64
}

func mask(d ir.DType) uint64 {
	if d.Bits() == 64 {
		return ^uint64(0)
	}
	return 1<<uint(d.Bits()) - 1
}

func signed(x uint64, d ir.DType) int64 {
	s := 64 - uint(d.Bits())
	return int64(x<<s) >> s
}

func roundTo(d ir.DType, f float64) float64 {
	if d == ir.F32 {
		return float64(float32(f))
	}
	return f
}

func (e *scalarEval) run(f *ir.Func, args []sv) {
	e.vals = map[*ir.Value]sv{}
	e.mem = map[uint64]sv{}
	for i, p := range f.Params {
		e.vals[p] = args[i]
	}
	for _, in := range f.Body.Instrs {
		e.instr(in)
	}
}

func (e *scalarEval) instr(in *ir.Instr) {
	arg := func(i int) sv { return e.vals[in.Args[i]] }
	var r sv
	var rt ir.Type
	if len(in.Results) == 1 {
		rt = in.Result().Type
		if !rt.IsScalar() {
			e.t.Fatalf("scalarEval: tile result in %s", in.Op)
		}
	}
	d := rt.Elem
	intOp := func(fn func(a, b uint64) uint64) {
		r.u = fn(arg(0).u, arg(1).u) & mask(d)
	}
	switch in.Op {
	case ir.Const:
		if d.IsFloat() {
			r.f = roundTo(d, in.Float)
		} else {
			r.u = uint64(in.Int) & mask(d)
		}
	case ir.Cast:
		src := in.Args[0].Type.Elem
		x := arg(0)
		switch {
		case in.Int == 1 && !src.IsFloat() && !d.IsFloat():
			r.u = x.u & mask(d)
		case !src.IsFloat() && !d.IsFloat():
			if src.IsSigned() {
				r.u = uint64(signed(x.u, src)) & mask(d)
			} else {
				r.u = x.u & mask(d)
			}
		case !src.IsFloat() && d.IsFloat():
			if src.IsSigned() {
				r.f = roundTo(d, float64(signed(x.u, src)))
			} else {
				r.f = roundTo(d, float64(x.u))
			}
		default:
			e.t.Fatalf("scalarEval: cast %s -> %s", src, d)
		}
	case ir.Add:
		if d.IsFloat() {
			r.f = roundTo(d, arg(0).f+arg(1).f)
		} else {
			intOp(func(a, b uint64) uint64 { return a + b })
		}
	case ir.Sub:
		if d.IsFloat() {
			r.f = roundTo(d, arg(0).f-arg(1).f)
		} else {
			intOp(func(a, b uint64) uint64 { return a - b })
		}
	case ir.Mul:
		if d.IsFloat() {
			r.f = roundTo(d, arg(0).f*arg(1).f)
		} else {
			intOp(func(a, b uint64) uint64 { return a * b })
		}
	case ir.MulHi:
		if d.IsSigned() || d.Bits() != 32 {
			e.t.Fatalf("scalarEval: mulhi on %s", d)
		}
		intOp(func(a, b uint64) uint64 { return (a * b) >> 32 })
	case ir.Xor:
		intOp(func(a, b uint64) uint64 { return a ^ b })
	case ir.And:
		intOp(func(a, b uint64) uint64 { return a & b })
	case ir.Or:
		intOp(func(a, b uint64) uint64 { return a | b })
	case ir.Shr:
		if d.IsSigned() {
			intOp(func(a, b uint64) uint64 { return uint64(signed(a, d) >> b) })
		} else {
			intOp(func(a, b uint64) uint64 { return a >> b })
		}
	case ir.Neg:
		if d.IsFloat() {
			r.f = -arg(0).f
		} else {
			r.u = -arg(0).u & mask(d)
		}
	case ir.Cmp:
		src := in.Args[0].Type.Elem
		var lt, eq bool
		if src.IsFloat() {
			lt, eq = arg(0).f < arg(1).f, arg(0).f == arg(1).f
		} else if src.IsSigned() {
			lt, eq = signed(arg(0).u, src) < signed(arg(1).u, src), arg(0).u == arg(1).u
		} else {
			lt, eq = arg(0).u < arg(1).u, arg(0).u == arg(1).u
		}
		var b bool
		switch in.Int {
		case ir.CmpLT:
			b = lt
		case ir.CmpEQ:
			b = eq
		default:
			e.t.Fatalf("scalarEval: cmp predicate %d", in.Int)
		}
		if b {
			r.u = 1
		}
	case ir.Select:
		if arg(0).u != 0 {
			r = arg(1)
		} else {
			r = arg(2)
		}
	case ir.PtrAdd:
		r.u = arg(0).u + uint64(signed(arg(1).u, in.Args[1].Type.Elem))
	case ir.Store:
		e.mem[arg(0).u] = arg(1)
		return
	default:
		e.t.Fatalf("scalarEval: unsupported op %s", in.Op)
	}
	e.vals[in.Result()] = r
}

const philoxKernel = `import triton
import triton.language as tl


@triton.jit
def kat(out_ptr, seed, c0, c1, c2, c3):
    a, b, c, d = tl.philox(seed, c0, c1, c2, c3)
    tl.store(out_ptr + 0, a)
    tl.store(out_ptr + 1, b)
    tl.store(out_ptr + 2, c)
    tl.store(out_ptr + 3, d)


@triton.jit
def uniform(out_ptr, iout_ptr, seed, offset):
    tl.store(out_ptr, tl.rand(seed, offset))
    tl.store(iout_ptr, tl.randint(seed, offset))
`

// TestPhiloxKnownAnswers checks tl.philox against the Random123 known-answer vectors for
// philox4x32_10 (kat_vectors: ctr[4], key[2] -> out[4]).
func TestPhiloxKnownAnswers(t *testing.T) {
	f, err := Specialize("kat.py", philoxKernel, "kat",
		map[string]string{"out_ptr": "*u32", "seed": "i64", "c0": "u32", "c1": "u32", "c2": "u32", "c3": "u32"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	vectors := []struct {
		ctr [4]uint32
		key [2]uint32
		out [4]uint32
	}{
		{[4]uint32{0, 0, 0, 0}, [2]uint32{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff}, [4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0}, [4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	}
	for _, v := range vectors {
		// Triton's philox takes the key as one 64-bit seed: low word k0, high word k1.
		seed := uint64(v.key[1])<<32 | uint64(v.key[0])
		e := &scalarEval{t: t}
		const base = 1000
		e.run(f, []sv{{u: base}, {u: seed}, {u: uint64(v.ctr[0])}, {u: uint64(v.ctr[1])}, {u: uint64(v.ctr[2])}, {u: uint64(v.ctr[3])}})
		for i := 0; i < 4; i++ {
			got := uint32(e.mem[base+uint64(i)].u)
			if got != v.out[i] {
				t.Errorf("ctr=%08x key=%08x: out[%d] = %08x, want %08x", v.ctr, v.key, i, got, v.out[i])
			}
		}
	}
}

// philoxRef is an independent Philox 4x32-10 written from the Random123 paper.
func philoxRef(ctr [4]uint32, key [2]uint32) [4]uint32 {
	const m0, m1, w0, w1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
	for r := 0; r < 10; r++ {
		hi0, lo0 := bits.Mul32(m0, ctr[0])
		hi1, lo1 := bits.Mul32(m1, ctr[2])
		ctr = [4]uint32{hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0}
		key[0] += w0
		key[1] += w1
	}
	return ctr
}

// TestRandMatchesTriton checks tl.rand and tl.randint against Triton's definitions computed
// here directly: randint is the first Philox word of (offset, 0, 0, 0) keyed by the seed, and
// rand maps it through uint_to_uniform_float.
func TestRandMatchesTriton(t *testing.T) {
	f, err := Specialize("kat.py", philoxKernel, "uniform",
		map[string]string{"out_ptr": "*fp32", "iout_ptr": "*u32", "seed": "i32", "offset": "i32"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ seed, offset int32 }{{0, 0}, {42, 7}, {-5, 123456}, {1 << 30, -1}} {
		e := &scalarEval{t: t}
		e.run(f, []sv{{u: 0}, {u: 100}, {u: uint64(uint32(c.seed))}, {u: uint64(uint32(c.offset))}})
		// The seed is widened to 64 bits (sign-extended) before splitting into the key.
		s64 := uint64(int64(c.seed))
		want := philoxRef([4]uint32{uint32(c.offset), 0, 0, 0}, [2]uint32{uint32(s64), uint32(s64 >> 32)})[0]
		x := int32(want)
		if x < 0 {
			x = -x - 1
		}
		wantF := float32(float32(x) * float32(4.6566127342e-10))
		gotF, gotI := e.mem[0].f, uint32(e.mem[100].u)
		if gotI != want {
			t.Errorf("randint(%d, %d) = %08x, want %08x", c.seed, c.offset, gotI, want)
		}
		if float32(gotF) != wantF || gotF < 0 || gotF >= 1 || math.IsNaN(gotF) {
			t.Errorf("rand(%d, %d) = %v, want %v", c.seed, c.offset, gotF, wantF)
		}
	}
}

func TestRandnShape(t *testing.T) {
	src := `import triton
import triton.language as tl


@triton.jit
def normal(out_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.randn(seed, offs))


@triton.jit
def normal4(out_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a, b, c, d = tl.randn4x(seed, offs)
    e, f, g, h = tl.rand4x(seed, offs)
    tl.store(out_ptr + offs, a + b + c + d + e + f + g + h)
`
	f, err := Specialize("n.py", src, "normal", map[string]string{"out_ptr": "*fp32", "seed": "i64"}, map[string]any{"BLOCK": 64})
	if err != nil {
		t.Fatal(err)
	}
	// randn uses the cosine half of one Box-Muller pair: the sine and the Philox words it
	// does not need are removed as dead code (the mulhi of round 10's c2 and of round 9's c0,
	// which only feeds c2 and c3).
	counts := countOps(f.Body, nil)
	want := map[ir.Op]int{ir.Log: 1, ir.Sqrt: 1, ir.Cos: 1, ir.Sin: 0, ir.MulHi: 18}
	for op, n := range want {
		if counts[op] != n {
			t.Errorf("randn: %s: %d instructions, want %d", op, counts[op], n)
		}
	}
	// With CSE, rand4x and randn4x share one Philox stream (same seed and offsets).
	f4, err := SpecializeWith(Options{CSE: true}, "n.py", src, "normal4", map[string]string{"out_ptr": "*fp32", "seed": "i64"}, map[string]any{"BLOCK": 64})
	if err != nil {
		t.Fatal(err)
	}
	counts = countOps(f4.Body, nil)
	want = map[ir.Op]int{ir.Log: 2, ir.Sqrt: 2, ir.Cos: 2, ir.Sin: 2, ir.MulHi: 20}
	for op, n := range want {
		if counts[op] != n {
			t.Errorf("randn4x+rand4x: %s: %d instructions, want %d", op, counts[op], n)
		}
	}
	st := f.Body.Instrs[len(f.Body.Instrs)-1]
	if st.Op != ir.Store || !st.Args[1].Type.Equal(ir.Tile(ir.F32, 64)) {
		t.Errorf("last instruction %s %v, want a store of fp32[64]", st.Op, fmt.Sprint(st.Args[1].Type))
	}
}
