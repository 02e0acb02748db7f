package ir

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// sampleFunc builds a function that touches every encoded field: constexprs, named params,
// tiles, a For with a region and loop-carried value, float and int attributes, Ints, Str, and
// a position in another file (an inlined helper).
func sampleFunc() *Func {
	f := &Func{Name: "k", File: "k.py", Consts: []ConstBinding{{"BLOCK", "16"}, {"DT", "fp16"}}}
	x := f.NewParam("x_ptr", PtrTo(F16))
	n := f.NewParam("n", Scalar(I32))
	b := &Block{}
	f.Body = b
	at := func(l, c int) Pos { return Pos{File: "k.py", Line: l, Col: c} }
	pid := f.Emit(b, ProgramID, at(3, 11), []Type{Scalar(I32)})
	pid.Int = 1
	ar := f.Emit(b, Arange, at(4, 5), []Type{Tile(I32, 16)})
	ar.Ints = []int{0, 16}
	zero := f.Emit(b, Const, at(5, 1), []Type{Tile(F32, 16)})
	zero.Float = math.Inf(-1)
	lb := f.Emit(b, Const, at(6, 1), []Type{Scalar(I32)})
	lb.Int = -7
	step := f.Emit(b, Const, at(6, 1), []Type{Scalar(I32)})
	step.Int = 1
	body := f.NewBlock(Scalar(I32), Tile(F32, 16))
	sp := f.Emit(body, Splat, Pos{File: "helper.py", Line: 2, Col: 9}, []Type{Tile(I32, 16)}, body.Args[0])
	cv := f.Emit(body, Cast, at(8, 2), []Type{Tile(F32, 16)}, sp.Result())
	add := f.Emit(body, Add, at(8, 2), []Type{Tile(F32, 16)}, body.Args[1], cv.Result())
	f.Emit(body, Yield, at(8, 2), nil, add.Result())
	loop := f.Emit(b, For, at(7, 1), []Type{Tile(F32, 16)}, lb.Result(), n, step.Result(), zero.Result())
	loop.Regions = []*Block{body}
	pr := f.Emit(b, Print, at(9, 1), nil, loop.Result(), ar.Result(), pid.Result(), x)
	pr.Str = "acc: \"quoted\""
	red := f.Emit(b, Reduce, at(10, 1), []Type{Tile(F32, 1)}, loop.Result())
	red.Ints = []int{ReduceMax, 1}
	loop.Results[0].Name = "acc"
	return f
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	f := sampleFunc()
	data := Encode(f)
	if !bytes.HasPrefix(data, []byte("WJIR\x01")) {
		t.Fatalf("encoding does not start with the magic and format 1: %q", data[:5])
	}
	g, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.String() != g.String() {
		t.Fatalf("printed IR differs after a round trip:\n%s\nvs\n%s", f, g)
	}
	// Fields the printer does not show.
	in := g.Body.Instrs[2]
	if !math.IsInf(in.Float, -1) {
		t.Errorf("const float = %v, want -Inf", in.Float)
	}
	sp := g.Body.Instrs[5].Regions[0].Instrs[0]
	if sp.Pos != (Pos{File: "helper.py", Line: 2, Col: 9}) {
		t.Errorf("helper position = %v", sp.Pos)
	}
	if g.Body.Instrs[0].Pos != (Pos{File: "k.py", Line: 3, Col: 11}) {
		t.Errorf("position = %v", g.Body.Instrs[0].Pos)
	}
	if sp.Args[0] != g.Body.Instrs[5].Regions[0].Args[0] {
		t.Error("a use does not point at its definition after decoding")
	}
	if g.Body.Instrs[5].Results[0].Def != g.Body.Instrs[5] {
		t.Error("result Def not restored")
	}
	if g.Params[0].Name != "x_ptr" || !g.Params[0].Type.Ptr || g.Params[0].Type.Elem != F16 {
		t.Errorf("param = %+v", g.Params[0])
	}
	// New values made after decoding must not collide with decoded IDs.
	if v := g.NewValue(Scalar(I32), ""); v.ID <= 14 {
		t.Errorf("NewValue after Decode gave ID %d, which may collide", v.ID)
	}
	if !bytes.Equal(Encode(g), data) {
		t.Error("re-encoding the decoded function gives different bytes")
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	good := Encode(sampleFunc())
	cases := map[string]struct {
		data []byte
		want string
	}{
		"empty":      {nil, "bad magic"},
		"magic":      {[]byte("XXIR\x01"), "bad magic"},
		"format":     {append([]byte("WJIR\x02"), good[5:]...), "format 2"},
		"truncated":  {good[:len(good)-3], "truncated"},
		"trailing":   {append(append([]byte(nil), good...), 0), "trailing"},
		"huge count": {[]byte("WJIR\x01\xff\xff\xff\xff\x0f"), "exceeds"},
		"bad op":     {encodeRaw(func(e *encoder) { e.uvarint(0); e.uvarint(1); e.buf = append(e.buf, 200) }), "bad op code"},
		"undefined id": {encodeRaw(func(e *encoder) {
			e.uvarint(0)
			e.uvarint(1)
			e.buf = append(e.buf, byte(Neg))
			e.uvarint(1)
			e.uvarint(42)
		}), "before it is defined"},
	}
	for name, c := range cases {
		_, err := Decode(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, c.want)
		}
	}
}

// encodeRaw writes a header for a function with no consts or params, then body bytes.
func encodeRaw(body func(e *encoder)) []byte {
	e := &encoder{}
	e.buf = append(e.buf, encodingMagic[:]...)
	e.uvarint(EncodingFormat)
	e.str("f")
	e.str("f.py")
	e.uvarint(0)
	e.uvarint(0)
	body(e)
	return e.buf
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(sampleFunc()))
	f.Add([]byte("WJIR\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Decode(data)
		if err != nil {
			return
		}
		_ = g.String()
		// Whatever decodes must re-encode to canonical bytes that decode to the same function
		// (the input itself may use non-minimal varints).
		canon := Encode(g)
		h, err := Decode(canon)
		if err != nil {
			t.Fatalf("re-encoded function does not decode: %v", err)
		}
		if !bytes.Equal(Encode(h), canon) || h.String() != g.String() {
			t.Fatalf("decode/encode is not stable")
		}
	})
}
