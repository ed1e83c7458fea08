//go:build !amd64

package kernels

func attnScores4AVX2(s *float32, lds int, q *float32, hd int, k *float32, ldk, n8 int) {
	panic("kernels: no assembly on this architecture")
}

func attnMix4AVX2(o *float32, pr *float32, ldp int, v *float32, ldv, hd, n int) {
	panic("kernels: no assembly on this architecture")
}
