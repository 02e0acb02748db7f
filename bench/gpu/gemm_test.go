package main

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/widejit/widejit/internal/half"
	"github.com/widejit/widejit/jit/cuda"
	"github.com/widejit/widejit/lowering"
)

// The GEMM check accepts an fp16 output that is the exact product rounded to fp16 and refuses
// zeros, a NaN and one sampled element off by 1% + 0.2 (a 16-wide K slice lost errs by ~1).
func TestGEMMCheck(t *testing.T) {
	in, err := newGEMMInputs(gemmCase{"float16", ""})
	if err != nil {
		t.Fatal(err)
	}
	y := make([]byte, 2*gemmSize*gemmSize)
	if r := in.check(y); r <= 1 {
		t.Fatalf("zeros pass the check: %g", r)
	}
	// the elements check samples, computed here from the fp16 bytes themselves
	rng := rand.New(rand.NewPCG(7, 7))
	var first int
	for s := range gemmSamples {
		i, j := rng.IntN(gemmSize), rng.IntN(gemmSize)
		var ref float64
		for k := range gemmSize {
			x := half.F16ToF32(binary.LittleEndian.Uint16(in.xb[2*(i*gemmSize+k):]))
			w := half.F16ToF32(binary.LittleEndian.Uint16(in.wb[2*(j*gemmSize+k):]))
			ref += float64(x) * float64(w)
		}
		if s == 0 {
			first = i*gemmSize + j
		}
		binary.LittleEndian.PutUint16(y[2*(i*gemmSize+j):], half.F32ToF16(float32(ref)))
	}
	if r := in.check(y); !(r <= 1) {
		t.Fatalf("the rounded exact product fails the check: %g", r)
	}
	good := binary.LittleEndian.Uint16(y[2*first:])
	binary.LittleEndian.PutUint16(y[2*first:], half.F32ToF16(half.F16ToF32(good)*1.01+0.2))
	if r := in.check(y); r <= 1 {
		t.Fatalf("an element 1%% + 0.2 off passes: %g", r)
	}
	binary.LittleEndian.PutUint16(y[2*first:], half.F32ToF16(float32(math.NaN())))
	if r := in.check(y); !math.IsNaN(r) {
		t.Fatalf("a NaN gives %g", r)
	}
}

// The GEMM timed first on each arch is the tile a run on such a device gets: the built-in
// Hopper tile on sm_90a (a cc 9.0 GPU's default), 64x64 on sm_90 and sm_80; IEEE fp32 has no
// Hopper tile.
func TestGEMMLaunchIsTheRunsPlan(t *testing.T) {
	for _, c := range []struct {
		gemm gemmCase
		arch string
		want string
	}{
		{gemmCase{"float16", ""}, "sm_90a", "bm128-bn128-bk64-w8-s4"},
		{gemmCase{"float32", lowering.PrecisionHigh}, "sm_90a", "bm128-bn128-bk32-w8-s4"},
		{gemmCase{"float32", lowering.PrecisionHighest}, "sm_90a", "bm64-bn64-bk32-w4"},
		{gemmCase{"bfloat16", ""}, "sm_90", "bm64-bn64-bk32-w4-s3"},
	} {
		l, err := gemmLaunchOn(c.gemm, cuda.GenericDevice(c.arch))
		if err != nil {
			t.Fatal(err)
		}
		if l.TunablesID != c.want {
			t.Errorf("%s on %s: %s, want %s", c.gemm, c.arch, l.TunablesID, c.want)
		}
	}
}
