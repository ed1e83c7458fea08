#include "textflag.h"

// func widenBF16AVX2(dst *float32, src *uint16, n int)
//
// dst[i] = src[i] << 16 as a float32 bit pattern for i < n (n a positive
// multiple of 16): 16 elements a round, each 8 zero-extended to 32 bits
// (VPMOVZXWD) and shifted into the top half.
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX

w2loop:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPSLLD    $16, Y0, Y0
	VPSLLD    $16, Y1, Y1
	VMOVUPS   Y0, (DI)
	VMOVUPS   Y1, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       w2loop
	VZEROUPPER
	RET

// func widenBF16AVX512(dst *float32, src *uint16, n int)
//
// widenBF16AVX2 with 32 elements a round (n a positive multiple of 32),
// 16 a register.
TEXT ·widenBF16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $5, CX

w5loop:
	VPMOVZXWD (SI), Z0
	VPMOVZXWD 32(SI), Z1
	VPSLLD    $16, Z0, Z0
	VPSLLD    $16, Z1, Z1
	VMOVUPS   Z0, (DI)
	VMOVUPS   Z1, 64(DI)
	ADDQ      $64, SI
	ADDQ      $128, DI
	DECQ      CX
	JNZ       w5loop
	VZEROUPPER
	RET
