package bench

import "whale/kernels"

// fmaLoopAVX2 issues n trips of twelve independent 8-lane FMAs. In Go:
//
//	var acc [12][8]float32
//	for range n {
//		for i := range acc {
//			for l := range acc[i] {
//				acc[i][l] += x * y // x = y = 0: no denormals, no overflow
//			}
//		}
//	}
//
//go:noescape
func fmaLoopAVX2(n int)

// fmaLoopAVX512 is fmaLoopAVX2 with twelve 16-lane FMAs a trip.
//
//go:noescape
func fmaLoopAVX512(n int)

// sumBlockAVX2 returns the sum of x[:64*n64] (in 64 lanes, so not in
// order). In Go:
//
//	var s float32
//	for _, v := range x[:64*n64] {
//		s += v
//	}
//
//go:noescape
func sumBlockAVX2(x *float32, n64 int) float32

// peakChunk runs about a millisecond of the widest FMAs the kernels use and
// returns how many flops it did.
func peakChunk() float64 {
	switch kernels.VectorBits() {
	case 512:
		fmaLoopAVX512(peakIters)
		return 12 * 16 * 2 * peakIters
	case 256:
		fmaLoopAVX2(peakIters)
		return 12 * 8 * 2 * peakIters
	}
	return peakChunkGo()
}

// PeakVectorBits is the width of the FMAs PeakGFLOPS times: the GEMM's
// (kernels.VectorBits), 512 with AVX-512, 256 with AVX2, 32 for the
// pure-Go loop.
func PeakVectorBits() int { return kernels.VectorBits() }

func sumBlock(x []float32) float32 {
	if !useAsm {
		return sumBlockGo(x)
	}
	n64 := len(x) / 64
	if n64 == 0 {
		return sumBlockGo(x)
	}
	return sumBlockAVX2(&x[0], n64) + sumBlockGo(x[64*n64:])
}
