//go:build !amd64

package kernels

func rowKernel(kc int, a, bp []float32, ps int, c []float32, add bool) {
	kern1x64Go(kc, a, bp, ps, c, add)
}
