#include "textflag.h"
#include "gemm_tile_amd64.h"

// The AVX2 forms of the strided tile (kern12x32, kern12x16, kern4x32 on
// a machine without AVX-512): A read through a row stride rsa and a
// column stride csa, rows 0-2 at SI + 0, rsa, 2·rsa and rows 3-5 at R11 =
// SI + 3·rsa (R9 = rsa in bytes), both bases stepping csa bytes (R13) per
// p; B one 16-column panel, each step p ldb bytes (R8) after the last.
// Every accumulator is one FMA chain in increasing p from zero, as in
// kern6x16AVX2 and kern12x32AVX512, so a tile has the same bits whichever
// kernel computes it.

// SROW adds the A element at addr times B's two vectors (Y0, Y1) into
// acc0, acc1.
#define SROW(addr, bc, acc0, acc1) \
	VBROADCASTSS addr, bc;         \
	VFMADD231PS  Y0, bc, acc0;     \
	VFMADD231PS  Y1, bc, acc1

// SSTORE writes (or, when AX ≠ 0, adds) acc0, acc1 to the 16 floats at DX
// and steps DX one row (R8 bytes).
#define SSTORE(acc0, acc1)         \
	TESTQ   AX, AX;                \
	JZ      3(PC);                 \
	VADDPS  (DX), acc0, acc0;      \
	VADDPS  32(DX), acc1, acc1;    \
	VMOVUPS acc0, (DX);            \
	VMOVUPS acc1, 32(DX);          \
	ADDQ    R8, DX

// SARGS loads the arguments both kernels share: kc (CX), a (SI), rsa
// (R9) and 3·rsa (R10) in bytes, csa in bytes (R13), b (DI), ldb in bytes
// (R8); then zeroes the accumulators Y4..Y15.
#define SARGS                  \
	MOVQ kc+0(FP), CX;          \
	MOVQ a+8(FP), SI;           \
	MOVQ rsa+16(FP), R9;        \
	SHLQ $2, R9;                \
	LEAQ (R9)(R9*2), R10;       \
	MOVQ csa+24(FP), R13;       \
	SHLQ $2, R13;               \
	MOVQ b+32(FP), DI;          \
	MOVQ ldb+40(FP), R8;        \
	SHLQ $2, R8;                \
	ZERO12

// SLOADB loads step p's 16 floats of B (Y0, Y1) and steps DI to p+1.
#define SLOADB            \
	VMOVUPS (DI), Y0;      \
	VMOVUPS 32(DI), Y1;    \
	ADDQ    R8, DI

// SOUT points DX at c, R8 at ldc in bytes and AX at add, for SSTORE.
#define SOUT                   \
	MOVQ    c+48(FP), DX;      \
	MOVQ    ldc+56(FP), R8;    \
	SHLQ    $2, R8;            \
	MOVBQZX add+64(FP), AX

// func kernS6x16AVX2(kc int, a *float32, rsa, csa int, b *float32, ldb int, c *float32, ldc int, add bool)
//
// Accumulators: row i in Y(4+2i) (columns 0..7) and Y(5+2i) (8..15).
TEXT ·kernS6x16AVX2(SB), NOSPLIT, $0-65
	SARGS
	LEAQ (SI)(R10*1), R11

ks6loop:
	SLOADB
	SROW((SI), Y2, Y4, Y5)
	SROW((SI)(R9*1), Y3, Y6, Y7)
	SROW((SI)(R9*2), Y2, Y8, Y9)
	SROW((R11), Y3, Y10, Y11)
	SROW((R11)(R9*1), Y2, Y12, Y13)
	SROW((R11)(R9*2), Y3, Y14, Y15)
	ADDQ R13, SI
	ADDQ R13, R11
	DECQ CX
	JNZ  ks6loop

	SOUT
	SSTORE(Y4, Y5)
	SSTORE(Y6, Y7)
	SSTORE(Y8, Y9)
	SSTORE(Y10, Y11)
	SSTORE(Y12, Y13)
	SSTORE(Y14, Y15)
	VZEROUPPER
	RET

// func kernS4x16AVX2(kc int, a *float32, rsa, csa int, b *float32, ldb int, c *float32, ldc int, add bool)
//
// kernS6x16AVX2's first four rows: row i in Y(4+2i), Y(5+2i).
TEXT ·kernS4x16AVX2(SB), NOSPLIT, $0-65
	SARGS

ks4loop:
	SLOADB
	SROW((SI), Y2, Y4, Y5)
	SROW((SI)(R9*1), Y3, Y6, Y7)
	SROW((SI)(R9*2), Y2, Y8, Y9)
	SROW((SI)(R10*1), Y3, Y10, Y11)
	ADDQ R13, SI
	DECQ CX
	JNZ  ks4loop

	SOUT
	SSTORE(Y4, Y5)
	SSTORE(Y6, Y7)
	SSTORE(Y8, Y9)
	SSTORE(Y10, Y11)
	VZEROUPPER
	RET
