#include "textflag.h"

// func kern1x64AVX2(kc int, a *float32, bp *float32, ps int, c *float32, add bool)
//
// One row of A against four packed B panels (panel q at bp+q*ps elements):
// eight accumulators, Y(8+2q) and Y(9+2q) for panel q, each one FMA a step,
// so the eight chains cover the FMA latency. R13 is the byte offset of step
// p inside every panel.
TEXT ·kern1x64AVX2(SB), NOSPLIT, $0-41
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ bp+16(FP), DI
	MOVQ ps+24(FP), R8
	SHLQ $2, R8
	LEAQ (DI)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (R11)(R8*1), R12
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	XORQ R13, R13

kern1x64AVX2loop:
	VBROADCASTSS (SI), Y0
	VFMADD231PS (DI)(R13*1), Y0, Y8
	VFMADD231PS 32(DI)(R13*1), Y0, Y9
	VFMADD231PS (R10)(R13*1), Y0, Y10
	VFMADD231PS 32(R10)(R13*1), Y0, Y11
	VFMADD231PS (R11)(R13*1), Y0, Y12
	VFMADD231PS 32(R11)(R13*1), Y0, Y13
	VFMADD231PS (R12)(R13*1), Y0, Y14
	VFMADD231PS 32(R12)(R13*1), Y0, Y15
	ADDQ $4, SI
	ADDQ $64, R13
	DECQ CX
	JNZ  kern1x64AVX2loop

	MOVQ    c+32(FP), DX
	MOVBQZX add+40(FP), AX
	TESTQ   AX, AX
	JZ      kern1x64AVX2set
	VADDPS 0(DX), Y8, Y8
	VADDPS 32(DX), Y9, Y9
	VADDPS 64(DX), Y10, Y10
	VADDPS 96(DX), Y11, Y11
	VADDPS 128(DX), Y12, Y12
	VADDPS 160(DX), Y13, Y13
	VADDPS 192(DX), Y14, Y14
	VADDPS 224(DX), Y15, Y15

kern1x64AVX2set:
	VMOVUPS Y8, 0(DX)
	VMOVUPS Y9, 32(DX)
	VMOVUPS Y10, 64(DX)
	VMOVUPS Y11, 96(DX)
	VMOVUPS Y12, 128(DX)
	VMOVUPS Y13, 160(DX)
	VMOVUPS Y14, 192(DX)
	VMOVUPS Y15, 224(DX)
	VZEROUPPER
	RET
