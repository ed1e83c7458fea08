package bench

import (
	"math/rand/v2"
	"time"

	"whale/kernels"
)

// Gemm times kernels.Gemm on random inputs of the given shape and returns its
// speed in GFLOP/s (2·m·k·n flops a product). After one warm-up run it
// repeats the product until minDur has passed (at least three times) and
// keeps the fastest run: on a shared machine the best run is the one least
// disturbed by others.
func Gemm(layout kernels.Layout, m, k, n int, minDur time.Duration) (gflops float64) {
	if m <= 0 || k <= 0 || n <= 0 {
		return 0
	}
	r := benchRand(m, k, n)
	a, b, out := randomSlice(r, m*k), randomSlice(r, k*n), make([]float32, m*n)
	best, _ := fastest(minDur, func() error { kernels.Gemm(layout, out, a, b, m, k, n, false); return nil })
	return 2 * float64(m) * float64(k) * float64(n) / best.Seconds() / 1e9
}

// GemmOn is Gemm through a backend's Gemm (its tensors, its
// kernels), synchronising an asynchronous backend around each timed
// product; on the CPU backend it measures what Gemm does plus the
// interface's dispatch.
func GemmOn(be kernels.Backend, layout kernels.Layout, m, k, n int, minDur time.Duration) (gflops float64, err error) {
	if m <= 0 || k <= 0 || n <= 0 {
		return 0, nil
	}
	r := benchRand(m, k, n)
	load := func(size int) kernels.Tensor {
		t := be.Alloc(size)
		be.Load(t, randomSlice(r, size))
		return t
	}
	a, b, out := load(m*k), load(k*n), be.Alloc(m*n)
	defer func() { be.Free(a); be.Free(b); be.Free(out) }()
	best, err := fastest(minDur, func() error { be.Gemm(layout, out, a, b, m, k, n, false); return kernels.Sync(be) })
	if err != nil {
		return 0, err
	}
	return 2 * float64(m) * float64(k) * float64(n) / best.Seconds() / 1e9, nil
}

func benchRand(m, k, n int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(m), uint64(k)<<32|uint64(n)))
}

// randomSlice is n values uniform in [-1, 1).
func randomSlice(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 2*r.Float32() - 1
	}
	return v
}

// fastest runs run once to warm up, then until minDur has passed (at
// least three times), and returns its fastest run.
func fastest(minDur time.Duration, run func() error) (time.Duration, error) {
	if err := run(); err != nil {
		return 0, err
	}
	best := time.Duration(1<<63 - 1)
	start := time.Now()
	for runs := 0; runs < 3 || time.Since(start) < minDur; runs++ {
		t0 := time.Now()
		if err := run(); err != nil {
			return 0, err
		}
		best = min(best, time.Since(t0))
	}
	return best, nil
}
