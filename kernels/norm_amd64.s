#include "textflag.h"

// func sumSq4AVX2(acc *[4]float64, x []float32)
TEXT ·sumSq4AVX2(SB), NOSPLIT, $0-32
	MOVQ    acc+0(FP), DI
	MOVQ    x_base+8(FP), SI
	MOVQ    x_len+16(FP), CX
	VMOVUPD (DI), Y0
	XORQ    AX, AX

sumsq4loop:
	CMPQ      AX, CX
	JGE       sumsq4done
	VCVTPS2PD (SI)(AX*4), Y1
	VMULPD    Y1, Y1, Y1
	VADDPD    Y1, Y0, Y0
	ADDQ      $4, AX
	JMP       sumsq4loop

sumsq4done:
	VMOVUPD Y0, (DI)
	VZEROUPPER
	RET

// func dotWX4AVX2(acc *[4]float64, dy, w, x []float32, s float32)
TEXT ·dotWX4AVX2(SB), NOSPLIT, $0-84
	MOVQ         acc+0(FP), DI
	MOVQ         dy_base+8(FP), SI
	MOVQ         dy_len+16(FP), CX
	MOVQ         w_base+32(FP), DX
	MOVQ         x_base+56(FP), BX
	VBROADCASTSS s+80(FP), X5
	VMOVUPD      (DI), Y0
	XORQ         AX, AX

dotwx4loop:
	CMPQ      AX, CX
	JGE       dotwx4done
	VMOVUPS   (SI)(AX*4), X1
	VMULPS    (DX)(AX*4), X1, X1
	VMULPS    (BX)(AX*4), X1, X1
	VMULPS    X5, X1, X1
	VCVTPS2PD X1, Y1
	VADDPD    Y1, Y0, Y0
	ADDQ      $4, AX
	JMP       dotwx4loop

dotwx4done:
	VMOVUPD Y0, (DI)
	VZEROUPPER
	RET

// func scaleMulAVX2(out, x, w []float32, s float32)
TEXT ·scaleMulAVX2(SB), NOSPLIT, $0-76
	MOVQ         out_base+0(FP), DI
	MOVQ         out_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	MOVQ         w_base+48(FP), DX
	VBROADCASTSS s+72(FP), Y5
	XORQ         AX, AX

scalemulloop:
	CMPQ    AX, CX
	JGE     scalemuldone
	VMULPS  (SI)(AX*4), Y5, Y1
	VMULPS  (DX)(AX*4), Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     scalemulloop

scalemuldone:
	VZEROUPPER
	RET

// func rmsBackAVX2(d, dy, w, x []float32, s, mt float32)
TEXT ·rmsBackAVX2(SB), NOSPLIT, $0-104
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         dy_base+24(FP), SI
	MOVQ         w_base+48(FP), DX
	MOVQ         x_base+72(FP), BX
	VBROADCASTSS s+96(FP), Y5
	VBROADCASTSS mt+100(FP), Y6
	XORQ         AX, AX

rmsbackloop:
	CMPQ    AX, CX
	JGE     rmsbackdone
	VMOVUPS (SI)(AX*4), Y1
	VMULPS  (DX)(AX*4), Y1, Y1
	VMULPS  (BX)(AX*4), Y5, Y2
	VMULPS  Y6, Y2, Y2
	VSUBPS  Y2, Y1, Y1
	VMULPS  Y1, Y5, Y1
	VADDPS  (DI)(AX*4), Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     rmsbackloop

rmsbackdone:
	VZEROUPPER
	RET

// func addMulScaleAVX2(p, dy, x []float32, s float32)
TEXT ·addMulScaleAVX2(SB), NOSPLIT, $0-76
	MOVQ         p_base+0(FP), DI
	MOVQ         p_len+8(FP), CX
	MOVQ         dy_base+24(FP), SI
	MOVQ         x_base+48(FP), DX
	VBROADCASTSS s+72(FP), Y5
	XORQ         AX, AX

addmulscaleloop:
	CMPQ    AX, CX
	JGE     addmulscaledone
	VMOVUPS (SI)(AX*4), Y1
	VMULPS  (DX)(AX*4), Y1, Y1
	VMULPS  Y5, Y1, Y1
	VADDPS  (DI)(AX*4), Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     addmulscaleloop

addmulscaledone:
	VZEROUPPER
	RET

// HSUM4PD leaves in X0 (a0+a1)+(a2+a3) of the four float64 lanes of Y0,
// clobbering X1.
#define HSUM4PD \
	VEXTRACTF128 $1, Y0, X1; \
	VHADDPD      X0, X0, X0; \
	VHADDPD      X1, X1, X1; \
	VADDSD       X1, X0, X0

// func sumSqRowsAVX2(ss []float64, x []float32, C int)
// Rows go in pairs, the two rows' chains interleaved (each its own, in
// element order): one row's chain of dependent adds leaves the adder idle.
TEXT ·sumSqRowsAVX2(SB), NOSPLIT, $0-56
	MOVQ ss_base+0(FP), DI
	MOVQ ss_len+8(FP), R8
	MOVQ x_base+24(FP), SI
	MOVQ C+48(FP), CX
	LEAQ (SI)(CX*4), DX // the pair's second row

sumsqpairs:
	CMPQ   R8, $2
	JLT    sumsqrows
	VXORPD Y0, Y0, Y0
	VXORPD Y2, Y2, Y2
	XORQ   AX, AX

sumsqpairsinner:
	VCVTPS2PD (SI)(AX*4), Y1
	VCVTPS2PD (DX)(AX*4), Y3
	VMULPD    Y1, Y1, Y1
	VMULPD    Y3, Y3, Y3
	VADDPD    Y1, Y0, Y0
	VADDPD    Y3, Y2, Y2
	ADDQ      $4, AX
	CMPQ      AX, CX
	JLT       sumsqpairsinner
	HSUM4PD
	VMOVSD    X0, (DI)
	VMOVAPD   Y2, Y0
	HSUM4PD
	VMOVSD    X0, 8(DI)
	ADDQ      $16, DI
	LEAQ      (SI)(CX*8), SI
	LEAQ      (DX)(CX*8), DX
	SUBQ      $2, R8
	JMP       sumsqpairs

sumsqrows:
	TESTQ  R8, R8
	JZ     sumsqdone
	VXORPD Y0, Y0, Y0
	XORQ   AX, AX

sumsqrowsinner:
	VCVTPS2PD (SI)(AX*4), Y1
	VMULPD    Y1, Y1, Y1
	VADDPD    Y1, Y0, Y0
	ADDQ      $4, AX
	CMPQ      AX, CX
	JLT       sumsqrowsinner
	HSUM4PD
	VMOVSD    X0, (DI)

sumsqdone:
	VZEROUPPER
	RET

// func dotWXRowsAVX2(m []float64, dy, w, x, s []float32, C int)
// Rows go in pairs, as in sumSqRowsAVX2.
TEXT ·dotWXRowsAVX2(SB), NOSPLIT, $0-128
	MOVQ m_base+0(FP), DI
	MOVQ m_len+8(FP), R8
	MOVQ dy_base+24(FP), SI
	MOVQ w_base+48(FP), DX
	MOVQ x_base+72(FP), BX
	MOVQ s_base+96(FP), R11
	MOVQ C+120(FP), CX
	LEAQ (SI)(CX*4), R12 // the pair's second row of dy
	LEAQ (BX)(CX*4), R13 // and of x

dotwxpairs:
	CMPQ         R8, $2
	JLT          dotwxrows
	VBROADCASTSS (R11), X5
	VBROADCASTSS 4(R11), X6
	VXORPD       Y0, Y0, Y0
	VXORPD       Y2, Y2, Y2
	XORQ         AX, AX

dotwxpairsinner:
	VMOVUPS   (DX)(AX*4), X4
	VMULPS    (SI)(AX*4), X4, X1
	VMULPS    (R12)(AX*4), X4, X3
	VMULPS    (BX)(AX*4), X1, X1
	VMULPS    (R13)(AX*4), X3, X3
	VMULPS    X5, X1, X1
	VMULPS    X6, X3, X3
	VCVTPS2PD X1, Y1
	VCVTPS2PD X3, Y3
	VADDPD    Y1, Y0, Y0
	VADDPD    Y3, Y2, Y2
	ADDQ      $4, AX
	CMPQ      AX, CX
	JLT       dotwxpairsinner
	HSUM4PD
	VMOVSD    X0, (DI)
	VMOVAPD   Y2, Y0
	HSUM4PD
	VMOVSD    X0, 8(DI)
	ADDQ      $16, DI
	ADDQ      $8, R11
	LEAQ      (SI)(CX*8), SI
	LEAQ      (R12)(CX*8), R12
	LEAQ      (BX)(CX*8), BX
	LEAQ      (R13)(CX*8), R13
	SUBQ      $2, R8
	JMP       dotwxpairs

dotwxrows:
	TESTQ        R8, R8
	JZ           dotwxdone
	VBROADCASTSS (R11), X5
	VXORPD       Y0, Y0, Y0
	XORQ         AX, AX

dotwxrowsinner:
	VMOVUPS   (SI)(AX*4), X1
	VMULPS    (DX)(AX*4), X1, X1
	VMULPS    (BX)(AX*4), X1, X1
	VMULPS    X5, X1, X1
	VCVTPS2PD X1, Y1
	VADDPD    Y1, Y0, Y0
	ADDQ      $4, AX
	CMPQ      AX, CX
	JLT       dotwxrowsinner
	HSUM4PD
	VMOVSD    X0, (DI)

dotwxdone:
	VZEROUPPER
	RET

// func scaleMulRowsAVX2(out, x, w, s []float32, C int)
TEXT ·scaleMulRowsAVX2(SB), NOSPLIT, $0-104
	MOVQ out_base+0(FP), DI
	MOVQ x_base+24(FP), SI
	MOVQ w_base+48(FP), DX
	MOVQ s_base+72(FP), R11
	MOVQ s_len+80(FP), R8
	MOVQ C+96(FP), CX

scalemulrows:
	VBROADCASTSS (R11), Y5
	XORQ         AX, AX

scalemulrowsinner:
	VMULPS  (SI)(AX*4), Y5, Y1
	VMULPS  (DX)(AX*4), Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     scalemulrowsinner
	ADDQ    $4, R11
	LEAQ    (DI)(CX*4), DI
	LEAQ    (SI)(CX*4), SI
	DECQ    R8
	JNZ     scalemulrows
	VZEROUPPER
	RET

// func rmsBackRowsAVX2(d, dy, w, x, s, mt []float32, C int)
TEXT ·rmsBackRowsAVX2(SB), NOSPLIT, $0-152
	MOVQ d_base+0(FP), DI
	MOVQ dy_base+24(FP), SI
	MOVQ w_base+48(FP), DX
	MOVQ x_base+72(FP), BX
	MOVQ s_base+96(FP), R11
	MOVQ s_len+104(FP), R8
	MOVQ mt_base+120(FP), R12
	MOVQ C+144(FP), CX

rmsbackrows:
	VBROADCASTSS (R11), Y5
	VBROADCASTSS (R12), Y6
	XORQ         AX, AX

rmsbackrowsinner:
	VMOVUPS (SI)(AX*4), Y1
	VMULPS  (DX)(AX*4), Y1, Y1
	VMULPS  (BX)(AX*4), Y5, Y2
	VMULPS  Y6, Y2, Y2
	VSUBPS  Y2, Y1, Y1
	VMULPS  Y1, Y5, Y1
	VADDPS  (DI)(AX*4), Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     rmsbackrowsinner
	ADDQ    $4, R11
	ADDQ    $4, R12
	LEAQ    (DI)(CX*4), DI
	LEAQ    (SI)(CX*4), SI
	LEAQ    (BX)(CX*4), BX
	DECQ    R8
	JNZ     rmsbackrows
	VZEROUPPER
	RET

// func addMulScaleRowsAVX2(p, dy, x, s []float32, C int)
TEXT ·addMulScaleRowsAVX2(SB), NOSPLIT, $0-104
	MOVQ p_base+0(FP), DI
	MOVQ dy_base+24(FP), SI
	MOVQ x_base+48(FP), DX
	MOVQ s_base+72(FP), R11
	MOVQ s_len+80(FP), R8
	MOVQ C+96(FP), CX

addmulscalerows:
	VBROADCASTSS (R11), Y5
	XORQ         AX, AX

addmulscalerowsinner:
	VMOVUPS (SI)(AX*4), Y1
	VMULPS  (DX)(AX*4), Y1, Y1
	VMULPS  Y5, Y1, Y1
	VADDPS  (DI)(AX*4), Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     addmulscalerowsinner
	ADDQ    $4, R11
	LEAQ    (SI)(CX*4), SI
	LEAQ    (DX)(CX*4), DX
	DECQ    R8
	JNZ     addmulscalerows
	VZEROUPPER
	RET
