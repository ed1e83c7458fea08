#include "textflag.h"

// func attnScores4AVX2(s *float32, lds int, q *float32, hd int, k *float32, ldk, n8 int)
//
// Positions 16 at a time (eight accumulators: Y(2i) and Y(2i+1) for query
// row i), then one block of 8 (four accumulators). For each position block
// the loop over d loads the key vectors once and broadcasts q[i][d].
// Registers: DI s, R8 lds bytes, SI/R11/R12/R13 q rows, DX k, R10 ldk
// bytes, CX n8, AX p, R9 hd bytes, R14 d bytes, BX key pointer.
TEXT ·attnScores4AVX2(SB), NOSPLIT, $0-56
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
	MOVQ n8+48(FP), CX
	XORQ AX, AX

sc16:
	LEAQ   16(AX), BX
	CMPQ   BX, CX
	JGT    sc8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	LEAQ   (DX)(AX*4), BX
	XORQ   R14, R14

sc16d:
	VMOVUPS      (BX), Y8
	VMOVUPS      32(BX), Y9
	VBROADCASTSS (SI)(R14*1), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VBROADCASTSS (R11)(R14*1), Y11
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VBROADCASTSS (R12)(R14*1), Y12
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VBROADCASTSS (R13)(R14*1), Y13
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          sc16d

	LEAQ    (DI)(AX*4), BX
	VMOVUPS Y0, (BX)
	VMOVUPS Y1, 32(BX)
	ADDQ    R8, BX
	VMOVUPS Y2, (BX)
	VMOVUPS Y3, 32(BX)
	ADDQ    R8, BX
	VMOVUPS Y4, (BX)
	VMOVUPS Y5, 32(BX)
	ADDQ    R8, BX
	VMOVUPS Y6, (BX)
	VMOVUPS Y7, 32(BX)
	ADDQ    $16, AX
	JMP     sc16

sc8:
	CMPQ   AX, CX
	JGE    scdone
	VXORPS Y0, Y0, Y0
	VXORPS Y2, Y2, Y2
	VXORPS Y4, Y4, Y4
	VXORPS Y6, Y6, Y6
	LEAQ   (DX)(AX*4), BX
	XORQ   R14, R14

sc8d:
	VMOVUPS      (BX), Y8
	VBROADCASTSS (SI)(R14*1), Y10
	VFMADD231PS  Y8, Y10, Y0
	VBROADCASTSS (R11)(R14*1), Y11
	VFMADD231PS  Y8, Y11, Y2
	VBROADCASTSS (R12)(R14*1), Y12
	VFMADD231PS  Y8, Y12, Y4
	VBROADCASTSS (R13)(R14*1), Y13
	VFMADD231PS  Y8, Y13, Y6
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          sc8d

	LEAQ    (DI)(AX*4), BX
	VMOVUPS Y0, (BX)
	ADDQ    R8, BX
	VMOVUPS Y2, (BX)
	ADDQ    R8, BX
	VMOVUPS Y4, (BX)
	ADDQ    R8, BX
	VMOVUPS Y6, (BX)

scdone:
	VZEROUPPER
	RET

// HSUMSTORE reduces the 8 lanes of Y as hsum8 does (X the same register,
// T a scratch xmm) and stores the sum at addr.
#define HSUMSTORE(Y, X, T, addr) \
	VEXTRACTF128 $1, Y, T; \
	VADDPS       T, X, X;  \
	VMOVHLPS     X, T, T;  \
	VADDPS       T, X, X;  \
	VMOVSHDUP    X, T;     \
	VADDSS       T, X, X;  \
	VMOVSS       X, addr

// tailmask<> holds eight -1 then eight 0 (int32): the 8 lanes starting at
// element 8-t have the first t lanes set.
DATA tailmask<>+0(SB)/8, $0xffffffffffffffff
DATA tailmask<>+8(SB)/8, $0xffffffffffffffff
DATA tailmask<>+16(SB)/8, $0xffffffffffffffff
DATA tailmask<>+24(SB)/8, $0xffffffffffffffff
DATA tailmask<>+32(SB)/8, $0
DATA tailmask<>+40(SB)/8, $0
DATA tailmask<>+48(SB)/8, $0
DATA tailmask<>+56(SB)/8, $0
GLOBL tailmask<>(SB), RODATA|NOPTR, $64

// func attnMix4AVX2(o *float32, pr *float32, ldp int, v *float32, ldv, hd, n int)
//
// Two dimensions d, d+1 at a time: eight accumulators, Y(i) for row i at
// d and Y(4+i) at d+1, over all positions; each value vector loaded once
// feeds four FMAs. The last n%8 positions are loaded under the mask Y14
// (all clear when n%8 = 0). Registers: R14 &o[d], R9 hd bytes,
// SI/R11/R12/R13 pr rows, DX v row d, BX v row d+1, R10 ldv bytes, CX
// bytes of whole blocks, AX position bytes, R8 pairs of d left, DI
// scratch.
TEXT ·attnMix4AVX2(SB), NOSPLIT, $0-56
	MOVQ o+0(FP), R14
	MOVQ pr+8(FP), SI
	MOVQ ldp+16(FP), R8
	SHLQ $2, R8
	LEAQ (SI)(R8*1), R11
	LEAQ (R11)(R8*1), R12
	LEAQ (R12)(R8*1), R13
	MOVQ v+24(FP), DX
	MOVQ ldv+32(FP), R10
	SHLQ $2, R10
	MOVQ hd+40(FP), R9
	MOVQ R9, R8
	SHRQ $1, R8
	SHLQ $2, R9
	MOVQ    n+48(FP), CX
	MOVQ    CX, AX
	ANDQ    $7, AX
	NEGQ    AX
	LEAQ    tailmask<>+32(SB), DI
	VMOVUPS (DI)(AX*4), Y14
	ANDQ    $-8, CX
	SHLQ    $2, CX

mixd:
	LEAQ   (DX)(R10*1), BX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ   AX, AX

mixp:
	CMPQ        AX, CX
	JGE         mixtail
	VMOVUPS     (DX)(AX*1), Y8
	VMOVUPS     (BX)(AX*1), Y9
	VMOVUPS     (SI)(AX*1), Y10
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y4
	VMOVUPS     (R11)(AX*1), Y11
	VFMADD231PS Y8, Y11, Y1
	VFMADD231PS Y9, Y11, Y5
	VMOVUPS     (R12)(AX*1), Y12
	VFMADD231PS Y8, Y12, Y2
	VFMADD231PS Y9, Y12, Y6
	VMOVUPS     (R13)(AX*1), Y13
	VFMADD231PS Y8, Y13, Y3
	VFMADD231PS Y9, Y13, Y7
	ADDQ        $32, AX
	JMP         mixp

mixtail:
	VMASKMOVPS  (DX)(AX*1), Y14, Y8
	VMASKMOVPS  (BX)(AX*1), Y14, Y9
	VMASKMOVPS  (SI)(AX*1), Y14, Y10
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y4
	VMASKMOVPS  (R11)(AX*1), Y14, Y11
	VFMADD231PS Y8, Y11, Y1
	VFMADD231PS Y9, Y11, Y5
	VMASKMOVPS  (R12)(AX*1), Y14, Y12
	VFMADD231PS Y8, Y12, Y2
	VFMADD231PS Y9, Y12, Y6
	VMASKMOVPS  (R13)(AX*1), Y14, Y13
	VFMADD231PS Y8, Y13, Y3
	VFMADD231PS Y9, Y13, Y7

	MOVQ      R14, DI
	HSUMSTORE(Y0, X0, X8, (DI))
	HSUMSTORE(Y4, X4, X9, 4(DI))
	ADDQ      R9, DI
	HSUMSTORE(Y1, X1, X10, (DI))
	HSUMSTORE(Y5, X5, X11, 4(DI))
	ADDQ      R9, DI
	HSUMSTORE(Y2, X2, X12, (DI))
	HSUMSTORE(Y6, X6, X13, 4(DI))
	ADDQ      R9, DI
	HSUMSTORE(Y3, X3, X8, (DI))
	HSUMSTORE(Y7, X7, X9, 4(DI))
	ADDQ      $8, R14
	LEAQ      (BX)(R10*1), DX
	DECQ      R8
	JNZ       mixd

	VZEROUPPER
	RET
