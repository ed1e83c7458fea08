#include "textflag.h"

// func kvTransposeBlocksAVX2(dst *float32, ld int, src *float32, hd, blocks int)
//
// kvTransposeBlocks for hd a positive multiple of 4: block by block, the
// block's hd vectors of 8 positions (one a dimension, read in order) to
// rows ld elements apart in dst.
TEXT ·kvTransposeBlocksAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ ld+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ hd+24(FP), R9
	SHRQ $2, R9
	MOVQ blocks+32(FP), CX
	LEAQ (R8)(R8*2), R10

tbBlock:
	TESTQ CX, CX
	JZ    tbDone
	MOVQ  DI, DX
	MOVQ  R9, BX

tbDims:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, (DX)(R8*1)
	VMOVUPS Y2, (DX)(R8*2)
	VMOVUPS Y3, (DX)(R10*1)
	ADDQ    $128, SI
	LEAQ    (DX)(R8*4), DX
	DECQ    BX
	JNZ     tbDims
	ADDQ    $32, DI
	DECQ    CX
	JMP     tbBlock

tbDone:
	VZEROUPPER
	RET
