//go:build !amd64

package kernels

func attnScoresAsm(rows int, s []float32, lds int, q []float32, hd int, k []float32, ldk, bs, n8 int) {
	panic("kernels: no assembly on this architecture")
}

func attnMixAsm(rows int, o []float32, pr []float32, ldp int, v []float32, hd, n int) {
	panic("kernels: no assembly on this architecture")
}

func prefetchRowsAsm(p *float32, ld, rows, n int) {
	panic("kernels: no assembly on this architecture")
}

func softExpAsm(x []float32, scale float32) float32 {
	panic("kernels: no assembly on this architecture")
}
