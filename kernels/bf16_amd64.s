#include "textflag.h"
#include "gemm_tile_amd64.h"

// func dotTile3x4BF16AVX2(k8 int, a0, a1, a2 *float32, b0, b1, b2, b3 *BF16, c *float32)
//
// Accumulators: row i, column j in Y(4+4i+j). Each trip loads 8 elements
// of the three A rows once and of each B row once: 7 loads for 12 FMAs.
// R13 walks B from b3+5·(b3−b2), the rows eight after b0 (B rows are
// contiguous and tiles step by eight rows in the callers), 64 bytes a
// trip, so that they arrive before they are needed: a tile's rows are too
// short a stream for the hardware prefetcher to ramp up on.
TEXT ·dotTile3x4BF16AVX2(SB), NOSPLIT, $0-72
	D34ARGS

dotTile3x4BF16AVX2loop:
	PREFETCHT0 0(R13)
	D34TRIP(D34LOADBF16)
	ADDQ $64, R13
	ADDQ $8, AX
	CMPQ AX, CX
	JLT  dotTile3x4BF16AVX2loop

	D34STORE
	VZEROUPPER
	RET

// func dotTile1x8BF16AVX2(k8 int, a *float32, b0, b1, b2, b3, b4, b5, b6, b7 *BF16, next *BF16, c *float32)
//
// Accumulators: column j in Y(8+j). Each trip loads 8 elements of a once
// and of each B row once: 9 loads for 8 FMAs, no wasted lanes. DX walks the
// region from next, 128 bytes a trip: the next tile's eight rows.
TEXT ·dotTile1x8BF16AVX2(SB), NOSPLIT, $0-96
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

dotTile1x8BF16AVX2loop:
	PREFETCHT0 0(DX)
	PREFETCHT0 64(DX)
	VMOVUPS (SI)(AX*4), Y0
	VPMOVZXWD (DI)(AX*2), Y1
	VPSLLD $16, Y1, Y1
	VFMADD231PS Y1, Y0, Y8
	VPMOVZXWD (R8)(AX*2), Y2
	VPSLLD $16, Y2, Y2
	VFMADD231PS Y2, Y0, Y9
	VPMOVZXWD (R9)(AX*2), Y3
	VPSLLD $16, Y3, Y3
	VFMADD231PS Y3, Y0, Y10
	VPMOVZXWD (R10)(AX*2), Y4
	VPSLLD $16, Y4, Y4
	VFMADD231PS Y4, Y0, Y11
	VPMOVZXWD (R11)(AX*2), Y5
	VPSLLD $16, Y5, Y5
	VFMADD231PS Y5, Y0, Y12
	VPMOVZXWD (R12)(AX*2), Y6
	VPSLLD $16, Y6, Y6
	VFMADD231PS Y6, Y0, Y13
	VPMOVZXWD (R13)(AX*2), Y7
	VPSLLD $16, Y7, Y7
	VFMADD231PS Y7, Y0, Y14
	VPMOVZXWD (BX)(AX*2), Y1
	VPSLLD $16, Y1, Y1
	VFMADD231PS Y1, Y0, Y15
	ADDQ $128, DX
	ADDQ $8, AX
	CMPQ AX, CX
	JLT  dotTile1x8BF16AVX2loop

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

// func packNT16BF16AVX2(kc8 int, src *BF16, lds int, dst *float32)
//
// packNT16AVX2 for bf16 rows: each row's 8 elements are widened (zero-
// extend, shift left 16) as they are loaded, then transposed the same way.
TEXT ·packNT16BF16AVX2(SB), NOSPLIT, $0-32
	MOVQ kc8+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	SHLQ $1, R8
	MOVQ dst+24(FP), DI
	LEAQ (R8)(R8*2), R9
	LEAQ (SI)(R8*4), R10
	LEAQ (R10)(R8*4), R11
	LEAQ (R11)(R8*4), R12
	SHRQ $3, CX
	JZ   pkdoneh

pklooph:
	PK16TRIP(PK8LOADBF16)
	ADDQ $16, SI
	ADDQ $16, R10
	ADDQ $16, R11
	ADDQ $16, R12
	ADDQ $512, DI
	DECQ CX
	JNZ  pklooph

pkdoneh:
	VZEROUPPER
	RET

// func packNN16BF16AVX2(kc int, src *BF16, lds int, dst *float32)
//
// Each p's 16 contiguous bf16 elements are widened (zero-extend, shift left
// 16) into the panel's row p.
TEXT ·packNN16BF16AVX2(SB), NOSPLIT, $0-32
	MOVQ kc+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	SHLQ $1, R8
	MOVQ dst+24(FP), DI
	TESTQ CX, CX
	JLE  pnndone

pnnloop:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPSLLD $16, Y0, Y0
	VPSLLD $16, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ R8, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  pnnloop

pnndone:
	VZEROUPPER
	RET
