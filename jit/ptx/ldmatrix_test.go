package ptx

import (
	"encoding/binary"
	"maps"
	"testing"

	"github.com/widejit/widejit/jit/ptx/ptxemu"
)

// ldmatrixPTX copies 32 rows of 8 b16 values (row r, column c holds 8r+c) from global memory
// to shared memory, then every lane l loads with ldmatrix.x4 (row address: row l) and
// ldmatrix.x2.trans (row l%16), and stores its six registers at out[6l..6l+5].
const ldmatrixPTX = `.version 7.8
.target sm_80
.address_size 64
.extern .shared .align 16 .b8 wj_smem[];
.visible .entry k(
	.param .u64 k_param_0,
	.param .u64 k_param_1
)
.maxntid 32, 1, 1
{
	.reg .b32 %r<20>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [k_param_0];
	ld.param.u64 %rd2, [k_param_1];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, wj_smem;
	mul.wide.u32 %rd3, %r1, 16;
	add.s64 %rd4, %rd1, %rd3;
	ld.global.v4.b32 {%r3, %r4, %r5, %r6}, [%rd4];
	mad.lo.u32 %r7, %r1, 16, %r2;
	st.shared.v4.b32 [%r7], {%r3, %r4, %r5, %r6};
	bar.sync 0;
	ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r8, %r9, %r10, %r11}, [%r7];
	and.b32 %r12, %r1, 15;
	mad.lo.u32 %r13, %r12, 16, %r2;
	ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r14, %r15}, [%r13];
	mul.wide.u32 %rd5, %r1, 24;
	add.s64 %rd6, %rd2, %rd5;
	st.global.v2.b32 [%rd6], {%r8, %r9};
	st.global.v2.b32 [%rd6+8], {%r10, %r11};
	st.global.v2.b32 [%rd6+16], {%r14, %r15};
	ret;
}
`

// The emulator's ldmatrix against the PTX ISA's fragment layout, computed by hand: lane l's
// register i of an .x4 holds row l/4 of matrix i (rows 8i..8i+7 of the tile), columns
// 2(l%4) and 2(l%4)+1, the first in the low half; with .trans, rows 2(l%4) and 2(l%4)+1 of
// matrix i at column l/4.
func TestEmulatedLdmatrix(t *testing.T) {
	prog, err := ptxemu.Parse(ldmatrixPTX)
	if err != nil {
		t.Fatal(err)
	}
	mem := &ptxemu.Memory{}
	in, inBytes := mem.Alloc(512)
	out, outBytes := mem.Alloc(32 * 24)
	for e := range 256 {
		binary.LittleEndian.PutUint16(inBytes[2*e:], uint16(e))
	}
	if err := ptxemu.Run(prog, mem, [3]int{1, 1, 1}, []uint64{in, out}, 512); err != nil {
		t.Fatal(err)
	}
	val := func(row, col int) uint32 { return uint32(8*row + col) }
	for l := range 32 {
		var want [6]uint32
		for i := range 4 {
			r, c := 8*i+l/4, 2*(l%4)
			want[i] = val(r, c) | val(r, c+1)<<16
		}
		for i := range 2 {
			r, c := 8*i+2*(l%4), l/4
			want[4+i] = val(r, c) | val(r+1, c)<<16
		}
		for j, w := range want {
			if got := binary.LittleEndian.Uint32(outBytes[24*l+4*j:]); got != w {
				t.Errorf("lane %d register %d: %#08x, want %#08x", l, j, got, w)
			}
		}
	}
	// every phase reads (the st.shared.v4: 4 phases of 8 lanes, writes) 8 consecutive rows of
	// 16 bytes: 128 contiguous bytes over all 32 banks
	banks, err := ptxemu.RunBanks(prog, mem, [3]int{1, 1, 1}, []uint64{in, out}, 512)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[int]int{1: 4 + 2}; !maps.Equal(banks.Ldmatrix, want) {
		t.Errorf("ldmatrix phases by bank conflict degree: %v, want %v", banks.Ldmatrix, want)
	}
	if want := map[int]int{1: 4}; !maps.Equal(banks.Stores, want) {
		t.Errorf("st.shared phases by bank conflict degree: %v, want %v", banks.Stores, want)
	}
	if ptxas, err := FindPtxas("."); err == nil {
		if _, err := Assemble(ptxas, "sm_80", ldmatrixPTX); err != nil {
			t.Errorf("the hand-written kernel does not assemble: %v", err)
		}
	}
}
