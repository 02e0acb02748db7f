package ptx

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/cpu"
	"github.com/widejit/widejit/jit/ptx/ptxemu"
	"github.com/widejit/widejit/triton"
	"github.com/widejit/widejit/triton/ir"
)

const assertSrc = `import triton
import triton.language as tl


@triton.jit
def gather(ids_ptr, out_ptr, n, V, BLOCK: tl.constexpr):
    tl.device_assert(V > 0, "V positive")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    ids = tl.load(ids_ptr + offs, mask=mask, other=0)
    tl.device_assert((ids >= 0) & (ids < V), "index out of range", mask=mask)
    tl.store(out_ptr + offs, ids * 2, mask=mask)
`

// TestDeviceAssertPTX: a kernel with asserts lists them in its artifact and takes the flag
// buffer after its parameters; ptxas assembles it; on the emulator, lanes in range store what
// the CPU backend stores, and a false lane (scalar or in a tile, one CTA of several, masked
// lanes skipped) fails the launch with the CPU backend's error, less the lane, which the GPU
// does not record.
func TestDeviceAssertPTX(t *testing.T) {
	f, err := triton.Specialize("e2e.py", assertSrc, "gather", map[string]string{"ids_ptr": "*i32", "out_ptr": "*i32", "n": "i32", "V": "i32"}, map[string]any{"BLOCK": 64})
	if err != nil {
		t.Fatal(err)
	}
	ptxas, ptxasErr := FindPtxas(".")
	for _, arch := range AllArchs {
		a, err := Target{Arch: arch}.Codegen(f, jit.Spec{})
		if err != nil {
			t.Fatal(err)
		}
		asserts, err := jit.KernelAsserts(a)
		if err != nil {
			t.Fatal(err)
		}
		want := []jit.DeviceAssert{{Pos: "e2e.py:7:5", Msg: "V positive"}, {Pos: "e2e.py:11:5", Msg: "index out of range"}}
		if len(asserts) != 2 || asserts[0] != want[0] || asserts[1] != want[1] {
			t.Fatalf("%s: asserts %v, want %v", arch, asserts, want)
		}
		if !strings.Contains(string(a.Payload), ".param .u64 gather_param_assert") {
			t.Errorf("%s: no flag parameter:\n%s", arch, a.Payload)
		}
		if ptxasErr == nil && arch != "sm_90a" { // CUDA 11.8's ptxas (.ci/setup's) has no sm_90a
			if _, err := Assemble(ptxas, arch, string(a.Payload)); err != nil {
				t.Errorf("%s: %v", arch, err)
			}
		}
	}
	if ptxasErr != nil {
		t.Logf("PTX not assembled: %v (bash .ci/setup installs ptxas)", ptxasErr)
	}

	// 3 CTAs of 64 lanes over 150 indices; the last 42 lanes are masked off and hold -1.
	const n = 150
	run := func(d jit.Device, ids []int64, v int64) ([]byte, error) {
		t.Helper()
		in, _ := d.Alloc(ir.I32, 192)
		out, _ := d.Alloc(ir.I32, 192)
		raw := make([]byte, 4*192)
		for i, x := range ids {
			binary.LittleEndian.PutUint32(raw[4*i:], uint32(x))
		}
		if err := d.Upload(in, raw); err != nil {
			t.Fatal(err)
		}
		a, err := d.Target().Codegen(f, jit.Spec{})
		if err != nil {
			t.Fatal(err)
		}
		k, err := d.Load(a)
		if err != nil {
			t.Fatal(err)
		}
		err = k.Launch([3]int{3, 1, 1}, []jit.Arg{{Buf: in}, {Buf: out}, {Scalar: int64(n)}, {Scalar: v}})
		if err == nil {
			err = d.Sync()
		}
		got := make([]byte, 4*192)
		if err := d.Download(out, got); err != nil {
			t.Fatal(err)
		}
		return got, err
	}
	emu := ptxemu.NewDevice(Target{Arch: "sm_80"}, ParamTypes)
	ids := make([]int64, 192)
	for i := range ids {
		ids[i] = int64(i % 10)
		if i >= n {
			ids[i] = -1
		}
	}
	got, err := run(emu, ids, 10)
	if err != nil {
		t.Fatalf("in range: %v", err)
	}
	ref, err := run(cpu.NewDevice(2), ids, 10)
	if err != nil {
		t.Fatalf("in range, CPU: %v", err)
	}
	if string(got) != string(ref) {
		t.Errorf("in range: the emulated PTX stored other values than the CPU backend")
	}
	for _, c := range []struct {
		lane, id, v int64
	}{{70, 10, 10}, {149, -1, 10}, {0, 0, 0}} {
		bad := append([]int64(nil), ids...)
		bad[c.lane] = c.id
		_, err := run(emu, bad, c.v)
		_, cpuErr := run(cpu.NewDevice(2), bad, c.v)
		var ae, cpuAE *jit.AssertError
		if !errors.As(err, &ae) || !errors.As(cpuErr, &cpuAE) {
			t.Fatalf("index %d at %d, V %d: emulator %v, CPU %v: want assert errors", c.id, c.lane, c.v, err, cpuErr)
		}
		cpuAE.Lane = ""
		if ae.Error() != cpuAE.Error() {
			t.Errorf("index %d at %d, V %d:\n emulator %v\n CPU      %v", c.id, c.lane, c.v, ae, cpuAE)
		}
		// the flag is cleared: the next launch in range passes
		if _, err := run(emu, ids, 10); err != nil {
			t.Errorf("after a failure, in range: %v", err)
		}
	}
}
