package kernels

// dotTile3x4BF16AVX2 is dotTile3x4AVX2 with B rows stored as bf16, widened
// in registers (vpmovzxwd, then a 16-bit left shift). In Go:
//
//	for i := 0; i < 3; i++ {
//		for j := 0; j < 4; j++ {
//			var s float32
//			for p := 0; p < k8; p++ {
//				s += a_i[p] * math.Float32frombits(uint32(b_j[p])<<16)
//			}
//			c[i*4+j] = s
//		}
//	}
//
// k8 is a positive multiple of 8; the sum runs in 8 FMA lanes added
// pairwise at the end.
//
//go:noescape
func dotTile3x4BF16AVX2(k8 int, a0, a1, a2 *float32, b0, b1, b2, b3 *BF16, c *float32)

func dotTile3x4BF16(k8 int, a *[3][]float32, b *[4][]BF16, c *[12]float32) {
	if !useAsm {
		dotTile3x4BF16Go(k8, a, b, c)
		return
	}
	_, _, _ = a[0][k8-1], a[1][k8-1], a[2][k8-1]
	_, _, _, _ = b[0][k8-1], b[1][k8-1], b[2][k8-1], b[3][k8-1]
	dotTile3x4BF16AVX2(k8, &a[0][0], &a[1][0], &a[2][0], &b[0][0], &b[1][0], &b[2][0], &b[3][0], &c[0])
}

// dotTile1x8BF16AVX2 computes one row of a against eight rows of B. In Go:
//
//	for j := 0; j < 8; j++ {
//		var s float32
//		for p := 0; p < k8; p++ {
//			s += a[p] * math.Float32frombits(uint32(b_j[p])<<16)
//		}
//		c[j] = s
//	}
//
// k8 is a positive multiple of 8. Lanes and their reduction are those of
// dotTile3x4BF16AVX2, so both give a row the same bits. next only steers
// prefetches (which never fault) and may point anywhere.
//
//go:noescape
func dotTile1x8BF16AVX2(k8 int, a *float32, b0, b1, b2, b3, b4, b5, b6, b7 *BF16, next *BF16, c *float32)

func dotTile1x8BF16(k8 int, a []float32, b *[8][]BF16, next []BF16, c *[8]float32) {
	if !useAsm {
		dotTile1x8BF16Go(k8, a, b, c)
		return
	}
	_ = a[k8-1]
	for j := range b {
		_ = b[j][k8-1]
	}
	pf := &b[7][0]
	if len(next) > 0 {
		pf = &next[0]
	}
	dotTile1x8BF16AVX2(k8, &a[0], &b[0][0], &b[1][0], &b[2][0], &b[3][0], &b[4][0], &b[5][0], &b[6][0], &b[7][0], pf, &c[0])
}

// packNT16BF16AVX2 is packNT16AVX2 for bf16 rows, widening as it packs:
//
//	for p := 0; p < kc8; p++ {
//		for j := 0; j < 16; j++ {
//			dst[p*16+j] = math.Float32frombits(uint32(src[j*lds+p]) << 16)
//		}
//	}
//
// kc8 is a multiple of 8.
//
//go:noescape
func packNT16BF16AVX2(kc8 int, src *BF16, lds int, dst *float32)

func packNT16BF16(kc int, src []BF16, lds int, dst []float32) int {
	kc8 := kc &^ 7
	if !useAsm || kc8 == 0 {
		return 0
	}
	_ = src[15*lds+kc8-1]
	_ = dst[kc8*gemmNR-1]
	packNT16BF16AVX2(kc8, &src[0], lds, &dst[0])
	return kc8
}

// packNN16BF16AVX2 widens a 16-column panel of a bf16 [k,n] B:
//
//	for p := 0; p < kc; p++ {
//		for j := 0; j < 16; j++ {
//			dst[p*16+j] = math.Float32frombits(uint32(src[p*lds+j]) << 16)
//		}
//	}
//
//go:noescape
func packNN16BF16AVX2(kc int, src *BF16, lds int, dst *float32)

// packNN16BF16 widens kc rows of 16 columns of src (row stride lds) into
// dst and reports whether it did (false without the assembly).
func packNN16BF16(kc int, src []BF16, lds int, dst []float32) bool {
	if !useAsm || kc == 0 {
		return false
	}
	_ = src[(kc-1)*lds+15]
	_ = dst[kc*gemmNR-1]
	packNN16BF16AVX2(kc, &src[0], lds, &dst[0])
	return true
}
