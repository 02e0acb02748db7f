package ptx

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/widejit/widejit/jit/ptx/ptxemu"
)

// asyncGroupPTX stages two 16-byte groups with cp.async (the second copies 4 bytes and
// zero-fills 12) over shared memory first filled with 0xAAAAAAAA, and stores what it reads:
// both areas before any wait, after cp.async.wait_group 1 and after wait_group 0.
const asyncGroupPTX = `.version 7.8
.target sm_80
.address_size 64
.extern .shared .align 16 .b8 wj_smem[];
.visible .entry k(
	.param .u64 k_param_0,
	.param .u64 k_param_1
)
.maxntid 1, 1, 1
{
	.reg .b32 %r<12>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [k_param_0];
	ld.param.u64 %rd2, [k_param_1];
	mov.u32 %r1, wj_smem;
	mov.u32 %r2, 0xAAAAAAAA;
	st.shared.v4.b32 [%r1], {%r2, %r2, %r2, %r2};
	st.shared.v4.b32 [%r1+16], {%r2, %r2, %r2, %r2};
	cp.async.ca.shared.global [%r1], [%rd1], 16;
	cp.async.commit_group;
	mov.u32 %r3, 4;
	cp.async.ca.shared.global [%r1+16], [%rd1+16], 16, %r3;
	cp.async.commit_group;
	ld.shared.b32 %r4, [%r1];
	ld.shared.b32 %r5, [%r1+28];
	cp.async.wait_group 1;
	ld.shared.b32 %r6, [%r1+12];
	ld.shared.b32 %r7, [%r1+16];
	cp.async.wait_group 0;
	ld.shared.b32 %r8, [%r1+16];
	ld.shared.b32 %r9, [%r1+28];
	st.global.v4.b32 [%rd2], {%r4, %r5, %r6, %r7};
	st.global.v2.b32 [%rd2+16], {%r8, %r9};
	ret;
}
`

// The emulator's cp.async groups against the PTX ISA's ordering, values by hand: a copy
// lands only at the wait that covers its group, and wait_group N leaves the N most recent
// groups in flight.
func TestEmulatedAsyncGroups(t *testing.T) {
	prog, err := ptxemu.Parse(asyncGroupPTX)
	if err != nil {
		t.Fatal(err)
	}
	mem := &ptxemu.Memory{}
	in, inBytes := mem.Alloc(32)
	out, outBytes := mem.Alloc(24)
	for w := range 8 {
		binary.LittleEndian.PutUint32(inBytes[4*w:], uint32(100+w))
	}
	if err := ptxemu.Run(prog, mem, [3]int{1, 1, 1}, []uint64{in, out}, 32); err != nil {
		t.Fatal(err)
	}
	want := []uint32{
		0xAAAAAAAA, 0xAAAAAAAA, // nothing has landed before a wait
		103,        // wait_group 1: the first group landed...
		0xAAAAAAAA, // ...the second is still in flight
		104, 0,     // wait_group 0: 4 bytes copied, the rest zero-filled
	}
	for i, w := range want {
		if got := binary.LittleEndian.Uint32(outBytes[4*i:]); got != w {
			t.Errorf("read %d: %#x, want %#x", i, got, w)
		}
	}
}

// A thread that ends with copies in flight is refused: they may land after its last read.
func TestEmulatedAsyncNotWaited(t *testing.T) {
	src := strings.Replace(asyncGroupPTX, "cp.async.wait_group 0;", "", 1)
	prog, err := ptxemu.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	mem := &ptxemu.Memory{}
	in, _ := mem.Alloc(32)
	out, _ := mem.Alloc(24)
	err = ptxemu.Run(prog, mem, [3]int{1, 1, 1}, []uint64{in, out}, 32)
	if err == nil || !strings.Contains(err.Error(), "not waited for") {
		t.Fatalf("err = %v, want copies not waited for", err)
	}
}
