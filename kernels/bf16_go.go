package kernels

// dotTile3x4BF16Go is the pure-Go twin of the bf16 dot-product tile:
//
//	c[i*4+j] = Σ_{p<k8} a[i][p] · float32(b[j][p])   (i < 3, j < 4)
func dotTile3x4BF16Go(k8 int, a *[3][]float32, b *[4][]BF16, c *[12]float32) {
	for j := range b {
		y := b[j][:k8]
		for i := range a {
			x := a[i][:k8]
			var s float32
			for p := range x {
				s += x[p] * bf16ToFloat(y[p])
			}
			c[i*4+j] = s
		}
	}
}

// dotTile1x8BF16Go is the pure-Go twin of the bf16 1×8 dot-product tile:
//
//	c[j] = Σ_{p<k8} a[p] · float32(b[j][p])   (j < 8)
func dotTile1x8BF16Go(k8 int, a []float32, b *[8][]BF16, c *[8]float32) {
	x := a[:k8]
	for j := range b {
		y := b[j][:k8]
		var s float32
		for p := range x {
			s += x[p] * bf16ToFloat(y[p])
		}
		c[j] = s
	}
}
