#include "textflag.h"

// func packStripsAVX(dst *float32, stride int, src *float32, lds, rows, strips, w, ahead int)
// Copies rows rows of strips*w floats (src rows lds elements apart) into strips contiguous
// [rows, w] panels stride elements apart (w a multiple of 16), row by row, and prefetches
// each source line ahead rows further down as it goes: B's rows lie a page or more apart,
// where the hardware prefetcher follows none of them.
TEXT ·packStripsAVX(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ stride+8(FP), R13
	SHLQ $2, R13
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $2, R9
	MOVQ rows+32(FP), CX
	MOVQ strips+40(FP), R12
	MOVQ w+48(FP), DX
	SHLQ $2, DX
	MOVQ ahead+56(FP), R10
	IMULQ R9, R10
	TESTQ CX, CX
	JZ packstrips_done
	TESTQ R12, R12
	JZ packstrips_done
	TESTQ DX, DX
	JZ packstrips_done
packstrips_row:
	LEAQ (SI)(R10*1), R11
	MOVQ DI, R14
	XORQ AX, AX
	MOVQ R12, BX
packstrips_strip:
	XORQ R8, R8
packstrips_line:
	PREFETCHT0 (R11)(AX*1)
	VMOVUPS (SI)(AX*1), Y0
	VMOVUPS 32(SI)(AX*1), Y1
	VMOVUPS Y0, (R14)(R8*1)
	VMOVUPS Y1, 32(R14)(R8*1)
	ADDQ $64, AX
	ADDQ $64, R8
	CMPQ R8, DX
	JLT packstrips_line
	ADDQ R13, R14
	DECQ BX
	JNZ packstrips_strip
	ADDQ R9, SI
	ADDQ DX, DI
	DECQ CX
	JNZ packstrips_row
packstrips_done:
	VZEROUPPER
	RET
