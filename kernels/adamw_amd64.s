#include "textflag.h"

// func adamwAVX2(p, g, m, v []float32, k *adamwK)
// k: gsc 0, b1 4, ob1 8, b2 12, ob2 16, c1 20, c2 24, lr 28, eps 32, decay 36.
TEXT ·adamwAVX2(SB), NOSPLIT, $0-104
	MOVQ         p_base+0(FP), DI
	MOVQ         p_len+8(FP), CX
	MOVQ         g_base+24(FP), SI
	MOVQ         m_base+48(FP), DX
	MOVQ         v_base+72(FP), BX
	MOVQ         k+96(FP), R8
	VBROADCASTSS 0(R8), Y6
	VBROADCASTSS 4(R8), Y7
	VBROADCASTSS 8(R8), Y8
	VBROADCASTSS 12(R8), Y9
	VBROADCASTSS 16(R8), Y10
	VBROADCASTSS 20(R8), Y11
	VBROADCASTSS 24(R8), Y12
	VBROADCASTSS 28(R8), Y13
	VBROADCASTSS 32(R8), Y14
	VBROADCASTSS 36(R8), Y15
	XORQ         AX, AX

adamwloop:
	CMPQ    AX, CX
	JGE     adamwdone
	VMULPS  (SI)(AX*4), Y6, Y0 // gi = g·gsc
	VMULPS  (DX)(AX*4), Y7, Y1 // b1·m
	VMULPS  Y0, Y8, Y2         // ob1·gi
	VADDPS  Y2, Y1, Y1         // m
	VMULPS  (BX)(AX*4), Y9, Y2 // b2·v
	VMULPS  Y0, Y10, Y3        // ob2·gi
	VMULPS  Y0, Y3, Y3         // ·gi
	VADDPS  Y3, Y2, Y2         // v
	VMOVUPS Y1, (DX)(AX*4)
	VMOVUPS Y2, (BX)(AX*4)
	VMULPS  Y12, Y2, Y2        // v·c2
	VSQRTPS Y2, Y2
	VADDPS  Y14, Y2, Y2        // den
	VMULPS  Y11, Y1, Y1        // m·c1
	VMULPS  Y1, Y13, Y1        // lr·(m·c1)
	VDIVPS  Y2, Y1, Y1         // / den
	VMULPS  (DI)(AX*4), Y15, Y3 // p·decay
	VSUBPS  Y1, Y3, Y3
	VMOVUPS Y3, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     adamwloop

adamwdone:
	VZEROUPPER
	RET
