#include "textflag.h"

// AVX-512 versions of the decode-attention score kernels: the same sums
// (one FMA chain over d per position, in increasing d), 16 positions to a
// register. Registers as in attnScores4AVX2: DI s, R8 lds bytes,
// SI/R11/R12/R13 q rows, DX k, R10 ldk bytes, CX n16, AX p, R9 hd bytes,
// R14 d bytes, BX key pointer.

// func attnScores4AVX512(s *float32, lds int, q *float32, hd int, k *float32, ldk, n16 int)
//
// Positions 32 at a time (Z(2i), Z(2i+1) for row i), then blocks of 16.
TEXT ·attnScores4AVX512(SB), NOSPLIT, $0-56
	MOVQ s+0(FP), DI
	MOVQ lds+8(FP), R8
	SHLQ $2, R8
	MOVQ q+16(FP), SI
	MOVQ hd+24(FP), R9
	SHLQ $2, R9
	LEAQ (SI)(R9*1), R11
	LEAQ (R11)(R9*1), R12
	LEAQ (R12)(R9*1), R13
	MOVQ k+32(FP), DX
	MOVQ ldk+40(FP), R10
	SHLQ $2, R10
	MOVQ n16+48(FP), CX
	XORQ AX, AX

z4b32:
	LEAQ   32(AX), BX
	CMPQ   BX, CX
	JGT    z4b16
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	LEAQ   (DX)(AX*4), BX
	XORQ   R14, R14

z4b32d:
	VMOVUPS      (BX), Z8
	VMOVUPS      64(BX), Z9
	VBROADCASTSS (SI)(R14*1), Z10
	VFMADD231PS  Z8, Z10, Z0
	VFMADD231PS  Z9, Z10, Z1
	VBROADCASTSS (R11)(R14*1), Z11
	VFMADD231PS  Z8, Z11, Z2
	VFMADD231PS  Z9, Z11, Z3
	VBROADCASTSS (R12)(R14*1), Z12
	VFMADD231PS  Z8, Z12, Z4
	VFMADD231PS  Z9, Z12, Z5
	VBROADCASTSS (R13)(R14*1), Z13
	VFMADD231PS  Z8, Z13, Z6
	VFMADD231PS  Z9, Z13, Z7
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          z4b32d

	LEAQ    (DI)(AX*4), BX
	VMOVUPS Z0, (BX)
	VMOVUPS Z1, 64(BX)
	ADDQ    R8, BX
	VMOVUPS Z2, (BX)
	VMOVUPS Z3, 64(BX)
	ADDQ    R8, BX
	VMOVUPS Z4, (BX)
	VMOVUPS Z5, 64(BX)
	ADDQ    R8, BX
	VMOVUPS Z6, (BX)
	VMOVUPS Z7, 64(BX)
	ADDQ    $32, AX
	JMP     z4b32

z4b16:
	CMPQ   AX, CX
	JGE    z4done
	VPXORD Z0, Z0, Z0
	VPXORD Z2, Z2, Z2
	VPXORD Z4, Z4, Z4
	VPXORD Z6, Z6, Z6
	LEAQ   (DX)(AX*4), BX
	XORQ   R14, R14

z4b16d:
	VMOVUPS      (BX), Z8
	VBROADCASTSS (SI)(R14*1), Z10
	VFMADD231PS  Z8, Z10, Z0
	VBROADCASTSS (R11)(R14*1), Z11
	VFMADD231PS  Z8, Z11, Z2
	VBROADCASTSS (R12)(R14*1), Z12
	VFMADD231PS  Z8, Z12, Z4
	VBROADCASTSS (R13)(R14*1), Z13
	VFMADD231PS  Z8, Z13, Z6
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          z4b16d

	LEAQ    (DI)(AX*4), BX
	VMOVUPS Z0, (BX)
	ADDQ    R8, BX
	VMOVUPS Z2, (BX)
	ADDQ    R8, BX
	VMOVUPS Z4, (BX)
	ADDQ    R8, BX
	VMOVUPS Z6, (BX)
	ADDQ    $16, AX
	JMP     z4b16

z4done:
	VZEROUPPER
	RET

// func attnScores2AVX512(s *float32, lds int, q *float32, hd int, k *float32, ldk, n16 int)
//
// Positions 32 at a time (Z0, Z1 row 0; Z2, Z3 row 1), then blocks of 16.
TEXT ·attnScores2AVX512(SB), NOSPLIT, $0-56
	MOVQ s+0(FP), DI
	MOVQ lds+8(FP), R8
	SHLQ $2, R8
	MOVQ q+16(FP), SI
	MOVQ hd+24(FP), R9
	SHLQ $2, R9
	LEAQ (SI)(R9*1), R11
	MOVQ k+32(FP), DX
	MOVQ ldk+40(FP), R10
	SHLQ $2, R10
	MOVQ n16+48(FP), CX
	XORQ AX, AX

z2b32:
	LEAQ   32(AX), BX
	CMPQ   BX, CX
	JGT    z2b16
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	LEAQ   (DX)(AX*4), BX
	XORQ   R14, R14

z2b32d:
	VMOVUPS      (BX), Z8
	VMOVUPS      64(BX), Z9
	VBROADCASTSS (SI)(R14*1), Z10
	VFMADD231PS  Z8, Z10, Z0
	VFMADD231PS  Z9, Z10, Z1
	VBROADCASTSS (R11)(R14*1), Z11
	VFMADD231PS  Z8, Z11, Z2
	VFMADD231PS  Z9, Z11, Z3
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          z2b32d

	LEAQ    (DI)(AX*4), BX
	VMOVUPS Z0, (BX)
	VMOVUPS Z1, 64(BX)
	ADDQ    R8, BX
	VMOVUPS Z2, (BX)
	VMOVUPS Z3, 64(BX)
	ADDQ    $32, AX
	JMP     z2b32

z2b16:
	CMPQ   AX, CX
	JGE    z2done
	VPXORD Z0, Z0, Z0
	VPXORD Z2, Z2, Z2
	LEAQ   (DX)(AX*4), BX
	XORQ   R14, R14

z2b16d:
	VMOVUPS      (BX), Z8
	VBROADCASTSS (SI)(R14*1), Z10
	VFMADD231PS  Z8, Z10, Z0
	VBROADCASTSS (R11)(R14*1), Z11
	VFMADD231PS  Z8, Z11, Z2
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          z2b16d

	LEAQ    (DI)(AX*4), BX
	VMOVUPS Z0, (BX)
	ADDQ    R8, BX
	VMOVUPS Z2, (BX)
	ADDQ    $16, AX
	JMP     z2b16

z2done:
	VZEROUPPER
	RET

// func attnScores1AVX512(s *float32, q *float32, hd int, k *float32, ldk, n16 int)
//
// Positions 64 at a time (Z0-Z3, four FMA chains), then blocks of 16.
TEXT ·attnScores1AVX512(SB), NOSPLIT, $0-48
	MOVQ s+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ hd+16(FP), R9
	SHLQ $2, R9
	MOVQ k+24(FP), DX
	MOVQ ldk+32(FP), R10
	SHLQ $2, R10
	MOVQ n16+40(FP), CX
	XORQ AX, AX

z1b64:
	LEAQ   64(AX), BX
	CMPQ   BX, CX
	JGT    z1b16
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	LEAQ   (DX)(AX*4), BX
	XORQ   R14, R14

z1b64d:
	VBROADCASTSS (SI)(R14*1), Z8
	VFMADD231PS  (BX), Z8, Z0
	VFMADD231PS  64(BX), Z8, Z1
	VFMADD231PS  128(BX), Z8, Z2
	VFMADD231PS  192(BX), Z8, Z3
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          z1b64d

	LEAQ    (DI)(AX*4), BX
	VMOVUPS Z0, (BX)
	VMOVUPS Z1, 64(BX)
	VMOVUPS Z2, 128(BX)
	VMOVUPS Z3, 192(BX)
	ADDQ    $64, AX
	JMP     z1b64

z1b16:
	CMPQ   AX, CX
	JGE    z1done
	VPXORD Z0, Z0, Z0
	LEAQ   (DX)(AX*4), BX
	XORQ   R14, R14

z1b16d:
	VBROADCASTSS (SI)(R14*1), Z8
	VFMADD231PS  (BX), Z8, Z0
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          z1b16d

	VMOVUPS Z0, (DI)(AX*4)
	ADDQ    $16, AX
	JMP     z1b16

z1done:
	VZEROUPPER
	RET
