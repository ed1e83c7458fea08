#include "textflag.h"
#include "gemm_tile_amd64.h"

// func kern6x16BF16AVX2(kc int, ap *float32, bp *BF16, c *float32, ldc int, add bool)
//
// kern6x16AVX2 with a bf16 B panel (16 bf16 = 32 bytes a step), widened as
// it is loaded: the same 12 FMAs a step, so each element is the same FMA
// chain as with a float32 panel holding the widened values.
TEXT ·kern6x16BF16AVX2(SB), NOSPLIT, $0-41
	MOVQ kc+0(FP), CX
	MOVQ ap+8(FP), SI
	MOVQ bp+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R9
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
	MOVBQZX add+40(FP), AX
	TESTQ   AX, AX
	JZ      h6set
	K6ADD
	VZEROUPPER
	RET

h6set:
	K6SET
	VZEROUPPER
	RET

// func kern1x64BF16AVX2(kc int, a *float32, bp *BF16, ps int, c *float32, add bool)
//
// One row of A against four packed B panels (panel q at bp+q*ps elements):
// eight accumulators, Y(8+2q) and Y(9+2q) for panel q, each one FMA a step,
// so the eight chains cover the FMA latency. R13 is the byte offset of step
// p inside every panel. Each panel is prefetched 2 KiB ahead, as in
// kern1x64BF16AVX512 (WHALE_NOAVX512=1, token110M_m1, five rounds
// alternating on a loaded machine: 18.5 GB/s median without, 21.0 with).
TEXT ·kern1x64BF16AVX2(SB), NOSPLIT, $0-41
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ bp+16(FP), DI
	MOVQ ps+24(FP), R8
	SHLQ $1, R8
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

kern1x64BF16AVX2loop:
	PREFETCHT0 2048(DI)(R13*1)
	PREFETCHT0 2048(R10)(R13*1)
	PREFETCHT0 2048(R11)(R13*1)
	PREFETCHT0 2048(R12)(R13*1)
	VBROADCASTSS (SI), Y0
	VPMOVZXWD (DI)(R13*1), Y1
	VPMOVZXWD 16(DI)(R13*1), Y2
	VPSLLD $16, Y1, Y1
	VPSLLD $16, Y2, Y2
	VFMADD231PS Y1, Y0, Y8
	VFMADD231PS Y2, Y0, Y9
	VPMOVZXWD (R10)(R13*1), Y3
	VPMOVZXWD 16(R10)(R13*1), Y4
	VPSLLD $16, Y3, Y3
	VPSLLD $16, Y4, Y4
	VFMADD231PS Y3, Y0, Y10
	VFMADD231PS Y4, Y0, Y11
	VPMOVZXWD (R11)(R13*1), Y5
	VPMOVZXWD 16(R11)(R13*1), Y6
	VPSLLD $16, Y5, Y5
	VPSLLD $16, Y6, Y6
	VFMADD231PS Y5, Y0, Y12
	VFMADD231PS Y6, Y0, Y13
	VPMOVZXWD (R12)(R13*1), Y7
	VPMOVZXWD 16(R12)(R13*1), Y1
	VPSLLD $16, Y7, Y7
	VPSLLD $16, Y1, Y1
	VFMADD231PS Y7, Y0, Y14
	VFMADD231PS Y1, Y0, Y15
	ADDQ $4, SI
	ADDQ $32, R13
	DECQ CX
	JNZ  kern1x64BF16AVX2loop

	MOVQ    c+32(FP), DX
	MOVBQZX add+40(FP), AX
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
