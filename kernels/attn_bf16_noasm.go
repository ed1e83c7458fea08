//go:build !amd64

package kernels

func widenBF16Asm(dst []float32, src []uint16) int {
	panic("kernels: no assembly on this architecture")
}
