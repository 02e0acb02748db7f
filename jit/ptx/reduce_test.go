package ptx

import (
	"encoding/binary"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
)

// treeSum is the order the package doc gives for a whole-tile tl.sum over threads threads:
// chunks of k/chunks consecutive elements folded left to right (chunks = min(threads, k/4)),
// chunk pairs j, j^s of a warp added for s = 1, 2, 4, ... (the lower one first), then the
// warps' results left to right.
func treeSum(x []float32, threads int) float32 {
	k := len(x)
	chunks := min(threads, k/4)
	per := k / chunks
	part := make([]float32, chunks)
	for j := range part {
		part[j] = x[j*per]
		for _, v := range x[j*per+1 : (j+1)*per] {
			part[j] += v
		}
	}
	sW := min(chunks, 32)
	for s := 1; s < sW; s *= 2 {
		next := make([]float32, chunks)
		for j := range part {
			lo, hi := j&^s, j|s
			next[j] = part[lo] + part[hi]
		}
		part = next
	}
	sum := part[0]
	for g := sW; g < chunks; g += sW {
		sum += part[g]
	}
	return sum
}

// TestReductionTreeOrder runs whole-row reductions on the PTX emulator, folded in registers
// (16-byte runs under Align16) and from the staged tile (scalar runs), and asks for the
// documented tree's sum bit for bit, and for the first index of tied maxima and minima.
func TestReductionTreeOrder(t *testing.T) {
	const rows, width = 3, 512
	rng := rand.New(rand.NewSource(3))
	x := make([]float32, rows*width)
	for i := range x {
		// Large terms that cancel at every level of the tree, on small ones: another order
		// of the additions rounds the small ones differently.
		x[i] = float32(rng.NormFloat64()*math.Ldexp(1, rng.Intn(24)) + rng.NormFloat64())
	}
	x[width+7], x[width+300] = 1e30, 1e30       // row 1: tied maxima, the first at 7
	x[2*width+9], x[2*width+400] = -1e30, -1e30 // row 2: tied minima, the first at 9
	for _, tc := range []struct {
		name    string
		n       int64
		align16 []string
	}{{"registers", 496, []string{"x_ptr", "n"}}, {"staged", 501, nil}} {
		t.Run(tc.name, func(t *testing.T) {
			rc := runCase{kc: caseNamed("ptx_rowreduce"), grid: [3]int{rows, 1, 1}, scalars: map[string]any{"n": tc.n}, align16: tc.align16}
			if tc.align16 != nil {
				rc.notPTX = []string{"st.shared.v4"} // the tile is not staged
			}
			in := make([]byte, 4*len(x))
			for i, v := range x {
				binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(v))
			}
			out := runEmulated(t, rc, [][]byte{in, make([]byte, 4*3*rows), make([]byte, 4*2*rows), nil})
			for r := range rows {
				row := make([]float32, width)
				copy(row, x[r*width:r*width+int(tc.n)])
				want := treeSum(row, 128)
				got := math.Float32frombits(binary.LittleEndian.Uint32(out[1][4*3*r:]))
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Errorf("row %d: sum %v on the emulator, the documented tree gives %v", r, got, want)
				}
				imax := int32(binary.LittleEndian.Uint32(out[2][4*2*r:]))
				imin := int32(binary.LittleEndian.Uint32(out[2][4*2*r+4:]))
				wmax, wmin := 0, 0
				for i, v := range row {
					if v > row[wmax] {
						wmax = i
					}
					if v < row[wmin] {
						wmin = i
					}
				}
				if int(imax) != wmax || int(imin) != wmin {
					t.Errorf("row %d: argmax, argmin %d, %d on the emulator, want the first %d, %d", r, imax, imin, wmax, wmin)
				}
			}
		})
	}
}

// TestConstantMaskRuns: a comparison the contiguity analysis proves constant over each
// thread's run (the layer norm's cols < N with N divisible by 16, 8 fp16 per run) is computed
// once per run, not once per element.
func TestConstantMaskRuns(t *testing.T) {
	f := caseNamed("ptx_layernorm_1024").specialize(t)
	count := func(align16 []string) int {
		a, err := Target{Arch: "sm_80"}.Codegen(f, jit.Spec{NumWarps: 4, Align16: align16})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(a.Payload), "setp.lt.s32")
	}
	perElem := count([]string{"X", "Y", "W", "B", "stride"}) // N unknown: masks per element
	perRun := count([]string{"X", "Y", "W", "B", "stride", "N"})
	if perRun == 0 || perRun*8 != perElem {
		t.Errorf("%d comparisons cols < N with N divisible by 16, %d without: want one per run of 8", perRun, perElem)
	}
}
