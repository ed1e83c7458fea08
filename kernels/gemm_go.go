package kernels

// kern6x16Go is the pure-Go twin of the assembly micro-kernel:
//
//	acc[i][j] = Σ_{p<kc} ap[p*6+i] · bp[p*ldb+j]   (i < 6, j < 16)
//	c[i*ldc+j] = acc[i][j], or c[i*ldc+j] += acc[i][j] when add
func kern6x16Go(kc int, ap, bp []float32, ldb int, c []float32, ldc int, add bool) {
	ap = ap[:kc*gemmMR]
	// Go keeps scalars, not arrays, in registers: the tile is done as 2×4
	// blocks of eight scalar accumulators, each a full pass over p.
	for i := 0; i < gemmMR; i += 2 {
		for j := 0; j < gemmNR; j += 4 {
			var s00, s01, s02, s03, s10, s11, s12, s13 float32
			for p := 0; p < kc; p++ {
				a := ap[p*gemmMR+i : p*gemmMR+i+2]
				b := bp[p*ldb+j : p*ldb+j+4]
				a0, a1 := a[0], a[1]
				b0, b1, b2, b3 := b[0], b[1], b[2], b[3]
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

// put4 stores four sums into o[0:4], or adds them when add is set.
func put4(o []float32, s0, s1, s2, s3 float32, add bool) {
	if add {
		o[0] += s0
		o[1] += s1
		o[2] += s2
		o[3] += s3
	} else {
		o[0], o[1], o[2], o[3] = s0, s1, s2, s3
	}
}

// dotTile3x4Go is the pure-Go twin of the 3×4 dot-product tile:
//
//	c[i*4+j] = Σ_{p<k8} a[i][p] · b[j][p]   (i < 3, j < 4)
func dotTile3x4Go(k8 int, a *[3][]float32, b *[4][]float32, c *[12]float32) {
	for i := range a {
		x := a[i][:k8]
		for j := range b {
			y := b[j][:k8]
			var s float32
			for p := range x {
				s += x[p] * y[p]
			}
			c[i*4+j] = s
		}
	}
}

// dotTile1x8Go is the pure-Go twin of the 1×8 dot-product tile:
//
//	c[j] = Σ_{p<k8} a[p] · b[j][p]   (j < 8)
func dotTile1x8Go(k8 int, a []float32, b *[8][]float32, c *[8]float32) {
	x := a[:k8]
	for j := range b {
		y := b[j][:k8]
		var s float32
		for p := range x {
			s += x[p] * y[p]
		}
		c[j] = s
	}
}

// copyRowsGo is the pure-Go twin of copyRows16AVX2 and copyRows12AVX2.
func copyRowsGo(w, kc int, src []float32, lds int, dst []float32) {
	for p := 0; p < kc; p++ {
		copy(dst[p*w:p*w+w], src[p*lds:p*lds+w])
	}
}
