//go:build !amd64

package kernels

func kvTransposeBlocksAVX2(dst *float32, ld int, src *float32, hd, blocks int) {
	panic("kernels: no assembly on this architecture")
}
