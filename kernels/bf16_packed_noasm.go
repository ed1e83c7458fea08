//go:build !amd64

package kernels

func microKernelBF16(kc int, ap []float32, bp []BF16, ldb int, c []float32, ldc int, add bool) {
	kern6x16BF16Go(kc, ap, bp, ldb, c, ldc, add)
}

func rowKernelBF16(kc int, a []float32, bp []BF16, c []float32, add bool) {
	kern1x64BF16Go(kc, a, bp, c, add)
}
