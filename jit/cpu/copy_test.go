package cpu

import (
	"fmt"
	"math/rand"
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
