package kernels

import (
	"sync"
	"time"
)

// peakDuration is how long PeakGFLOPS keeps the FMA units busy: long enough
// for clocks to settle, short enough to call at start-up.
const peakDuration = 200 * time.Millisecond

// PeakGFLOPS measures this machine's float32 multiply-add peak in GFLOP/s
// (two flops per FMA lane) on Threads() goroutines for about 200 ms. On
// amd64 with AVX2+FMA it times an assembly loop of twelve independent
// 8-lane FMA chains, enough to hide the FMA latency on two pipes; elsewhere
// it times a Go loop of independent scalar multiply-adds, the peak the
// pure-Go kernels can reach. Each goroutine keeps the rate of its fastest
// half-millisecond chunk and the rates are summed: on a shared machine the
// fastest chunks are the ones nobody else interrupted. Divide a kernel's
// GFLOP/s by it for the fraction of peak.
func PeakGFLOPS() float64 {
	t := Threads()
	best := make([]float64, t)
	var wg sync.WaitGroup
	deadline := time.Now().Add(peakDuration)
	for w := range t {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				t0 := time.Now()
				f := peakChunk()
				best[w] = max(best[w], f/time.Since(t0).Seconds())
			}
		}()
	}
	wg.Wait()
	var total float64
	for _, r := range best {
		total += r
	}
	return total / 1e9
}
