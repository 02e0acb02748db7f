package cpu

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
)

// copyRowsKernel moves a [BR, BC] tile of rows xs apart in x to rows os apart in o at
// element off, under the mask rows < R, cols < C: a copy kernel (conv_pad.py's shape),
// whose loaded tile may be stored from in place.
const copyRowsKernel = `import triton
import triton.language as tl


@triton.jit
def copy_rows(x_ptr, o_ptr, xs, os, off, R, C, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.arange(0, BR)
    c = tl.arange(0, BC)
    m = (r[:, None] < R) & (c[None, :] < C)
    v = tl.load(x_ptr + r[:, None] * xs + c[None, :], mask=m, other=0.0)
    tl.store(o_ptr + off + r[:, None] * os + c[None, :], v, mask=m)
`

// TestCopyKernelMovesRows checks a load stored straight back (storedOnly: moveRect reads a
// strided view of the loaded rows) against the rows it must move: whole tiles and masked
// ones, into another buffer, and within one buffer with the destination overlapping rows
// not yet read, where every stored value must still be the one loaded before the store.
func TestCopyKernelMovesRows(t *testing.T) {
	const br, bc = 16, 16
	kn := compileKernel(t, "copy_rows.py", copyRowsKernel, "copy_rows",
		map[string]string{"x_ptr": "*fp32", "o_ptr": "*fp32", "xs": "i32", "os": "i32", "off": "i32", "R": "i32", "C": "i32"},
		map[string]any{"BR": int64(br), "BC": int64(bc)})
	rng := rand.New(rand.NewSource(9))
	for _, tc := range []struct {
		rows, cols, xs, os, off int
		same                    bool // o is x: rows move within one buffer
	}{
		{16, 16, 20, 18, 2, false}, // whole tile, rows apart in both buffers
		{13, 11, 20, 18, 0, false}, // masked edges
		{16, 16, 16, 16, 16, true}, // down one row: each stored row is the next one to read
		{16, 16, 16, 16, 3, true},  // down 3 elements
		{16, 16, 17, 16, 0, true},  // rows packed closer, toward the start
		{16, 16, 16, 17, 0, true},  // rows spread apart, toward the end
	} {
		t.Run(fmt.Sprintf("%+v", tc), func(t *testing.T) {
			size := br*max(tc.xs, tc.os) + tc.off + bc
			x := randF32(rng, size, 1)
			o := make([]float32, size)
			for i := range o {
				o[i] = -1
			}
			if tc.same {
				copy(o, x)
			}
			want := append([]float32(nil), o...)
			for r := range tc.rows {
				for c := range tc.cols {
					want[tc.off+r*tc.os+c] = x[r*tc.xs+c]
				}
			}
			xb := f32Buf(t, x)
			ob := f32Buf(t, o)
			if tc.same {
				ob = xb
			}
			if err := kn.Launch(grid1(1), []jit.Arg{buf(xb), buf(ob), scalar(int64(tc.xs)), scalar(int64(tc.os)),
				scalar(int64(tc.off)), scalar(int64(tc.rows)), scalar(int64(tc.cols))}); err != nil {
				t.Fatal(err)
			}
			got := ob.f32()
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("element %d = %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
}

// transposeKernel reads a [BR, BC] tile of x's columns (lanes xs apart) and writes it
// transposed into o (rows os apart, lanes 1 apart) and as it was into t (lanes ts apart):
// fp32 rows whose lanes are one arithmetic progression, loaded and stored with one bounds check.
const transposeKernel = `import triton
import triton.language as tl


@triton.jit
def transpose(x_ptr, o_ptr, t_ptr, xs, os, ts, R, C, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.arange(0, BR)
    c = tl.arange(0, BC)
    m = (r[:, None] < R) & (c[None, :] < C)
    v = tl.load(x_ptr + (r % R)[:, None] + c[None, :] * xs, mask=m, other=0.0)
    tl.store(o_ptr + (r % R)[:, None] * os + c[None, :], v, mask=m)
    tl.store(t_ptr + (r % R)[:, None] + c[None, :] * ts, v, mask=m)
`

// TestStridedRowsMove checks lane-strided loads and stores against the elements they must
// move, and that a strided row running out of its buffer is still refused naming its first
// element out of bounds.
func TestStridedRowsMove(t *testing.T) {
	const br, bc = 8, 16
	kn := compileKernel(t, "transpose.py", transposeKernel, "transpose",
		map[string]string{"x_ptr": "*fp32", "o_ptr": "*fp32", "t_ptr": "*fp32", "xs": "i32", "os": "i32", "ts": "i32",
			"R": "i32", "C": "i32"},
		map[string]any{"BR": int64(br), "BC": int64(bc)})
	rng := rand.New(rand.NewSource(4))
	for _, tc := range []struct{ rows, cols, xs, os, ts int }{
		{8, 16, 9, 16, 11}, // whole tile
		{5, 13, 7, 13, 5},  // masked edges, lanes closer than a row
	} {
		t.Run(fmt.Sprintf("%+v", tc), func(t *testing.T) {
			x := randF32(rng, tc.xs*tc.cols, 1)
			o, tt := make([]float32, tc.os*tc.rows), make([]float32, tc.ts*tc.cols)
			xb, ob, tb := f32Buf(t, x), f32Buf(t, o), f32Buf(t, tt)
			if err := kn.Launch(grid1(1), []jit.Arg{buf(xb), buf(ob), buf(tb), scalar(int64(tc.xs)), scalar(int64(tc.os)),
				scalar(int64(tc.ts)), scalar(int64(tc.rows)), scalar(int64(tc.cols))}); err != nil {
				t.Fatal(err)
			}
			for r := range tc.rows {
				for c := range tc.cols {
					want := x[r+c*tc.xs]
					if got := ob.f32()[r*tc.os+c]; got != want {
						t.Fatalf("o[%d][%d] = %v, want %v", r, c, got, want)
					}
					if got := tb.f32()[r+c*tc.ts]; got != want {
						t.Fatalf("t[%d][%d] = %v, want %v", r, c, got, want)
					}
				}
			}
		})
	}
	// x one element short: the last lane of the last row is out of bounds
	x := f32Buf(t, make([]float32, 9*15+7))
	err := kn.Launch(grid1(1), []jit.Arg{buf(x), buf(f32Buf(t, make([]float32, 8*16))), buf(f32Buf(t, make([]float32, 16*16))),
		scalar(int64(9)), scalar(int64(16)), scalar(int64(16)), scalar(int64(8)), scalar(int64(16))})
	if err == nil || !strings.Contains(err.Error(), "element offset 142") {
		t.Errorf("got %v, want an out-of-bounds error naming element offset 142", err)
	}
}
