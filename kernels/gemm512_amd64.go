package kernels

// kern12x32AVX512 is the AVX-512 GEMM micro-kernel: a 12×32 tile, A read
// through a row stride rsa and a column stride csa (row-major A in place:
// rsa = k, csa = 1; a 12-row panel: rsa = 1, csa = 12), B as two 16-column
// panels boff elements apart, each ldb elements a step. In Go:
//
//	var acc [12][32]float32
//	for p := 0; p < kc; p++ {
//		for i := 0; i < 12; i++ {
//			for j := 0; j < 32; j++ {
//				acc[i][j] = fma(a[i*rsa+p*csa], b[(j/16)*boff+p*ldb+j%16], acc[i][j])
//			}
//		}
//	}
//	for i, j := range 12×32 {
//		if add { c[i*ldc+j] += acc[i][j] } else { c[i*ldc+j] = acc[i][j] }
//	}
//
// Each element is the FMA chain kern6x16AVX2 computes for it. kc ≥ 1.
//
//go:noescape
func kern12x32AVX512(kc int, a *float32, rsa, csa int, b *float32, boff, ldb int, c *float32, ldc int, add bool)

// kern12x16AVX512 is kern12x32AVX512 on one 16-column panel.
//
//go:noescape
func kern12x16AVX512(kc int, a *float32, rsa, csa int, b *float32, ldb int, c *float32, ldc int, add bool)

// kern4x32AVX512 is kern12x32AVX512 for the first four rows of A: the
// same FMA chain per element.
//
//go:noescape
func kern4x32AVX512(kc int, a *float32, rsa, csa int, b *float32, boff, ldb int, c *float32, ldc int, add bool)

// kernS6x16AVX2 is the strided tile on AVX2 for six rows of A and one
// 16-column panel of B (gemm_strided_amd64.s): the same FMA chain an
// element as kern12x32AVX512. kernS4x16AVX2 is it for four rows.
//
//go:noescape
func kernS6x16AVX2(kc int, a *float32, rsa, csa int, b *float32, ldb int, c *float32, ldc int, add bool)

//go:noescape
func kernS4x16AVX2(kc int, a *float32, rsa, csa int, b *float32, ldb int, c *float32, ldc int, add bool)

// stridedTile computes the strided tile of rows (12 or 4) rows of A and
// panels 16-column panels of B, boff elements apart: the AVX-512 kernel
// where the machine has it, else its AVX2 form in 6×16 (or 4×16) pieces,
// else the Go twin; every one computes each element's FMA chain alike.
// The assembly does not check bounds: the last element it reads or writes
// in each operand is touched first, so a driver bug panics here instead.
func stridedTile(rows, panels, kc int, a []float32, rsa, csa int, b []float32, boff, ldb int, c []float32, ldc int, add bool) {
	if !useAsm {
		kernRxNGo(rows, kc, a, rsa, csa, b, boff, ldb, panels, c, ldc, add)
		return
	}
	_ = a[(rows-1)*rsa+(kc-1)*csa]
	_ = b[(panels-1)*boff+(kc-1)*ldb+15]
	_ = c[(rows-1)*ldc+panels*16-1]
	switch {
	case useAVX512 && rows == 4:
		kern4x32AVX512(kc, &a[0], rsa, csa, &b[0], boff, ldb, &c[0], ldc, add)
	case useAVX512 && panels == 2:
		kern12x32AVX512(kc, &a[0], rsa, csa, &b[0], boff, ldb, &c[0], ldc, add)
	case useAVX512:
		kern12x16AVX512(kc, &a[0], rsa, csa, &b[0], ldb, &c[0], ldc, add)
	default:
		for q := 0; q < panels; q++ {
			if rows == 4 {
				kernS4x16AVX2(kc, &a[0], rsa, csa, &b[q*boff], ldb, &c[q*16], ldc, add)
				continue
			}
			for i := 0; i < rows; i += 6 {
				kernS6x16AVX2(kc, &a[i*rsa], rsa, csa, &b[q*boff], ldb, &c[i*ldc+q*16], ldc, add)
			}
		}
	}
}

// kern4x32 is kern12x32 for four rows.
func kern4x32(kc int, a []float32, rsa, csa int, b []float32, boff, ldb int, c []float32, ldc int, add bool) {
	stridedTile(4, 2, kc, a, rsa, csa, b, boff, ldb, c, ldc, add)
}

func kern12x32(kc int, a []float32, rsa, csa int, b []float32, boff, ldb int, c []float32, ldc int, add bool) {
	stridedTile(12, 2, kc, a, rsa, csa, b, boff, ldb, c, ldc, add)
}

func kern12x16(kc int, a []float32, rsa, csa int, b []float32, ldb int, c []float32, ldc int, add bool) {
	stridedTile(12, 1, kc, a, rsa, csa, b, 0, ldb, c, ldc, add)
}

// kern1x64AVX512 is kern1x64AVX2 (one row of A against four packed
// panels) with a 16-lane register a panel: the same FMA chain per element.
//
//go:noescape
func kern1x64AVX512(kc int, a, bp *float32, ps int, c *float32, add bool)

// kern1x64BF16AVX512 is kern1x64BF16AVX2 with a 16-lane register a panel.
//
//go:noescape
func kern1x64BF16AVX512(kc int, a *float32, bp *BF16, c *float32, add bool)
