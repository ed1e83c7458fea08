#include "textflag.h"

// The AVX-512 GEMM micro-kernels. A is read through two strides, so one
// kernel serves row-major A in place (rsa = k, csa = 1) and A packed in
// 12-row panels (rsa = 1, csa = 12): rows 0-3 from SI, 4-7 from R11, 8-11
// from R12, each group at +0, +rsa, +2·rsa, +3·rsa (R9 = rsa, R10 = 3·rsa,
// in bytes), and all three bases step by csa (R13) per p. B is one or two
// 16-column panels, the second boff bytes after the first (BX), each step
// p ldb bytes (R8) after the last. Every accumulator is one FMA chain in
// increasing p, as in kern6x16AVX2.

#define A512(kc, a, rsa, csa) \
	MOVQ kc, CX;             \
	MOVQ a, SI;              \
	MOVQ rsa, R9;            \
	SHLQ $2, R9;             \
	LEAQ (R9)(R9*2), R10;    \
	LEAQ (SI)(R9*4), R11;    \
	LEAQ (R11)(R9*4), R12;   \
	MOVQ csa, R13;           \
	SHLQ $2, R13

// ROW2 adds row r of A times both B vectors (Z0, Z1) into acc0, acc1.
#define ROW2(addr, bc, acc0, acc1) \
	VBROADCASTSS addr, bc;         \
	VFMADD231PS  Z0, bc, acc0;     \
	VFMADD231PS  Z1, bc, acc1

// ROW1 adds row r of A times Z0 into acc.
#define ROW1(addr, bc, acc) \
	VBROADCASTSS addr, bc;  \
	VFMADD231PS  Z0, bc, acc

// PREFETCHC12 asks, when add is set, for the 12 rows of 32 floats at c
// (row stride ldc floats) ahead of the loop, so that adding into a tile
// of out that has left the cache does not stall the stores (prefetches
// change no result); clobbers DX and AX.
#define PREFETCHC12(c, ldc, add) \
	MOVBQZX    add, AX;     \
	TESTQ      AX, AX;      \
	JZ         39(PC);      \
	MOVQ       c, DX;       \
	MOVQ       ldc, AX;     \
	SHLQ       $2, AX;      \
	PREFETCHT0 (DX);        \
	PREFETCHT0 64(DX);      \
	ADDQ       AX, DX;      \
	PREFETCHT0 (DX);        \
	PREFETCHT0 64(DX);      \
	ADDQ       AX, DX;      \
	PREFETCHT0 (DX);        \
	PREFETCHT0 64(DX);      \
	ADDQ       AX, DX;      \
	PREFETCHT0 (DX);        \
	PREFETCHT0 64(DX);      \
	ADDQ       AX, DX;      \
	PREFETCHT0 (DX);        \
	PREFETCHT0 64(DX);      \
	ADDQ       AX, DX;      \
	PREFETCHT0 (DX);        \
	PREFETCHT0 64(DX);      \
	ADDQ       AX, DX;      \
	PREFETCHT0 (DX);        \
	PREFETCHT0 64(DX);      \
	ADDQ       AX, DX;      \
	PREFETCHT0 (DX);        \
	PREFETCHT0 64(DX);      \
	ADDQ       AX, DX;      \
	PREFETCHT0 (DX);        \
	PREFETCHT0 64(DX);      \
	ADDQ       AX, DX;      \
	PREFETCHT0 (DX);        \
	PREFETCHT0 64(DX);      \
	ADDQ       AX, DX;      \
	PREFETCHT0 (DX);        \
	PREFETCHT0 64(DX);      \
	ADDQ       AX, DX;      \
	PREFETCHT0 (DX);        \
	PREFETCHT0 64(DX)

// STORE2 writes (or, when AX ≠ 0, adds) acc0, acc1 to the 32 floats at DX
// and steps DX one row.
#define STORE2(acc0, acc1)           \
	TESTQ   AX, AX;                   \
	JZ      3(PC);                    \
	VADDPS  (DX), acc0, acc0;         \
	VADDPS  64(DX), acc1, acc1;       \
	VMOVUPS acc0, (DX);               \
	VMOVUPS acc1, 64(DX);             \
	ADDQ    R8, DX

#define STORE1(acc)          \
	TESTQ   AX, AX;           \
	JZ      2(PC);            \
	VADDPS  (DX), acc, acc;   \
	VMOVUPS acc, (DX);        \
	ADDQ    R8, DX

// func kern12x32AVX512(kc int, a *float32, rsa, csa int, b *float32, boff, ldb int, c *float32, ldc int, add bool)
//
// Accumulators: row i in Z(4+2i) (columns 0..15) and Z(5+2i) (16..31).
TEXT ·kern12x32AVX512(SB), NOSPLIT, $0-73
	A512(kc+0(FP), a+8(FP), rsa+16(FP), csa+24(FP))
	MOVQ b+32(FP), DI
	MOVQ boff+40(FP), BX
	SHLQ $2, BX
	MOVQ ldb+48(FP), R8
	SHLQ $2, R8
	PREFETCHC12(c+56(FP), ldc+64(FP), add+72(FP))
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27

k12x32loop:
	VMOVUPS (DI), Z0
	VMOVUPS (DI)(BX*1), Z1
	ADDQ    R8, DI
	ROW2((SI), Z2, Z4, Z5)
	ROW2((SI)(R9*1), Z3, Z6, Z7)
	ROW2((SI)(R9*2), Z28, Z8, Z9)
	ROW2((SI)(R10*1), Z29, Z10, Z11)
	ROW2((R11), Z30, Z12, Z13)
	ROW2((R11)(R9*1), Z31, Z14, Z15)
	ROW2((R11)(R9*2), Z2, Z16, Z17)
	ROW2((R11)(R10*1), Z3, Z18, Z19)
	ROW2((R12), Z28, Z20, Z21)
	ROW2((R12)(R9*1), Z29, Z22, Z23)
	ROW2((R12)(R9*2), Z30, Z24, Z25)
	ROW2((R12)(R10*1), Z31, Z26, Z27)
	ADDQ    R13, SI
	ADDQ    R13, R11
	ADDQ    R13, R12
	DECQ    CX
	JNZ     k12x32loop

	MOVQ    c+56(FP), DX
	MOVQ    ldc+64(FP), R8
	SHLQ    $2, R8
	MOVBQZX add+72(FP), AX
	STORE2(Z4, Z5)
	STORE2(Z6, Z7)
	STORE2(Z8, Z9)
	STORE2(Z10, Z11)
	STORE2(Z12, Z13)
	STORE2(Z14, Z15)
	STORE2(Z16, Z17)
	STORE2(Z18, Z19)
	STORE2(Z20, Z21)
	STORE2(Z22, Z23)
	STORE2(Z24, Z25)
	STORE2(Z26, Z27)
	VZEROUPPER
	RET

// func kern12x16AVX512(kc int, a *float32, rsa, csa int, b *float32, ldb int, c *float32, ldc int, add bool)
//
// Accumulators: row i in Z(4+i).
TEXT ·kern12x16AVX512(SB), NOSPLIT, $0-65
	A512(kc+0(FP), a+8(FP), rsa+16(FP), csa+24(FP))
	MOVQ b+32(FP), DI
	MOVQ ldb+40(FP), R8
	SHLQ $2, R8
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

k12x16loop:
	VMOVUPS (DI), Z0
	ADDQ    R8, DI
	ROW1((SI), Z2, Z4)
	ROW1((SI)(R9*1), Z3, Z5)
	ROW1((SI)(R9*2), Z28, Z6)
	ROW1((SI)(R10*1), Z29, Z7)
	ROW1((R11), Z30, Z8)
	ROW1((R11)(R9*1), Z31, Z9)
	ROW1((R11)(R9*2), Z2, Z10)
	ROW1((R11)(R10*1), Z3, Z11)
	ROW1((R12), Z28, Z12)
	ROW1((R12)(R9*1), Z29, Z13)
	ROW1((R12)(R9*2), Z30, Z14)
	ROW1((R12)(R10*1), Z31, Z15)
	ADDQ    R13, SI
	ADDQ    R13, R11
	ADDQ    R13, R12
	DECQ    CX
	JNZ     k12x16loop

	MOVQ    c+48(FP), DX
	MOVQ    ldc+56(FP), R8
	SHLQ    $2, R8
	MOVBQZX add+64(FP), AX
	STORE1(Z4)
	STORE1(Z5)
	STORE1(Z6)
	STORE1(Z7)
	STORE1(Z8)
	STORE1(Z9)
	STORE1(Z10)
	STORE1(Z11)
	STORE1(Z12)
	STORE1(Z13)
	STORE1(Z14)
	STORE1(Z15)
	VZEROUPPER
	RET

// func kern4x32AVX512(kc int, a *float32, rsa, csa int, b *float32, boff, ldb int, c *float32, ldc int, add bool)
//
// kern12x32AVX512 for four rows of A (rows 0-3 from SI): accumulators row
// i in Z(4+2i), Z(5+2i), eight FMA chains.
TEXT ·kern4x32AVX512(SB), NOSPLIT, $0-73
	A512(kc+0(FP), a+8(FP), rsa+16(FP), csa+24(FP))
	MOVQ   b+32(FP), DI
	MOVQ   boff+40(FP), BX
	SHLQ   $2, BX
	MOVQ   ldb+48(FP), R8
	SHLQ   $2, R8
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11

k4x32loop:
	VMOVUPS (DI), Z0
	VMOVUPS (DI)(BX*1), Z1
	ADDQ    R8, DI
	ROW2((SI), Z2, Z4, Z5)
	ROW2((SI)(R9*1), Z3, Z6, Z7)
	ROW2((SI)(R9*2), Z28, Z8, Z9)
	ROW2((SI)(R10*1), Z29, Z10, Z11)
	ADDQ    R13, SI
	DECQ    CX
	JNZ     k4x32loop

	MOVQ    c+56(FP), DX
	MOVQ    ldc+64(FP), R8
	SHLQ    $2, R8
	MOVBQZX add+72(FP), AX
	STORE2(Z4, Z5)
	STORE2(Z6, Z7)
	STORE2(Z8, Z9)
	STORE2(Z10, Z11)
	VZEROUPPER
	RET

// func kern1x64AVX512(kc int, a *float32, bp *float32, ps int, c *float32, add bool)
//
// kern1x64AVX2 with one zmm a panel: four accumulators Z(8+q), one FMA
// each a step (four chains). R13 is the byte offset of step p inside
// every panel.
TEXT ·kern1x64AVX512(SB), NOSPLIT, $0-41
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ bp+16(FP), DI
	MOVQ ps+24(FP), R8
	SHLQ $2, R8
	LEAQ (DI)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (R11)(R8*1), R12
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	XORQ   R13, R13

k1x64z:
	VBROADCASTSS (SI), Z0
	VFMADD231PS  (DI)(R13*1), Z0, Z8
	VFMADD231PS  (R10)(R13*1), Z0, Z9
	VFMADD231PS  (R11)(R13*1), Z0, Z10
	VFMADD231PS  (R12)(R13*1), Z0, Z11
	ADDQ         $4, SI
	ADDQ         $64, R13
	DECQ         CX
	JNZ          k1x64z

	MOVQ    c+32(FP), DX
	MOVBQZX add+40(FP), AX
	TESTQ   AX, AX
	JZ      k1x64zset
	VADDPS  0(DX), Z8, Z8
	VADDPS  64(DX), Z9, Z9
	VADDPS  128(DX), Z10, Z10
	VADDPS  192(DX), Z11, Z11

k1x64zset:
	VMOVUPS Z8, 0(DX)
	VMOVUPS Z9, 64(DX)
	VMOVUPS Z10, 128(DX)
	VMOVUPS Z11, 192(DX)
	VZEROUPPER
	RET

// func kern1x64BF16AVX512(kc int, a *float32, bp *BF16, c *float32, add bool)
//
// kern1x64AVX512 on a packed group of four bf16 panels (64 columns a step,
// one contiguous stream of 128 bytes a step: see PackNTBF16), widened in
// registers (vpmovzxwd, shift left 16). The stream is prefetched 8 KiB (64
// steps) ahead: batch-1 decoding of a large model streams every group once
// from memory, in chunks of a few hundred KiB a thread, and the hardware
// prefetchers ramp up again at every chunk. Measured on the 2-core AVX-512
// machine, eight rounds alternating (docs/PERFORMANCE.md, session 60):
// BenchmarkGemmPackedNTBF16/head110M_m1 (one 49 MB product) 61.9 GB/s
// median at 4 KiB ahead, 68.1 at 8 KiB (four streams, before the groups
// were interleaved: 58.9); token110M_m1 45.6 and 45.0 (four streams: 43.1).
TEXT ·kern1x64BF16AVX512(SB), NOSPLIT, $0-33
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ bp+16(FP), DI
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11

k1x64hz:
	PREFETCHT0   8192(DI)
	PREFETCHT0   8256(DI)
	VBROADCASTSS (SI), Z0
	VPMOVZXWD    (DI), Z1
	VPMOVZXWD    32(DI), Z2
	VPMOVZXWD    64(DI), Z3
	VPMOVZXWD    96(DI), Z4
	VPSLLD       $16, Z1, Z1
	VPSLLD       $16, Z2, Z2
	VPSLLD       $16, Z3, Z3
	VPSLLD       $16, Z4, Z4
	VFMADD231PS  Z1, Z0, Z8
	VFMADD231PS  Z2, Z0, Z9
	VFMADD231PS  Z3, Z0, Z10
	VFMADD231PS  Z4, Z0, Z11
	ADDQ         $4, SI
	ADDQ         $128, DI
	DECQ         CX
	JNZ          k1x64hz

	MOVQ    c+24(FP), DX
	MOVBQZX add+32(FP), AX
	TESTQ   AX, AX
	JZ      k1x64hzset
	VADDPS  0(DX), Z8, Z8
	VADDPS  64(DX), Z9, Z9
	VADDPS  128(DX), Z10, Z10
	VADDPS  192(DX), Z11, Z11

k1x64hzset:
	VMOVUPS Z8, 0(DX)
	VMOVUPS Z9, 64(DX)
	VMOVUPS Z10, 128(DX)
	VMOVUPS Z11, 192(DX)
	VZEROUPPER
	RET
