#include "textflag.h"

// Element-wise fp32 loops, 32 lanes per iteration; n is a multiple of 32 (the Go wrappers do
// the tail). VV: z = x op y. VS: z = x op s. SV: z = s op x.

// func addVVAVX2(x, y, z *float32, n int)
TEXT ·addVVAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DX
	MOVQ z+16(FP), DI
	MOVQ n+24(FP), CX
	SHRQ $5, CX
	JZ addVVAVX2_done
addVVAVX2_loop:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS 0(DX), Y0, Y0
	VADDPS 32(DX), Y1, Y1
	VADDPS 64(DX), Y2, Y2
	VADDPS 96(DX), Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, DI
	DECQ CX
	JNZ addVVAVX2_loop
addVVAVX2_done:
	VZEROUPPER
	RET

// func subVVAVX2(x, y, z *float32, n int)
TEXT ·subVVAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DX
	MOVQ z+16(FP), DI
	MOVQ n+24(FP), CX
	SHRQ $5, CX
	JZ subVVAVX2_done
subVVAVX2_loop:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VSUBPS 0(DX), Y0, Y0
	VSUBPS 32(DX), Y1, Y1
	VSUBPS 64(DX), Y2, Y2
	VSUBPS 96(DX), Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, DI
	DECQ CX
	JNZ subVVAVX2_loop
subVVAVX2_done:
	VZEROUPPER
	RET

// func mulVVAVX2(x, y, z *float32, n int)
TEXT ·mulVVAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DX
	MOVQ z+16(FP), DI
	MOVQ n+24(FP), CX
	SHRQ $5, CX
	JZ mulVVAVX2_done
mulVVAVX2_loop:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMULPS 0(DX), Y0, Y0
	VMULPS 32(DX), Y1, Y1
	VMULPS 64(DX), Y2, Y2
	VMULPS 96(DX), Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, DI
	DECQ CX
	JNZ mulVVAVX2_loop
mulVVAVX2_done:
	VZEROUPPER
	RET

// func addVSAVX2(x, z *float32, n int, s float32)
TEXT ·addVSAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ z+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y15
	SHRQ $5, CX
	JZ addVSAVX2_done
addVSAVX2_loop:
	VADDPS 0(SI), Y15, Y0
	VADDPS 32(SI), Y15, Y1
	VADDPS 64(SI), Y15, Y2
	VADDPS 96(SI), Y15, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ addVSAVX2_loop
addVSAVX2_done:
	VZEROUPPER
	RET

// func mulVSAVX2(x, z *float32, n int, s float32)
TEXT ·mulVSAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ z+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y15
	SHRQ $5, CX
	JZ mulVSAVX2_done
mulVSAVX2_loop:
	VMULPS 0(SI), Y15, Y0
	VMULPS 32(SI), Y15, Y1
	VMULPS 64(SI), Y15, Y2
	VMULPS 96(SI), Y15, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ mulVSAVX2_loop
mulVSAVX2_done:
	VZEROUPPER
	RET

// func subSVAVX2(x, z *float32, n int, s float32)
TEXT ·subSVAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ z+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y15
	SHRQ $5, CX
	JZ subSVAVX2_done
subSVAVX2_loop:
	VSUBPS 0(SI), Y15, Y0
	VSUBPS 32(SI), Y15, Y1
	VSUBPS 64(SI), Y15, Y2
	VSUBPS 96(SI), Y15, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ subSVAVX2_loop
subSVAVX2_done:
	VZEROUPPER
	RET

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
