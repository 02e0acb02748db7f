package ptx

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit/ptx/ptxemu"
)

// shflPTX: two warps; thread t holds 1000 + t and stores, for mask m = 1, 2, 4, 8, 16, what
// shfl.sync.bfly.b32 with mask m hands it, at out[5t..5t+4].
func shflPTX() string {
	var b strings.Builder
	b.WriteString(`.version 7.8
.target sm_80
.address_size 64
.visible .entry k(
	.param .u64 k_param_0
)
.maxntid 64, 1, 1
{
	.reg .b32 %r<20>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [k_param_0];
	mov.u32 %r1, %tid.x;
	add.u32 %r2, %r1, 1000;
	mul.wide.u32 %rd2, %r1, 20;
	add.s64 %rd3, %rd1, %rd2;
`)
	for i, m := range []int{1, 2, 4, 8, 16} {
		fmt.Fprintf(&b, "\tshfl.sync.bfly.b32 %%r%d, %%r2, %d, 31, -1;\n", 3+i, m)
		fmt.Fprintf(&b, "\tst.global.b32 [%%rd3+%d], %%r%d;\n", 4*i, 3+i)
	}
	b.WriteString("\tret;\n}\n")
	return b.String()
}

// The emulator's butterfly shuffle: lane l of a warp reads lane l^mask of the same warp.
func TestEmulatedShflBfly(t *testing.T) {
	text := shflPTX()
	prog, err := ptxemu.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	mem := &ptxemu.Memory{}
	out, outBytes := mem.Alloc(64 * 20)
	if err := ptxemu.Run(prog, mem, [3]int{1, 1, 1}, []uint64{out}, 0); err != nil {
		t.Fatal(err)
	}
	for tid := range 64 {
		for i, m := range []int{1, 2, 4, 8, 16} {
			want := uint32(1000 + (tid &^ 31) + ((tid % 32) ^ m))
			if got := binary.LittleEndian.Uint32(outBytes[20*tid+4*i:]); got != want {
				t.Errorf("thread %d, mask %d: %d, want %d", tid, m, got, want)
			}
		}
	}
	if ptxas, err := FindPtxas("."); err == nil {
		if _, err := Assemble(ptxas, "sm_80", text); err != nil {
			t.Errorf("the hand-written kernel does not assemble: %v", err)
		}
	}
}
