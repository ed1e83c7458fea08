#include "textflag.h"

// Constants of the vector e^x, each repeated in 8 lanes (see exp.go).
DATA expc<>+0(SB)/8, $0x42b1721742b17217   // expHi
DATA expc<>+8(SB)/8, $0x42b1721742b17217
DATA expc<>+16(SB)/8, $0x42b1721742b17217
DATA expc<>+24(SB)/8, $0x42b1721742b17217
DATA expc<>+32(SB)/8, $0xc2cff0a4c2cff0a4  // expLo
DATA expc<>+40(SB)/8, $0xc2cff0a4c2cff0a4
DATA expc<>+48(SB)/8, $0xc2cff0a4c2cff0a4
DATA expc<>+56(SB)/8, $0xc2cff0a4c2cff0a4
DATA expc<>+64(SB)/8, $0x3fb8aa3b3fb8aa3b  // log2 e
DATA expc<>+72(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expc<>+80(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expc<>+88(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expc<>+96(SB)/8, $0x4b4000004b400000  // 1.5·2^23
DATA expc<>+104(SB)/8, $0x4b4000004b400000
DATA expc<>+112(SB)/8, $0x4b4000004b400000
DATA expc<>+120(SB)/8, $0x4b4000004b400000
DATA expc<>+128(SB)/8, $0x3f3172003f317200 // ln2 high
DATA expc<>+136(SB)/8, $0x3f3172003f317200
DATA expc<>+144(SB)/8, $0x3f3172003f317200
DATA expc<>+152(SB)/8, $0x3f3172003f317200
DATA expc<>+160(SB)/8, $0x35bfbe8e35bfbe8e // ln2 low
DATA expc<>+168(SB)/8, $0x35bfbe8e35bfbe8e
DATA expc<>+176(SB)/8, $0x35bfbe8e35bfbe8e
DATA expc<>+184(SB)/8, $0x35bfbe8e35bfbe8e
DATA expc<>+192(SB)/8, $0x3f8000003f800000 // 1
DATA expc<>+200(SB)/8, $0x3f8000003f800000
DATA expc<>+208(SB)/8, $0x3f8000003f800000
DATA expc<>+216(SB)/8, $0x3f8000003f800000
DATA expc<>+224(SB)/8, $0x3f0000003f000000 // 1/2
DATA expc<>+232(SB)/8, $0x3f0000003f000000
DATA expc<>+240(SB)/8, $0x3f0000003f000000
DATA expc<>+248(SB)/8, $0x3f0000003f000000
DATA expc<>+256(SB)/8, $0x3e2aaaab3e2aaaab // 1/6
DATA expc<>+264(SB)/8, $0x3e2aaaab3e2aaaab
DATA expc<>+272(SB)/8, $0x3e2aaaab3e2aaaab
DATA expc<>+280(SB)/8, $0x3e2aaaab3e2aaaab
DATA expc<>+288(SB)/8, $0x3d2aaaab3d2aaaab // 1/24
DATA expc<>+296(SB)/8, $0x3d2aaaab3d2aaaab
DATA expc<>+304(SB)/8, $0x3d2aaaab3d2aaaab
DATA expc<>+312(SB)/8, $0x3d2aaaab3d2aaaab
DATA expc<>+320(SB)/8, $0x3c0888893c088889 // 1/120
DATA expc<>+328(SB)/8, $0x3c0888893c088889
DATA expc<>+336(SB)/8, $0x3c0888893c088889
DATA expc<>+344(SB)/8, $0x3c0888893c088889
DATA expc<>+352(SB)/8, $0x3ab60b613ab60b61 // 1/720
DATA expc<>+360(SB)/8, $0x3ab60b613ab60b61
DATA expc<>+368(SB)/8, $0x3ab60b613ab60b61
DATA expc<>+376(SB)/8, $0x3ab60b613ab60b61
DATA expc<>+384(SB)/8, $0x39500d0139500d01 // 1/5040
DATA expc<>+392(SB)/8, $0x39500d0139500d01
DATA expc<>+400(SB)/8, $0x39500d0139500d01
DATA expc<>+408(SB)/8, $0x39500d0139500d01
DATA expc<>+416(SB)/8, $0x7f8000007f800000 // +Inf
DATA expc<>+424(SB)/8, $0x7f8000007f800000
DATA expc<>+432(SB)/8, $0x7f8000007f800000
DATA expc<>+440(SB)/8, $0x7f8000007f800000
DATA expc<>+448(SB)/8, $0x0000007f0000007f // exponent bias 127 (int32)
DATA expc<>+456(SB)/8, $0x0000007f0000007f
DATA expc<>+464(SB)/8, $0x0000007f0000007f
DATA expc<>+472(SB)/8, $0x0000007f0000007f
GLOBL expc<>(SB), RODATA|NOPTR, $480

// EXPCONSTS loads the register-resident constants of EXP8.
#define EXPCONSTS \
	VMOVUPS expc<>+64(SB), Y7;  \
	VMOVUPS expc<>+96(SB), Y8;  \
	VMOVUPS expc<>+128(SB), Y9; \
	VMOVUPS expc<>+192(SB), Y11; \
	VMOVUPS expc<>+0(SB), Y12;  \
	VMOVUPS expc<>+32(SB), Y13; \
	VMOVUPS expc<>+448(SB), Y14

// EXP8 sets Y1 = e^Y0 lane by lane with exactly the operations of exp8
// (exp.go), clobbering Y2-Y6. Y7 log2 e, Y8 shifter, Y9 ln2 high, Y11 1,
// Y12 expHi, Y13 expLo, Y14 int32 127.
#define EXP8 \
	VMINPS    Y12, Y0, Y2;                \
	VMAXPS    Y13, Y2, Y2;                \
	VMULPS    Y7, Y2, Y3;                 \
	VADDPS    Y8, Y3, Y3;                 \
	VSUBPS    Y8, Y3, Y3;                 \
	VMULPS    Y9, Y3, Y4;                 \
	VSUBPS    Y4, Y2, Y2;                 \
	VMULPS    expc<>+160(SB), Y3, Y4;     \
	VSUBPS    Y4, Y2, Y2;                 \
	VMULPS    Y2, Y2, Y4;                 \
	VMULPS    expc<>+256(SB), Y2, Y5;     \
	VADDPS    expc<>+224(SB), Y5, Y5;     \
	VMULPS    Y5, Y4, Y5;                 \
	VADDPS    Y11, Y2, Y6;                \
	VADDPS    Y5, Y6, Y6;                 \
	VMULPS    expc<>+320(SB), Y2, Y5;     \
	VADDPS    expc<>+288(SB), Y5, Y5;     \
	VMULPS    expc<>+384(SB), Y2, Y1;     \
	VADDPS    expc<>+352(SB), Y1, Y1;     \
	VMULPS    Y1, Y4, Y1;                 \
	VADDPS    Y1, Y5, Y5;                 \
	VMULPS    Y4, Y4, Y4;                 \
	VMULPS    Y5, Y4, Y5;                 \
	VADDPS    Y5, Y6, Y6;                 \
	VCVTPS2DQ Y3, Y3;                     \
	VPSRAD    $1, Y3, Y4;                 \
	VPSUBD    Y4, Y3, Y3;                 \
	VPADDD    Y14, Y4, Y4;                \
	VPSLLD    $23, Y4, Y4;                \
	VPADDD    Y14, Y3, Y3;                \
	VPSLLD    $23, Y3, Y3;                \
	VMULPS    Y4, Y6, Y6;                 \
	VMULPS    Y3, Y6, Y1;                 \
	VCMPPS    $0x1e, Y12, Y0, Y2;         \
	VBLENDVPS Y2, expc<>+416(SB), Y1, Y1; \
	VCMPPS    $0x11, Y13, Y0, Y2;         \
	VANDNPS   Y1, Y2, Y1;                 \
	VCMPPS    $3, Y0, Y0, Y2;             \
	VBLENDVPS Y2, Y0, Y1, Y1

// HSUM leaves in the low lane of X0 the sum of the 8 lanes of Y0, as
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)) (hsum8).
#define HSUM \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVHLPS     X0, X1, X1; \
	VADDPS       X1, X0, X0; \
	VMOVSHDUP    X0, X1;     \
	VADDSS       X1, X0, X0

// func expSubAVX2(x []float32, sub float32) float32
TEXT ·expSubAVX2(SB), NOSPLIT, $0-36
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS sub+24(FP), Y10
	EXPCONSTS
	VXORPS       Y15, Y15, Y15
	XORQ         AX, AX

expsubloop:
	CMPQ    AX, CX
	JGE     expsubdone
	VMOVUPS (SI)(AX*4), Y0
	VSUBPS  Y10, Y0, Y0
	EXP8
	VMOVUPS Y1, (SI)(AX*4)
	VADDPS  Y1, Y15, Y15
	ADDQ    $8, AX
	JMP     expsubloop

expsubdone:
	VMOVAPS Y15, Y0
	HSUM
	VMOVSS  X0, ret+32(FP)
	VZEROUPPER
	RET

// func sigmoidAVX2(out, x []float32)
TEXT ·sigmoidAVX2(SB), NOSPLIT, $0-48
	MOVQ   out_base+0(FP), DI
	MOVQ   out_len+8(FP), CX
	MOVQ   x_base+24(FP), SI
	EXPCONSTS
	VXORPS Y10, Y10, Y10
	XORQ   AX, AX

sigloop:
	CMPQ    AX, CX
	JGE     sigdone
	VMOVUPS (SI)(AX*4), Y0
	VSUBPS  Y0, Y10, Y0
	EXP8
	VADDPS  Y11, Y1, Y1
	VDIVPS  Y1, Y11, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     sigloop

sigdone:
	VZEROUPPER
	RET

// func siluMulAVX2(out, g, u []float32)
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-72
	MOVQ   out_base+0(FP), DI
	MOVQ   out_len+8(FP), CX
	MOVQ   g_base+24(FP), SI
	MOVQ   u_base+48(FP), DX
	EXPCONSTS
	VXORPS Y10, Y10, Y10
	XORQ   AX, AX

siluloop:
	CMPQ    AX, CX
	JGE     siludone
	VMOVUPS (SI)(AX*4), Y15
	VSUBPS  Y15, Y10, Y0
	EXP8
	VADDPS  Y11, Y1, Y1
	VDIVPS  Y1, Y11, Y1
	VMULPS  Y1, Y15, Y1
	VMULPS  (DX)(AX*4), Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     siluloop

siludone:
	VZEROUPPER
	RET

// func attnDSAVX2(s, dp []float32, scale, l, d float32)
TEXT ·attnDSAVX2(SB), NOSPLIT, $0-60
	MOVQ         s_base+0(FP), SI
	MOVQ         s_len+8(FP), CX
	MOVQ         dp_base+24(FP), DI
	VBROADCASTSS scale+48(FP), Y15
	VBROADCASTSS l+52(FP), Y10
	EXPCONSTS
	XORQ         AX, AX

attndsloop:
	CMPQ         AX, CX
	JGE          attndsdone
	VMULPS       (SI)(AX*4), Y15, Y0
	VSUBPS       Y10, Y0, Y0
	EXP8
	VMOVUPS      Y1, (SI)(AX*4)
	VBROADCASTSS d+56(FP), Y2
	VMOVUPS      (DI)(AX*4), Y3
	VSUBPS       Y2, Y3, Y3
	VMULPS       Y3, Y1, Y3
	VMULPS       Y15, Y3, Y3
	VMOVUPS      Y3, (DI)(AX*4)
	ADDQ         $8, AX
	JMP          attndsloop

attndsdone:
	VZEROUPPER
	RET

// func scaleMaxAVX2(x []float32, s float32) float32
TEXT ·scaleMaxAVX2(SB), NOSPLIT, $0-36
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS s+24(FP), Y2
	VBROADCASTSS expc<>+416(SB), Y0
	VXORPS       Y3, Y3, Y3
	VSUBPS       Y0, Y3, Y0 // -Inf
	XORQ         AX, AX

smloop:
	CMPQ    AX, CX
	JGE     smdone
	VMOVUPS (SI)(AX*4), Y1
	VMULPS  Y2, Y1, Y1
	VMOVUPS Y1, (SI)(AX*4)
	VMAXPS  Y1, Y0, Y0
	ADDQ    $8, AX
	JMP     smloop

smdone:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VMOVHLPS     X0, X1, X1
	VMAXPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VMAXSS       X1, X0, X0
	VMOVSS       X0, ret+32(FP)
	VZEROUPPER
	RET

// func swigluBackAVX2(dg, du, d, g, u, s []float32)
//
// For len(dg) (a multiple of 8) elements, with s = sigmoid(g):
// dg += ((d·u)·s)·(1 + g·(1−s)), du += d·(g·s), each product and sum
// rounded on its own (no FMA), as swigluBackGo computes them.
TEXT ·swigluBackAVX2(SB), NOSPLIT, $0-144
	MOVQ         dg_base+0(FP), DI
	MOVQ         dg_len+8(FP), CX
	MOVQ         du_base+24(FP), R8
	MOVQ         d_base+48(FP), R9
	MOVQ         g_base+72(FP), R10
	MOVQ         u_base+96(FP), R11
	MOVQ         s_base+120(FP), R12
	MOVL         $0x3f800000, AX
	MOVL         AX, X15
	VBROADCASTSS X15, Y15
	XORQ         AX, AX

swbloop:
	CMPQ    AX, CX
	JGE     swbdone
	VMOVUPS (R12)(AX*4), Y0
	VMOVUPS (R10)(AX*4), Y1
	VMOVUPS (R9)(AX*4), Y2
	VSUBPS  Y0, Y15, Y3
	VMULPS  Y3, Y1, Y3
	VADDPS  Y3, Y15, Y3
	VMULPS  (R11)(AX*4), Y2, Y4
	VMULPS  Y0, Y4, Y4
	VMULPS  Y3, Y4, Y4
	VADDPS  (DI)(AX*4), Y4, Y4
	VMOVUPS Y4, (DI)(AX*4)
	VMULPS  Y0, Y1, Y5
	VMULPS  Y5, Y2, Y5
	VADDPS  (R8)(AX*4), Y5, Y5
	VMOVUPS Y5, (R8)(AX*4)
	ADDQ    $8, AX
	JMP     swbloop

swbdone:
	VZEROUPPER
	RET

// func ropeRowAVX2(out, x, cs, sn *float32, half, heads int, add bool)
//
// Rotates the heads of one row (head h at h·2·half, halves a = [0, half),
// b = [half, 2·half)); half is a multiple of 8: ra = a·c − b·s,
// rb = b·c + a·s, each product and sum rounded on its own, stored or
// (add) added to out. x and out may be the same row.
TEXT ·ropeRowAVX2(SB), NOSPLIT, $0-49
	MOVQ    out+0(FP), DI
	MOVQ    x+8(FP), SI
	MOVQ    cs+16(FP), R8
	MOVQ    sn+24(FP), R9
	MOVQ    half+32(FP), R10
	SHLQ    $2, R10
	MOVQ    heads+40(FP), R11
	MOVBQZX add+48(FP), R12

ropehead:
	XORQ AX, AX

ropelane:
	VMOVUPS (SI)(AX*1), Y0
	LEAQ    (SI)(R10*1), BX
	VMOVUPS (BX)(AX*1), Y1
	VMOVUPS (R8)(AX*1), Y2
	VMOVUPS (R9)(AX*1), Y3
	VMULPS  Y2, Y0, Y4
	VMULPS  Y3, Y1, Y5
	VSUBPS  Y5, Y4, Y4
	VMULPS  Y2, Y1, Y6
	VMULPS  Y3, Y0, Y7
	VADDPS  Y7, Y6, Y6
	LEAQ    (DI)(R10*1), DX
	TESTQ   R12, R12
	JZ      ropeset
	VADDPS  (DI)(AX*1), Y4, Y4
	VADDPS  (DX)(AX*1), Y6, Y6

ropeset:
	VMOVUPS Y4, (DI)(AX*1)
	VMOVUPS Y6, (DX)(AX*1)
	ADDQ    $32, AX
	CMPQ    AX, R10
	JLT     ropelane

	LEAQ (SI)(R10*2), SI
	LEAQ (DI)(R10*2), DI
	DECQ R11
	JNZ  ropehead
	VZEROUPPER
	RET

// func softExpAVX2(x []float32, scale float32) float32
//
// Decode attention's softmax numerators in one kernel: scaleMaxAVX2's pass
// (x *= scale, 8 lane maxima reduced as hmax8), then expSubAVX2's with the
// maximum as sub; the same operations, so the same bits as the two
// kernels called in turn. len(x) a positive multiple of 8.
TEXT ·softExpAVX2(SB), NOSPLIT, $0-36
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS scale+24(FP), Y2
	VBROADCASTSS expc<>+416(SB), Y0
	VXORPS       Y3, Y3, Y3
	VSUBPS       Y0, Y3, Y0 // -Inf
	XORQ         AX, AX

sxmaxloop:
	CMPQ    AX, CX
	JGE     sxmaxdone
	VMOVUPS (SI)(AX*4), Y1
	VMULPS  Y2, Y1, Y1
	VMOVUPS Y1, (SI)(AX*4)
	VMAXPS  Y1, Y0, Y0
	ADDQ    $8, AX
	JMP     sxmaxloop

sxmaxdone:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VMOVHLPS     X0, X1, X1
	VMAXPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VMAXSS       X1, X0, X0
	VBROADCASTSS X0, Y10
	EXPCONSTS
	VXORPS       Y15, Y15, Y15
	XORQ         AX, AX

sxexploop:
	CMPQ    AX, CX
	JGE     sxexpdone
	VMOVUPS (SI)(AX*4), Y0
	VSUBPS  Y10, Y0, Y0
	EXP8
	VMOVUPS Y1, (SI)(AX*4)
	VADDPS  Y1, Y15, Y15
	ADDQ    $8, AX
	JMP     sxexploop

sxexpdone:
	VMOVAPS Y15, Y0
	HSUM
	VMOVSS  X0, ret+32(FP)
	VZEROUPPER
	RET
