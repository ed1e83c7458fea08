//go:build !amd64

package kernels

func widenBF16Asm(dst []float32, src []uint16) int {
	panic("kernels: no assembly on this architecture")
}

func attnScoresBF16Asm(rows int, s []float32, lds int, q []float32, hd int, k []uint16, ldk, bs, n8 int) {
	panic("kernels: no assembly on this architecture")
}

func attnMixBF16Asm(rows int, o []float32, pr []float32, ldp int, v []uint16, hd, n int) {
	panic("kernels: no assembly on this architecture")
}
