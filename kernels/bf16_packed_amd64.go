package kernels

// kern6x16BF16AVX2 is kern6x16AVX2 on a packed bf16 panel (ldb = 16),
// widened in registers (vpmovzxwd, shift left 16):
//
//	acc[i][j] += ap[p*6+i] * math.Float32frombits(uint32(bp[p*16+j])<<16)
//
// Each element is the FMA chain kern6x16AVX2 computes for the widened
// panel. kc ≥ 1.
//
//go:noescape
func kern6x16BF16AVX2(kc int, ap *float32, bp *BF16, c *float32, ldc int, add bool)

// kern1x64BF16AVX2 is kern1x64AVX2 on packed bf16 panels:
//
//	s += a[p] * math.Float32frombits(uint32(bp[q*ps+p*16+j])<<16)
//
//go:noescape
func kern1x64BF16AVX2(kc int, a *float32, bp *BF16, ps int, c *float32, add bool)

func microKernelBF16(kc int, ap []float32, bp []BF16, c []float32, ldc int, add bool) {
	if !useAsm {
		kern6x16BF16Go(kc, ap, bp, c, ldc, add)
		return
	}
	_ = ap[kc*gemmMR-1]
	_ = bp[kc*gemmNR-1]
	_ = c[(gemmMR-1)*ldc+gemmNR-1]
	kern6x16BF16AVX2(kc, &ap[0], &bp[0], &c[0], ldc, add)
}

func rowKernelBF16(kc int, a []float32, bp []BF16, ps int, c []float32, add bool) {
	if !useAsm {
		kern1x64BF16Go(kc, a, bp, ps, c, add)
		return
	}
	_ = a[kc-1]
	_ = bp[3*ps+kc*gemmNR-1]
	_ = c[packedPanelGroup*gemmNR-1]
	if useAVX512 {
		kern1x64BF16AVX512(kc, &a[0], &bp[0], ps, &c[0], add)
		return
	}
	kern1x64BF16AVX2(kc, &a[0], &bp[0], ps, &c[0], add)
}
