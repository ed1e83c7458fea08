#include "textflag.h"

// HSUM leaves in the low lane of X0 the sum of the 8 lanes of Y0, as
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
#define HSUM \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVHLPS     X0, X1, X1; \
	VADDPS       X1, X0, X0; \
	VMOVSHDUP    X0, X1;     \
	VADDSS       X1, X0, X0

// func dotAVX2(a, b []float32) float32
TEXT ·dotAVX2(SB), NOSPLIT, $0-52
	MOVQ   a_base+0(FP), SI
	MOVQ   a_len+8(FP), CX
	MOVQ   b_base+24(FP), DI
	XORQ   AX, AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   CX, DX
	ANDQ   $-32, DX
	JZ     dot8

dot32:
	VMOVUPS     (SI)(AX*4), Y4
	VMOVUPS     32(SI)(AX*4), Y5
	VMOVUPS     64(SI)(AX*4), Y6
	VMOVUPS     96(SI)(AX*4), Y7
	VFMADD231PS (DI)(AX*4), Y4, Y0
	VFMADD231PS 32(DI)(AX*4), Y5, Y1
	VFMADD231PS 64(DI)(AX*4), Y6, Y2
	VFMADD231PS 96(DI)(AX*4), Y7, Y3
	ADDQ        $32, AX
	CMPQ        AX, DX
	JLT         dot32

dot8:
	MOVQ CX, DX
	ANDQ $-8, DX
	CMPQ AX, DX
	JGE  dotsum

dot8loop:
	VMOVUPS     (SI)(AX*4), Y4
	VFMADD231PS (DI)(AX*4), Y4, Y0
	ADDQ        $8, AX
	CMPQ        AX, DX
	JLT         dot8loop

dotsum:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM
	CMPQ   AX, CX
	JGE    dotdone

dot1:
	VMOVSS      (SI)(AX*4), X4
	VFMADD231SS (DI)(AX*4), X4, X0
	INCQ        AX
	CMPQ        AX, CX
	JLT         dot1

dotdone:
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET

// func sumSqAVX2(x []float32) float32
TEXT ·sumSqAVX2(SB), NOSPLIT, $0-28
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	XORQ   AX, AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   CX, DX
	ANDQ   $-32, DX
	JZ     ss8

ss32:
	VMOVUPS     (SI)(AX*4), Y4
	VMOVUPS     32(SI)(AX*4), Y5
	VMOVUPS     64(SI)(AX*4), Y6
	VMOVUPS     96(SI)(AX*4), Y7
	VFMADD231PS Y4, Y4, Y0
	VFMADD231PS Y5, Y5, Y1
	VFMADD231PS Y6, Y6, Y2
	VFMADD231PS Y7, Y7, Y3
	ADDQ        $32, AX
	CMPQ        AX, DX
	JLT         ss32

ss8:
	MOVQ CX, DX
	ANDQ $-8, DX
	CMPQ AX, DX
	JGE  sssum

ss8loop:
	VMOVUPS     (SI)(AX*4), Y4
	VFMADD231PS Y4, Y4, Y0
	ADDQ        $8, AX
	CMPQ        AX, DX
	JLT         ss8loop

sssum:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM
	CMPQ   AX, CX
	JGE    ssdone

ss1:
	VMOVSS      (SI)(AX*4), X4
	VFMADD231SS X4, X4, X0
	INCQ        AX
	CMPQ        AX, CX
	JLT         ss1

ssdone:
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func axpyAVX2(alpha float32, x, y []float32)
TEXT ·axpyAVX2(SB), NOSPLIT, $0-56
	VBROADCASTSS alpha+0(FP), Y0
	MOVQ         x_base+8(FP), SI
	MOVQ         x_len+16(FP), CX
	MOVQ         y_base+32(FP), DI
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-16, DX
	JZ           axpy1check

axpy16:
	VMOVUPS     (SI)(AX*4), Y1
	VMOVUPS     32(SI)(AX*4), Y2
	VFMADD213PS (DI)(AX*4), Y0, Y1
	VFMADD213PS 32(DI)(AX*4), Y0, Y2
	VMOVUPS     Y1, (DI)(AX*4)
	VMOVUPS     Y2, 32(DI)(AX*4)
	ADDQ        $16, AX
	CMPQ        AX, DX
	JLT         axpy16

axpy1check:
	CMPQ AX, CX
	JGE  axpydone

axpy1:
	VMOVSS      (SI)(AX*4), X1
	VFMADD213SS (DI)(AX*4), X0, X1
	VMOVSS      X1, (DI)(AX*4)
	INCQ        AX
	CMPQ        AX, CX
	JLT         axpy1

axpydone:
	VZEROUPPER
	RET

// func scaleAVX2(alpha float32, x []float32)
TEXT ·scaleAVX2(SB), NOSPLIT, $0-32
	VBROADCASTSS alpha+0(FP), Y0
	MOVQ         x_base+8(FP), SI
	MOVQ         x_len+16(FP), CX
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-16, DX
	JZ           scale1check

scale16:
	VMULPS  (SI)(AX*4), Y0, Y1
	VMULPS  32(SI)(AX*4), Y0, Y2
	VMOVUPS Y1, (SI)(AX*4)
	VMOVUPS Y2, 32(SI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, DX
	JLT     scale16

scale1check:
	CMPQ AX, CX
	JGE  scaledone

scale1:
	VMULSS (SI)(AX*4), X0, X1
	VMOVSS X1, (SI)(AX*4)
	INCQ   AX
	CMPQ   AX, CX
	JLT    scale1

scaledone:
	VZEROUPPER
	RET

// func addAVX2(out, a, b []float32)
TEXT ·addAVX2(SB), NOSPLIT, $0-72
	MOVQ out_base+0(FP), DI
	MOVQ out_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), R8
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $-16, DX
	JZ   add1check

add16:
	VMOVUPS (SI)(AX*4), Y1
	VMOVUPS 32(SI)(AX*4), Y2
	VADDPS  (R8)(AX*4), Y1, Y1
	VADDPS  32(R8)(AX*4), Y2, Y2
	VMOVUPS Y1, (DI)(AX*4)
	VMOVUPS Y2, 32(DI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, DX
	JLT     add16

add1check:
	CMPQ AX, CX
	JGE  adddone

add1:
	VMOVSS (SI)(AX*4), X1
	VADDSS (R8)(AX*4), X1, X1
	VMOVSS X1, (DI)(AX*4)
	INCQ   AX
	CMPQ   AX, CX
	JLT    add1

adddone:
	VZEROUPPER
	RET
