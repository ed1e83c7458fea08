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
// float32), into Y0, Y1 and steps DI past it.
#define K6LOADBF16 \
	VPMOVZXWD (DI), Y0;   \
	VPMOVZXWD 16(DI), Y1; \
	VPSLLD    $16, Y0, Y0; \
	VPSLLD    $16, Y1, Y1; \
	ADDQ      $32, DI

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
