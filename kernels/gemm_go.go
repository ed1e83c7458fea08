package kernels

// kern6x16Go is the pure-Go twin of the assembly micro-kernel:
//
//	acc[i][j] = Σ_{p<kc} ap[p*6+i] · bp[p*ldb+j]   (i < 6, j < 16)
//	c[i*ldc+j] = acc[i][j], or c[i*ldc+j] += acc[i][j] when add
func kern6x16Go(kc int, ap, bp []float32, ldb int, c []float32, ldc int, add bool) {
	var acc [gemmMR][gemmNR]float32
	for p := 0; p < kc; p++ {
		b := (*[gemmNR]float32)(bp[p*ldb:])
		a := (*[gemmMR]float32)(ap[p*gemmMR:])
		for i := range a {
			ai := a[i]
			r := &acc[i]
			for j := range r {
				r[j] += ai * b[j]
			}
		}
	}
	for i := range acc {
		row := (*[gemmNR]float32)(c[i*ldc:])
		if add {
			for j := range row {
				row[j] += acc[i][j]
			}
		} else {
			*row = acc[i]
		}
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
