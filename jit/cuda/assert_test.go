package cuda

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/widejit/widejit/jit"
	"github.com/widejit/widejit/jit/ptx"
	"github.com/widejit/widejit/jit/ptx/ptxemu"
	"github.com/widejit/widejit/triton/ir"
)

const boundedKernel = `import triton
import triton.language as tl

@triton.jit
def bounded(ids_ptr, n, V, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ids = tl.load(ids_ptr + offs, mask=offs < n, other=0)
    tl.device_assert(ids < V, "id below V", mask=offs < n)
`

// On the GPU, a device assert's failure reaches Sync with its position, message and program,
// the flag is cleared after it, and masked lanes are not checked. The same checks run on the
// PTX emulator, which reports at the launch.
func TestDeviceAssertOnGPU(t *testing.T) {
	checkDeviceAsserts(t, ptxemu.NewDevice(ptx.Target{Arch: "sm_80"}, ptx.ParamTypes))
	checkDeviceAsserts(t, openOrSkip(t))
}

func checkDeviceAsserts(t *testing.T, d jit.Device) {
	k, err := jit.NewCompiler(jit.CompilerOptions{}).Load(d, jit.Source{File: "bounded.py", Text: boundedKernel, Fn: "bounded"},
		jit.Spec{Sig: map[string]string{"ids_ptr": "*i32", "n": "i32", "V": "i32"}, Consts: map[string]any{"BLOCK": int64(128)}})
	if err != nil {
		t.Fatal(err)
	}
	buf, err := d.Alloc(ir.I32, 512)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(buf)
	run := func(bad int) error {
		host := make([]byte, 4*512)
		for i := range 512 {
			v := uint32(i % 7)
			if i == bad || i >= 500 { // lanes 500.. are masked off
				v = 7
			}
			binary.LittleEndian.PutUint32(host[4*i:], v)
		}
		if err := d.Upload(buf, host); err != nil {
			t.Fatal(err)
		}
		if err := k.Launch([3]int{4, 1, 1}, []jit.Arg{{Buf: buf}, {Scalar: int64(500)}, {Scalar: int64(7)}}); err != nil {
			return err
		}
		return d.Sync()
	}
	if err := run(-1); err != nil {
		t.Fatalf("in range: %v", err)
	}
	err = run(300)
	var ae *jit.AssertError
	if !errors.As(err, &ae) || ae.Kernel != "bounded" || ae.Pos != "bounded.py:8:5" || ae.Msg != "id below V" || ae.Program != [3]int64{2, 0, 0} {
		t.Errorf("id 7 at 300: err = %v", err)
	}
	if err := run(-1); err != nil {
		t.Errorf("in range after a failure: %v", err)
	}
}
