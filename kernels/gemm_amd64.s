#include "textflag.h"
#include "gemm_tile_amd64.h"

// func kern6x16AVX2(kc int, ap, bp *float32, ldb int, c *float32, ldc int, add bool)
//
// Register tile: Y4..Y15 hold the 6×16 accumulators, row i in Y(4+2i) (columns
// 0..7) and Y(5+2i) (columns 8..15). Each step p loads the 16 floats of B at
// bp+p*ldb into Y0/Y1, broadcasts the 6 floats of A at ap+p*6 and issues 12
// FMAs; four steps per loop trip.
TEXT ·kern6x16AVX2(SB), NOSPLIT, $0-49
	MOVQ kc+0(FP), CX
	MOVQ ap+8(FP), SI
	MOVQ bp+16(FP), DI
	MOVQ ldb+24(FP), R8
	SHLQ $2, R8
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), R9
	SHLQ $2, R9
	ZERO12
	CMPQ CX, $4
	JLT  k6tail

k6loop4:
	K6STEPS4(K6LOADF32)
	ADDQ $96, SI
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  k6loop4

k6tail:
	TESTQ CX, CX
	JZ    k6store

k6loop1:
	K6STEP1(K6LOADF32)
	ADDQ $24, SI
	DECQ CX
	JNZ  k6loop1

k6store:
	MOVBQZX add+48(FP), AX
	TESTQ   AX, AX
	JZ      k6set
	K6ADD
	VZEROUPPER
	RET

k6set:
	K6SET
	VZEROUPPER
	RET

// func dotTile3x4AVX2(k8 int, a0, a1, a2 *float32, b0, b1, b2, b3 *float32, c *float32)
//
// Accumulators: row i, column j in Y(4+4i+j). Each trip loads 8 elements
// of the three A rows once and of each B row once: 7 loads for 12 FMAs.
// R13 walks B from b3+5·(b3−b2), the rows eight after b0 (B rows are
// contiguous and tiles step by eight rows in the callers), 128 bytes a
// trip, so that they arrive before they are needed: a tile's rows are too
// short a stream for the hardware prefetcher to ramp up on.
TEXT ·dotTile3x4AVX2(SB), NOSPLIT, $0-72
	D34ARGS

dotTile3x4AVX2loop:
	PREFETCHT0 0(R13)
	PREFETCHT0 64(R13)
	D34TRIP(D34LOADF32)
	ADDQ $128, R13
	ADDQ $8, AX
	CMPQ AX, CX
	JLT  dotTile3x4AVX2loop

	D34STORE
	VZEROUPPER
	RET

// func dotTile1x8AVX2(k8 int, a *float32, b0, b1, b2, b3, b4, b5, b6, b7 *float32, next *float32, c *float32)
//
// Accumulators: column j in Y(8+j). Each trip loads 8 elements of a once
// and of each B row once: 9 loads for 8 FMAs, no wasted lanes. DX walks the
// region from next, 256 bytes a trip: the next tile's eight rows.
TEXT ·dotTile1x8AVX2(SB), NOSPLIT, $0-96
	MOVQ k8+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b0+16(FP), DI
	MOVQ b1+24(FP), R8
	MOVQ b2+32(FP), R9
	MOVQ b3+40(FP), R10
	MOVQ b4+48(FP), R11
	MOVQ b5+56(FP), R12
	MOVQ b6+64(FP), R13
	MOVQ b7+72(FP), BX
	MOVQ next+80(FP), DX
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	XORQ AX, AX

dotTile1x8AVX2loop:
	PREFETCHT0 0(DX)
	PREFETCHT0 64(DX)
	PREFETCHT0 128(DX)
	PREFETCHT0 192(DX)
	VMOVUPS (SI)(AX*4), Y0
	VFMADD231PS (DI)(AX*4), Y0, Y8
	VFMADD231PS (R8)(AX*4), Y0, Y9
	VFMADD231PS (R9)(AX*4), Y0, Y10
	VFMADD231PS (R10)(AX*4), Y0, Y11
	VFMADD231PS (R11)(AX*4), Y0, Y12
	VFMADD231PS (R12)(AX*4), Y0, Y13
	VFMADD231PS (R13)(AX*4), Y0, Y14
	VFMADD231PS (BX)(AX*4), Y0, Y15
	ADDQ $256, DX
	ADDQ $8, AX
	CMPQ AX, CX
	JLT  dotTile1x8AVX2loop

	MOVQ c+88(FP), DX
	VHADDPS Y9, Y8, Y8
	VHADDPS Y11, Y10, Y10
	VHADDPS Y10, Y8, Y8
	VEXTRACTF128 $1, Y8, X0
	VADDPS X0, X8, X8
	VMOVUPS X8, 0(DX)
	VHADDPS Y13, Y12, Y12
	VHADDPS Y15, Y14, Y14
	VHADDPS Y14, Y12, Y12
	VEXTRACTF128 $1, Y12, X0
	VADDPS X0, X12, X12
	VMOVUPS X12, 16(DX)
	VZEROUPPER
	RET

// func packNT16AVX2(kc8 int, src *float32, lds int, dst *float32)
//
// Transposes 16 rows of src (row j at src+j*lds) by 8×8 blocks: unpack
// pairs, shuffle quads, swap 128-bit halves.
TEXT ·packNT16AVX2(SB), NOSPLIT, $0-32
	MOVQ kc8+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	SHLQ $2, R8
	MOVQ dst+24(FP), DI
	LEAQ (R8)(R8*2), R9
	LEAQ (SI)(R8*4), R10
	LEAQ (R10)(R8*4), R11
	LEAQ (R11)(R8*4), R12
	SHRQ $3, CX
	JZ   pkdone

pkloop:
	PK16TRIP(PK8LOADF32)
	ADDQ $32, SI
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $512, DI
	DECQ CX
	JNZ  pkloop

pkdone:
	VZEROUPPER
	RET

// func copyRows16AVX2(kc int, src *float32, lds int, dst *float32)
TEXT ·copyRows16AVX2(SB), NOSPLIT, $0-32
	MOVQ kc+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	SHLQ $2, R8
	MOVQ dst+24(FP), DI

cr16loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    R8, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     cr16loop
	VZEROUPPER
	RET

// func copyRows12AVX2(kc int, src *float32, lds int, dst *float32)
TEXT ·copyRows12AVX2(SB), NOSPLIT, $0-32
	MOVQ kc+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	SHLQ $2, R8
	MOVQ dst+24(FP), DI

cr12loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), X1
	VMOVUPS Y0, (DI)
	VMOVUPS X1, 32(DI)
	ADDQ    R8, SI
	ADDQ    $48, DI
	DECQ    CX
	JNZ     cr12loop
	VZEROUPPER
	RET
