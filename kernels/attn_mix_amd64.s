#include "textflag.h"

// The value sums of decode attention (attnMix, attn_decode.go) over a
// head's values stored position by position (v[p*ldv+j]): each output is
// one FMA chain over the positions in increasing order, continued from
// the value o holds. A kernel keeps a tile of R rows by W columns in eight
// accumulators (four for 1×32, one for 1×8, which only take what the
// wider tiles leave); per position it broadcasts each row's
// probability and loads the W values once, so the values stream through in
// one sequential pass. All take
//
//	func(o *float32, ldo int, pr *float32, ldp int, v *float32, ldv int, n int)
//
// Registers: DI o, R8 ldo bytes, R9 3·ldo bytes, SI pr at the position,
// R11 ldp bytes, R12 3·ldp bytes, DX v at the position, R10 ldv bytes, CX
// positions left.
#define MIXARGS \
	MOVQ o+0(FP), DI       \
	MOVQ ldo+8(FP), R8     \
	SHLQ $2, R8            \
	LEAQ (R8)(R8*2), R9    \
	MOVQ pr+16(FP), SI     \
	MOVQ ldp+24(FP), R11   \
	SHLQ $2, R11           \
	LEAQ (R11)(R11*2), R12 \
	MOVQ v+32(FP), DX      \
	MOVQ ldv+40(FP), R10   \
	SHLQ $2, R10           \
	MOVQ n+48(FP), CX

// attnMixV4x16AVX2: four rows by 16 columns (two vectors a row).
TEXT ·attnMixV4x16AVX2(SB), NOSPLIT, $0-56
	MIXARGS
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS (DI)(R8*1), Y2
	VMOVUPS 32(DI)(R8*1), Y3
	VMOVUPS (DI)(R8*2), Y4
	VMOVUPS 32(DI)(R8*2), Y5
	VMOVUPS (DI)(R9*1), Y6
	VMOVUPS 32(DI)(R9*1), Y7
	TESTQ CX, CX
	JZ    v4x16done

v4x16p:
	VMOVUPS      (DX), Y8
	VMOVUPS      32(DX), Y9
	VBROADCASTSS (SI), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VBROADCASTSS (SI)(R11*1), Y11
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VBROADCASTSS (SI)(R11*2), Y12
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VBROADCASTSS (SI)(R12*1), Y13
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         $4, SI
	ADDQ         R10, DX
	DECQ         CX
	JNZ          v4x16p

v4x16done:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, (DI)(R8*1)
	VMOVUPS Y3, 32(DI)(R8*1)
	VMOVUPS Y4, (DI)(R8*2)
	VMOVUPS Y5, 32(DI)(R8*2)
	VMOVUPS Y6, (DI)(R9*1)
	VMOVUPS Y7, 32(DI)(R9*1)
	VZEROUPPER
	RET

// attnMixV2x32AVX2: two rows by 32 columns (four vectors a row).
TEXT ·attnMixV2x32AVX2(SB), NOSPLIT, $0-56
	MIXARGS
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS (DI)(R8*1), Y4
	VMOVUPS 32(DI)(R8*1), Y5
	VMOVUPS 64(DI)(R8*1), Y6
	VMOVUPS 96(DI)(R8*1), Y7
	TESTQ CX, CX
	JZ    v2x32done

v2x32p:
	VMOVUPS      (DX), Y8
	VMOVUPS      32(DX), Y9
	VMOVUPS      64(DX), Y10
	VMOVUPS      96(DX), Y11
	VBROADCASTSS (SI), Y12
	VFMADD231PS  Y8, Y12, Y0
	VFMADD231PS  Y9, Y12, Y1
	VFMADD231PS  Y10, Y12, Y2
	VFMADD231PS  Y11, Y12, Y3
	VBROADCASTSS (SI)(R11*1), Y13
	VFMADD231PS  Y8, Y13, Y4
	VFMADD231PS  Y9, Y13, Y5
	VFMADD231PS  Y10, Y13, Y6
	VFMADD231PS  Y11, Y13, Y7
	ADDQ         $4, SI
	ADDQ         R10, DX
	DECQ         CX
	JNZ          v2x32p

v2x32done:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, (DI)(R8*1)
	VMOVUPS Y5, 32(DI)(R8*1)
	VMOVUPS Y6, 64(DI)(R8*1)
	VMOVUPS Y7, 96(DI)(R8*1)
	VZEROUPPER
	RET

// attnMixV1x64AVX2: one row by 64 columns (eight vectors).
TEXT ·attnMixV1x64AVX2(SB), NOSPLIT, $0-56
	MIXARGS
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	TESTQ CX, CX
	JZ    v1x64done

v1x64p:
	VBROADCASTSS (SI), Y15
	VFMADD231PS  (DX), Y15, Y0
	VFMADD231PS  32(DX), Y15, Y1
	VFMADD231PS  64(DX), Y15, Y2
	VFMADD231PS  96(DX), Y15, Y3
	VFMADD231PS  128(DX), Y15, Y4
	VFMADD231PS  160(DX), Y15, Y5
	VFMADD231PS  192(DX), Y15, Y6
	VFMADD231PS  224(DX), Y15, Y7
	ADDQ         $4, SI
	ADDQ         R10, DX
	DECQ         CX
	JNZ          v1x64p

v1x64done:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VZEROUPPER
	RET

// attnMixV1x32AVX2: one row by 32 columns (four vectors).
TEXT ·attnMixV1x32AVX2(SB), NOSPLIT, $0-56
	MIXARGS
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	TESTQ CX, CX
	JZ    v1x32done

v1x32p:
	VBROADCASTSS (SI), Y15
	VFMADD231PS  (DX), Y15, Y0
	VFMADD231PS  32(DX), Y15, Y1
	VFMADD231PS  64(DX), Y15, Y2
	VFMADD231PS  96(DX), Y15, Y3
	ADDQ         $4, SI
	ADDQ         R10, DX
	DECQ         CX
	JNZ          v1x32p

v1x32done:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VZEROUPPER
	RET

// attnMixV1x8AVX2: one row by 8 columns (one vector: a single FMA chain, for what the wider tiles leave).
TEXT ·attnMixV1x8AVX2(SB), NOSPLIT, $0-56
	MIXARGS
	VMOVUPS (DI), Y0
	TESTQ CX, CX
	JZ    v1x8done

v1x8p:
	VBROADCASTSS (SI), Y15
	VFMADD231PS  (DX), Y15, Y0
	ADDQ         $4, SI
	ADDQ         R10, DX
	DECQ         CX
	JNZ          v1x8p

v1x8done:
	VMOVUPS Y0, (DI)
	VZEROUPPER
	RET
