package bench

import (
	"sync"
	"time"

	"whale/kernels"
)

// peakDuration is how long PeakGFLOPS keeps the FMA units busy: long enough
// for clocks to settle, short enough to call at start-up. The first
// peakWarmup of it is not counted: a core starts wide FMAs at the clock it
// ran before and lowers it (for AVX-512, by 10-20 %) only after a fraction
// of a millisecond, so the first chunks would overstate what a kernel that
// runs for longer can reach.
const (
	peakDuration = 300 * time.Millisecond
	peakWarmup   = 50 * time.Millisecond
)

// PeakGFLOPS measures this machine's float32 multiply-add peak in GFLOP/s
// (two flops per FMA lane) on kernels.Threads() goroutines, with the widest FMAs
// the kernels use (kernels.VectorBits): on amd64 it times an assembly loop of
// twelve independent FMA chains of 16 lanes (AVX-512) or 8 (AVX2), enough
// to hide the FMA latency on two pipes; elsewhere a Go loop of independent
// scalar multiply-adds, the peak the pure-Go kernels can reach. After a
// warm-up each goroutine keeps the rate of its fastest chunk of about a
// millisecond and the rates are summed: on a shared machine the fastest
// chunks are the ones nobody else interrupted. Divide a kernel's GFLOP/s
// by it for the fraction of peak.
//
// On an idle machine the goroutines run side by side and this is the rate
// the cores sustain together. On a busy one a goroutine's fastest chunk
// may come while the other cores run someone else's scalar code, at the
// higher clock a core gets for wide FMAs alone (measured on the 2-core
// build machine: 2.95 GHz against 2.48 with both busy), so the figure
// overstates the peak and fractions of it understate: conservative.
// (Counting only rounds of chunks run side by side was tried: on a busy
// machine it found almost none and gave half the peak.)
func PeakGFLOPS() float64 {
	t := kernels.Threads()
	best := make([]float64, t)
	var wg sync.WaitGroup
	start := time.Now()
	warm, deadline := start.Add(peakWarmup), start.Add(peakDuration)
	for w := range t {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				t0 := time.Now()
				f := peakChunk()
				if t0.After(warm) {
					best[w] = max(best[w], f/time.Since(t0).Seconds())
				}
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

// useAsm selects the assembly read loop (sumBlockAVX2) where the kernels
// run AVX2; tests clear it to run its Go twin.
var useAsm = kernels.VectorBits() >= 256

// readFloats is the size of the buffer ReadGBPS streams, 64 MiB: the
// array size of ../shared/refbench's triad, and more than the caches of
// the machines measured (their L3 is at most 48 MB). A sweep of twice
// the last-level cache can still find some of it there; ReadGBPSOver
// measures a buffer as large as the data a kernel streams.
const readFloats = 1 << 24

// ReadGBPS measures how fast kernels.Threads() goroutines read memory, in GB/s:
// each sums its share of a 64 MiB buffer (in 2 MB pages where the OS
// gives them, as the sampler's weights are), for at least 400 ms, and the
// fastest sweep counts. This bounds any kernel that streams its operands
// once, such as batch-1 decoding: divide its bytes per second by it.
func ReadGBPS() float64 { return ReadGBPSOver(4 * readFloats) }

// ReadGBPSOver is ReadGBPS over a buffer of about bytes bytes (at least
// 1 MiB): the bound for a kernel that streams that much once, such as a
// model's weights, measured on as much memory.
func ReadGBPSOver(bytes int64) float64 {
	x := kernels.HugeFloat32(int(max(bytes, 1<<20) / 4))
	defer kernels.FreeHuge(x)
	kernels.Parallel(len(x), 1<<16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x[i] = 1
		}
	})
	var mu sync.Mutex
	var best, sum float64
	start := time.Now()
	for reps := 0; reps < 3 || time.Since(start) < 2*peakDuration; reps++ {
		t0 := time.Now()
		kernels.Parallel(len(x), 1<<16, func(lo, hi int) {
			s := sumBlock(x[lo:hi])
			mu.Lock()
			sum += float64(s)
			mu.Unlock()
		})
		best = max(best, float64(4*len(x))/time.Since(t0).Seconds()/1e9)
	}
	if sum == 0 {
		return 0 // the sums read nothing: cannot happen with x all ones
	}
	return best
}
