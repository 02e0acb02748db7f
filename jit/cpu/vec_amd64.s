#include "textflag.h"

// Element-wise fp32 loops, 32 lanes per iteration; n is a multiple of 32 (the Go wrappers do
// the tail). VV: z = x op y. VS: z = x op s. SV: z = s op x.

// VV_LOOP(OP) is the body of func(x, y, z *float32, n int): z = x OP y. Labels are local to
// each TEXT block, so every function can expand it.
#define VV_LOOP(OP) \
	MOVQ x+0(FP), SI; \
	MOVQ y+8(FP), DX; \
	MOVQ z+16(FP), DI; \
	MOVQ n+24(FP), CX; \
	SHRQ $5, CX; \
	JZ done; \
loop: \
	VMOVUPS 0(SI), Y0; \
	VMOVUPS 32(SI), Y1; \
	VMOVUPS 64(SI), Y2; \
	VMOVUPS 96(SI), Y3; \
	OP 0(DX), Y0, Y0; \
	OP 32(DX), Y1, Y1; \
	OP 64(DX), Y2, Y2; \
	OP 96(DX), Y3, Y3; \
	VMOVUPS Y0, 0(DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, 64(DI); \
	VMOVUPS Y3, 96(DI); \
	ADDQ $128, SI; \
	ADDQ $128, DX; \
	ADDQ $128, DI; \
	DECQ CX; \
	JNZ loop; \
done: \
	VZEROUPPER; \
	RET

// SV_LOOP(OP) is the body of func(x, z *float32, n int, s float32): z = s OP x (Go's operand
// order: OP mem, Y15, Y0 computes Y15 OP mem). For + and * that is also x OP s.
#define SV_LOOP(OP) \
	MOVQ x+0(FP), SI; \
	MOVQ z+8(FP), DI; \
	MOVQ n+16(FP), CX; \
	VBROADCASTSS s+24(FP), Y15; \
	SHRQ $5, CX; \
	JZ done; \
loop: \
	OP 0(SI), Y15, Y0; \
	OP 32(SI), Y15, Y1; \
	OP 64(SI), Y15, Y2; \
	OP 96(SI), Y15, Y3; \
	VMOVUPS Y0, 0(DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, 64(DI); \
	VMOVUPS Y3, 96(DI); \
	ADDQ $128, SI; \
	ADDQ $128, DI; \
	DECQ CX; \
	JNZ loop; \
done: \
	VZEROUPPER; \
	RET

// PROP_VV_LOOP(OP) is the body of func(x, y, z *float32, n int): z = OP with NaN propagation.
// OP (VMAXPS/VMINPS) with x as its source operand gives x when either is NaN or both are
// equal; a NaN y is then blended in (so y's NaN wins when both are NaN, as maxProp says).
#define PROP_VV_LOOP(OP) \
	MOVQ x+0(FP), SI; \
	MOVQ y+8(FP), DX; \
	MOVQ z+16(FP), DI; \
	MOVQ n+24(FP), CX; \
	SHRQ $3, CX; \
	JZ done; \
loop: \
	VMOVUPS 0(SI), Y0; \
	VMOVUPS 0(DX), Y1; \
	OP Y0, Y1, Y2; \
	VCMPPS $3, Y1, Y1, Y4; \
	VBLENDVPS Y4, Y1, Y2, Y2; \
	VMOVUPS Y2, 0(DI); \
	ADDQ $32, SI; \
	ADDQ $32, DX; \
	ADDQ $32, DI; \
	DECQ CX; \
	JNZ loop; \
done: \
	VZEROUPPER; \
	RET

// COL_LOOP(OP) is the body of func(x, col, z *float32, rows, n int): z[r*n+j] = x[r*n+j] OP
// col[r] for rows >= 1 rows of n lanes, n a multiple of 8 (a column broadcast over a tile
// whose rows are too short for the 32-lane loops).
#define COL_LOOP(OP) \
	MOVQ x+0(FP), SI; \
	MOVQ col+8(FP), DX; \
	MOVQ z+16(FP), DI; \
	MOVQ rows+24(FP), R8; \
	MOVQ n+32(FP), R9; \
	SHRQ $3, R9; \
row: \
	VBROADCASTSS (DX), Y15; \
	MOVQ R9, CX; \
lane: \
	OP 0(SI), Y15, Y0; \
	VMOVUPS Y0, 0(DI); \
	ADDQ $32, SI; \
	ADDQ $32, DI; \
	DECQ CX; \
	JNZ lane; \
	ADDQ $4, DX; \
	DECQ R8; \
	JNZ row; \
	VZEROUPPER; \
	RET

// func addVVAVX2(x, y, z *float32, n int)
TEXT ·addVVAVX2(SB), NOSPLIT, $0-32
	VV_LOOP(VADDPS)

// func subVVAVX2(x, y, z *float32, n int)
TEXT ·subVVAVX2(SB), NOSPLIT, $0-32
	VV_LOOP(VSUBPS)

// func mulVVAVX2(x, y, z *float32, n int)
TEXT ·mulVVAVX2(SB), NOSPLIT, $0-32
	VV_LOOP(VMULPS)

// func divVVAVX2(x, y, z *float32, n int)
TEXT ·divVVAVX2(SB), NOSPLIT, $0-32
	VV_LOOP(VDIVPS)

// func addVSAVX2(x, z *float32, n int, s float32): z = x + s
TEXT ·addVSAVX2(SB), NOSPLIT, $0-28
	SV_LOOP(VADDPS)

// func mulVSAVX2(x, z *float32, n int, s float32): z = x * s
TEXT ·mulVSAVX2(SB), NOSPLIT, $0-28
	SV_LOOP(VMULPS)

// func subSVAVX2(x, z *float32, n int, s float32): z = s - x
TEXT ·subSVAVX2(SB), NOSPLIT, $0-28
	SV_LOOP(VSUBPS)

// func divSVAVX2(x, z *float32, n int, s float32): z = s / x
TEXT ·divSVAVX2(SB), NOSPLIT, $0-28
	SV_LOOP(VDIVPS)

// func addColsAVX2(x, col, z *float32, rows, n int): z = x + col[row]
TEXT ·addColsAVX2(SB), NOSPLIT, $0-40
	COL_LOOP(VADDPS)

// func mulColsAVX2(x, col, z *float32, rows, n int): z = x * col[row]
TEXT ·mulColsAVX2(SB), NOSPLIT, $0-40
	COL_LOOP(VMULPS)

// func xorVSAVX2(x, z *float32, n int, s float32): z = x with its bits xored with s's (s = -0
// flips the sign: fp32 negation, NaNs included)
TEXT ·xorVSAVX2(SB), NOSPLIT, $0-28
	SV_LOOP(VXORPS)

// func copyNTAVX(dst, src *float32, n int)
// Streams n floats (a multiple of 32; dst 32-byte aligned) with non-temporal stores, which
// skip the read-for-ownership of the destination lines; SFENCE orders them before return.
TEXT ·copyNTAVX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $5, CX
	JZ copynt_done
copynt_loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMOVNTPS Y0, (DI)
	VMOVNTPS Y1, 32(DI)
	VMOVNTPS Y2, 64(DI)
	VMOVNTPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ copynt_loop
copynt_done:
	SFENCE
	VZEROUPPER
	RET

// func copyNTAVX512(dst, src *float32, n int)
// copyNTAVX with whole-cache-line (64-byte) streaming stores; dst 64-byte aligned.
TEXT ·copyNTAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $6, CX
	JZ copynt512_done
copynt512_loop:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS 128(SI), Z2
	VMOVUPS 192(SI), Z3
	VMOVNTPS Z0, (DI)
	VMOVNTPS Z1, 64(DI)
	VMOVNTPS Z2, 128(DI)
	VMOVNTPS Z3, 192(DI)
	ADDQ $256, SI
	ADDQ $256, DI
	DECQ CX
	JNZ copynt512_loop
copynt512_done:
	SFENCE
	VZEROUPPER
	RET

// IEEE maxNum/minNum, 8 lanes per iteration, exactly as maxNum32/minNum32: a NaN operand
// is ignored (both NaN: y), and +0 beats -0 for max (-0 for min). VMAXPS alone returns its
// second operand on equality or NaN, so both orders are taken: where they disagree the
// operands are equal (±0), and AND (max) / OR (min) of the two picks the right zero; NaN
// lanes are then fixed with blends.

// func maxVVAVX2(x, y, z *float32, n int)
TEXT ·maxVVAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DX
	MOVQ z+16(FP), DI
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ maxVVAVX2_done
maxVVAVX2_loop:
	VMOVUPS 0(SI), Y0
	VMOVUPS 0(DX), Y1
	VMAXPS Y1, Y0, Y2
	VMAXPS Y0, Y1, Y3
	VANDPS Y3, Y2, Y2
	VCMPPS $3, Y1, Y1, Y4
	VBLENDVPS Y4, Y0, Y2, Y2
	VCMPPS $3, Y0, Y0, Y5
	VBLENDVPS Y5, Y1, Y2, Y2
	VMOVUPS Y2, 0(DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ CX
	JNZ maxVVAVX2_loop
maxVVAVX2_done:
	VZEROUPPER
	RET

// func minVVAVX2(x, y, z *float32, n int)
TEXT ·minVVAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DX
	MOVQ z+16(FP), DI
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ minVVAVX2_done
minVVAVX2_loop:
	VMOVUPS 0(SI), Y0
	VMOVUPS 0(DX), Y1
	VMINPS Y1, Y0, Y2
	VMINPS Y0, Y1, Y3
	VORPS Y3, Y2, Y2
	VCMPPS $3, Y1, Y1, Y4
	VBLENDVPS Y4, Y0, Y2, Y2
	VCMPPS $3, Y0, Y0, Y5
	VBLENDVPS Y5, Y1, Y2, Y2
	VMOVUPS Y2, 0(DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ CX
	JNZ minVVAVX2_loop
minVVAVX2_done:
	VZEROUPPER
	RET

// func transposeStripAVX2(dst, src *float32, blocks, srcStride, dstStride int)
// Transposes a strip of 8 source rows, 8x8 blocks at a time: block b (source columns
// 8b..8b+7) becomes 8 destination rows of 8 floats. Strides are in bytes.
TEXT ·transposeStripAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), CX
	MOVQ src+8(FP), AX
	MOVQ blocks+16(FP), SI
	MOVQ srcStride+24(FP), R8
	MOVQ dstStride+32(FP), DX
	LEAQ (R8)(R8*2), R9
	LEAQ (R8)(R8*4), R10
	LEAQ (R9)(R8*4), R11
	LEAQ (DX)(DX*2), BX
	LEAQ (DX)(DX*4), R12
	LEAQ (BX)(DX*4), R13
	TESTQ SI, SI
	JZ transposeStrip_done
transposeStrip_loop:
	VMOVUPS (AX), Y0
	VMOVUPS (AX)(R8*1), Y1
	VMOVUPS (AX)(R8*2), Y2
	VMOVUPS (AX)(R9*1), Y3
	VMOVUPS (AX)(R8*4), Y4
	VMOVUPS (AX)(R10*1), Y5
	VMOVUPS (AX)(R9*2), Y6
	VMOVUPS (AX)(R11*1), Y7
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15
	VMOVUPS Y8, (CX)
	VMOVUPS Y9, (CX)(DX*1)
	VMOVUPS Y10, (CX)(DX*2)
	VMOVUPS Y11, (CX)(BX*1)
	VMOVUPS Y12, (CX)(DX*4)
	VMOVUPS Y13, (CX)(R12*1)
	VMOVUPS Y14, (CX)(BX*2)
	VMOVUPS Y15, (CX)(R13*1)
	ADDQ $32, AX
	LEAQ (CX)(DX*8), CX
	DECQ SI
	JNZ transposeStrip_loop
transposeStrip_done:
	VZEROUPPER
	RET

// func mulAddVSSAVX2(x, z *float32, n int, a, b float32)
// z = x*a + b with two roundings (a multiply, then an add: not an FMA), 32 lanes per
// iteration; one pass over memory instead of two.
TEXT ·mulAddVSSAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ z+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSS a+24(FP), Y15
	VBROADCASTSS b+28(FP), Y14
	SHRQ $5, CX
	JZ mulAddVSSAVX2_done
mulAddVSSAVX2_loop:
	VMULPS 0(SI), Y15, Y0
	VMULPS 32(SI), Y15, Y1
	VMULPS 64(SI), Y15, Y2
	VMULPS 96(SI), Y15, Y3
	VADDPS Y14, Y0, Y0
	VADDPS Y14, Y1, Y1
	VADDPS Y14, Y2, Y2
	VADDPS Y14, Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ mulAddVSSAVX2_loop
mulAddVSSAVX2_done:
	VZEROUPPER
	RET

// func mulAddVVAVX2(x, y, a, z *float32, n int)
// z = a + x*y with two roundings (a multiply, then an add: not an FMA), 8 lanes per
// iteration (n a multiple of 8); one pass over memory instead of two.
TEXT ·mulAddVVAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DX
	MOVQ a+16(FP), BX
	MOVQ z+24(FP), DI
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	JZ mulAddVVAVX2_done
mulAddVVAVX2_loop:
	VMOVUPS 0(SI), Y0
	VMULPS 0(DX), Y0, Y0
	VADDPS 0(BX), Y0, Y0
	VMOVUPS Y0, 0(DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, BX
	ADDQ $32, DI
	DECQ CX
	JNZ mulAddVVAVX2_loop
mulAddVVAVX2_done:
	VZEROUPPER
	RET

// func mulAddRowsAVX2(x, w, a, z *float32, rows, n int)
// z[r*n + j] = a[r*n + j] + x[r*n + j]*w[j] for rows of n lanes (n a multiple of 8): the row
// form of mulAddVVAVX2 over a whole tile, one call for all its rows.
TEXT ·mulAddRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), DX
	MOVQ a+16(FP), BX
	MOVQ z+24(FP), DI
	MOVQ rows+32(FP), R8
	MOVQ n+40(FP), R9
	SHRQ $3, R9
	JZ mulAddRowsAVX2_done
	TESTQ R8, R8
	JZ mulAddRowsAVX2_done
mulAddRowsAVX2_row:
	MOVQ DX, R10
	MOVQ R9, CX
mulAddRowsAVX2_lane:
	VMOVUPS 0(SI), Y0
	VMULPS 0(R10), Y0, Y0
	VADDPS 0(BX), Y0, Y0
	VMOVUPS Y0, 0(DI)
	ADDQ $32, SI
	ADDQ $32, R10
	ADDQ $32, BX
	ADDQ $32, DI
	DECQ CX
	JNZ mulAddRowsAVX2_lane
	DECQ R8
	JNZ mulAddRowsAVX2_row
mulAddRowsAVX2_done:
	VZEROUPPER
	RET

// erf for fp32 lanes (erf.go): the Taylor table evaluated 4 lanes at a time in float64.
// Each constant is 4 copies (32 bytes), so it can be a 256-bit memory operand.
DATA erfconst<>+0(SB)/8, $0x7fffffffffffffff
DATA erfconst<>+8(SB)/8, $0x7fffffffffffffff
DATA erfconst<>+16(SB)/8, $0x7fffffffffffffff
DATA erfconst<>+24(SB)/8, $0x7fffffffffffffff
DATA erfconst<>+32(SB)/8, $0x3c30000000000000
DATA erfconst<>+40(SB)/8, $0x3c30000000000000
DATA erfconst<>+48(SB)/8, $0x3c30000000000000
DATA erfconst<>+56(SB)/8, $0x3c30000000000000
DATA erfconst<>+64(SB)/8, $0x4018000000000000
DATA erfconst<>+72(SB)/8, $0x4018000000000000
DATA erfconst<>+80(SB)/8, $0x4018000000000000
DATA erfconst<>+88(SB)/8, $0x4018000000000000
DATA erfconst<>+96(SB)/8, $0x4338000000000000
DATA erfconst<>+104(SB)/8, $0x4338000000000000
DATA erfconst<>+112(SB)/8, $0x4338000000000000
DATA erfconst<>+120(SB)/8, $0x4338000000000000
DATA erfconst<>+128(SB)/8, $0x4040000000000000
DATA erfconst<>+136(SB)/8, $0x4040000000000000
DATA erfconst<>+144(SB)/8, $0x4040000000000000
DATA erfconst<>+152(SB)/8, $0x4040000000000000
DATA erfconst<>+160(SB)/8, $0x3fa0000000000000
DATA erfconst<>+168(SB)/8, $0x3fa0000000000000
DATA erfconst<>+176(SB)/8, $0x3fa0000000000000
DATA erfconst<>+184(SB)/8, $0x3fa0000000000000
DATA erfconst<>+192(SB)/8, $0x1fffffff
DATA erfconst<>+200(SB)/8, $0x1fffffff
DATA erfconst<>+208(SB)/8, $0x1fffffff
DATA erfconst<>+216(SB)/8, $0x1fffffff
DATA erfconst<>+224(SB)/8, $0xfffc000
DATA erfconst<>+232(SB)/8, $0xfffc000
DATA erfconst<>+240(SB)/8, $0xfffc000
DATA erfconst<>+248(SB)/8, $0xfffc000
DATA erfconst<>+256(SB)/8, $0xffffffffffff8000
DATA erfconst<>+264(SB)/8, $0xffffffffffff8000
DATA erfconst<>+272(SB)/8, $0xffffffffffff8000
DATA erfconst<>+280(SB)/8, $0xffffffffffff8000
DATA erfconst<>+288(SB)/8, $0x8000000000000000
DATA erfconst<>+296(SB)/8, $0x8000000000000000
DATA erfconst<>+304(SB)/8, $0x8000000000000000
DATA erfconst<>+312(SB)/8, $0x8000000000000000
GLOBL erfconst<>(SB), RODATA|NOPTR, $320

// func erfF32AVX2(x, z *float32, n int, flags *uint8, table *float64) int
// z[i] = erf(x[i]) for n lanes (a multiple of 4), with FMA; flags[i/4] gets bit i%4 set for
// each lane the caller must recompute with math.Erf: tiny nonzero, large or NaN inputs, and
// values within 2^14 float64 ulps of a float32 rounding midpoint (as erf32 decides); it
// returns the OR of the flags (0: none to recompute). Shuffles (one port on Intel) and the
// chain from x to a lane's table row bound this loop, so the row numbers go through the
// stack rather than VPEXTRD, each 4x2 block of coefficients is two 128-bit loads, one into
// the upper half (VINSERTF128 from memory), and one VUNPCKL/HPD rather than 256-bit row
// loads transposed with lane-crossing shuffles, and the grid point is rounded by the FMA
// that scales x.
TEXT ·erfF32AVX2(SB), NOSPLIT, $32-48
	MOVQ x+0(FP), SI
	MOVQ z+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ flags+24(FP), DX
	MOVQ table+32(FP), R8
	XORL BX, BX
	SHRQ $2, CX
	JZ erfF32AVX2_done
	VMOVUPD erfconst<>+128(SB), Y11 // 32: grid points per unit
	VMOVUPD erfconst<>+160(SB), Y12 // 1/32
	VMOVUPD erfconst<>+96(SB), Y14  // 1.5*2^52: t + it rounds t to an integer, in its low bits
	VMOVUPD erfconst<>+0(SB), Y15   // |x| mask
	VXORPD Y13, Y13, Y13
erfF32AVX2_loop:
	VCVTPS2PD (SI), Y0
	VANDPD Y15, Y0, Y1
	// valid = (|x| >= 2^-60 || x == 0) && |x| < 6: zeros (the dead lanes of a GELU's tile)
	// are row 0's c0, +0, with x's sign
	VCMPPD $0x1D, erfconst<>+32(SB), Y1, Y2
	VCMPPD $0x00, Y13, Y1, Y3
	VORPD Y3, Y2, Y2
	VCMPPD $0x11, erfconst<>+64(SB), Y1, Y3
	VANDPD Y3, Y2, Y2
	VMINPD erfconst<>+64(SB), Y1, Y3
	// f = ax*32 rounded to the nearest integer (erf32's int(ax*32 + 0.5) but at ties, where
	// either grid point is 1/64 away), in one FMA with no dependent rounding step; row
	// offset f*64
	VMOVAPD Y14, Y4
	VFMADD231PD Y11, Y3, Y4
	VPSLLQ $6, Y4, Y5
	VMOVDQU Y5, 0(SP)
	VSUBPD Y14, Y4, Y4
	// h = ax - f/32 (f/32 exact, so one rounding either way), h2 = h*h, h4 = h2*h2
	VFNMADD231PD Y12, Y4, Y3
	VMULPD Y3, Y3, Y1
	VMULPD Y1, Y1, Y10
	MOVL 0(SP), R9
	MOVL 8(SP), R10
	MOVL 16(SP), R11
	MOVL 24(SP), R12
	// c4..c6: B = (c4 + h*c5) + h2*c6
	VMOVUPD 32(R8)(R9*1), X4
	VINSERTF128 $1, 32(R8)(R11*1), Y4, Y4
	VMOVUPD 32(R8)(R10*1), X5
	VINSERTF128 $1, 32(R8)(R12*1), Y5, Y5
	VMOVUPD 48(R8)(R9*1), X6
	VINSERTF128 $1, 48(R8)(R11*1), Y6, Y6
	VMOVUPD 48(R8)(R10*1), X7
	VINSERTF128 $1, 48(R8)(R12*1), Y7, Y7
	VUNPCKLPD Y7, Y6, Y6
	VUNPCKLPD Y5, Y4, Y7
	VUNPCKHPD Y5, Y4, Y5
	VFMADD231PD Y3, Y5, Y7
	VFMADD231PD Y1, Y6, Y7
	// c0..c3: y = ((c0 + h*c1) + h2*(c2 + h*c3)) + h4*B
	VMOVUPD (R8)(R9*1), X4
	VINSERTF128 $1, (R8)(R11*1), Y4, Y4
	VMOVUPD (R8)(R10*1), X5
	VINSERTF128 $1, (R8)(R12*1), Y5, Y5
	VMOVUPD 16(R8)(R9*1), X6
	VINSERTF128 $1, 16(R8)(R11*1), Y6, Y6
	VMOVUPD 16(R8)(R10*1), X8
	VINSERTF128 $1, 16(R8)(R12*1), Y8, Y8
	VUNPCKLPD Y8, Y6, Y9
	VUNPCKHPD Y8, Y6, Y6
	VFMADD231PD Y3, Y6, Y9
	VUNPCKLPD Y5, Y4, Y6
	VUNPCKHPD Y5, Y4, Y4
	VFMADD231PD Y3, Y4, Y6
	VFMADD231PD Y1, Y9, Y6
	VFMADD213PD Y6, Y10, Y7
	// ok = valid && the low 29 bits are not within 2^14 of the midpoint 2^28:
	// near when ((low - (2^28 - 2^14)) &^ (2^15 - 1)) == 0 (unsigned)
	VPAND erfconst<>+192(SB), Y7, Y3
	VPSUBQ erfconst<>+224(SB), Y3, Y3
	VPAND erfconst<>+256(SB), Y3, Y3
	VPXOR Y4, Y4, Y4
	VPCMPEQQ Y4, Y3, Y3
	VANDNPD Y2, Y3, Y3
	VMOVMSKPD Y3, AX
	XORL $15, AX
	MOVB AX, (DX)
	ORL AX, BX
	// erf is odd: copy the sign of x, round to fp32
	VANDPD erfconst<>+288(SB), Y0, Y0
	VORPD Y0, Y7, Y7
	VCVTPD2PSY Y7, X7
	VMOVUPS X7, (DI)
	ADDQ $16, SI
	ADDQ $16, DI
	INCQ DX
	DECQ CX
	JNZ erfF32AVX2_loop
erfF32AVX2_done:
	MOVQ BX, ret+40(FP)
	VZEROUPPER
	RET

// func nonFiniteAVX2(x *float32, n int) bool
// Reports whether any of the n floats at x (n a multiple of 8) has an all-ones exponent
// (an infinity or NaN).
TEXT ·nonFiniteAVX2(SB), NOSPLIT, $0-17
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL $0x7f800000, AX
	MOVL AX, X1
	VPBROADCASTD X1, Y1
	VPXOR Y2, Y2, Y2
	SHRQ $3, CX
	JZ nonFinite_done
nonFinite_loop:
	VPAND (SI), Y1, Y3
	VPCMPEQD Y1, Y3, Y3
	VPOR Y3, Y2, Y2
	ADDQ $32, SI
	DECQ CX
	JNZ nonFinite_loop
nonFinite_done:
	VPTEST Y2, Y2
	SETNE ret+16(FP)
	VZEROUPPER
	RET

// func expF32AVX2(x, z *float32, n int, flags *uint8, table *[4]float64) int
// z[i] = exp(x[i]) for n lanes (a multiple of 4), exp.go's algorithm with FMA; table is
// expVecConst (32 bytes a constant: lo, hi, under, log2e, shift, ln2hi, ln2lo, the three
// midpoint-test integers, then the polynomial's coefficients c0..c11). flags[i/4] gets bit
// i%4 set for each lane the caller must recompute with math.Exp: NaN, x > hi, under <= x < lo
// (float32 denormals), and values within 2^14 float64 ulps of a float32 rounding midpoint;
// it returns the OR of the flags (0: none to recompute). Lanes below under are +0.
TEXT ·expF32AVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ z+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ flags+24(FP), DX
	MOVQ table+32(FP), R8
	XORL BX, BX
	SHRQ $2, CX
	JZ expF32AVX2_done
	VPCMPEQQ Y15, Y15, Y15 // -1 in every lane
	VMOVUPD 288(R8), Y14   // 2^15
	VMOVUPD 128(R8), Y13   // shift
expF32AVX2_loop:
	VCVTPS2PD (SI), Y0
	// valid = lo <= x <= hi || x < under (false for NaN)
	VCMPPD $0x1D, 0(R8), Y0, Y1
	VCMPPD $0x12, 32(R8), Y0, Y2
	VANDPD Y2, Y1, Y1
	VCMPPD $0x11, 64(R8), Y0, Y2
	VORPD Y2, Y1, Y1
	// t = x*log2e + shift, n = t - shift, r = (x - n*ln2hi) - n*ln2lo (lanes that are not
	// valid compute garbage, masked below: the exceptions are masked in MXCSR)
	VMOVAPD Y13, Y4
	VFMADD231PD 96(R8), Y0, Y4
	VSUBPD Y13, Y4, Y5
	VFNMADD231PD 160(R8), Y5, Y0
	VFNMADD231PD 192(R8), Y5, Y0
	VMOVAPD Y0, Y3
	// p = e^r, Estrin: a_k = c(2k) + c(2k+1)*r; b0 = a0 + a1*r2, b1 = a2 + a3*r2,
	// b2 = a4 + a5*r2; p = (b0 + b1*r4) + b2*r8
	VMULPD Y3, Y3, Y5
	VMOVUPD 352(R8), Y6
	VFMADD213PD 320(R8), Y3, Y6
	VMOVUPD 416(R8), Y7
	VFMADD213PD 384(R8), Y3, Y7
	VMOVUPD 480(R8), Y8
	VFMADD213PD 448(R8), Y3, Y8
	VMOVUPD 544(R8), Y9
	VFMADD213PD 512(R8), Y3, Y9
	VMOVUPD 608(R8), Y10
	VFMADD213PD 576(R8), Y3, Y10
	VMOVUPD 672(R8), Y11
	VFMADD213PD 640(R8), Y3, Y11
	VMULPD Y5, Y5, Y12
	VFMADD231PD Y7, Y5, Y6
	VFMADD231PD Y9, Y5, Y8
	VFMADD231PD Y11, Y5, Y10
	VFMADD231PD Y8, Y12, Y6
	VMULPD Y12, Y12, Y12
	VFMADD231PD Y10, Y12, Y6
	// y = p * 2^n: n is in the low bits of t; lanes below under get +0
	VPSLLQ $52, Y4, Y4
	VPADDQ Y4, Y6, Y6
	VANDNPD Y6, Y2, Y6
	// ok = valid && the low 29 bits are not within 2^14 of the midpoint 2^28
	VPAND 224(R8), Y6, Y7
	VPSUBQ 256(R8), Y7, Y7
	VPCMPGTQ Y15, Y7, Y8
	VPCMPGTQ Y7, Y14, Y9
	VPAND Y9, Y8, Y8
	VANDNPD Y1, Y8, Y8
	VMOVMSKPD Y8, AX
	XORL $15, AX
	MOVB AX, (DX)
	ORL AX, BX
	VCVTPD2PSY Y6, X6
	VMOVUPS X6, (DI)
	ADDQ $16, SI
	ADDQ $16, DI
	INCQ DX
	DECQ CX
	JNZ expF32AVX2_loop
expF32AVX2_done:
	MOVQ BX, ret+40(FP)
	VZEROUPPER
	RET

DATA erfwide<>+0(SB)/8, $0x7fffffffffffffff  // |x| mask
DATA erfwide<>+8(SB)/8, $0x3c30000000000000  // 2^-60
DATA erfwide<>+16(SB)/8, $0x400f5a88a0000000 // erfWideOne
DATA erfwide<>+24(SB)/8, $0x4010000000000000 // erfWideInv
DATA erfwide<>+32(SB)/8, $0x4330000000000000 // 2^52
DATA erfwide<>+40(SB)/8, $0x1fffffff         // the low 29 bits
DATA erfwide<>+48(SB)/8, $0xfffc000          // 2^28 - 2^14
DATA erfwide<>+56(SB)/8, $0x8000             // 2^15
DATA erfwide<>+64(SB)/8, $0x8000000000000000 // sign
DATA erfwide<>+72(SB)/8, $0x3ff0000000000000 // 1
GLOBL erfwide<>(SB), RODATA|NOPTR, $80

// ERF_PAIR(LO, HI, ACC): ACC = c_LO + h*c_HI, each lane's coefficient picked from its table
// row (16 doubles at LO(R8), HI(R8)) by the interval index in Z2; h is Z3.
#define ERF_PAIR(LO, HI, ACC) \
	VMOVUPD LO(R8), ACC; \
	VPERMT2PD LO+64(R8), Z2, ACC; \
	VMOVUPD HI(R8), Z14; \
	VPERMT2PD HI+64(R8), Z2, Z14; \
	VFMADD231PD Z14, Z3, ACC

// func erfF32AVX512(x, z *float32, n int, flags *uint8, table *float64) int
// z[i] = erf(x[i]) for n lanes (a multiple of 8), erf.go's erfWide on 8 lanes at a time;
// table is erfWideTab (row 0 the interval centers, row 1+k the k-th coefficients, 16 doubles
// a row). flags[i/8] gets bit i%8 set for each lane the caller must recompute with math.Erf:
// NaN, 0 < |x| < 2^-60, and values within 2^14 float64 ulps of a float32 rounding midpoint; it
// returns the OR of the flags (0: none to recompute). Lanes with |x| >= erfWideOne are +-1.
TEXT ·erfF32AVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ z+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ flags+24(FP), DX
	MOVQ table+32(FP), R8
	XORL BX, BX
	SHRQ $3, CX
	JZ erfF32AVX512_done
	VPBROADCASTQ erfwide<>+0(SB), Z16
	VPBROADCASTQ erfwide<>+8(SB), Z17
	VPBROADCASTQ erfwide<>+16(SB), Z18
	VPBROADCASTQ erfwide<>+24(SB), Z19
	VPBROADCASTQ erfwide<>+32(SB), Z20
	VPBROADCASTQ erfwide<>+40(SB), Z21
	VPBROADCASTQ erfwide<>+48(SB), Z22
	VPBROADCASTQ erfwide<>+56(SB), Z23
	VPBROADCASTQ erfwide<>+64(SB), Z24
	VPBROADCASTQ erfwide<>+72(SB), Z25
	VPXORQ Z26, Z26, Z26
erfF32AVX512_loop:
	VCVTPS2PD (SI), Z0
	VPANDQ Z16, Z0, Z1
	// bad = !(|x| >= 2^-60) && x != 0 (NaN too; a zero, the dead lanes of a GELU's tile, is
	// interval 0's x*q(x), +0, with x's sign), one = |x| >= erfWideOne
	VCMPPD $0x19, Z17, Z1, K1
	VCMPPD $0x04, Z26, Z1, K1, K1
	VCMPPD $0x1D, Z18, Z1, K2
	// i = floor(4|x|) in the low mantissa bits of Z2 (VPERMT2PD reads the low 4); h = |x| - center
	VMOVAPD Z20, Z2
	VFMADD231PD.RD_SAE Z19, Z1, Z2
	VMOVUPD 0(R8), Z3
	VPERMT2PD 64(R8), Z2, Z3
	VSUBPD Z3, Z1, Z3
	VMULPD Z3, Z3, Z4
	VMULPD Z4, Z4, Z5
	VMULPD Z5, Z5, Z6
	// Estrin: a_k = c_2k + h*c_2k+1; b = a0 + h2*a1, a2 + h2*a3;
	// y = (b0 + h4*b1) + h8*a4
	ERF_PAIR(128, 256, Z7)
	ERF_PAIR(384, 512, Z8)
	ERF_PAIR(640, 768, Z9)
	ERF_PAIR(896, 1024, Z10)
	ERF_PAIR(1152, 1280, Z11)
	VFMADD231PD Z8, Z4, Z7
	VFMADD231PD Z10, Z4, Z9
	VFMADD231PD Z9, Z5, Z7
	VFMADD231PD Z11, Z6, Z7
	// near = the low 29 bits are within 2^14 of the midpoint 2^28; flag (near && !one) || bad
	VPANDQ Z21, Z7, Z15
	VPSUBQ Z22, Z15, Z15
	VPCMPUQ $1, Z23, Z15, K3
	KANDNW K3, K2, K3
	KORW K1, K3, K3
	KMOVW K3, AX
	ANDL $0xff, AX
	MOVB AX, (DX)
	ORL AX, BX
	// lanes past erfWideOne are 1; erf is odd: copy the sign of x, round to fp32
	VMOVAPD Z25, K2, Z7
	VPANDQ Z24, Z0, Z0
	VPORQ Z0, Z7, Z7
	VCVTPD2PS Z7, Y7
	VMOVUPS Y7, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	INCQ DX
	DECQ CX
	JNZ erfF32AVX512_loop
erfF32AVX512_done:
	MOVQ BX, ret+40(FP)
	VZEROUPPER
	RET

// Row reductions of fp32 lanes. sumRowAVX2 accumulates in float64 (four chains of four
// lanes, n a multiple of 16); extremeRowAVX2 is max (op 0) or min (op 1) over the non-NaN
// lanes from an initial -inf (+inf) (four chains of eight lanes, n a multiple of 32):
// VMAXPS/VMINPS return the second source when the first is NaN, so with the lanes first and
// the accumulator second a NaN lane is skipped.

// func sumRowAVX2(x *float32, n int) float64
TEXT ·sumRowAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	SHRQ $4, CX
	JZ sumRowAVX2_done
sumRowAVX2_loop:
	VCVTPS2PD 0(SI), Y4
	VCVTPS2PD 16(SI), Y5
	VCVTPS2PD 32(SI), Y6
	VCVTPS2PD 48(SI), Y7
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	VADDPD Y6, Y2, Y2
	VADDPD Y7, Y3, Y3
	ADDQ $64, SI
	DECQ CX
	JNZ sumRowAVX2_loop
sumRowAVX2_done:
	VADDPD Y1, Y0, Y0
	VADDPD Y3, Y2, Y2
	VADDPD Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VUNPCKHPD X0, X0, X1
	VADDSD X1, X0, X0
	VZEROUPPER
	MOVSD X0, ret+16(FP)
	RET

// func extremeRowAVX2(x *float32, n int, op int) float32
TEXT ·extremeRowAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ op+16(FP), DX
	MOVL $0xff800000, AX // -inf
	CMPQ DX, $0
	JEQ extremeRowAVX2_init
	MOVL $0x7f800000, AX // +inf
extremeRowAVX2_init:
	VMOVD AX, X0
	VBROADCASTSS X0, Y0
	VMOVAPS Y0, Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y0, Y3
	SHRQ $5, CX
	JZ extremeRowAVX2_fold
	CMPQ DX, $0
	JNE extremeRowAVX2_minloop
extremeRowAVX2_maxloop:
	VMOVUPS 0(SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VMAXPS Y0, Y4, Y0
	VMAXPS Y1, Y5, Y1
	VMAXPS Y2, Y6, Y2
	VMAXPS Y3, Y7, Y3
	ADDQ $128, SI
	DECQ CX
	JNZ extremeRowAVX2_maxloop
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VMAXPS X1, X0, X0
	VPSHUFD $1, X0, X1
	VMAXSS X1, X0, X0
	JMP extremeRowAVX2_fold
extremeRowAVX2_minloop:
	VMOVUPS 0(SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VMINPS Y0, Y4, Y0
	VMINPS Y1, Y5, Y1
	VMINPS Y2, Y6, Y2
	VMINPS Y3, Y7, Y3
	ADDQ $128, SI
	DECQ CX
	JNZ extremeRowAVX2_minloop
	VMINPS Y1, Y0, Y0
	VMINPS Y3, Y2, Y2
	VMINPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMINPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VMINPS X1, X0, X0
	VPSHUFD $1, X0, X1
	VMINSS X1, X0, X0
extremeRowAVX2_fold:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func expF32AVX512(x, z *float32, n int, flags *uint8, table *[4]float64) int
// expF32AVX2 on 8 lanes at a time (n a multiple of 8): the same operations in the same
// order, so the same values; the constants are broadcast from the first double of each
// 32-byte row of the table. flags[i/8] gets bit i%8 for each lane to recompute.
TEXT ·expF32AVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ z+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ flags+24(FP), DX
	MOVQ table+32(FP), R8
	XORL BX, BX
	SHRQ $3, CX
	JZ expF32AVX512_done
	VBROADCASTSD 128(R8), Z13  // shift
	VPBROADCASTQ 224(R8), Z20  // the low 29 bits
	VPBROADCASTQ 256(R8), Z21  // 2^28 - 2^14
	VPBROADCASTQ 288(R8), Z14  // 2^15
	VPXORQ Z31, Z31, Z31
expF32AVX512_loop:
	VCVTPS2PD (SI), Z0
	// valid = lo <= x <= hi || x < under (false for NaN); K2: x < under
	VCMPPD.BCST $0x1D, 0(R8), Z0, K1
	VCMPPD.BCST $0x12, 32(R8), Z0, K2
	KANDW K2, K1, K1
	VCMPPD.BCST $0x11, 64(R8), Z0, K2
	KORW K2, K1, K1
	VMOVAPD Z13, Z4
	VFMADD231PD.BCST 96(R8), Z0, Z4
	VSUBPD Z13, Z4, Z5
	VFNMADD231PD.BCST 160(R8), Z5, Z0
	VFNMADD231PD.BCST 192(R8), Z5, Z0
	VMOVAPD Z0, Z3
	VMULPD Z3, Z3, Z5
	VBROADCASTSD 352(R8), Z6
	VFMADD213PD.BCST 320(R8), Z3, Z6
	VBROADCASTSD 416(R8), Z7
	VFMADD213PD.BCST 384(R8), Z3, Z7
	VBROADCASTSD 480(R8), Z8
	VFMADD213PD.BCST 448(R8), Z3, Z8
	VBROADCASTSD 544(R8), Z9
	VFMADD213PD.BCST 512(R8), Z3, Z9
	VBROADCASTSD 608(R8), Z10
	VFMADD213PD.BCST 576(R8), Z3, Z10
	VBROADCASTSD 672(R8), Z11
	VFMADD213PD.BCST 640(R8), Z3, Z11
	VMULPD Z5, Z5, Z12
	VFMADD231PD Z7, Z5, Z6
	VFMADD231PD Z9, Z5, Z8
	VFMADD231PD Z11, Z5, Z10
	VFMADD231PD Z8, Z12, Z6
	VMULPD Z12, Z12, Z12
	VFMADD231PD Z10, Z12, Z6
	VPSLLQ $52, Z4, Z4
	VPADDQ Z4, Z6, Z6
	VMOVAPD Z31, K2, Z6
	// recompute unless valid and the low 29 bits are 2^14 or more from the midpoint 2^28
	VPANDQ Z20, Z6, Z7
	VPSUBQ Z21, Z7, Z7
	VPCMPUQ $1, Z14, Z7, K3
	KANDNW K1, K3, K4
	KMOVW K4, AX
	NOTL AX
	ANDL $0xff, AX
	MOVB AX, (DX)
	ORL AX, BX
	VCVTPD2PS Z6, Y6
	VMOVUPS Y6, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	INCQ DX
	DECQ CX
	JNZ expF32AVX512_loop
expF32AVX512_done:
	MOVQ BX, ret+40(FP)
	VZEROUPPER
	RET

// func maxPropVSAVX2(x, z *float32, n int, s float32): z = maxProp(x, s), s not NaN. MAXPS
// returns its source operand (x here) when either is NaN or both are equal.
TEXT ·maxPropVSAVX2(SB), NOSPLIT, $0-28
	SV_LOOP(VMAXPS)

// func minPropVSAVX2(x, z *float32, n int, s float32): z = minProp(x, s), s not NaN.
TEXT ·minPropVSAVX2(SB), NOSPLIT, $0-28
	SV_LOOP(VMINPS)

// func maxPropVVAVX2(x, y, z *float32, n int): z = maxProp(x, y)
TEXT ·maxPropVVAVX2(SB), NOSPLIT, $0-32
	PROP_VV_LOOP(VMAXPS)

// func minPropVVAVX2(x, y, z *float32, n int): z = minProp(x, y)
TEXT ·minPropVVAVX2(SB), NOSPLIT, $0-32
	PROP_VV_LOOP(VMINPS)

// func divVSAVX2(x, z *float32, n int, s float32): z = x / s (IEEE division, lane by lane:
// not a multiplication by 1/s, which rounds differently)
TEXT ·divVSAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ z+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y15
	SHRQ $5, CX
	JZ divVS_done
divVS_loop:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VDIVPS Y15, Y0, Y0
	VDIVPS Y15, Y1, Y1
	VDIVPS Y15, Y2, Y2
	VDIVPS Y15, Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ divVS_loop
divVS_done:
	VZEROUPPER
	RET

// func epilogueRowsAVX2(c *float32, ldc, rows, n int, mul, add *float32, floor float32, flags int, bias, tile *float32, ldt int)
// A convolution's epilogue on a block of its accumulator in the panels flush (panels_epilogue.go):
// rows rows of n lanes (a multiple of 8), ldc floats apart; each lane x becomes bias[r] + x
// (flags&8: a bias added before BatchNorm), then mul[r] * x (flags&1), then add[r] + x
// (flags&2), then x + t or t + x (flags&16 or 32: t the lane's element of tile, a residual,
// its rows ldt floats apart), then maxProp(x, floor) (flags&4, floor not NaN), the operands
// in SV_LOOP's and VV_LOOP's order, so each lane is what the steps one at a time give.
TEXT ·epilogueRowsAVX2(SB), NOSPLIT, $0-88
	MOVQ c+0(FP), DI
	MOVQ ldc+8(FP), R8
	SHLQ $2, R8
	MOVQ rows+16(FP), R9
	MOVQ n+24(FP), R10
	SHRQ $3, R10
	MOVQ mul+32(FP), SI
	MOVQ add+40(FP), DX
	VBROADCASTSS floor+48(FP), Y15
	MOVQ flags+56(FP), R11
	MOVQ bias+64(FP), BX
	MOVQ tile+72(FP), R12
	MOVQ ldt+80(FP), R13
	SHLQ $2, R13
	TESTQ R9, R9
	JZ epi_done
	TESTQ R10, R10
	JZ epi_done
epi_row:
	TESTQ $8, R11
	JZ epi_nobias
	VBROADCASTSS (BX), Y12
	ADDQ $4, BX
epi_nobias:
	TESTQ $1, R11
	JZ epi_nomul
	VBROADCASTSS (SI), Y13
	ADDQ $4, SI
epi_nomul:
	TESTQ $2, R11
	JZ epi_noadd
	VBROADCASTSS (DX), Y14
	ADDQ $4, DX
epi_noadd:
	MOVQ DI, AX
	MOVQ R12, R14
	MOVQ R10, CX
epi_lane:
	VMOVUPS (AX), Y0
	TESTQ $8, R11
	JZ epi_l0
	VADDPS Y0, Y12, Y0
epi_l0:
	TESTQ $1, R11
	JZ epi_l1
	VMULPS Y0, Y13, Y0
epi_l1:
	TESTQ $2, R11
	JZ epi_l2
	VADDPS Y0, Y14, Y0
epi_l2:
	TESTQ $16, R11
	JZ epi_l2t
	VADDPS (R14), Y0, Y0
epi_l2t:
	TESTQ $32, R11
	JZ epi_l2u
	VMOVUPS (R14), Y1
	VADDPS Y0, Y1, Y0
epi_l2u:
	TESTQ $4, R11
	JZ epi_l3
	VMAXPS Y0, Y15, Y0
epi_l3:
	VMOVUPS Y0, (AX)
	ADDQ $32, AX
	ADDQ $32, R14
	DECQ CX
	JNZ epi_lane
	ADDQ R8, DI
	ADDQ R13, R12
	DECQ R9
	JNZ epi_row
epi_done:
	VZEROUPPER
	RET

// func evenLanesAVX2(dst, src *float32, n int): dst[j] = src[2j] for j < n, n a multiple of 8;
// reads src[0 .. 2n). Per 16 floats: VSHUFPS picks the even lanes of each 128-bit half of
// both vectors (a0 a2 b0 b2 | a4 a6 b4 b6), VPERMPD puts the 64-bit pairs back in order.
TEXT ·evenLanesAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   evendone
evenloop:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VSHUFPS $0x88, Y1, Y0, Y2
	VPERMPD $0xD8, Y2, Y2
	VMOVUPS Y2, 0(DI)
	ADDQ    $64, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     evenloop
evendone:
	VZEROUPPER
	RET
