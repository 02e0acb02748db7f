package cpu

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
)

// columnRunsKernel loads a tile of a dense [M, P] buffer at a flat convolution's gathered
// pixel index rp = (q // Wp) * OW + q % Wp (columns in runs of OW consecutive elements, a
// jump at each row end; its two gathered parts added to the pointer one by one, as a folded
// convolution's sample and pixel offsets are), under a mask of live rows and pixels
// (materialized: rp < P is no affine condition), other -1, and stores it densely.
const columnRunsKernel = `import triton
import triton.language as tl


@triton.jit
def runs(x_ptr, y_ptr, M, P, Wp, OW, BM: tl.constexpr, BP: tl.constexpr):
    pid = tl.program_id(0)
    q = pid * BP + tl.arange(0, BP)
    rn = tl.arange(0, BM)
    qi = pid * BP + tl.arange(0, BP)
    rp = (qi // Wp) * OW + qi % Wp
    v = tl.load(x_ptr + rn[:, None] * P + (qi // Wp * OW)[None, :] + (qi % Wp)[None, :], mask=(rn[:, None] < M) & (rp[None, :] < P), other=-1.0)
    tl.store(y_ptr + pid * BM * BP + rn[:, None] * BP + q[None, :] - pid * BP, v)
`

// columnRunsLazyKernel is columnRunsKernel under a symbolic mask: live rows and the pixels
// below QL (q < QL instead of rp < P), as conv_flat.py masks its dense operands where that
// bound implies rp < P.
// Its pointer adds the gathered row part first, as a folded convolution's epilogue adds its
// sample's (a row of pointers broadcast down the rows: still one buffer's offsets).
var columnRunsLazyKernel = strings.NewReplacer("(rp[None, :] < P)", "(q[None, :] < QL)", "Wp, OW, BM", "Wp, OW, QL, BM",
	"x_ptr + rn[:, None] * P + (qi // Wp * OW)[None, :]", "x_ptr + (qi // Wp * OW)[None, :] + rn[:, None] * P").Replace(columnRunsKernel)

// TestLoadColumnRuns: such a load (loadColumnRuns: a copy per run of consecutive live lanes)
// gives every lane of the tile, live or not, as the lane-by-lane definition does, for row
// widths where runs end inside and across tiles, under a materialized and a symbolic mask;
// a buffer too short for a live run reports the load's kernel line.
func TestLoadColumnRuns(t *testing.T) {
	for _, lazy := range []bool{false, true} {
		testLoadColumnRuns(t, lazy)
	}
}

func testLoadColumnRuns(t *testing.T, lazy bool) {
	const bm, bp = 16, 32
	src, sig := columnRunsKernel, map[string]string{"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "P": "i32", "Wp": "i32", "OW": "i32"}
	if lazy {
		src, sig["QL"] = columnRunsLazyKernel, "i32"
	}
	k := compileKernel(t, "runs.py", src, "runs", sig, map[string]any{"BM": int64(bm), "BP": int64(bp)})
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ m, wp, ow, rows int }{{11, 7, 5, 9}, {16, 10, 10, 6}, {5, 26, 24, 4}, {16, 3, 1, 20}} {
		if lazy && c.wp > 2*c.ow {
			continue // q < QL would not keep rp below P (a bound conv_flat.py does not use then)
		}
		p := c.ow * c.rows
		ql := (c.rows-1)*c.wp + c.ow // Q: the flat pixels up to the last output pixel
		x := make([]float32, c.m*p)
		for i := range x {
			x[i] = rng.Float32()
		}
		programs := (c.wp*c.rows + bp - 1) / bp
		y := f32Buf(t, make([]float32, programs*bm*bp))
		args := []jit.Arg{buf(f32Buf(t, x)), buf(y), scalar(int64(c.m)), scalar(int64(p)), scalar(int64(c.wp)), scalar(int64(c.ow))}
		if lazy {
			args = append(args, scalar(int64(ql)))
		}
		before := columnRunLoads.Load()
		if err := k.Launch(grid1(programs), args); err != nil {
			t.Fatal(err)
		}
		want := int64(programs)
		if lazy && c.wp == c.ow {
			want = 0 // contiguous under a symbolic mask: the affine row walk's
		}
		if n := columnRunLoads.Load() - before; n != want {
			t.Errorf("lazy %v, M %d Wp %d OW %d: %d loads by column runs, want %d", lazy, c.m, c.wp, c.ow, n, want)
		}
		got := y.f32()
		for pid := range programs {
			for r := range bm {
				for j := range bp {
					q := pid*bp + j
					rp := q/c.wp*c.ow + q%c.wp
					want := float32(-1)
					if r < c.m && (!lazy && rp < p || lazy && q < ql) {
						want = x[r*p+rp]
					}
					if g := got[pid*bm*bp+r*bp+j]; !bitsEq(g, want) {
						t.Fatalf("lazy %v, M %d Wp %d OW %d: program %d row %d lane %d = %g, want %g", lazy, c.m, c.wp, c.ow, pid, r, j, g, want)
					}
				}
			}
		}
		// a buffer one row short: the live lanes of the last row are out of it
		short := f32Buf(t, x[:(c.m-1)*p])
		err := k.Launch(grid1(programs), append([]jit.Arg{buf(short), buf(y)}, args[2:]...))
		if err == nil || !strings.Contains(err.Error(), "runs.py:12") {
			t.Fatalf("M %d Wp %d OW %d, a short buffer: error %v, want one naming runs.py:12", c.m, c.wp, c.ow, err)
		}
	}
}
