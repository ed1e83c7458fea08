package kernels

// kern1x64AVX2 multiplies one row of A by four packed B panels (panel q
// starts ps elements after panel q-1). In Go:
//
//	for q := 0; q < 4; q++ {
//		for j := 0; j < 16; j++ {
//			var s float32
//			for p := 0; p < kc; p++ {
//				s += a[p] * bp[q*ps+p*16+j] // one fused multiply-add
//			}
//			if add { c[q*16+j] += s } else { c[q*16+j] = s }
//		}
//	}
//
// Each element is the FMA chain kern6x16AVX2 computes for it. kc ≥ 1.
//
//go:noescape
func kern1x64AVX2(kc int, a, bp *float32, ps int, c *float32, add bool)

func rowKernel(kc int, a, bp []float32, ps int, c []float32, add bool) {
	if !useAsm {
		kern1x64Go(kc, a, bp, ps, c, add)
		return
	}
	_ = a[kc-1]
	_ = bp[3*ps+kc*gemmNR-1]
	_ = c[packedPanelGroup*gemmNR-1]
	if useAVX512 {
		kern1x64AVX512(kc, &a[0], &bp[0], ps, &c[0], add)
		return
	}
	kern1x64AVX2(kc, &a[0], &bp[0], ps, &c[0], add)
}
