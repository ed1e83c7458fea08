//go:build !amd64

package kernels

func microKernel(kc int, ap, bp []float32, ldb int, c []float32, ldc int, add bool) {
	kern6x16Go(kc, ap, bp, ldb, c, ldc, add)
}

func dotTile3x4(k8 int, a *[3][]float32, b *[4][]float32, c *[12]float32) {
	dotTile3x4Go(k8, a, b, c)
}

func packNT16(kc int, src []float32, lds int, dst []float32) int { return 0 }

func dotTile1x8(k8 int, a []float32, b *[8][]float32, next []float32, c *[8]float32) {
	dotTile1x8Go(k8, a, b, c)
}

func copyRows(w, kc int, src []float32, lds int, dst []float32) { copyRowsGo(w, kc, src, lds, dst) }
