package ir

import (
	"strings"
	"testing"
)

func TestVerifyAcceptsValidIR(t *testing.T) {
	f := &Func{Name: "k", Body: &Block{}}
	x := f.NewParam("x", PtrTo(F32))
	n := f.NewParam("n", Scalar(I32))
	b := f.Body
	ar := f.Emit(b, Arange, Pos{}, []Type{Tile(I32, 8)})
	ar.Ints = []int{0, 8}
	ps := f.Emit(b, Splat, Pos{}, []Type{{Elem: F32, Ptr: true, Shape: []int{8}}}, x).Result()
	p := f.Emit(b, PtrAdd, Pos{}, []Type{ps.Type}, ps, ar.Result()).Result()
	ns := f.Emit(b, Splat, Pos{}, []Type{Tile(I32, 8)}, n).Result()
	m := f.Emit(b, Cmp, Pos{}, []Type{Tile(I1, 8)}, ar.Result(), ns)
	m.Int = CmpLT
	zero := f.Emit(b, Const, Pos{}, []Type{Tile(F32, 8)}).Result()
	ld := f.Emit(b, Load, Pos{}, []Type{Tile(F32, 8)}, p, m.Result(), zero).Result()
	// for i in range(0, n): acc = acc + ld
	lb := f.Emit(b, Const, Pos{}, []Type{Scalar(I32)}).Result()
	one := f.Emit(b, Const, Pos{}, []Type{Scalar(I32)})
	one.Int = 1
	body := f.NewBlock(Scalar(I32), Tile(F32, 8))
	sum := f.Emit(body, Add, Pos{}, []Type{Tile(F32, 8)}, body.Args[1], ld).Result()
	f.Emit(body, Yield, Pos{}, nil, sum)
	loop := f.Emit(b, For, Pos{}, []Type{Tile(F32, 8)}, lb, n, one.Result(), zero)
	loop.Regions = []*Block{body}
	f.Emit(b, Store, Pos{}, nil, p, loop.Result(), m.Result())
	if err := Verify(f); err != nil {
		t.Fatalf("valid IR rejected: %v\n%s", err, f)
	}
}

func TestVerifyRejects(t *testing.T) {
	cases := []struct {
		name  string
		build func(f *Func, b *Block, x, n *Value)
		msg   string
	}{
		{"add of different types", func(f *Func, b *Block, x, n *Value) {
			c := f.Emit(b, Const, Pos{Line: 3}, []Type{Scalar(I64)}).Result()
			f.Emit(b, Add, Pos{Line: 4}, []Type{Scalar(I32)}, n, c)
		}, ":4:0: add: operand"},
		{"use before definition", func(f *Func, b *Block, x, n *Value) {
			ghost := f.NewValue(Scalar(I32), "ghost")
			f.Emit(b, Add, Pos{}, []Type{Scalar(I32)}, n, ghost)
		}, "not defined before its use"},
		{"value from a sibling region", func(f *Func, b *Block, x, n *Value) {
			c := f.Emit(b, Cmp, Pos{}, []Type{Scalar(I1)}, n, n).Result()
			then := &Block{}
			inner := f.Emit(then, Add, Pos{}, []Type{Scalar(I32)}, n, n).Result()
			f.Emit(then, Yield, Pos{}, nil)
			els := &Block{}
			f.Emit(els, Neg, Pos{}, []Type{Scalar(I32)}, inner)
			f.Emit(els, Yield, Pos{}, nil)
			in := f.Emit(b, If, Pos{}, nil, c)
			in.Regions = []*Block{then, els}
		}, "not defined before its use"},
		{"yield type mismatch", func(f *Func, b *Block, x, n *Value) {
			c := f.Emit(b, Cmp, Pos{}, []Type{Scalar(I1)}, n, n).Result()
			then, els := &Block{}, &Block{}
			f.Emit(then, Yield, Pos{}, nil, n)
			fl := f.Emit(els, Const, Pos{}, []Type{Scalar(F32)}).Result()
			f.Emit(els, Yield, Pos{}, nil, fl)
			in := f.Emit(b, If, Pos{}, []Type{Scalar(I32)}, c)
			in.Regions = []*Block{then, els}
		}, "yield value 0 has type fp32, want i32"},
		{"missing terminator", func(f *Func, b *Block, x, n *Value) {
			c := f.Emit(b, Cmp, Pos{}, []Type{Scalar(I1)}, n, n).Result()
			in := f.Emit(b, If, Pos{}, nil, c)
			in.Regions = []*Block{{}, {}}
		}, "no terminator"},
		{"yield in the body", func(f *Func, b *Block, x, n *Value) {
			f.Emit(b, Yield, Pos{}, nil)
		}, "terminator must be the last instruction of a region"},
		{"for bounds of mixed dtypes", func(f *Func, b *Block, x, n *Value) {
			c := f.Emit(b, Const, Pos{}, []Type{Scalar(I64)}).Result()
			body := f.NewBlock(Scalar(I32))
			f.Emit(body, Yield, Pos{}, nil)
			in := f.Emit(b, For, Pos{}, nil, n, c, n)
			in.Regions = []*Block{body}
		}, "scalars of one integer dtype"},
		{"load with a bad mask", func(f *Func, b *Block, x, n *Value) {
			o := f.Emit(b, Const, Pos{}, []Type{Scalar(F32)}).Result()
			f.Emit(b, Load, Pos{}, []Type{Scalar(F32)}, x, n, o)
		}, "load mask"},
		{"store of the wrong element type", func(f *Func, b *Block, x, n *Value) {
			f.Emit(b, Store, Pos{}, nil, x, n)
		}, "store i32 into *fp32"},
		{"exp on fp16", func(f *Func, b *Block, x, n *Value) {
			h := f.Emit(b, Const, Pos{}, []Type{Scalar(F16)}).Result()
			f.Emit(b, Exp, Pos{}, []Type{Scalar(F16)}, h)
		}, "takes fp32 or fp64"},
		{"bitcast of different widths", func(f *Func, b *Block, x, n *Value) {
			in := f.Emit(b, Cast, Pos{}, []Type{Scalar(I64)}, n)
			in.Int = 1
		}, "bitcast between different widths"},
		{"broadcast of an incompatible dim", func(f *Func, b *Block, x, n *Value) {
			ar := f.Emit(b, Arange, Pos{}, []Type{Tile(I32, 4)})
			ar.Ints = []int{0, 4}
			f.Emit(b, Broadcast, Pos{}, []Type{Tile(I32, 8)}, ar.Result())
		}, "broadcast i32[4] to i32[8]"},
		{"dot shape mismatch", func(f *Func, b *Block, x, n *Value) {
			a := f.Emit(b, Const, Pos{}, []Type{Tile(F16, 16, 8)}).Result()
			c := f.Emit(b, Const, Pos{}, []Type{Tile(F32, 16, 16)}).Result()
			f.Emit(b, Dot, Pos{}, []Type{Tile(F32, 16, 16)}, a, a, c)
		}, "dot"},
		{"reduce result shape", func(f *Func, b *Block, x, n *Value) {
			a := f.Emit(b, Const, Pos{}, []Type{Tile(F32, 4, 8)}).Result()
			in := f.Emit(b, Reduce, Pos{}, []Type{Tile(F32, 8)}, a)
			in.Int, in.Ints = 1, []int{ReduceSum, 0}
		}, "result 0 has type fp32[8], want fp32[4]"},
		{"value defined twice", func(f *Func, b *Block, x, n *Value) {
			in := f.Emit(b, Neg, Pos{}, []Type{Scalar(I32)}, n)
			b.Instrs = append(b.Instrs, in)
		}, "defined twice"},
	}
	for _, c := range cases {
		f := &Func{Name: "k", Body: &Block{}}
		x := f.NewParam("x", PtrTo(F32))
		n := f.NewParam("n", Scalar(I32))
		c.build(f, f.Body, x, n)
		err := Verify(f)
		if err == nil {
			t.Errorf("%s: accepted:\n%s", c.name, f)
			continue
		}
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %q, want it to contain %q", c.name, err, c.msg)
		}
	}
}

func TestVerifyErrorOfTheFunction(t *testing.T) {
	// A rule of the whole function has no position or op to name: the message stands alone.
	if err := Verify(&Func{Name: "k"}); err == nil || err.Error() != "function has no body" {
		t.Errorf("no body: %v", err)
	}
	f := &Func{Name: "k", Body: &Block{}}
	f.Body.Args = []*Value{f.NewValue(Scalar(I32), "")}
	if err := Verify(f); err == nil || err.Error() != "the function body takes no block arguments" {
		t.Errorf("body arguments: %v", err)
	}
}
