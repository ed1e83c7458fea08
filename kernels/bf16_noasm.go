//go:build !amd64

package kernels

func dotTile3x4BF16(k8 int, a *[3][]float32, b *[4][]BF16, c *[12]float32) {
	dotTile3x4BF16Go(k8, a, b, c)
}

func dotTile1x8BF16(k8 int, a []float32, b *[8][]BF16, next []BF16, c *[8]float32) {
	dotTile1x8BF16Go(k8, a, b, c)
}

func packNT16BF16(kc int, src []BF16, lds int, dst []float32) int { return 0 }

func packNN16BF16(kc int, src []BF16, lds int, dst []float32) bool { return false }
