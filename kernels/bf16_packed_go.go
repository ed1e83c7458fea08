package kernels

// kern6x16BF16Go is kern6x16Go with a bf16 panel (steps ldb elements
// apart), widened as it is read.
func kern6x16BF16Go(kc int, ap []float32, bp []BF16, ldb int, c []float32, ldc int, add bool) {
	ap = ap[:kc*gemmMR]
	for i := 0; i < gemmMR; i += 2 {
		for j := 0; j < gemmNR; j += 4 {
			var s00, s01, s02, s03, s10, s11, s12, s13 float32
			for p := 0; p < kc; p++ {
				a := ap[p*gemmMR+i : p*gemmMR+i+2]
				b := bp[p*ldb+j : p*ldb+j+4]
				a0, a1 := a[0], a[1]
				b0, b1, b2, b3 := bf16ToFloat(b[0]), bf16ToFloat(b[1]), bf16ToFloat(b[2]), bf16ToFloat(b[3])
				s00 += a0 * b0
				s01 += a0 * b1
				s02 += a0 * b2
				s03 += a0 * b3
				s10 += a1 * b0
				s11 += a1 * b1
				s12 += a1 * b2
				s13 += a1 * b3
			}
			put4(c[i*ldc+j:i*ldc+j+4], s00, s01, s02, s03, add)
			put4(c[(i+1)*ldc+j:(i+1)*ldc+j+4], s10, s11, s12, s13, add)
		}
	}
}

// kern1x64BF16Go is kern1x64Go on a packed group of four bf16 panels, its
// steps of 64 columns one after another (PackNTBF16).
func kern1x64BF16Go(kc int, a []float32, bp []BF16, c []float32, add bool) {
	a = a[:kc]
	bp = bp[:kc*packedGroupCols]
	for j := 0; j < packedGroupCols; j += 4 {
		var s0, s1, s2, s3 float32
		for p, x := range a {
			b := bp[p*packedGroupCols+j : p*packedGroupCols+j+4]
			s0 += x * bf16ToFloat(b[0])
			s1 += x * bf16ToFloat(b[1])
			s2 += x * bf16ToFloat(b[2])
			s3 += x * bf16ToFloat(b[3])
		}
		put4(c[j:j+4], s0, s1, s2, s3, add)
	}
}
