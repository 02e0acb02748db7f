package cpu

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/triton/ir"
)

// TestDeviceAssertFails runs tl.device_assert: lanes in range pass and the kernel's stores
// land; an out-of-range lane stops the launch with the kernel, the assert's position, the
// program id, the message and the lane; masked-off lanes are not checked; a scalar condition
// and a symbolic one (an index range compared with n) are checked too.
func TestDeviceAssertFails(t *testing.T) {
	src := e2eHeader + `@triton.jit
def gather(ids_ptr, out_ptr, n, V, LIMIT: tl.constexpr, BLOCK: tl.constexpr):
    tl.device_assert(V > 0, "V positive")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if LIMIT:
        tl.device_assert(offs < n, "offs below n")
    ids = tl.load(ids_ptr + offs, mask=mask, other=0)
    tl.device_assert((ids >= 0) & (ids < V), "index out of range", mask=mask)
    tl.store(out_ptr + offs, ids * 2, mask=mask)
`
	sig := map[string]string{"ids_ptr": "*i32", "out_ptr": "*i32", "n": "i32", "V": "i32"}
	f := specialize(t, src, "gather", sig, map[string]any{"LIMIT": false, "BLOCK": 8})
	launch := func(f *ir.Func, ids []int64, n, v int64, programs int) ([]int64, error) {
		in := intBuf(t, ir.I32, ids)
		out := intBuf(t, ir.I32, make([]int64, len(ids)))
		err := run(t, f, grid1(programs), buf(in), buf(out), scalar(n), scalar(v))
		return ints(out), err
	}
	ids := []int64{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, -1, 99, 99, 99}
	out, err := launch(f, ids, 12, 8, 2)
	if err != nil {
		t.Fatalf("in range: %v", err)
	}
	for i := range 12 {
		if out[i] != 2*ids[i] {
			t.Fatalf("out[%d] = %d, want %d", i, out[i], 2*ids[i])
		}
	}

	ids[12], ids[13] = 0, 8 // program 1, lane 5: V itself
	_, err = launch(f, ids, 14, 8, 2)
	want := "kernel gather: e2e.py:13:5: program (1, 0, 0): device assertion failed: index out of range (element 5 of [8])"
	if err == nil || err.Error() != want {
		t.Errorf("index V: err = %v\nwant %s", err, want)
	}
	ids[13] = 7
	ids[12] = -1 // program 1, lane 4
	_, err = launch(f, ids, 14, 8, 2)
	if err == nil || !strings.HasSuffix(err.Error(), "index out of range (element 4 of [8])") {
		t.Errorf("index -1: err = %v", err)
	}

	_, err = launch(f, ids, 12, 0, 2)
	want = "kernel gather: e2e.py:7:5: program (0, 0, 0): device assertion failed: V positive"
	if err == nil || err.Error() != want {
		t.Errorf("scalar assert: err = %v\nwant %s", err, want)
	}

	g := specialize(t, src, "gather", sig, map[string]any{"LIMIT": true, "BLOCK": 8})
	if _, err := launch(g, ids[:8], 8, 8, 1); err != nil {
		t.Errorf("offs below n: %v", err)
	}
	_, err = launch(g, ids, 11, 8, 2)
	if err == nil || !strings.Contains(err.Error(), "program (1, 0, 0): device assertion failed: offs below n (element 3 of [8])") {
		t.Errorf("symbolic condition: err = %v", err)
	}
}

// TestFailingProgramsReportTheLowest launches a grid in which several programs fail on a
// device with more workers than cores, many times: the error always names the
// lowest-numbered failing program, however the programs were spread over the workers, and
// the programs before it still ran (their stores landed).
func TestFailingProgramsReportTheLowest(t *testing.T) {
	src := e2eHeader + `@triton.jit
def check(ids_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ids = tl.load(ids_ptr + offs)
    tl.device_assert(ids >= 0, "negative id")
    tl.store(out_ptr + offs, ids + 1)
`
	f := specialize(t, src, "check", map[string]string{"ids_ptr": "*i32", "out_ptr": "*i32"}, map[string]any{"BLOCK": 4})
	a, err := Target{}.Codegen(f, jit.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewDevice(8).Load(a)
	if err != nil {
		t.Fatal(err)
	}
	const programs = 64
	for _, bad := range [][]int{{0, 1, 2, 63}, {37, 5, 60}, {63}} {
		ids := make([]int64, 4*programs)
		for _, p := range bad {
			ids[4*p+2] = -1
		}
		for try := range 50 {
			in := intBuf(t, ir.I32, ids)
			out := intBuf(t, ir.I32, make([]int64, len(ids)))
			err := k.Launch(grid1(programs), []jit.Arg{buf(in), buf(out)})
			lowest := slices.Min(bad)
			want := fmt.Sprintf("program (%d, 0, 0): device assertion failed: negative id (element 2 of [4])", lowest)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("failing programs %v, try %d: err = %v, want %q", bad, try, err, want)
			}
			got := ints(out)
			for i := range 4 * lowest {
				if got[i] != ids[i]+1 {
					t.Fatalf("failing programs %v, try %d: out[%d] = %d: program %d, before the failure, did not run", bad, try, i, got[i], i/4)
				}
			}
		}
	}
}
