package cpu

import (
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/widejit/widejit/triton/ir"
	"math/rand"
	"testing"

	"github.com/widejit/widejit/jit"
)

func TestSymbolicMasksAgainstGo(t *testing.T) {
	const block = 16
	for _, p := range [][3]int{{16, 16, 0}, {9, 12, 3}, {0, 5, 1}, {16, 0, 0}, {5, 16, 20}} {
		n, m, lo := p[0], p[1], p[2]
		k := loadKernel(t, filepath.Join("testdata", "masks.py"), "masks_kernel", map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "m": "i32", "lo": "i32"},
			map[string]any{"BLOCK": int64(block)})
		x := make([]float32, block*block)
		for i := range x {
			x[i] = float32(i)
		}
		const sentinel = 777
		outLen := block*block + 2*block + 2*block
		out := make([]float32, outLen)
		for i := range out {
			out[i] = sentinel
		}
		ob := f32Buf(t, out)
		if err := k.Launch(grid1(1), []jit.Arg{buf(f32Buf(t, x)), buf(ob), scalar(int64(n)), scalar(int64(m)), scalar(int64(lo))}); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, outLen)
		for i := range want {
			want[i] = sentinel
		}
		for r := range block {
			for c := range block {
				on := r >= c && c >= lo && r < n && c < m
				v := float32(-1)
				if on {
					v = x[r*block+c]
				}
				if on || c == 0 {
					want[r*block+c] = v * 2
				}
			}
		}
		for c := range block {
			rev := block - 1 - c
			if rev < m {
				want[block*block+c] = x[rev]
			} else {
				want[block*block+c] = 0
			}
			if int32(int64(c)*1000000000) < 0 {
				want[block*block+block+c] = 1
			} else {
				want[block*block+block+c] = 0
			}
			if c < block/2 {
				want[block*block+2*block+2*c] = float32(c)
			}
		}
		got := ob.f32()
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("n=%d m=%d lo=%d: out[%d] = %v, want %v", n, m, lo, i, got[i], want[i])
			}
		}
	}
}

// withoutSymbolicTiles compiles kernels with every integer tile materialized, for
// differential tests.
func withoutSymbolicTiles(t *testing.T) {
	disableLazy = true
	t.Cleanup(func() { disableLazy = false })
}

func TestSymbolicAndMaterializedTilesAgree(t *testing.T) {
	run := func() [][]float32 {
		var outs [][]float32
		// vector add with a tail, softmax, matmul with tails, attention (block pointers).
		k := loadKernel(t, filepath.Join(tutorialKernels, "vector_add.py"), "add_kernel",
			map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}, map[string]any{"BLOCK_SIZE": int64(64)})
		rng := rand.New(rand.NewSource(9))
		x, y := randF32(rng, 300, 1), randF32(rng, 300, 1)
		o := f32Buf(t, make([]float32, 320))
		if err := k.Launch(grid1(5), []jit.Arg{buf(f32Buf(t, x)), buf(f32Buf(t, y)), buf(o), scalar(int64(300))}); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, o.f32())
		mk := loadKernel(t, filepath.Join(tutorialKernels, "matmul.py"), "matmul_kernel", matmulSig, map[string]any{
			"BLOCK_SIZE_M": int64(16), "BLOCK_SIZE_N": int64(32), "BLOCK_SIZE_K": int64(16), "GROUP_SIZE_M": int64(3), "ACTIVATION": "leaky_relu"})
		a, b := randF32(rng, 45*37, 1), randF32(rng, 37*50, 1)
		c := f32Buf(t, make([]float32, 45*50))
		if err := runMatmul(t, mk, f32Buf(t, a), f32Buf(t, b), c, 45, 50, 37, 16, 32); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, c.f32())
		ak := loadKernel(t, filepath.Join(tutorialKernels, "flash_attention.py"), "_attn_fwd", attentionSig,
			map[string]any{"N_CTX": int64(64), "HEAD_DIM": int64(16), "BLOCK_M": int64(16), "BLOCK_N": int64(16), "STAGE": int64(3)})
		q := randF32(rng, 2*64*16, 1)
		ao := f32Buf(t, make([]float32, 2*64*16))
		lse := f32Buf(t, make([]float32, 2*64))
		if err := ak.Launch([3]int{4, 2, 1}, attentionArgs(f32Buf(t, q), f32Buf(t, q), f32Buf(t, q), lse, ao, 0.3, 1, 2, 64, 16)); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, ao.f32(), lse.f32())
		return outs
	}
	symbolic := run()
	withoutSymbolicTiles(t)
	eager := run()
	for i := range symbolic {
		for j := range symbolic[i] {
			if math.Float32bits(symbolic[i][j]) != math.Float32bits(eager[i][j]) {
				t.Fatalf("kernel %d: element %d: symbolic %v, materialized %v", i, j, symbolic[i][j], eager[i][j])
			}
		}
	}
}

func TestVectorLoopsAndTails(t *testing.T) {
	// 100 lanes: three AVX2 blocks of 32 and a tail of 4, against Go; vector-vector through
	// a kernel, vector-scalar directly.
	rng := rand.New(rand.NewSource(4))
	a, b := randF32(rng, 100, 3), randF32(rng, 100, 3)
	const s = float32(1.75)
	for _, c := range []struct {
		op  ir.Op
		ref func(x, y float32) float32
	}{
		{ir.Add, func(x, y float32) float32 { return x + y }},
		{ir.Sub, func(x, y float32) float32 { return x - y }},
		{ir.Mul, func(x, y float32) float32 { return x * y }},
		{ir.Div, func(x, y float32) float32 { return x / y }},
	} {
		z := floatOps(t, c.op, a, b)
		for i := range z {
			if z[i] != c.ref(a[i], b[i]) {
				t.Fatalf("%s[%d] = %v, want %v", c.op, i, z[i], c.ref(a[i], b[i]))
			}
		}
		for _, scalarFirst := range []bool{false, true} {
			z := make([]float32, len(a))
			arithScalarF32(c.op, scalarFirst, a, s, z)
			for i := range z {
				want := c.ref(a[i], s)
				if scalarFirst {
					want = c.ref(s, a[i])
				}
				if z[i] != want {
					t.Fatalf("%s scalarFirst=%v [%d] = %v, want %v", c.op, scalarFirst, i, z[i], want)
				}
			}
		}
	}
}

func TestGatheredRowsAndColumnsAgainstGo(t *testing.T) {
	const block, stride = 8, 10
	for _, perm := range [][]int64{{0, 1, 2, 3, 4, 5, 6, 7}, {7, 0, 3, 3, 1, 6, 2, 5}, {2, 3, 4, 5, 6, 7, 8, 9}} {
		for _, lazy := range []bool{true, false} {
			disableLazy = !lazy
			k := loadKernel(t, filepath.Join("testdata", "gather.py"), "gather_kernel", map[string]string{"x_ptr": "*fp32", "idx_ptr": "*i32", "out_ptr": "*fp32", "stride": "i32"},
				map[string]any{"BLOCK": int64(block)})
			disableLazy = false
			x := make([]float32, stride*stride)
			for i := range x {
				x[i] = float32(i) * 0.5
			}
			out := f32Buf(t, make([]float32, 3*block*block))
			if err := k.Launch(grid1(1), []jit.Arg{buf(f32Buf(t, x)), buf(intBuf(t, ir.I32, perm)), buf(out), scalar(int64(stride))}); err != nil {
				t.Fatal(err)
			}
			got := out.f32()
			for i := range block {
				for j := range block {
					want := []float32{
						x[int(perm[i])*stride+j] + float32(int64(j)-2*perm[i]),
						x[i*stride+int(perm[j])],
						x[-int(perm[i])+stride*block-1-j],
					}
					for q, w := range want {
						if g := got[q*block*block+i*block+j]; g != w {
							t.Fatalf("perm %v lazy %v: out%d[%d,%d] = %v, want %v", perm, lazy, q, i, j, g, w)
						}
					}
				}
			}
		}
	}
}

func TestStreamingStoresCopyExactly(t *testing.T) {
	// storeF32 with the streaming path forced on (a large bufBytes): every alignment of the
	// destination and a length with a tail, against copy.
	src := make([]float32, 5000)
	for i := range src {
		src[i] = float32(i) + 0.5
	}
	for shift := range 17 {
		dst := make([]float32, len(src)+32)
		storeF32(dst[shift:shift+len(src)], src, 1<<40)
		for i := range dst {
			want := float32(0)
			if i >= shift && i < shift+len(src) {
				want = src[i-shift]
			}
			if dst[i] != want {
				t.Fatalf("shift %d: dst[%d] = %v, want %v", shift, i, dst[i], want)
			}
		}
	}
}

// splitConds + row (column conditions solved once, row conditions per row) against each
// lane's conditions evaluated directly, on random 2-D and 3-D masks mixing row-only,
// column-only and diagonal conditions, and more row conditions than the fast path holds.
func TestSplitMaskAgainstLanes(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	for trial := range 400 {
		shape := []int{1 + r.Intn(5), 1 + r.Intn(7)}
		if trial%3 == 0 {
			shape = append([]int{1 + r.Intn(3)}, shape...)
		}
		outer := len(shape) - 1
		conds := make([]cond, r.Intn(12))
		for i := range conds {
			a := affine{base: int64(r.Intn(21) - 10)}
			switch r.Intn(3) {
			case 0: // column only
				a.strides[outer] = int64(r.Intn(7) - 3)
			case 1: // row only
				a.strides[r.Intn(outer)] = int64(r.Intn(7) - 3)
			default:
				for d := range shape {
					a.strides[d] = int64(r.Intn(7) - 3)
				}
			}
			conds[i] = cond{a}
		}
		sm := splitConds(conds, outer, shape[outer])
		for it := newRowIter(shape); it.more(); it.next() {
			lo, hi := sm.row(&it)
			for j := range it.n {
				live := true
				for _, c := range conds {
					v := c.a.base + c.a.strides[outer]*int64(j)
					for d := range outer {
						v += c.a.strides[d] * int64(it.idx[d])
					}
					live = live && v < 0
				}
				if got := j >= lo && j < hi; got != live {
					t.Fatalf("trial %d shape %v row %v lane %d: live %v, want %v (interval [%d,%d))", trial, shape, it.idx[:outer], j, got, live, lo, hi)
				}
			}
		}
	}
}

// Literal integer tiles in index arithmetic and masks (iw = ow * 1 - 1 + kw, iw >= 0,
// 2 - iw <= 1) as a padded 1-D convolution over channel rows writes them: symbolic (the
// literals fold into affine forms), materialized, and a Go loop agree exactly.
func TestLiteralTileOperandsAgainstGo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lit.py")
	if err := os.WriteFile(path, []byte(litConvSource), 0o644); err != nil {
		t.Fatal(err)
	}
	const c, w, blockC, blockP = 5, 21, 8, 8
	rng := rand.New(rand.NewSource(3))
	x := randF32(rng, c*w, 1)
	want := make([]float32, c*w)
	for ch := range c {
		for o := range w {
			var s float32
			for kw := range 3 {
				if iw := o - 1 + kw; iw >= 0 && iw < w {
					s += x[ch*w+iw] * float32(kw+1)
				}
			}
			want[ch*w+o] = s
		}
	}
	run := func() []float32 {
		k := loadKernel(t, path, "lit_conv", map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "C": "i32", "W": "i32"},
			map[string]any{"BLOCK_C": int64(blockC), "BLOCK_P": int64(blockP)})
		o := f32Buf(t, make([]float32, c*w))
		if err := k.Launch(grid1((w+blockP-1)/blockP), []jit.Arg{buf(f32Buf(t, x)), buf(o), scalar(int64(c)), scalar(int64(w))}); err != nil {
			t.Fatal(err)
		}
		return o.f32()
	}
	symbolic := run()
	withoutSymbolicTiles(t)
	eager := run()
	for i := range want {
		if !bitsEq(symbolic[i], want[i]) || !bitsEq(eager[i], want[i]) {
			t.Fatalf("element %d: symbolic %v, materialized %v, want %v", i, symbolic[i], eager[i], want[i])
		}
	}
}

// litConvSource is a padded 1-D convolution over channel rows written with integer literal
// tiles, as the flat conv template once was.
const litConvSource = `import triton
import triton.language as tl


@triton.jit
def lit_conv(x_ptr, out_ptr, C, W, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr):
    cs = tl.arange(0, BLOCK_C)
    ow = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    acc = tl.zeros((BLOCK_C, BLOCK_P), dtype=tl.float32)
    for kw in tl.static_range(3):
        iw = ow * 1 - 1 + kw
        m = (cs[:, None] < C) & (iw[None, :] >= 0) & (iw[None, :] < W) & (2 - iw[None, :] <= 1 + W)
        x = tl.load(x_ptr + cs[:, None] * W + iw[None, :], mask=m, other=0.0)
        acc += x * (kw + 1)
    tl.store(out_ptr + cs[:, None] * W + ow[None, :], acc, mask=(cs[:, None] < C) & (ow[None, :] < W))
`

// tl.where under a symbolic condition: on whole tiles where it holds everywhere, nowhere,
// or on some lanes only (rows of a 2-D tile against n, columns against m), with an operand
// that is used again afterwards (not moved) and one that is dead (moved).
func TestSelectUnderUniformSymbolicMask(t *testing.T) {
	const src = `
import triton
import triton.language as tl

@triton.jit
def sel(x_ptr, y_ptr, o_ptr, p_ptr, n, m, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)[:, None]
    c = tl.arange(0, BLOCK)[None, :]
    offs = tl.program_id(0) * BLOCK * BLOCK + r * BLOCK + c
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs) * 2.0
    z = tl.where((r < n) & (c < m), x, y)
    tl.store(o_ptr + offs, z)
    tl.store(p_ptr + offs, x + 1.0)
`
	const block = 8
	k := compileKernel(t, "sel.py", src, "sel", map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "o_ptr": "*fp32",
		"p_ptr": "*fp32", "n": "i32", "m": "i32"}, map[string]any{"BLOCK": int64(block)})
	rng := rand.New(rand.NewSource(5))
	x, y := randF32(rng, 2*block*block, 1), randF32(rng, 2*block*block, 1)
	for _, nm := range [][2]int64{{block, block}, {100, 9}, {0, block}, {block, -3}, {3, block}, {block, 5}, {2, 6}} {
		o, p := f32Buf(t, make([]float32, len(x))), f32Buf(t, make([]float32, len(x)))
		if err := k.Launch(grid1(2), []jit.Arg{buf(f32Buf(t, x)), buf(f32Buf(t, y)), buf(o), buf(p), scalar(nm[0]), scalar(nm[1])}); err != nil {
			t.Fatal(err)
		}
		for i := range x {
			r, c := int64(i%(block*block)/block), int64(i%block)
			want := y[i] * 2
			if r < nm[0] && c < nm[1] {
				want = x[i]
			}
			if o.f32()[i] != want || p.f32()[i] != x[i]+1 {
				t.Fatalf("n=%d m=%d: lane %d: where %v (want %v), x+1 %v (want %v)", nm[0], nm[1], i, o.f32()[i], want, p.f32()[i], x[i]+1)
			}
		}
	}
}

// Tiles whose live lanes are one rectangle move with one bounds check (memOp.moveRect): the
// values match a Go loop for whole, edge and empty rectangles, and an access past the buffer
// names the same offset as the materialized path's lane-by-lane check.
func TestLiveRectanglesAgainstGo(t *testing.T) {
	const br, bc = 8, 16
	sig := map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "R": "i32", "C": "i32", "R2": "i32", "c0": "i32", "xs": "i32", "os": "i32"}
	consts := map[string]any{"BLOCK_R": int64(br), "BLOCK_C": int64(bc)}
	launch := func(p [6]int, outLen int) ([]float32, error) {
		k := loadKernel(t, filepath.Join("testdata", "rect.py"), "rect_kernel", sig, consts)
		R, C, R2, c0, xs, ostride := p[0], p[1], p[2], p[3], p[4], p[5]
		x := make([]float32, (br-1)*xs+bc)
		for i := range x {
			x[i] = float32(i)
		}
		out := make([]float32, outLen)
		for i := range out {
			out[i] = 777
		}
		ob := f32Buf(t, out)
		err := k.Launch(grid1(1), []jit.Arg{buf(f32Buf(t, x)), buf(ob), scalar(int64(R)), scalar(int64(C)), scalar(int64(R2)),
			scalar(int64(c0)), scalar(int64(xs)), scalar(int64(ostride))})
		return ob.f32(), err
	}
	for _, p := range [][6]int{{8, 16, 8, 0, 16, 16}, {5, 11, 7, 3, 20, 18}, {8, 16, 3, 0, 16, 40}, {0, 16, 8, 0, 16, 16}, {8, 16, 8, 16, 16, 16}} {
		R, C, R2, c0, xs, ostride := p[0], p[1], p[2], p[3], p[4], p[5]
		outLen := (br-1)*ostride + bc
		got, err := launch(p, outLen)
		if err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		for r := range br {
			for c := range bc {
				want := float32(777)
				if r < R2 && c >= c0 {
					want = -2
					if r < R && c < C {
						want = float32(r*xs+c) * 2
					}
				}
				if i := r*ostride + c; got[i] != want {
					t.Fatalf("%v: out[%d] (row %d, col %d) = %v, want %v", p, i, r, c, got[i], want)
				}
			}
		}
	}
	// rows 18 apart into 7*18 elements: row 7 starts past the end
	bad := [6]int{8, 16, 8, 0, 16, 18}
	_, fast := launch(bad, 7*18)
	withoutSymbolicTiles(t)
	_, eager := launch(bad, 7*18)
	if fast == nil || eager == nil || !strings.Contains(fast.Error(), "out of bounds") {
		t.Fatalf("past the end: got %v (materialized: %v), want an out-of-bounds error", fast, eager)
	}
	if !strings.Contains(eager.Error(), offsetOf(fast.Error())) {
		t.Errorf("past the end: %q names another offset than the materialized path's %q", fast, eager)
	}
}

// offsetOf is the "element offset N" phrase of an out-of-bounds error.
func offsetOf(msg string) string {
	i := strings.Index(msg, "element offset ")
	if i < 0 {
		return msg
	}
	rest := msg[i:]
	if j := strings.Index(rest, " of "); j > 0 {
		return rest[:j]
	}
	return rest
}

// evenLanes moves dst[j] = src[2j] for the lanes it reports, leaves the rest to its caller,
// reads nothing past src (rows of 2n-1 floats, the last lane's own, as a strided load's
// span ends), and with AVX2 covers every whole block of 8 lanes that src holds.
func TestEvenLanes(t *testing.T) {
	for n := 0; n <= 40; n++ {
		for _, srcLen := range []int{2*n - 1, 2 * n, 2*n + 3} {
			if srcLen < 0 {
				continue
			}
			src := make([]float32, srcLen)
			for i := range src {
				src[i] = float32(i) + 0.25
			}
			dst := make([]float32, n)
			for j := range dst {
				dst[j] = -1
			}
			k := evenLanes(dst, src)
			if k < 0 || k > n || haveVecAVX2 && k != min(n, srcLen/2)&^7 {
				t.Fatalf("n %d, %d floats: %d lanes moved", n, srcLen, k)
			}
			for j := range dst {
				if want := map[bool]float32{true: src[min(2*j, srcLen-1)], false: -1}[j < k]; dst[j] != want {
					t.Fatalf("n %d, %d floats: dst[%d] = %v, want %v (%d lanes moved)", n, srcLen, j, dst[j], want, k)
				}
			}
		}
	}
}

// TestStridedLaneLoads: a load whose lanes are every st-th element of a row (pooling windows
// with a stride, stride phases) moves its live rectangle after one bounds check of its span
// (loadStridedRect; each row's live interval where the mask is no rectangle); the
// values and the `other` lanes match a loop in Go, for unit and larger strides, rows and
// columns cut by the mask, and a live span that would leave the buffer is an error naming
// the load.
func TestStridedLaneLoads(t *testing.T) {
	const br = 4
	lanestride := func(bc int) *Kernel {
		return loadKernel(t, filepath.Join("testdata", "lanestride.py"), "lanestride_kernel",
			map[string]string{"x_ptr": "*fp32", "out_ptr": "*fp32", "R": "i32", "C": "i32", "c0": "i32", "xs": "i32", "st": "i32"},
			map[string]any{"BLOCK_R": int64(br), "BLOCK_C": int64(bc)})
	}
	// (BLOCK_C 64: rows long enough for the AVX2 stride-2 copy, evenLanes, and its Go tail)
	for bc, cases := range map[int][][5]int{
		8:  {{4, 8, 0, 24, 3}, {3, 5, 1, 17, 2}, {4, 8, 2, 16, 2}, {2, 8, 0, 9, 1}, {0, 8, 0, 24, 3}},
		64: {{4, 64, 0, 130, 2}, {3, 61, 3, 140, 2}, {4, 17, 1, 40, 2}, {4, 64, 0, 127, 2}, {2, 9, 0, 19, 2}, {4, 40, 5, 121, 3}},
	} {
		k := lanestride(bc)
		for _, p := range cases {
			r, c, c0, xs, st := p[0], p[1], p[2], p[3], p[4]
			x := make([]float32, br*xs+bc*st)
			for i := range x {
				x[i] = float32(i) + 0.5
			}
			out := make([]float32, br*bc)
			ob := f32Buf(t, out)
			if err := k.Launch(grid1(1), []jit.Arg{buf(f32Buf(t, x)), buf(ob), scalar(int64(r)), scalar(int64(c)), scalar(int64(c0)), scalar(int64(xs)), scalar(int64(st))}); err != nil {
				t.Fatalf("%v: %v", p, err)
			}
			got := ob.f32()
			for i := range br {
				for j := range bc {
					want := float32(-1)
					if i < r && j < c && j >= c0 {
						want = x[i*xs+j*st]
					}
					if got[i*bc+j] != want {
						t.Fatalf("BLOCK_C %d, %v: out[%d][%d] = %v, want %v", bc, p, i, j, got[i*bc+j], want)
					}
				}
			}
		}
	}
	k := lanestride(8)
	const bc = 8
	// the last live lane of row 3 lies past the buffer's end
	x := make([]float32, 3*24+5)
	err := k.Launch(grid1(1), []jit.Arg{buf(f32Buf(t, x)), buf(f32Buf(t, make([]float32, br*bc))), scalar(int64(4)), scalar(int64(8)), scalar(int64(0)), scalar(int64(24)), scalar(int64(3))})
	if err == nil || !strings.Contains(err.Error(), "load") {
		t.Fatalf("a strided row past the buffer: %v, want an out-of-bounds load error", err)
	}
}
