#include "textflag.h"

// Decode attention's score kernels over bfloat16 keys (attn_bf16.go): the
// kernels of attn_decode_amd64.s with every key load widened in registers
// (VPMOVZXWD, then a 16-bit left shift: exact) and the key strides ldk and
// bs counted in 2-byte elements, so each score is the FMA chain the
// float32 kernel computes over the widened keys, in the same order: the
// same bits. Signatures as there, with k *uint16.

// func attnScores4BF16AVX2(s *float32, lds int, q *float32, hd int, k *uint16, ldk, bs, n8 int)
//
// Keys in blocks of 8 positions, bs elements apart (8 for a cache that is
// dimension-major throughout; hd·8 for one stored block by block), and
// within a block dimension d at d·ldk. Positions 16 at a time (two blocks;
// eight accumulators: Y(2i) and Y(2i+1) for query row i), then one block
// of 8 (four accumulators). For each position block the loop over d loads
// the key vectors once and broadcasts q[i][d], and asks for the keys 8
// blocks on (PREFETCHT0: for a dimension-major cache each row is its own
// short stream, which the hardware prefetchers follow poorly; the 1- and
// 2-row kernels do the same for their blocks of 32). Registers: DI s, R8
// lds bytes, SI/R11/R12/R13 q rows, DX keys of the block at p, R10 ldk
// bytes, R15 bs bytes, CX n8, AX p, R9 hd bytes, R14 d bytes, BX key
// pointer.
TEXT ·attnScores4BF16AVX2(SB), NOSPLIT, $0-64
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
	SHLQ $1, R10
	MOVQ bs+48(FP), R15
	SHLQ $1, R15
	MOVQ n8+56(FP), CX
	XORQ AX, AX

hsc16:
	LEAQ   16(AX), BX
	CMPQ   BX, CX
	JGT    hsc8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   DX, BX
	XORQ   R14, R14

hsc16d:
	VPMOVZXWD    (BX), Y8
	VPSLLD       $16, Y8, Y8
	VPMOVZXWD    (BX)(R15*1), Y9
	VPSLLD       $16, Y9, Y9
	PREFETCHT0   (BX)(R15*8)
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
	JLT          hsc16d
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
	LEAQ    (DX)(R15*2), DX
	ADDQ    $16, AX
	JMP     hsc16
hsc8:
	CMPQ   AX, CX
	JGE    hscdone
	VXORPS Y0, Y0, Y0
	VXORPS Y2, Y2, Y2
	VXORPS Y4, Y4, Y4
	VXORPS Y6, Y6, Y6
	MOVQ   DX, BX
	XORQ   R14, R14

hsc8d:
	VPMOVZXWD    (BX), Y8
	VPSLLD       $16, Y8, Y8
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
	JLT          hsc8d
	LEAQ    (DI)(AX*4), BX
	VMOVUPS Y0, (BX)
	ADDQ    R8, BX
	VMOVUPS Y2, (BX)
	ADDQ    R8, BX
	VMOVUPS Y4, (BX)
	ADDQ    R8, BX
	VMOVUPS Y6, (BX)

hscdone:
	VZEROUPPER
	RET

// func attnScores1BF16AVX2(s *float32, q *float32, hd int, k *uint16, ldk, bs, n8 int)
//
// attnScores4BF16AVX2 for one query row: positions 32 at a time (four blocks,
// four accumulators, Y0-Y3, so four FMA chains run at once), then blocks of
// 8. Registers: DI s, SI q, R9 hd bytes, DX keys of the block at p, R10
// ldk bytes, R15 bs bytes, R12 3·bs bytes, R13 10·bs bytes, CX n8, AX p,
// R14 d bytes, BX key pointer.
TEXT ·attnScores1BF16AVX2(SB), NOSPLIT, $0-56
	MOVQ s+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ hd+16(FP), R9
	SHLQ $2, R9
	MOVQ k+24(FP), DX
	MOVQ ldk+32(FP), R10
	SHLQ $1, R10
	MOVQ bs+40(FP), R15
	SHLQ $1, R15
	LEAQ (R15)(R15*2), R12
	LEAQ (R15)(R15*4), R13
	SHLQ $1, R13
	MOVQ n8+48(FP), CX
	XORQ AX, AX

hs1b32:
	LEAQ   32(AX), BX
	CMPQ   BX, CX
	JGT    hs1b8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   DX, BX
	XORQ   R14, R14

hs1b32d:
	PREFETCHT0   (BX)(R15*8)
	PREFETCHT0   (BX)(R13*1)
	VBROADCASTSS (SI)(R14*1), Y8
	VPMOVZXWD    (BX), Y4
	VPSLLD       $16, Y4, Y4
	VFMADD231PS  Y4, Y8, Y0
	VPMOVZXWD    (BX)(R15*1), Y5
	VPSLLD       $16, Y5, Y5
	VFMADD231PS  Y5, Y8, Y1
	VPMOVZXWD    (BX)(R15*2), Y6
	VPSLLD       $16, Y6, Y6
	VFMADD231PS  Y6, Y8, Y2
	VPMOVZXWD    (BX)(R12*1), Y7
	VPSLLD       $16, Y7, Y7
	VFMADD231PS  Y7, Y8, Y3
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          hs1b32d
	LEAQ    (DI)(AX*4), BX
	VMOVUPS Y0, (BX)
	VMOVUPS Y1, 32(BX)
	VMOVUPS Y2, 64(BX)
	VMOVUPS Y3, 96(BX)
	LEAQ    (DX)(R15*4), DX
	ADDQ    $32, AX
	JMP     hs1b32
hs1b8:
	CMPQ   AX, CX
	JGE    hs1done
	VXORPS Y0, Y0, Y0
	MOVQ   DX, BX
	XORQ   R14, R14

hs1b8d:
	VBROADCASTSS (SI)(R14*1), Y8
	VPMOVZXWD    (BX), Y9
	VPSLLD       $16, Y9, Y9
	VFMADD231PS  Y9, Y8, Y0
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          hs1b8d
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    R15, DX
	ADDQ    $8, AX
	JMP     hs1b8
hs1done:
	VZEROUPPER
	RET

// func attnScores2BF16AVX2(s *float32, lds int, q *float32, hd int, k *uint16, ldk, bs, n8 int)
//
// attnScores4BF16AVX2 for two query rows: positions 48 at a time, then 32,
// then 16 (Y0, Y1 row 0; Y2, Y3 row 1), then blocks of 8. Registers as in
// attnScores4AVX2, with R12 3·bs bytes and R13 5·bs bytes.
TEXT ·attnScores2BF16AVX2(SB), NOSPLIT, $0-64
	MOVQ s+0(FP), DI
	MOVQ lds+8(FP), R8
	SHLQ $2, R8
	MOVQ q+16(FP), SI
	MOVQ hd+24(FP), R9
	SHLQ $2, R9
	LEAQ (SI)(R9*1), R11
	MOVQ k+32(FP), DX
	MOVQ ldk+40(FP), R10
	SHLQ $1, R10
	MOVQ bs+48(FP), R15
	SHLQ $1, R15
	LEAQ (R15)(R15*2), R12
	LEAQ (R15)(R15*4), R13
	MOVQ n8+56(FP), CX
	XORQ AX, AX

	// 48 positions a pass: twelve accumulators (Y0-Y5 row 0, Y6-Y11 row
	// 1), so more FMA chains are in flight than the two FMA units at four
	// cycles' latency need, and each key vector loaded feeds two FMAs.
hs2b48:
	LEAQ   48(AX), BX
	CMPQ   BX, CX
	JGT    hs2b32
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	MOVQ   DX, BX
	XORQ   R14, R14

hs2b48d:
	PREFETCHT0   (BX)(R15*8)
	PREFETCHT0   (BX)(R13*2)
	VBROADCASTSS (SI)(R14*1), Y12
	VBROADCASTSS (R11)(R14*1), Y13
	VPMOVZXWD    (BX), Y14
	VPSLLD       $16, Y14, Y14
	VFMADD231PS  Y14, Y12, Y0
	VFMADD231PS  Y14, Y13, Y6
	VPMOVZXWD    (BX)(R15*1), Y15
	VPSLLD       $16, Y15, Y15
	VFMADD231PS  Y15, Y12, Y1
	VFMADD231PS  Y15, Y13, Y7
	VPMOVZXWD    (BX)(R15*2), Y14
	VPSLLD       $16, Y14, Y14
	VFMADD231PS  Y14, Y12, Y2
	VFMADD231PS  Y14, Y13, Y8
	VPMOVZXWD    (BX)(R12*1), Y15
	VPSLLD       $16, Y15, Y15
	VFMADD231PS  Y15, Y12, Y3
	VFMADD231PS  Y15, Y13, Y9
	VPMOVZXWD    (BX)(R15*4), Y14
	VPSLLD       $16, Y14, Y14
	VFMADD231PS  Y14, Y12, Y4
	VFMADD231PS  Y14, Y13, Y10
	VPMOVZXWD    (BX)(R13*1), Y15
	VPSLLD       $16, Y15, Y15
	VFMADD231PS  Y15, Y12, Y5
	VFMADD231PS  Y15, Y13, Y11
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          hs2b48d
	LEAQ    (DI)(AX*4), BX
	VMOVUPS Y0, (BX)
	VMOVUPS Y1, 32(BX)
	VMOVUPS Y2, 64(BX)
	VMOVUPS Y3, 96(BX)
	VMOVUPS Y4, 128(BX)
	VMOVUPS Y5, 160(BX)
	ADDQ    R8, BX
	VMOVUPS Y6, (BX)
	VMOVUPS Y7, 32(BX)
	VMOVUPS Y8, 64(BX)
	VMOVUPS Y9, 96(BX)
	VMOVUPS Y10, 128(BX)
	VMOVUPS Y11, 160(BX)
	LEAQ    (DX)(R12*2), DX
	ADDQ    $48, AX
	JMP     hs2b48
	// Then 32 positions: eight accumulators (Y0-Y3 row 0, Y4-Y7 row 1).
hs2b32:
	LEAQ   32(AX), BX
	CMPQ   BX, CX
	JGT    hs2b16
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   DX, BX
	XORQ   R14, R14

hs2b32d:
	VPMOVZXWD    (BX), Y8
	VPSLLD       $16, Y8, Y8
	VPMOVZXWD    (BX)(R15*1), Y9
	VPSLLD       $16, Y9, Y9
	VPMOVZXWD    (BX)(R15*2), Y10
	VPSLLD       $16, Y10, Y10
	VPMOVZXWD    (BX)(R12*1), Y11
	VPSLLD       $16, Y11, Y11
	PREFETCHT0   (BX)(R15*8)
	PREFETCHT0   (BX)(R13*2)
	VBROADCASTSS (SI)(R14*1), Y12
	VFMADD231PS  Y8, Y12, Y0
	VFMADD231PS  Y9, Y12, Y1
	VFMADD231PS  Y10, Y12, Y2
	VFMADD231PS  Y11, Y12, Y3
	VBROADCASTSS (R11)(R14*1), Y13
	VFMADD231PS  Y8, Y13, Y4
	VFMADD231PS  Y9, Y13, Y5
	VFMADD231PS  Y10, Y13, Y6
	VFMADD231PS  Y11, Y13, Y7
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          hs2b32d
	LEAQ    (DI)(AX*4), BX
	VMOVUPS Y0, (BX)
	VMOVUPS Y1, 32(BX)
	VMOVUPS Y2, 64(BX)
	VMOVUPS Y3, 96(BX)
	ADDQ    R8, BX
	VMOVUPS Y4, (BX)
	VMOVUPS Y5, 32(BX)
	VMOVUPS Y6, 64(BX)
	VMOVUPS Y7, 96(BX)
	LEAQ    (DX)(R15*4), DX
	ADDQ    $32, AX
	JMP     hs2b32
hs2b16:
	LEAQ   16(AX), BX
	CMPQ   BX, CX
	JGT    hs2b8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   DX, BX
	XORQ   R14, R14

hs2b16d:
	VPMOVZXWD    (BX), Y8
	VPSLLD       $16, Y8, Y8
	VPMOVZXWD    (BX)(R15*1), Y9
	VPSLLD       $16, Y9, Y9
	VBROADCASTSS (SI)(R14*1), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VBROADCASTSS (R11)(R14*1), Y11
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          hs2b16d
	LEAQ    (DI)(AX*4), BX
	VMOVUPS Y0, (BX)
	VMOVUPS Y1, 32(BX)
	ADDQ    R8, BX
	VMOVUPS Y2, (BX)
	VMOVUPS Y3, 32(BX)
	LEAQ    (DX)(R15*2), DX
	ADDQ    $16, AX
	JMP     hs2b16
hs2b8:
	CMPQ   AX, CX
	JGE    hs2done
	VXORPS Y0, Y0, Y0
	VXORPS Y2, Y2, Y2
	MOVQ   DX, BX
	XORQ   R14, R14

hs2b8d:
	VPMOVZXWD    (BX), Y8
	VPSLLD       $16, Y8, Y8
	VBROADCASTSS (SI)(R14*1), Y10
	VFMADD231PS  Y8, Y10, Y0
	VBROADCASTSS (R11)(R14*1), Y11
	VFMADD231PS  Y8, Y11, Y2
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          hs2b8d
	LEAQ    (DI)(AX*4), BX
	VMOVUPS Y0, (BX)
	ADDQ    R8, BX
	VMOVUPS Y2, (BX)
	ADDQ    R15, DX
	ADDQ    $8, AX
	JMP     hs2b8
hs2done:
	VZEROUPPER
	RET
