//go:build !amd64

package kernels

func peakChunk() float64 { return peakChunkGo() }
