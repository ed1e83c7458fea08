package kernels

// kern6x16BF16AVX2 is kern6x16AVX2 on a packed bf16 panel (steps ldb
// elements apart: 64 in a group of four panels, 16 past the groups; see
// PackNTBF16), widened in registers (vpmovzxwd, shift left 16):
//
//	acc[i][j] += ap[p*6+i] * math.Float32frombits(uint32(bp[p*ldb+j])<<16)
//
// Each element is the FMA chain kern6x16AVX2 computes for the widened
// panel. kc ≥ 1.
//
//go:noescape
func kern6x16BF16AVX2(kc int, ap *float32, bp *BF16, ldb int, c *float32, ldc int, add bool)

// kern1x64BF16AVX2 is kern1x64AVX2 on a packed group of four bf16 panels,
// whose steps of 64 columns follow one another:
//
//	s += a[p] * math.Float32frombits(uint32(bp[p*64+j])<<16)
//
//go:noescape
func kern1x64BF16AVX2(kc int, a *float32, bp *BF16, c *float32, add bool)

func microKernelBF16(kc int, ap []float32, bp []BF16, ldb int, c []float32, ldc int, add bool) {
	if !useAsm {
		kern6x16BF16Go(kc, ap, bp, ldb, c, ldc, add)
		return
	}
	_ = ap[kc*gemmMR-1]
	_ = bp[(kc-1)*ldb+gemmNR-1]
	_ = c[(gemmMR-1)*ldc+gemmNR-1]
	kern6x16BF16AVX2(kc, &ap[0], &bp[0], ldb, &c[0], ldc, add)
}

func rowKernelBF16(kc int, a []float32, bp []BF16, c []float32, add bool) {
	if !useAsm {
		kern1x64BF16Go(kc, a, bp, c, add)
		return
	}
	_ = a[kc-1]
	_ = bp[kc*packedGroupCols-1]
	_ = c[packedGroupCols-1]
	if useAVX512 {
		kern1x64BF16AVX512(kc, &a[0], &bp[0], &c[0], add)
		return
	}
	kern1x64BF16AVX2(kc, &a[0], &bp[0], &c[0], add)
}
