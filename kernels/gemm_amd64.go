package kernels

// kern6x16AVX2 is the register-blocked GEMM micro-kernel. In Go:
//
//	var acc [6][16]float32
//	for p := 0; p < kc; p++ {
//		for i := 0; i < 6; i++ {
//			for j := 0; j < 16; j++ {
//				acc[i][j] += ap[p*6+i] * bp[p*ldb+j] // one fused multiply-add
//			}
//		}
//	}
//	for i, j := range 6×16 {
//		if add { c[i*ldc+j] += acc[i][j] } else { c[i*ldc+j] = acc[i][j] }
//	}
//
// kc ≥ 1; ldb and ldc count floats.
//
//go:noescape
func kern6x16AVX2(kc int, ap, bp *float32, ldb int, c *float32, ldc int, add bool)

// dotTile3x4AVX2 computes a 3×4 tile of dot products. In Go:
//
//	for i := 0; i < 3; i++ {
//		for j := 0; j < 4; j++ {
//			var s float32
//			for p := 0; p < k8; p++ {
//				s += a_i[p] * b_j[p]
//			}
//			c[i*4+j] = s
//		}
//	}
//
// k8 is a positive multiple of 8. The sum runs in 8 lanes, each an FMA
// chain over p ≡ lane (mod 8), and the lanes are added pairwise at the end.
//
//go:noescape
func dotTile3x4AVX2(k8 int, a0, a1, a2, b0, b1, b2, b3 *float32, c *float32)

func microKernel(kc int, ap, bp []float32, ldb int, c []float32, ldc int, add bool) {
	if !useAsm {
		kern6x16Go(kc, ap, bp, ldb, c, ldc, add)
		return
	}
	// The assembly does not check bounds: touch the last element it reads or
	// writes in each operand so a driver bug panics here instead.
	_ = ap[kc*gemmMR-1]
	_ = bp[(kc-1)*ldb+gemmNR-1]
	_ = c[(gemmMR-1)*ldc+gemmNR-1]
	kern6x16AVX2(kc, &ap[0], &bp[0], ldb, &c[0], ldc, add)
}

func dotTile3x4(k8 int, a *[3][]float32, b *[4][]float32, c *[12]float32) {
	if !useAsm {
		dotTile3x4Go(k8, a, b, c)
		return
	}
	_, _, _ = a[0][k8-1], a[1][k8-1], a[2][k8-1]
	_, _, _, _ = b[0][k8-1], b[1][k8-1], b[2][k8-1], b[3][k8-1]
	dotTile3x4AVX2(k8, &a[0][0], &a[1][0], &a[2][0], &b[0][0], &b[1][0], &b[2][0], &b[3][0], &c[0])
}

// packNT16AVX2 packs 16 rows of a row-major B (B is [n,k], the NT layout)
// into one micro-panel. In Go:
//
//	for p := 0; p < kc8; p++ {
//		for j := 0; j < 16; j++ {
//			dst[p*16+j] = src[j*lds+p]
//		}
//	}
//
// kc8 is a multiple of 8.
//
//go:noescape
func packNT16AVX2(kc8 int, src *float32, lds int, dst *float32)

// packNT16 packs the first kc8 = kc&^7 columns of 16 rows of src (row
// stride lds) into dst; it reports how many it packed so the caller packs
// the rest.
func packNT16(kc int, src []float32, lds int, dst []float32) int {
	kc8 := kc &^ 7
	if !useAsm || kc8 == 0 {
		return 0
	}
	_ = src[15*lds+kc8-1]
	_ = dst[kc8*gemmNR-1]
	packNT16AVX2(kc8, &src[0], lds, &dst[0])
	return kc8
}

// dotTile1x8AVX2 computes one row of a against eight rows of B. In Go:
//
//	for j := 0; j < 8; j++ {
//		var s float32
//		for p := 0; p < k8; p++ {
//			s += a[p] * b_j[p]
//		}
//		c[j] = s
//	}
//
// k8 is a positive multiple of 8. Lanes and their reduction are those of
// dotTile3x4AVX2, so both give a row the same bits. next only steers
// prefetches (which never fault) and may point anywhere.
//
//go:noescape
func dotTile1x8AVX2(k8 int, a *float32, b0, b1, b2, b3, b4, b5, b6, b7 *float32, next *float32, c *float32)

func dotTile1x8(k8 int, a []float32, b *[8][]float32, next []float32, c *[8]float32) {
	if !useAsm {
		dotTile1x8Go(k8, a, b, c)
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
	dotTile1x8AVX2(k8, &a[0], &b[0][0], &b[1][0], &b[2][0], &b[3][0], &b[4][0], &b[5][0], &b[6][0], &b[7][0], pf, &c[0])
}

// copyRows16AVX2 and copyRows12AVX2 copy the first 16 (12) floats of kc
// rows of src, row stride lds, into consecutive rows of dst. In Go:
//
//	for p := 0; p < kc; p++ {
//		copy(dst[p*w:p*w+w], src[p*lds:p*lds+w]) // w = 16 or 12
//	}
//
// kc ≥ 1.
//
//go:noescape
func copyRows16AVX2(kc int, src *float32, lds int, dst *float32)

//go:noescape
func copyRows12AVX2(kc int, src *float32, lds int, dst *float32)

// copyRows copies the first w (16 or 12) floats of kc rows of src, row
// stride lds, into consecutive rows of dst: the packing of B panels from a
// [k,n] B and of 12-row A panels from a [k,m] A.
func copyRows(w, kc int, src []float32, lds int, dst []float32) {
	if !useAsm || kc == 0 {
		copyRowsGo(w, kc, src, lds, dst)
		return
	}
	_ = src[(kc-1)*lds+w-1]
	_ = dst[kc*w-1]
	switch w {
	case 16:
		copyRows16AVX2(kc, &src[0], lds, &dst[0])
	case 12:
		copyRows12AVX2(kc, &src[0], lds, &dst[0])
	default:
		copyRowsGo(w, kc, src, lds, dst)
	}
}
