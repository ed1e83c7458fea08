// Macros shared by the float32 and bfloat16 AVX2 GEMM tiles
// (gemm_amd64.s, bf16_packed_amd64.s, bf16_amd64.s): a bf16 tile is its
// float32 twin with B widened as it is loaded, so that each element is the
// same FMA chain over the same values. Only the B loads differ; the rest
// of each tile is written once, here.

// ZERO12 clears the twelve accumulators Y4..Y15.
#define ZERO12 \
	VXORPS Y4, Y4, Y4;    \
	VXORPS Y5, Y5, Y5;    \
	VXORPS Y6, Y6, Y6;    \
	VXORPS Y7, Y7, Y7;    \
	VXORPS Y8, Y8, Y8;    \
	VXORPS Y9, Y9, Y9;    \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11; \
	VXORPS Y12, Y12, Y12; \
	VXORPS Y13, Y13, Y13; \
	VXORPS Y14, Y14, Y14; \
	VXORPS Y15, Y15, Y15

// The 6×16 micro-kernel (kern6x16AVX2, kern6x16BF16AVX2). Register tile:
// Y4..Y15 hold the 6×16 accumulators, row i in Y(4+2i) (columns 0..7)
// and Y(5+2i) (columns 8..15); a step loads 16 elements of B into Y0/Y1
// and issues 12 FMAs. SI walks A (6 floats a step), DI walks B, DX the
// output rows (R9 bytes apart).

// K6LOADF32 loads one step of a float32 B panel (16 floats at DI) into
// Y0, Y1 and steps DI by R8 bytes (the panel's row stride).
#define K6LOADF32 \
	VMOVUPS (DI), Y0;   \
	VMOVUPS 32(DI), Y1; \
	ADDQ    R8, DI

// K6LOADBF16 loads one step of a packed bf16 B panel (16 bf16, 32 bytes
// at DI), widened to float32 exactly (a bf16 is the top half of its
// float32), into Y0, Y1 and steps DI by R8 bytes (the panel's row stride).
#define K6LOADBF16 \
	VPMOVZXWD (DI), Y0;   \
	VPMOVZXWD 16(DI), Y1; \
	VPSLLD    $16, Y0, Y0; \
	VPSLLD    $16, Y1, Y1; \
	ADDQ      R8, DI

// K6STEP issues one step's 12 FMAs: A's six floats of the step, at
// a0..a5, each broadcast (into Y2 and Y3 in turn) times Y0 and Y1.
#define K6STEP(a0, a1, a2, a3, a4, a5) \
	VBROADCASTSS a0, Y2;     \
	VFMADD231PS  Y0, Y2, Y4;  \
	VFMADD231PS  Y1, Y2, Y5;  \
	VBROADCASTSS a1, Y3;     \
	VFMADD231PS  Y0, Y3, Y6;  \
	VFMADD231PS  Y1, Y3, Y7;  \
	VBROADCASTSS a2, Y2;     \
	VFMADD231PS  Y0, Y2, Y8;  \
	VFMADD231PS  Y1, Y2, Y9;  \
	VBROADCASTSS a3, Y3;     \
	VFMADD231PS  Y0, Y3, Y10; \
	VFMADD231PS  Y1, Y3, Y11; \
	VBROADCASTSS a4, Y2;     \
	VFMADD231PS  Y0, Y2, Y12; \
	VFMADD231PS  Y1, Y2, Y13; \
	VBROADCASTSS a5, Y3;     \
	VFMADD231PS  Y0, Y3, Y14; \
	VFMADD231PS  Y1, Y3, Y15

// K6STEPS4 is four steps (LOAD then K6STEP each) over 24 floats of A from
// SI, and K6STEP1 one step over 6.
#define K6STEPS4(LOAD) \
	LOAD;                                                   \
	K6STEP(0(SI), 4(SI), 8(SI), 12(SI), 16(SI), 20(SI));    \
	LOAD;                                                   \
	K6STEP(24(SI), 28(SI), 32(SI), 36(SI), 40(SI), 44(SI)); \
	LOAD;                                                   \
	K6STEP(48(SI), 52(SI), 56(SI), 60(SI), 64(SI), 68(SI)); \
	LOAD;                                                   \
	K6STEP(72(SI), 76(SI), 80(SI), 84(SI), 88(SI), 92(SI))

#define K6STEP1(LOAD) \
	LOAD; \
	K6STEP(0(SI), 4(SI), 8(SI), 12(SI), 16(SI), 20(SI))

// K6ROWADD adds the 16 floats at DX into accumulators lo, hi and stores
// them back; K6ROWSET stores them.
#define K6ROWADD(lo, hi) \
	VADDPS  (DX), lo, lo;   \
	VADDPS  32(DX), hi, hi; \
	VMOVUPS lo, (DX);       \
	VMOVUPS hi, 32(DX)

#define K6ROWSET(lo, hi) \
	VMOVUPS lo, (DX); \
	VMOVUPS hi, 32(DX)

// K6ADD adds the tile into the six output rows at DX (R9 bytes apart);
// K6SET overwrites them.
#define K6ADD \
	K6ROWADD(Y4, Y5);   \
	ADDQ R9, DX;        \
	K6ROWADD(Y6, Y7);   \
	ADDQ R9, DX;        \
	K6ROWADD(Y8, Y9);   \
	ADDQ R9, DX;        \
	K6ROWADD(Y10, Y11); \
	ADDQ R9, DX;        \
	K6ROWADD(Y12, Y13); \
	ADDQ R9, DX;        \
	K6ROWADD(Y14, Y15)

#define K6SET \
	K6ROWSET(Y4, Y5);   \
	ADDQ R9, DX;        \
	K6ROWSET(Y6, Y7);   \
	ADDQ R9, DX;        \
	K6ROWSET(Y8, Y9);   \
	ADDQ R9, DX;        \
	K6ROWSET(Y10, Y11); \
	ADDQ R9, DX;        \
	K6ROWSET(Y12, Y13); \
	ADDQ R9, DX;        \
	K6ROWSET(Y14, Y15)

// The 3×4 dot-product tile (dotTile3x4AVX2, dotTile3x4BF16AVX2): three
// rows of A (SI, R8, R9) against four rows of B (DI, R10, R11, R12), 8
// elements a trip at index AX. Accumulators: row i, column j in
// Y(4+4i+j). R13 walks B from b3+5·(b3−b2), the rows eight after b0 (B
// rows are contiguous and tiles step by eight rows in the callers), so
// that they arrive before they are needed: a tile's rows are too short a
// stream for the hardware prefetcher to ramp up on.

// D34ARGS loads the arguments (k8, a0..a2, b0..b3 at 0..56(FP)), points
// R13 at the prefetch stream, clears the accumulators and AX.
#define D34ARGS \
	MOVQ k8+0(FP), CX;         \
	MOVQ a0+8(FP), SI;         \
	MOVQ a1+16(FP), R8;        \
	MOVQ a2+24(FP), R9;        \
	MOVQ b0+32(FP), DI;        \
	MOVQ b1+40(FP), R10;       \
	MOVQ b2+48(FP), R11;       \
	MOVQ b3+56(FP), R12;       \
	MOVQ R12, AX;              \
	SUBQ R11, AX;              \
	LEAQ (AX)(AX*4), AX;       \
	LEAQ (R12)(AX*1), R13;     \
	ZERO12;                    \
	XORQ AX, AX

// D34LOADA loads the trip's 8 elements of the three A rows into Y0..Y2.
#define D34LOADA \
	VMOVUPS (SI)(AX*4), Y0; \
	VMOVUPS (R8)(AX*4), Y1; \
	VMOVUPS (R9)(AX*4), Y2

// D34COL adds the three A rows times one B row (in Y3) into the
// column's accumulators c0, c1, c2.
#define D34COL(c0, c1, c2) \
	VFMADD231PS Y3, Y0, c0; \
	VFMADD231PS Y3, Y1, c1; \
	VFMADD231PS Y3, Y2, c2

// D34LOADF32 loads the trip's 8 floats of the B row at row into Y3;
// D34LOADBF16 loads 8 bf16, widened exactly.
#define D34LOADF32(row) \
	VMOVUPS row(AX*4), Y3

#define D34LOADBF16(row) \
	VPMOVZXWD row(AX*2), Y3; \
	VPSLLD    $16, Y3, Y3

// D34TRIP is one trip's 7 loads and 12 FMAs, B loaded with LOAD.
#define D34TRIP(LOAD) \
	D34LOADA;            \
	LOAD((DI));          \
	D34COL(Y4, Y8, Y12); \
	LOAD((R10));         \
	D34COL(Y5, Y9, Y13); \
	LOAD((R11));         \
	D34COL(Y6, Y10, Y14); \
	LOAD((R12));         \
	D34COL(Y7, Y11, Y15)

// D34STORE reduces each accumulator to its sum, ((l0+l1)+(l2+l3)) +
// ((l4+l5)+(l6+l7)) of its lanes whatever its position (the 1×8 tile
// reduces the same way), and stores the 12 sums at c (64(FP)).
#define D34STORE \
	MOVQ         c+64(FP), DX;  \
	VHADDPS      Y5, Y4, Y4;    \
	VHADDPS      Y7, Y6, Y6;    \
	VHADDPS      Y6, Y4, Y4;    \
	VEXTRACTF128 $1, Y4, X0;    \
	VADDPS       X0, X4, X4;    \
	VMOVUPS      X4, 0(DX);     \
	VHADDPS      Y9, Y8, Y8;    \
	VHADDPS      Y11, Y10, Y10; \
	VHADDPS      Y10, Y8, Y8;   \
	VEXTRACTF128 $1, Y8, X0;    \
	VADDPS       X0, X8, X8;    \
	VMOVUPS      X8, 16(DX);    \
	VHADDPS      Y13, Y12, Y12; \
	VHADDPS      Y15, Y14, Y14; \
	VHADDPS      Y14, Y12, Y12; \
	VEXTRACTF128 $1, Y12, X0;   \
	VADDPS       X0, X12, X12;  \
	VMOVUPS      X12, 32(DX)

// The NT panel packers (packNT16AVX2, packNT16BF16AVX2): 16 rows of B, 8
// elements a trip, transposed into 8 steps of a 16-column panel. Rows
// 0..3 are at SI, SI+R8, SI+2·R8, SI+R9 (R9 = 3·R8) and rows 4..7, 8..11,
// 12..15 likewise from R10, R11, R12; DI is the panel.

// PK8LOADF32 loads 8 floats of each of rows r0+0..3 and r4+0..3 into
// Y0..Y7; PK8LOADBF16 loads 8 bf16 of each, widened exactly.
#define PK8LOADF32(r0, r4) \
	VMOVUPS (r0), Y0;        \
	VMOVUPS (r0)(R8*1), Y1;  \
	VMOVUPS (r0)(R8*2), Y2;  \
	VMOVUPS (r0)(R9*1), Y3;  \
	VMOVUPS (r4), Y4;        \
	VMOVUPS (r4)(R8*1), Y5;  \
	VMOVUPS (r4)(R8*2), Y6;  \
	VMOVUPS (r4)(R9*1), Y7

#define PK8LOADBF16(r0, r4) \
	VPMOVZXWD (r0), Y0;       \
	VPSLLD    $16, Y0, Y0;    \
	VPMOVZXWD (r0)(R8*1), Y1; \
	VPSLLD    $16, Y1, Y1;    \
	VPMOVZXWD (r0)(R8*2), Y2; \
	VPSLLD    $16, Y2, Y2;    \
	VPMOVZXWD (r0)(R9*1), Y3; \
	VPSLLD    $16, Y3, Y3;    \
	VPMOVZXWD (r4), Y4;       \
	VPSLLD    $16, Y4, Y4;    \
	VPMOVZXWD (r4)(R8*1), Y5; \
	VPSLLD    $16, Y5, Y5;    \
	VPMOVZXWD (r4)(R8*2), Y6; \
	VPSLLD    $16, Y6, Y6;    \
	VPMOVZXWD (r4)(R9*1), Y7; \
	VPSLLD    $16, Y7, Y7

// PK8STORE transposes the 8×8 block in Y0..Y7 (row i in Yi) and stores
// its column j, 8 floats, at sj: step j of the panel.
#define PK8STORE(s0, s1, s2, s3, s4, s5, s6, s7) \
	VUNPCKLPS  Y1, Y0, Y8;          \
	VUNPCKHPS  Y1, Y0, Y9;          \
	VUNPCKLPS  Y3, Y2, Y10;         \
	VUNPCKHPS  Y3, Y2, Y11;         \
	VUNPCKLPS  Y5, Y4, Y12;         \
	VUNPCKHPS  Y5, Y4, Y13;         \
	VUNPCKLPS  Y7, Y6, Y14;         \
	VUNPCKHPS  Y7, Y6, Y15;         \
	VSHUFPS    $0x44, Y10, Y8, Y0;  \
	VSHUFPS    $0xee, Y10, Y8, Y1;  \
	VSHUFPS    $0x44, Y11, Y9, Y2;  \
	VSHUFPS    $0xee, Y11, Y9, Y3;  \
	VSHUFPS    $0x44, Y14, Y12, Y4; \
	VSHUFPS    $0xee, Y14, Y12, Y5; \
	VSHUFPS    $0x44, Y15, Y13, Y6; \
	VSHUFPS    $0xee, Y15, Y13, Y7; \
	VPERM2F128 $0x20, Y4, Y0, Y8;   \
	VMOVUPS    Y8, s0;              \
	VPERM2F128 $0x20, Y5, Y1, Y9;   \
	VMOVUPS    Y9, s1;              \
	VPERM2F128 $0x20, Y6, Y2, Y10;  \
	VMOVUPS    Y10, s2;             \
	VPERM2F128 $0x20, Y7, Y3, Y11;  \
	VMOVUPS    Y11, s3;             \
	VPERM2F128 $0x31, Y4, Y0, Y12;  \
	VMOVUPS    Y12, s4;             \
	VPERM2F128 $0x31, Y5, Y1, Y13;  \
	VMOVUPS    Y13, s5;             \
	VPERM2F128 $0x31, Y6, Y2, Y14;  \
	VMOVUPS    Y14, s6;             \
	VPERM2F128 $0x31, Y7, Y3, Y15;  \
	VMOVUPS    Y15, s7

// PK16TRIP packs one trip: rows 0..7 into columns 0..7 of 8 steps, rows
// 8..15 into columns 8..15, B loaded with LOAD.
#define PK16TRIP(LOAD) \
	LOAD(SI, R10);                                                                  \
	PK8STORE(0(DI), 64(DI), 128(DI), 192(DI), 256(DI), 320(DI), 384(DI), 448(DI));  \
	LOAD(R11, R12);                                                                 \
	PK8STORE(32(DI), 96(DI), 160(DI), 224(DI), 288(DI), 352(DI), 416(DI), 480(DI))
