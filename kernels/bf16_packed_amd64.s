#include "textflag.h"
#include "gemm_tile_amd64.h"

// func kern6x16BF16AVX2(kc int, ap *float32, bp *BF16, ldb int, c *float32, ldc int, add bool)
//
// kern6x16AVX2 with a bf16 B panel (16 bf16 a step, ldb elements apart),
// widened as it is loaded: the same 12 FMAs a step, so each element is the
// same FMA chain as with a float32 panel holding the widened values.
TEXT ·kern6x16BF16AVX2(SB), NOSPLIT, $0-49
	MOVQ kc+0(FP), CX
	MOVQ ap+8(FP), SI
	MOVQ bp+16(FP), DI
	MOVQ ldb+24(FP), R8
	SHLQ $1, R8
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), R9
	SHLQ $2, R9
	ZERO12
	CMPQ CX, $4
	JLT  h6tail

h6loop4:
	K6STEPS4(K6LOADBF16)
	ADDQ $96, SI
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  h6loop4

h6tail:
	TESTQ CX, CX
	JZ    h6store

h6loop1:
	K6STEP1(K6LOADBF16)
	ADDQ $24, SI
	DECQ CX
	JNZ  h6loop1

h6store:
	MOVBQZX add+48(FP), AX
	TESTQ   AX, AX
	JZ      h6set
	K6ADD
	VZEROUPPER
	RET

h6set:
	K6SET
	VZEROUPPER
	RET

// func kern1x64BF16AVX2(kc int, a *float32, bp *BF16, c *float32, add bool)
//
// One row of A against a packed group of four bf16 panels (64 columns a
// step, one contiguous stream: see PackNTBF16): eight accumulators, Y8..Y15
// for columns 8i..8i+7, each one FMA a step, so the eight chains cover the
// FMA latency. The stream is prefetched 8 KiB (64 steps) ahead, as in
// kern1x64BF16AVX512 (WHALE_NOAVX512=1 whale bench model --preset 110m on
// the AVX-512 machine, five rounds alternating: 169.8 tok/s median at 2 KiB,
// 167.4 at 8 KiB, four streams before 141.1).
TEXT ·kern1x64BF16AVX2(SB), NOSPLIT, $0-33
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ bp+16(FP), DI
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15

kern1x64BF16AVX2loop:
	PREFETCHT0 8192(DI)
	PREFETCHT0 8256(DI)
	VBROADCASTSS (SI), Y0
	VPMOVZXWD (DI), Y1
	VPMOVZXWD 16(DI), Y2
	VPSLLD $16, Y1, Y1
	VPSLLD $16, Y2, Y2
	VFMADD231PS Y1, Y0, Y8
	VFMADD231PS Y2, Y0, Y9
	VPMOVZXWD 32(DI), Y3
	VPMOVZXWD 48(DI), Y4
	VPSLLD $16, Y3, Y3
	VPSLLD $16, Y4, Y4
	VFMADD231PS Y3, Y0, Y10
	VFMADD231PS Y4, Y0, Y11
	VPMOVZXWD 64(DI), Y5
	VPMOVZXWD 80(DI), Y6
	VPSLLD $16, Y5, Y5
	VPSLLD $16, Y6, Y6
	VFMADD231PS Y5, Y0, Y12
	VFMADD231PS Y6, Y0, Y13
	VPMOVZXWD 96(DI), Y7
	VPMOVZXWD 112(DI), Y1
	VPSLLD $16, Y7, Y7
	VPSLLD $16, Y1, Y1
	VFMADD231PS Y7, Y0, Y14
	VFMADD231PS Y1, Y0, Y15
	ADDQ $4, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  kern1x64BF16AVX2loop

	MOVQ    c+24(FP), DX
	MOVBQZX add+32(FP), AX
	TESTQ   AX, AX
	JZ      kern1x64BF16AVX2set
	VADDPS 0(DX), Y8, Y8
	VADDPS 32(DX), Y9, Y9
	VADDPS 64(DX), Y10, Y10
	VADDPS 96(DX), Y11, Y11
	VADDPS 128(DX), Y12, Y12
	VADDPS 160(DX), Y13, Y13
	VADDPS 192(DX), Y14, Y14
	VADDPS 224(DX), Y15, Y15

kern1x64BF16AVX2set:
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
