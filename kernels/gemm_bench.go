package kernels

import (
	"math/rand/v2"
	"time"
)

// BenchGemm times Gemm on random inputs of the given shape and returns its
// speed in GFLOP/s (2·m·k·n flops a product). After one warm-up run it
// repeats the product until minDur has passed (at least three times) and
// keeps the fastest run: on a shared machine the best run is the one least
// disturbed by others.
func BenchGemm(layout Layout, m, k, n int, minDur time.Duration) (gflops float64) {
	if m <= 0 || k <= 0 || n <= 0 {
		return 0
	}
	r := rand.New(rand.NewPCG(uint64(m), uint64(k)<<32|uint64(n)))
	a := make([]float32, m*k)
	b := make([]float32, k*n)
	out := make([]float32, m*n)
	for i := range a {
		a[i] = 2*r.Float32() - 1
	}
	for i := range b {
		b[i] = 2*r.Float32() - 1
	}
	Gemm(layout, out, a, b, m, k, n, false)
	best := time.Duration(1<<63 - 1)
	start := time.Now()
	for runs := 0; runs < 3 || time.Since(start) < minDur; runs++ {
		t0 := time.Now()
		Gemm(layout, out, a, b, m, k, n, false)
		best = min(best, time.Since(t0))
	}
	return 2 * float64(m) * float64(k) * float64(n) / best.Seconds() / 1e9
}

// BenchGemmOn is BenchGemm through a backend's Gemm (its tensors, its
// kernels), synchronising an asynchronous backend around each timed
// product; on the CPU backend it measures what BenchGemm does plus the
// interface's dispatch.
func BenchGemmOn(be Backend, layout Layout, m, k, n int, minDur time.Duration) (gflops float64, err error) {
	if m <= 0 || k <= 0 || n <= 0 {
		return 0, nil
	}
	r := rand.New(rand.NewPCG(uint64(m), uint64(k)<<32|uint64(n)))
	host := func(size int) Tensor {
		v := make([]float32, size)
		for i := range v {
			v[i] = 2*r.Float32() - 1
		}
		t := be.Alloc(size)
		be.Load(t, v)
		return t
	}
	a, b, out := host(m*k), host(k*n), be.Alloc(m*n)
	defer func() { be.Free(a); be.Free(b); be.Free(out) }()
	wait := func() error {
		if s, ok := be.(Syncer); ok {
			return s.Sync()
		}
		return nil
	}
	be.Gemm(layout, out, a, b, m, k, n, false)
	if err := wait(); err != nil {
		return 0, err
	}
	best := time.Duration(1<<63 - 1)
	start := time.Now()
	for runs := 0; runs < 3 || time.Since(start) < minDur; runs++ {
		t0 := time.Now()
		be.Gemm(layout, out, a, b, m, k, n, false)
		if err := wait(); err != nil {
			return 0, err
		}
		best = min(best, time.Since(t0))
	}
	return 2 * float64(m) * float64(k) * float64(n) / best.Seconds() / 1e9, nil
}
