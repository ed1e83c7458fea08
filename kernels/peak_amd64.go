package kernels

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

func peakChunk() float64 {
	if !hasAVX2FMA() {
		return peakChunkGo()
	}
	fmaLoopAVX2(peakIters)
	return 12 * 8 * 2 * peakIters
}
