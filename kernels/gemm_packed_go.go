package kernels

// kern1x64Go is the pure-Go twin of the one-row kernel on four packed
// panels, each element a sequential sum over p like kern6x16Go's:
//
//	c[q*16+j] (+)= Σ_{p<kc} a[p] · bp[q*ps + p*16 + j]   (q < 4, j < 16)
func kern1x64Go(kc int, a, bp []float32, ps int, c []float32, add bool) {
	a = a[:kc]
	for q := 0; q < packedPanelGroup; q++ {
		panel := bp[q*ps : q*ps+kc*gemmNR]
		for j := 0; j < gemmNR; j += 4 {
			var s0, s1, s2, s3 float32
			for p, x := range a {
				b := panel[p*gemmNR+j : p*gemmNR+j+4]
				s0 += x * b[0]
				s1 += x * b[1]
				s2 += x * b[2]
				s3 += x * b[3]
			}
			put4(c[q*gemmNR+j:q*gemmNR+j+4], s0, s1, s2, s3, add)
		}
	}
}
