#include "textflag.h"

// Decode attention's value-sum kernels over bfloat16 values
// (attn_bf16.go): the kernels of attn_mix_amd64.s with every value load
// widened in registers (VPMOVZXWD, then a 16-bit left shift: exact) and
// the value stride and offsets counted in 2-byte elements, so each output
// is the FMA chain the float32 kernel computes over the widened values,
// in the same order: the same bits. Signatures as there, with v *uint16.

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
#define MIXARGS16 \
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
	SHLQ $1, R10           \
	MOVQ n+48(FP), CX

// attnMixV4x16BF16AVX2: four rows by 16 columns (two vectors a row).
TEXT ·attnMixV4x16BF16AVX2(SB), NOSPLIT, $0-56
	MIXARGS16
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS (DI)(R8*1), Y2
	VMOVUPS 32(DI)(R8*1), Y3
	VMOVUPS (DI)(R8*2), Y4
	VMOVUPS 32(DI)(R8*2), Y5
	VMOVUPS (DI)(R9*1), Y6
	VMOVUPS 32(DI)(R9*1), Y7
	TESTQ CX, CX
	JZ    hv4x16done
hv4x16p:
	VPMOVZXWD    (DX), Y8
	VPSLLD       $16, Y8, Y8
	VPMOVZXWD    16(DX), Y9
	VPSLLD       $16, Y9, Y9
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
	JNZ          hv4x16p
hv4x16done:
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

// attnMixV2x32BF16AVX2: two rows by 32 columns (four vectors a row).
TEXT ·attnMixV2x32BF16AVX2(SB), NOSPLIT, $0-56
	MIXARGS16
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS (DI)(R8*1), Y4
	VMOVUPS 32(DI)(R8*1), Y5
	VMOVUPS 64(DI)(R8*1), Y6
	VMOVUPS 96(DI)(R8*1), Y7
	TESTQ CX, CX
	JZ    hv2x32done
hv2x32p:
	VPMOVZXWD    (DX), Y8
	VPSLLD       $16, Y8, Y8
	VPMOVZXWD    16(DX), Y9
	VPSLLD       $16, Y9, Y9
	VPMOVZXWD    32(DX), Y10
	VPSLLD       $16, Y10, Y10
	VPMOVZXWD    48(DX), Y11
	VPSLLD       $16, Y11, Y11
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
	JNZ          hv2x32p
hv2x32done:
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

// attnMixV1x64BF16AVX2: one row by 64 columns (eight vectors).
TEXT ·attnMixV1x64BF16AVX2(SB), NOSPLIT, $0-56
	MIXARGS16
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	TESTQ CX, CX
	JZ    hv1x64done
hv1x64p:
	VBROADCASTSS (SI), Y15
	VPMOVZXWD    (DX), Y8
	VPSLLD       $16, Y8, Y8
	VFMADD231PS  Y8, Y15, Y0
	VPMOVZXWD    16(DX), Y9
	VPSLLD       $16, Y9, Y9
	VFMADD231PS  Y9, Y15, Y1
	VPMOVZXWD    32(DX), Y10
	VPSLLD       $16, Y10, Y10
	VFMADD231PS  Y10, Y15, Y2
	VPMOVZXWD    48(DX), Y11
	VPSLLD       $16, Y11, Y11
	VFMADD231PS  Y11, Y15, Y3
	VPMOVZXWD    64(DX), Y12
	VPSLLD       $16, Y12, Y12
	VFMADD231PS  Y12, Y15, Y4
	VPMOVZXWD    80(DX), Y13
	VPSLLD       $16, Y13, Y13
	VFMADD231PS  Y13, Y15, Y5
	VPMOVZXWD    96(DX), Y14
	VPSLLD       $16, Y14, Y14
	VFMADD231PS  Y14, Y15, Y6
	VPMOVZXWD    112(DX), Y8
	VPSLLD       $16, Y8, Y8
	VFMADD231PS  Y8, Y15, Y7
	ADDQ         $4, SI
	ADDQ         R10, DX
	DECQ         CX
	JNZ          hv1x64p
hv1x64done:
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

// attnMixV1x32BF16AVX2: one row by 32 columns (four vectors).
TEXT ·attnMixV1x32BF16AVX2(SB), NOSPLIT, $0-56
	MIXARGS16
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	TESTQ CX, CX
	JZ    hv1x32done
hv1x32p:
	VBROADCASTSS (SI), Y15
	VPMOVZXWD    (DX), Y4
	VPSLLD       $16, Y4, Y4
	VFMADD231PS  Y4, Y15, Y0
	VPMOVZXWD    16(DX), Y5
	VPSLLD       $16, Y5, Y5
	VFMADD231PS  Y5, Y15, Y1
	VPMOVZXWD    32(DX), Y6
	VPSLLD       $16, Y6, Y6
	VFMADD231PS  Y6, Y15, Y2
	VPMOVZXWD    48(DX), Y7
	VPSLLD       $16, Y7, Y7
	VFMADD231PS  Y7, Y15, Y3
	ADDQ         $4, SI
	ADDQ         R10, DX
	DECQ         CX
	JNZ          hv1x32p
hv1x32done:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VZEROUPPER
	RET

// attnMixV1x8BF16AVX2: one row by 8 columns (one vector: a single FMA chain, for what the wider tiles leave).
TEXT ·attnMixV1x8BF16AVX2(SB), NOSPLIT, $0-56
	MIXARGS16
	VMOVUPS (DI), Y0
	TESTQ CX, CX
	JZ    hv1x8done
hv1x8p:
	VBROADCASTSS (SI), Y15
	VPMOVZXWD    (DX), Y1
	VPSLLD       $16, Y1, Y1
	VFMADD231PS  Y1, Y15, Y0
	ADDQ         $4, SI
	ADDQ         R10, DX
	DECQ         CX
	JNZ          hv1x8p
hv1x8done:
	VMOVUPS Y0, (DI)
	VZEROUPPER
	RET
