//go:build !amd64

package bench

func peakChunk() float64 { return peakChunkGo() }

// PeakVectorBits is the width of the FMAs PeakGFLOPS times: 32 for the
// pure-Go loop.
func PeakVectorBits() int { return 32 }

func sumBlock(x []float32) float32 { return sumBlockGo(x) }
