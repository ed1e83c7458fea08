//go:build !amd64

package kernels

func kern12x32(kc int, a []float32, rsa, csa int, b []float32, boff, ldb int, c []float32, ldc int, add bool) {
	kernRxNGo(12, kc, a, rsa, csa, b, boff, ldb, 2, c, ldc, add)
}

func kern12x16(kc int, a []float32, rsa, csa int, b []float32, ldb int, c []float32, ldc int, add bool) {
	kernRxNGo(12, kc, a, rsa, csa, b, 0, ldb, 1, c, ldc, add)
}

func kern4x32(kc int, a []float32, rsa, csa int, b []float32, boff, ldb int, c []float32, ldc int, add bool) {
	kernRxNGo(4, kc, a, rsa, csa, b, boff, ldb, 2, c, ldc, add)
}
