package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
)

// The stores of TestFusedStore, after tapsEpilogueKernel's tap nest and BatchNorm-ReLU: out
// elements, the stores each program records (per program, by the tile's first pixel and
// width: where no store may be recorded, 0), and where pixel p of channel o lands (-1:
// nowhere checked against the reference).
var fusedStoreForms = []struct {
	name, body string
	out        int
	recorded   func(q0, bp int) int
	at         func(o, p int) int
	inPlace    bool    // c_ptr is x_ptr's buffer
	kept       float64 // where the stored value is a tl.where: the columns p % 10 >= kept take fill
	fill       float64
}{
	// rows 107 apart from element 3 (a padded row pitch), one store of the whole tile
	{"pitch", `    tl.store(c_ptr + 3 + rn[:, None] * 107 + q[None, :], y, mask=smask)`,
		3 + fxM*107, func(q0, bp int) int { return 1 }, func(o, p int) int { return 3 + o*107 + p }, false, 0, 0},
	// conv_flat.py's row by row store into zero-padded planes: the 100 pixels are 10 rows of
	// 10, each at the interior of a 12 x 12 plane, so the tile's pixels [lo, lo + 10) go to
	// one plane row (and a tile of 64 holds a partial row at either end)
	{"padded-rows", `    for lo in range((pid * BP) // 10 * 10, min(pid * BP + BP, Q), 10):
        tl.store(c_ptr + rn[:, None] * 144 + ((lo // 10 + 1) * 12 + 1 - lo) + q[None, :], y, mask=smask & (q[None, :] >= lo) & (q[None, :] < lo + 10))`,
		fxM * 144, func(q0, bp int) int { return (min(q0+bp, fxQ) - q0/10*10 + 9) / 10 },
		func(o, p int) int { return o*144 + (p/10+1)*12 + 1 + p%10 }, false, 0, 0},
	// two destinations (conv_flat.py's CopyStore): both recorded
	{"copy", `    tl.store(c_ptr + rn[:, None] * Q + q[None, :], y, mask=smask)
    tl.store(c_ptr + 4000 + rn[:, None] * Q + q[None, :], y, mask=smask)`,
		4000 + fxM*fxQ, func(q0, bp int) int { return 2 }, func(o, p int) int { return o*fxQ + p }, false, 0, 0},
	// the same destination twice, the second shifted by a row: it collides with the first
	// (whose order then matters), so it runs the queue and stores on its own (a shift along
	// the columns would reach the next program's pixels, a race between programs)
	{"collide", `    tl.store(c_ptr + rn[:, None] * Q + q[None, :], y, mask=smask)
    tl.store(c_ptr + Q + rn[:, None] * Q + q[None, :], y, mask=smask)`,
		fxQ + fxM*fxQ, func(q0, bp int) int { return 1 }, func(o, p int) int { return -1 }, false, 0, 0},
	// a mask that is no rectangle (a diagonal band): not recorded
	{"band", `    tl.store(c_ptr + rn[:, None] * Q + q[None, :], y, mask=smask & (q[None, :] - rn[:, None] < 50))`,
		fxM * fxQ, func(q0, bp int) int { return 0 }, func(o, p int) int { return -1 }, false, 0, 0},
	// into the input the dots read (later blocks still read it): not recorded
	{"in-place", `    tl.store(c_ptr + rn[:, None] * Q + q[None, :], y, mask=smask)`,
		fxCh*fxXS + fxTaps, func(q0, bp int) int { return 0 }, func(o, p int) int { return -1 }, true, 0, 0},
	// conv_flat.py's padded store: the columns past each output row zeroed by a column mask
	// (a select in the chain) and stored with the rest
	{"padded-where", `    tl.store(c_ptr + 3 + rn[:, None] * 107 + q[None, :], tl.where(q[None, :] % 10 < 8, y, 0.0), mask=smask)`,
		3 + fxM*107, func(q0, bp int) int { return 1 }, func(o, p int) int { return 3 + o*107 + p }, false, 8, 0},
	// conv_flat.py's output with other readers: the plain output and the padded copy, the
	// select left to its store (checked here: the padded copy; the plain one bit for bit)
	{"copy-where", `    tl.store(c_ptr + rn[:, None] * Q + q[None, :], y, mask=smask)
    tl.store(c_ptr + 4000 + rn[:, None] * Q + q[None, :], tl.where(q[None, :] % 10 < 8, y, 0.0), mask=smask)`,
		4000 + fxM*fxQ, func(q0, bp int) int { return 2 }, func(o, p int) int { return 4000 + o*fxQ + p }, false, 8, 0},
	// the select's store first, the accumulator its false operand
	{"where-copy", `    tl.store(c_ptr + 4000 + rn[:, None] * Q + q[None, :], tl.where(q[None, :] % 10 >= 3, -0.5, y), mask=smask)
    tl.store(c_ptr + rn[:, None] * Q + q[None, :], y, mask=smask)`,
		4000 + fxM*fxQ, func(q0, bp int) int { return 2 }, func(o, p int) int { return 4000 + o*fxQ + p }, false, 3, -0.5},
	// the accumulator second, another constant
	{"where-second", `    tl.store(c_ptr + rn[:, None] * Q + q[None, :], tl.where(q[None, :] % 10 >= 3, -0.5, y), mask=smask)`,
		fxM * fxQ, func(q0, bp int) int { return 1 }, func(o, p int) int { return o*fxQ + p }, false, 3, -0.5},
}

// TestFusedStore: the stores of a tap loop's epilogue run inside the panels flush (each
// register block copied to them after its epilogue) exactly where panels_store.go records
// them, counted; every element of the output buffer, the padding the stores leave alone
// included, is bit for bit that of the stores after the flush (the queue off) on every
// micro-kernel set, and the stored values match the float64 reference; 35 live rows of 64,
// 100 live pixels in tiles of 64 and 128.
func TestFusedStore(t *testing.T) {
	defer func() { queueDots = true }()
	d := newFlushEpilogueData()
	x, w, s, sh, sum := d.x, d.w, d.s, d.t, d.sum
	for _, f := range fusedStoreForms {
		for _, bp := range []int{64, 128} {
			if f.inPlace && bp < 128 {
				continue // one program: programs writing the input others read would race
			}
			t.Run(fmt.Sprintf("%s/bp=%d", f.name, bp), func(t *testing.T) {
				src := strings.NewReplacer("LOOPS", flushEpilogueLoops[0].body, "EPILOGUE", flushEpilogueForms[0].body, "STORE", f.body).Replace(tapsEpilogueKernel)
				kn := compileTapsEpilogue(t, src, bp)
				programs, recorded := (fxQ+bp-1)/bp, 0
				for i := range programs {
					recorded += f.recorded(i*bp, bp)
				}
				launch := func() []float32 {
					init := make([]float32, f.out)
					for i := range init {
						init[i] = 7 // what the stores leave alone stays
					}
					if f.inPlace {
						copy(init, x)
					}
					out, xb := f32Buf(t, init), f32Buf(t, x)
					if f.inPlace {
						xb = out
					}
					args := []jit.Arg{buf(xb), buf(f32Buf(t, w)), buf(f32Buf(t, s)), buf(f32Buf(t, sh)), buf(f32Buf(t, sh)), buf(out),
						scalar(int64(fxM)), scalar(int64(fxQ)), scalar(int64(fxXS)), scalar(int64(fxTaps)), scalar(int64(fxCh))}
					if err := kn.Launch(grid1(programs), args); err != nil {
						t.Fatal(err)
					}
					return slices.Clone(out.f32())
				}
				eachMicroKernel(func() {
					inTurn, got, n := launchInTurnThenQueued(launch, &fusedStores)
					if n != int64(recorded) {
						t.Fatalf("%s: %d stores recorded in the flush, want %d", dotKernelName(), n, recorded)
					}
					for i := range got {
						if !bitsEq(got[i], inTurn[i]) {
							t.Fatalf("%s: out[%d] = %g with the stores in the flush, %g after it", dotKernelName(), i, got[i], inTurn[i])
						}
					}
					for o := range fxM {
						for p := range fxQ {
							at := f.at(o, p)
							if at < 0 {
								continue
							}
							want := maxProp64(sum[o*fxQ+p]*float64(s[o])+float64(sh[o]), 0)
							if f.kept > 0 && float64(p%10) >= f.kept {
								want = f.fill
							}
							if g := float64(got[at]); math.IsNaN(want) != math.IsNaN(g) || math.Abs(g-want) > 1e-4*(1+math.Abs(want)) {
								t.Fatalf("%s: channel %d pixel %d = %g, want %g", dotKernelName(), o, p, g, want)
							}
						}
					}
				})
			})
		}
	}
}

// TestQueuedStoresCollide checks collides against the elements two recorded stores write,
// listed one by one: random rectangles of rows 8 apart (and of other strides) in one buffer.
func TestQueuedStoresCollide(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	mem := make([]float32, 400)
	mk := func(stride int) queuedStore {
		rows, cols := 1+r.IntN(4), 1+r.IntN(stride)
		first := r.IntN(len(mem) - (rows-1)*stride - cols)
		span := (rows-1)*stride + cols
		return queuedStore{dst: mem[first : first+span], rowStride: stride, r0: 2, r1: 2 + rows, c0: 5, c1: 5 + cols, first: int64(first)}
	}
	elems := func(s queuedStore) map[int]bool {
		m := map[int]bool{}
		for i := range s.r1 - s.r0 {
			for j := range s.c1 - s.c0 {
				m[int(s.first)+i*s.rowStride+j] = true
			}
		}
		return m
	}
	hits := 0
	for range 20000 {
		s, u := mk(8), mk(8)
		if r.IntN(8) == 0 {
			u = mk(9) // another stride: counted as a collision where they overlap at all
		}
		want := false
		for e := range elems(u) {
			want = want || elems(s)[e]
		}
		got := s.collides(&u)
		if got != want && !(got && s.rowStride != u.rowStride) {
			t.Fatalf("stores at %d (%dx%d, stride %d) and %d (%dx%d, stride %d): collides %v, want %v",
				s.first, s.r1-s.r0, s.c1-s.c0, s.rowStride, u.first, u.r1-u.r0, u.c1-u.c0, u.rowStride, got, want)
		}
		if got != u.collides(&s) {
			t.Fatalf("collides is not symmetric for stores at %d and %d", s.first, u.first)
		}
		if want {
			hits++
		}
	}
	if hits < 1000 {
		t.Fatalf("%d collisions in 20000 pairs: the test does not exercise them", hits)
	}
}
