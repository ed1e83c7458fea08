#include "textflag.h"

// func attnScores4AVX2(s *float32, lds int, q *float32, hd int, k *float32, ldk, bs, n8 int)
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
TEXT ·attnScores4AVX2(SB), NOSPLIT, $0-64
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
	MOVQ bs+48(FP), R15
	SHLQ $2, R15
	MOVQ n8+56(FP), CX
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
	MOVQ   DX, BX
	XORQ   R14, R14

sc16d:
	VMOVUPS      (BX), Y8
	VMOVUPS      (BX)(R15*1), Y9
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
	LEAQ    (DX)(R15*2), DX
	ADDQ    $16, AX
	JMP     sc16

sc8:
	CMPQ   AX, CX
	JGE    scdone
	VXORPS Y0, Y0, Y0
	VXORPS Y2, Y2, Y2
	VXORPS Y4, Y4, Y4
	VXORPS Y6, Y6, Y6
	MOVQ   DX, BX
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

// func attnMix4AVX2(o *float32, pr *float32, ldp int, v *float32, ldv, bs, hd, n int)
//
// Values laid out as the keys of attnScores4AVX2 (blocks of 8 positions bs
// elements apart, dimension d at d·ldv within a block). Two dimensions d,
// d+1 at a time: eight accumulators, Y(i) for row i at d and Y(4+i) at
// d+1, over all positions; each value vector loaded once feeds four FMAs.
// The last n%8 positions are loaded under the mask Y14 (all clear when
// n%8 = 0). Registers: R14 &o[d], R9 hd bytes, SI/R11/R12/R13 pr rows, DI
// values of d at position 0, DX values of d in the block at the position,
// R10 ldv bytes, BX bs bytes, CX bytes of whole blocks of pr, AX position
// bytes of pr, R8 pairs of d left.
TEXT ·attnMix4AVX2(SB), NOSPLIT, $0-64
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
	MOVQ bs+40(FP), BX
	SHLQ $2, BX
	MOVQ hd+48(FP), R9
	MOVQ R9, R8
	SHRQ $1, R8
	SHLQ $2, R9
	MOVQ    n+56(FP), CX
	MOVQ    CX, AX
	ANDQ    $7, AX
	NEGQ    AX
	LEAQ    tailmask<>+32(SB), DI
	VMOVUPS (DI)(AX*4), Y14
	ANDQ    $-8, CX
	SHLQ    $2, CX

mixd:
	MOVQ   DX, DI
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
	VMOVUPS     (DX), Y8
	VMOVUPS     (DX)(R10*1), Y9
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
	ADDQ        BX, DX
	JMP         mixp

mixtail:
	VMASKMOVPS  (DX), Y14, Y8
	VMASKMOVPS  (DX)(R10*1), Y14, Y9
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

	MOVQ      R14, AX
	HSUMSTORE(Y0, X0, X8, (AX))
	HSUMSTORE(Y4, X4, X9, 4(AX))
	ADDQ      R9, AX
	HSUMSTORE(Y1, X1, X10, (AX))
	HSUMSTORE(Y5, X5, X11, 4(AX))
	ADDQ      R9, AX
	HSUMSTORE(Y2, X2, X12, (AX))
	HSUMSTORE(Y6, X6, X13, 4(AX))
	ADDQ      R9, AX
	HSUMSTORE(Y3, X3, X8, (AX))
	HSUMSTORE(Y7, X7, X9, 4(AX))
	ADDQ      $8, R14
	LEAQ      (DI)(R10*2), DX
	DECQ      R8
	JNZ       mixd

	VZEROUPPER
	RET

// func attnScores1AVX2(s *float32, q *float32, hd int, k *float32, ldk, bs, n8 int)
//
// attnScores4AVX2 for one query row: positions 32 at a time (four blocks,
// four accumulators, Y0-Y3, so four FMA chains run at once), then blocks of
// 8. Registers: DI s, SI q, R9 hd bytes, DX keys of the block at p, R10
// ldk bytes, R15 bs bytes, R12 3·bs bytes, R13 10·bs bytes, CX n8, AX p,
// R14 d bytes, BX key pointer.
TEXT ·attnScores1AVX2(SB), NOSPLIT, $0-56
	MOVQ s+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ hd+16(FP), R9
	SHLQ $2, R9
	MOVQ k+24(FP), DX
	MOVQ ldk+32(FP), R10
	SHLQ $2, R10
	MOVQ bs+40(FP), R15
	SHLQ $2, R15
	LEAQ (R15)(R15*2), R12
	LEAQ (R15)(R15*4), R13
	SHLQ $1, R13
	MOVQ n8+48(FP), CX
	XORQ AX, AX

s1b32:
	LEAQ   32(AX), BX
	CMPQ   BX, CX
	JGT    s1b8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   DX, BX
	XORQ   R14, R14

s1b32d:
	PREFETCHT0   (BX)(R15*8)
	PREFETCHT0   (BX)(R13*1)
	VBROADCASTSS (SI)(R14*1), Y8
	VFMADD231PS  (BX), Y8, Y0
	VFMADD231PS  (BX)(R15*1), Y8, Y1
	VFMADD231PS  (BX)(R15*2), Y8, Y2
	VFMADD231PS  (BX)(R12*1), Y8, Y3
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          s1b32d

	LEAQ    (DI)(AX*4), BX
	VMOVUPS Y0, (BX)
	VMOVUPS Y1, 32(BX)
	VMOVUPS Y2, 64(BX)
	VMOVUPS Y3, 96(BX)
	LEAQ    (DX)(R15*4), DX
	ADDQ    $32, AX
	JMP     s1b32

s1b8:
	CMPQ   AX, CX
	JGE    s1done
	VXORPS Y0, Y0, Y0
	MOVQ   DX, BX
	XORQ   R14, R14

s1b8d:
	VBROADCASTSS (SI)(R14*1), Y8
	VFMADD231PS  (BX), Y8, Y0
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          s1b8d

	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    R15, DX
	ADDQ    $8, AX
	JMP     s1b8

s1done:
	VZEROUPPER
	RET

// func attnScores2AVX2(s *float32, lds int, q *float32, hd int, k *float32, ldk, bs, n8 int)
//
// attnScores4AVX2 for two query rows: positions 32 at a time, then 16 (Y0,
// Y1 row 0; Y2, Y3 row 1), then blocks of 8. Registers as in
// attnScores4AVX2, with R12 3·bs bytes and R13 10·bs bytes.
TEXT ·attnScores2AVX2(SB), NOSPLIT, $0-64
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
	MOVQ bs+48(FP), R15
	SHLQ $2, R15
	LEAQ (R15)(R15*2), R12
	LEAQ (R15)(R15*4), R13
	SHLQ $1, R13
	MOVQ n8+56(FP), CX
	XORQ AX, AX

	// 32 positions a pass: eight accumulators (Y0-Y3 row 0, Y4-Y7 row 1),
	// so eight FMA chains are in flight, two per cycle at four cycles'
	// latency; four would leave half the FMA units idle.
s2b32:
	LEAQ   32(AX), BX
	CMPQ   BX, CX
	JGT    s2b16
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

s2b32d:
	VMOVUPS      (BX), Y8
	VMOVUPS      (BX)(R15*1), Y9
	VMOVUPS      (BX)(R15*2), Y10
	VMOVUPS      (BX)(R12*1), Y11
	PREFETCHT0   (BX)(R15*8)
	PREFETCHT0   (BX)(R13*1)
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
	JLT          s2b32d

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
	JMP     s2b32

s2b16:
	LEAQ   16(AX), BX
	CMPQ   BX, CX
	JGT    s2b8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   DX, BX
	XORQ   R14, R14

s2b16d:
	VMOVUPS      (BX), Y8
	VMOVUPS      (BX)(R15*1), Y9
	VBROADCASTSS (SI)(R14*1), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VBROADCASTSS (R11)(R14*1), Y11
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          s2b16d

	LEAQ    (DI)(AX*4), BX
	VMOVUPS Y0, (BX)
	VMOVUPS Y1, 32(BX)
	ADDQ    R8, BX
	VMOVUPS Y2, (BX)
	VMOVUPS Y3, 32(BX)
	LEAQ    (DX)(R15*2), DX
	ADDQ    $16, AX
	JMP     s2b16

s2b8:
	CMPQ   AX, CX
	JGE    s2done
	VXORPS Y0, Y0, Y0
	VXORPS Y2, Y2, Y2
	MOVQ   DX, BX
	XORQ   R14, R14

s2b8d:
	VMOVUPS      (BX), Y8
	VBROADCASTSS (SI)(R14*1), Y10
	VFMADD231PS  Y8, Y10, Y0
	VBROADCASTSS (R11)(R14*1), Y11
	VFMADD231PS  Y8, Y11, Y2
	ADDQ         R10, BX
	ADDQ         $4, R14
	CMPQ         R14, R9
	JLT          s2b8d

	LEAQ    (DI)(AX*4), BX
	VMOVUPS Y0, (BX)
	ADDQ    R8, BX
	VMOVUPS Y2, (BX)
	ADDQ    R15, DX
	ADDQ    $8, AX
	JMP     s2b8

s2done:
	VZEROUPPER
	RET

// func attnMix1AVX2(o *float32, pr *float32, v *float32, ldv, bs, hd, n int)
//
// attnMix4AVX2 for one row of probabilities: eight dimensions d..d+7 at a
// time, Y(j) for d+j, so eight FMA chains run at once; each probability
// vector loaded feeds eight FMAs. Every sum has the lanes, tail mask and
// reduction of attnMix4AVX2. hd is a multiple of 8. Registers: R14 &o[d],
// SI pr, DX values of d and BX of d+4 in the block at the position, DI
// values of d at position 0, R10 ldv bytes, R12 3·ldv bytes, AX bs bytes,
// CX whole blocks, R13 blocks left, R8 groups of d left.
TEXT ·attnMix1AVX2(SB), NOSPLIT, $0-56
	MOVQ o+0(FP), R14
	MOVQ v+16(FP), DX
	MOVQ ldv+24(FP), R10
	SHLQ $2, R10
	LEAQ (R10)(R10*2), R12
	MOVQ hd+40(FP), R8
	SHRQ $3, R8
	MOVQ    n+48(FP), CX
	MOVQ    CX, AX
	ANDQ    $7, AX
	NEGQ    AX
	LEAQ    tailmask<>+32(SB), DI
	VMOVUPS (DI)(AX*4), Y14
	SHRQ    $3, CX
	MOVQ    bs+32(FP), AX
	SHLQ    $2, AX

mix1d:
	MOVQ   pr+8(FP), SI
	LEAQ   (DX)(R10*4), BX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   DX, DI
	MOVQ   CX, R13
	TESTQ  R13, R13
	JZ     mix1tail

mix1p:
	VMOVUPS     (SI), Y8
	VFMADD231PS (DX), Y8, Y0
	VFMADD231PS (DX)(R10*1), Y8, Y1
	VFMADD231PS (DX)(R10*2), Y8, Y2
	VFMADD231PS (DX)(R12*1), Y8, Y3
	VFMADD231PS (BX), Y8, Y4
	VFMADD231PS (BX)(R10*1), Y8, Y5
	VFMADD231PS (BX)(R10*2), Y8, Y6
	VFMADD231PS (BX)(R12*1), Y8, Y7
	ADDQ        $32, SI
	ADDQ        AX, DX
	ADDQ        AX, BX
	DECQ        R13
	JNZ         mix1p

mix1tail:
	VMASKMOVPS  (SI), Y14, Y8
	VMASKMOVPS  (DX), Y14, Y9
	VFMADD231PS Y9, Y8, Y0
	VMASKMOVPS  (DX)(R10*1), Y14, Y9
	VFMADD231PS Y9, Y8, Y1
	VMASKMOVPS  (DX)(R10*2), Y14, Y9
	VFMADD231PS Y9, Y8, Y2
	VMASKMOVPS  (DX)(R12*1), Y14, Y9
	VFMADD231PS Y9, Y8, Y3
	VMASKMOVPS  (BX), Y14, Y9
	VFMADD231PS Y9, Y8, Y4
	VMASKMOVPS  (BX)(R10*1), Y14, Y9
	VFMADD231PS Y9, Y8, Y5
	VMASKMOVPS  (BX)(R10*2), Y14, Y9
	VFMADD231PS Y9, Y8, Y6
	VMASKMOVPS  (BX)(R12*1), Y14, Y9
	VFMADD231PS Y9, Y8, Y7

	HSUMSTORE(Y0, X0, X8, (R14))
	HSUMSTORE(Y1, X1, X9, 4(R14))
	HSUMSTORE(Y2, X2, X10, 8(R14))
	HSUMSTORE(Y3, X3, X11, 12(R14))
	HSUMSTORE(Y4, X4, X12, 16(R14))
	HSUMSTORE(Y5, X5, X13, 20(R14))
	HSUMSTORE(Y6, X6, X8, 24(R14))
	HSUMSTORE(Y7, X7, X9, 28(R14))
	ADDQ $32, R14
	LEAQ (DI)(R10*8), DX
	DECQ R8
	JNZ  mix1d

	VZEROUPPER
	RET

// func attnMix2AVX2(o *float32, pr *float32, ldp int, v *float32, ldv, bs, hd, n int)
//
// attnMix4AVX2 for two rows of probabilities: four dimensions d..d+3 at a
// time, Y(j) for row 0 at d+j and Y(4+j) for row 1, eight FMA chains. hd is
// a multiple of 4. Registers: R14 &o[d], R9 hd bytes, SI pr row 0, R11
// ldp bytes, DX values of d in the block at the position, DI values of d
// at position 0, R10 ldv bytes, R12 3·ldv bytes, BX bs bytes, CX whole
// blocks, R13 blocks left, R8 groups of d left.
TEXT ·attnMix2AVX2(SB), NOSPLIT, $0-64
	MOVQ o+0(FP), R14
	MOVQ ldp+16(FP), R11
	SHLQ $2, R11
	MOVQ v+24(FP), DX
	MOVQ ldv+32(FP), R10
	SHLQ $2, R10
	LEAQ (R10)(R10*2), R12
	MOVQ bs+40(FP), BX
	SHLQ $2, BX
	MOVQ hd+48(FP), R9
	MOVQ R9, R8
	SHRQ $2, R8
	SHLQ $2, R9
	MOVQ    n+56(FP), CX
	MOVQ    CX, AX
	ANDQ    $7, AX
	NEGQ    AX
	LEAQ    tailmask<>+32(SB), DI
	VMOVUPS (DI)(AX*4), Y14
	SHRQ    $3, CX

mix2d:
	MOVQ   pr+8(FP), SI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   DX, DI
	MOVQ   CX, R13
	TESTQ  R13, R13
	JZ     mix2tail

mix2p:
	VMOVUPS     (SI), Y8
	VMOVUPS     (SI)(R11*1), Y9
	VMOVUPS     (DX), Y10
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y10, Y9, Y4
	VMOVUPS     (DX)(R10*1), Y11
	VFMADD231PS Y11, Y8, Y1
	VFMADD231PS Y11, Y9, Y5
	VMOVUPS     (DX)(R10*2), Y12
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y12, Y9, Y6
	VMOVUPS     (DX)(R12*1), Y13
	VFMADD231PS Y13, Y8, Y3
	VFMADD231PS Y13, Y9, Y7
	ADDQ        $32, SI
	ADDQ        BX, DX
	DECQ        R13
	JNZ         mix2p

mix2tail:
	VMASKMOVPS  (SI), Y14, Y8
	VMASKMOVPS  (SI)(R11*1), Y14, Y9
	VMASKMOVPS  (DX), Y14, Y10
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y10, Y9, Y4
	VMASKMOVPS  (DX)(R10*1), Y14, Y11
	VFMADD231PS Y11, Y8, Y1
	VFMADD231PS Y11, Y9, Y5
	VMASKMOVPS  (DX)(R10*2), Y14, Y12
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y12, Y9, Y6
	VMASKMOVPS  (DX)(R12*1), Y14, Y13
	VFMADD231PS Y13, Y8, Y3
	VFMADD231PS Y13, Y9, Y7

	HSUMSTORE(Y0, X0, X8, (R14))
	HSUMSTORE(Y1, X1, X9, 4(R14))
	HSUMSTORE(Y2, X2, X10, 8(R14))
	HSUMSTORE(Y3, X3, X11, 12(R14))
	MOVQ R14, AX
	ADDQ R9, AX
	HSUMSTORE(Y4, X4, X12, (AX))
	HSUMSTORE(Y5, X5, X13, 4(AX))
	HSUMSTORE(Y6, X6, X8, 8(AX))
	HSUMSTORE(Y7, X7, X9, 12(AX))
	ADDQ $16, R14
	LEAQ (DI)(R10*4), DX
	DECQ R8
	JNZ  mix2d

	VZEROUPPER
	RET

// func prefetchRowsAsm(p *float32, ld, rows, n int)
//
// PREFETCHT0 of every cache line that holds p[r*ld : r*ld+n] for r <
// rows (n ≥ 1, rows ≥ 1): one prefetch per 64 bytes from each row's start,
// and one at its last element. Registers: SI row start, R10 ld bytes, CX
// rows left, DX n bytes, AX offset.
TEXT ·prefetchRowsAsm(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ ld+8(FP), R10
	SHLQ $2, R10
	MOVQ rows+16(FP), CX
	MOVQ n+24(FP), DX
	SHLQ $2, DX
	SUBQ $4, DX

pfrow:
	XORQ AX, AX

pfline:
	PREFETCHT0 (SI)(AX*1)
	ADDQ       $64, AX
	CMPQ       AX, DX
	JLT        pfline
	PREFETCHT0 (SI)(DX*1)
	ADDQ       R10, SI
	DECQ       CX
	JNZ        pfrow
	RET
