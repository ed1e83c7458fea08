#include "textflag.h"

// The vector e^x of exp_amd64.s in 16 lanes (AVX-512): the same float32
// operations in the same order, so the same bits as exp8 (exp.go).

DATA exp16c<>+0(SB)/4, $0x42b17217  // expHi
DATA exp16c<>+4(SB)/4, $0xc2cff0a4  // expLo
DATA exp16c<>+8(SB)/4, $0x3fb8aa3b  // log2 e
DATA exp16c<>+12(SB)/4, $0x4b400000 // 1.5·2^23
DATA exp16c<>+16(SB)/4, $0x3f317200 // ln2 high
DATA exp16c<>+20(SB)/4, $0x35bfbe8e // ln2 low
DATA exp16c<>+24(SB)/4, $0x3f800000 // 1
DATA exp16c<>+28(SB)/4, $0x3f000000 // 1/2
DATA exp16c<>+32(SB)/4, $0x3e2aaaab // 1/6
DATA exp16c<>+36(SB)/4, $0x3d2aaaab // 1/24
DATA exp16c<>+40(SB)/4, $0x3c088889 // 1/120
DATA exp16c<>+44(SB)/4, $0x3ab60b61 // 1/720
DATA exp16c<>+48(SB)/4, $0x39500d01 // 1/5040
DATA exp16c<>+52(SB)/4, $0x7f800000 // +Inf
DATA exp16c<>+56(SB)/4, $0x0000007f // exponent bias 127 (int32)
GLOBL exp16c<>(SB), RODATA|NOPTR, $60

// EXP16CONSTS broadcasts the constants of EXP16 into Z7-Z9, Z11-Z14 and
// Z16-Z23.
#define EXP16CONSTS \
	VBROADCASTSS exp16c<>+8(SB), Z7;  \
	VBROADCASTSS exp16c<>+12(SB), Z8; \
	VBROADCASTSS exp16c<>+16(SB), Z9; \
	VBROADCASTSS exp16c<>+24(SB), Z11; \
	VBROADCASTSS exp16c<>+0(SB), Z12; \
	VBROADCASTSS exp16c<>+4(SB), Z13; \
	VBROADCASTSS exp16c<>+56(SB), Z14; \
	VBROADCASTSS exp16c<>+20(SB), Z16; \
	VBROADCASTSS exp16c<>+28(SB), Z17; \
	VBROADCASTSS exp16c<>+32(SB), Z18; \
	VBROADCASTSS exp16c<>+36(SB), Z19; \
	VBROADCASTSS exp16c<>+40(SB), Z20; \
	VBROADCASTSS exp16c<>+44(SB), Z21; \
	VBROADCASTSS exp16c<>+48(SB), Z22; \
	VBROADCASTSS exp16c<>+52(SB), Z23

// EXP16 sets Z1 = e^Z0 lane by lane with exactly the operations of EXP8
// (exp_amd64.s), clobbering Z2-Z6 and K1-K3; constants as EXP16CONSTS
// leaves them.
#define EXP16 \
	VMINPS    Z12, Z0, Z2;       \
	VMAXPS    Z13, Z2, Z2;       \
	VMULPS    Z7, Z2, Z3;        \
	VADDPS    Z8, Z3, Z3;        \
	VSUBPS    Z8, Z3, Z3;        \
	VMULPS    Z9, Z3, Z4;        \
	VSUBPS    Z4, Z2, Z2;        \
	VMULPS    Z16, Z3, Z4;       \
	VSUBPS    Z4, Z2, Z2;        \
	VMULPS    Z2, Z2, Z4;        \
	VMULPS    Z18, Z2, Z5;       \
	VADDPS    Z17, Z5, Z5;       \
	VMULPS    Z5, Z4, Z5;        \
	VADDPS    Z11, Z2, Z6;       \
	VADDPS    Z5, Z6, Z6;        \
	VMULPS    Z20, Z2, Z5;       \
	VADDPS    Z19, Z5, Z5;       \
	VMULPS    Z22, Z2, Z1;       \
	VADDPS    Z21, Z1, Z1;       \
	VMULPS    Z1, Z4, Z1;        \
	VADDPS    Z1, Z5, Z5;        \
	VMULPS    Z4, Z4, Z4;        \
	VMULPS    Z5, Z4, Z5;        \
	VADDPS    Z5, Z6, Z6;        \
	VCVTPS2DQ Z3, Z3;            \
	VPSRAD    $1, Z3, Z4;        \
	VPSUBD    Z4, Z3, Z3;        \
	VPADDD    Z14, Z4, Z4;       \
	VPSLLD    $23, Z4, Z4;       \
	VPADDD    Z14, Z3, Z3;       \
	VPSLLD    $23, Z3, Z3;       \
	VMULPS    Z4, Z6, Z6;        \
	VMULPS    Z3, Z6, Z1;        \
	VCMPPS    $0x1e, Z12, Z0, K1; \
	VMOVAPS   Z23, K1, Z1;       \
	VCMPPS    $0x11, Z13, Z0, K2; \
	VPXORD    Z1, Z1, K2, Z1;    \
	VCMPPS    $3, Z0, Z0, K3;    \
	VMOVAPS   Z0, K3, Z1

// func sigmoidAVX512(out, x []float32)
TEXT ·sigmoidAVX512(SB), NOSPLIT, $0-48
	MOVQ   out_base+0(FP), DI
	MOVQ   out_len+8(FP), CX
	MOVQ   x_base+24(FP), SI
	EXP16CONSTS
	VXORPS Z10, Z10, Z10
	XORQ   AX, AX

sig16loop:
	CMPQ    AX, CX
	JGE     sig16done
	VMOVUPS (SI)(AX*4), Z0
	VSUBPS  Z0, Z10, Z0
	EXP16
	VADDPS  Z11, Z1, Z1
	VDIVPS  Z1, Z11, Z1
	VMOVUPS Z1, (DI)(AX*4)
	ADDQ    $16, AX
	JMP     sig16loop

sig16done:
	VZEROUPPER
	RET

// func siluMulAVX512(out, g, u []float32)
TEXT ·siluMulAVX512(SB), NOSPLIT, $0-72
	MOVQ   out_base+0(FP), DI
	MOVQ   out_len+8(FP), CX
	MOVQ   g_base+24(FP), SI
	MOVQ   u_base+48(FP), DX
	EXP16CONSTS
	VXORPS Z10, Z10, Z10
	XORQ   AX, AX

silu16loop:
	CMPQ    AX, CX
	JGE     silu16done
	VMOVUPS (SI)(AX*4), Z15
	VSUBPS  Z15, Z10, Z0
	EXP16
	VADDPS  Z11, Z1, Z1
	VDIVPS  Z1, Z11, Z1
	VMULPS  Z1, Z15, Z1
	VMULPS  (DX)(AX*4), Z1, Z1
	VMOVUPS Z1, (DI)(AX*4)
	ADDQ    $16, AX
	JMP     silu16loop

silu16done:
	VZEROUPPER
	RET

// TAILMASK sets K4 to the low CX-AX bits (1 to 15 lanes of a last,
// partial block), clobbering R9 and CX.
#define TAILMASK \
	SUBQ  AX, CX;  \
	MOVL  $1, R9;  \
	SHLL  CX, R9;  \
	DECL  R9;      \
	KMOVW R9, K4

// func attnDSAVX512(s, dp []float32, scale, l, d float32)
// Any length: the last partial block is loaded and stored under a mask.
TEXT ·attnDSAVX512(SB), NOSPLIT, $0-60
	MOVQ         s_base+0(FP), SI
	MOVQ         s_len+8(FP), CX
	MOVQ         dp_base+24(FP), DI
	VBROADCASTSS scale+48(FP), Z15
	VBROADCASTSS l+52(FP), Z10
	VBROADCASTSS d+56(FP), Z24
	EXP16CONSTS
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-16, DX

attnds16loop:
	CMPQ    AX, DX
	JGE     attnds16tail
	VMULPS  (SI)(AX*4), Z15, Z0
	VSUBPS  Z10, Z0, Z0
	EXP16
	VMOVUPS Z1, (SI)(AX*4)
	VMOVUPS (DI)(AX*4), Z3
	VSUBPS  Z24, Z3, Z3
	VMULPS  Z3, Z1, Z3
	VMULPS  Z15, Z3, Z3
	VMOVUPS Z3, (DI)(AX*4)
	ADDQ    $16, AX
	JMP     attnds16loop

attnds16tail:
	CMPQ      AX, CX
	JGE       attnds16done
	TAILMASK
	VMOVUPS.Z (SI)(AX*4), K4, Z0
	VMULPS    Z0, Z15, Z0
	VSUBPS    Z10, Z0, Z0
	EXP16
	VMOVUPS   Z1, K4, (SI)(AX*4)
	VMOVUPS.Z (DI)(AX*4), K4, Z3
	VSUBPS    Z24, Z3, Z3
	VMULPS    Z3, Z1, Z3
	VMULPS    Z15, Z3, Z3
	VMOVUPS   Z3, K4, (DI)(AX*4)

attnds16done:
	VZEROUPPER
	RET

// func expAVX512(x []float32, sub float32)
// x[i] = e^(x[i]-sub), any length (the last partial block under a mask).
TEXT ·expAVX512(SB), NOSPLIT, $0-28
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS sub+24(FP), Z10
	EXP16CONSTS
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-16, DX

exp16loop:
	CMPQ    AX, DX
	JGE     exp16tail
	VMOVUPS (SI)(AX*4), Z0
	VSUBPS  Z10, Z0, Z0
	EXP16
	VMOVUPS Z1, (SI)(AX*4)
	ADDQ    $16, AX
	JMP     exp16loop

exp16tail:
	CMPQ      AX, CX
	JGE       exp16done
	TAILMASK
	VMOVUPS.Z (SI)(AX*4), K4, Z0
	VSUBPS    Z10, Z0, Z0
	EXP16
	VMOVUPS   Z1, K4, (SI)(AX*4)

exp16done:
	VZEROUPPER
	RET

// func expSubAVX512(x []float32, sub float32) float32
// len(x) a multiple of 8. Lane j of the 8 sums takes elements j, j+8,
// j+16, … in order, as expSubAVX2's: a 16-lane block's low half is added
// before its high half.
TEXT ·expSubAVX512(SB), NOSPLIT, $0-36
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS sub+24(FP), Z10
	EXP16CONSTS
	VXORPS       Y15, Y15, Y15
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-16, DX

expsub16loop:
	CMPQ           AX, DX
	JGE            expsub16tail
	VMOVUPS        (SI)(AX*4), Z0
	VSUBPS         Z10, Z0, Z0
	EXP16
	VMOVUPS        Z1, (SI)(AX*4)
	VADDPS         Y1, Y15, Y15
	VEXTRACTF64X4  $1, Z1, Y1
	VADDPS         Y1, Y15, Y15
	ADDQ           $16, AX
	JMP            expsub16loop

expsub16tail:
	CMPQ    AX, CX
	JGE     expsub16done
	VMOVUPS (SI)(AX*4), Y0 // the upper lanes are zeroed, their e^ unused
	VSUBPS  Y10, Y0, Y0
	EXP16
	VMOVUPS Y1, (SI)(AX*4)
	VADDPS  Y1, Y15, Y15

expsub16done:
	VEXTRACTF128 $1, Y15, X1
	VADDPS       X1, X15, X0
	VMOVHLPS     X0, X1, X1
	VADDPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0
	VMOVSS       X0, ret+32(FP)
	VZEROUPPER
	RET

// func softExpAVX512(x []float32, scale float32) float32
//
// softExpAVX2 with expSubAVX512's exps (16 lanes, the same 8 sums in the
// same order): scaleMaxAVX2's pass, then expSubAVX512's with the maximum
// as sub, so the same bits as those kernels in turn. len(x) a positive
// multiple of 8.
TEXT ·softExpAVX512(SB), NOSPLIT, $0-36
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS scale+24(FP), Y2
	VBROADCASTSS exp16c<>+52(SB), Y0
	VXORPS       Y3, Y3, Y3
	VSUBPS       Y0, Y3, Y0 // -Inf
	XORQ         AX, AX

sx5maxloop:
	CMPQ    AX, CX
	JGE     sx5maxdone
	VMOVUPS (SI)(AX*4), Y1
	VMULPS  Y2, Y1, Y1
	VMOVUPS Y1, (SI)(AX*4)
	VMAXPS  Y1, Y0, Y0
	ADDQ    $8, AX
	JMP     sx5maxloop

sx5maxdone:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VMOVHLPS     X0, X1, X1
	VMAXPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VMAXSS       X1, X0, X0
	VBROADCASTSS X0, Z10
	EXP16CONSTS
	VXORPS       Y15, Y15, Y15
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-16, DX

sx5loop:
	CMPQ          AX, DX
	JGE           sx5tail
	VMOVUPS       (SI)(AX*4), Z0
	VSUBPS        Z10, Z0, Z0
	EXP16
	VMOVUPS       Z1, (SI)(AX*4)
	VADDPS        Y1, Y15, Y15
	VEXTRACTF64X4 $1, Z1, Y1
	VADDPS        Y1, Y15, Y15
	ADDQ          $16, AX
	JMP           sx5loop

sx5tail:
	CMPQ    AX, CX
	JGE     sx5done
	VMOVUPS (SI)(AX*4), Y0 // the upper lanes are zeroed, their e^ unused
	VSUBPS  Y10, Y0, Y0
	EXP16
	VMOVUPS Y1, (SI)(AX*4)
	VADDPS  Y1, Y15, Y15

sx5done:
	VEXTRACTF128 $1, Y15, X1
	VADDPS       X1, X15, X0
	VMOVHLPS     X0, X1, X1
	VADDPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0
	VMOVSS       X0, ret+32(FP)
	VZEROUPPER
	RET
