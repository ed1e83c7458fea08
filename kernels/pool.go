package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

var threads atomic.Int32

func init() { threads.Store(int32(runtime.GOMAXPROCS(0))) }

// SetThreads sets how many goroutines kernels use (at least 1). Results are
// bit-identical whatever the count: work is partitioned so that every output
// element is computed by the same sequence of operations.
func SetThreads(n int) {
	if n < 1 {
		n = 1
	}
	threads.Store(int32(n))
}

// Threads returns the number of goroutines kernels use.
func Threads() int { return int(threads.Load()) }

// Parallel splits [0, n) into at most Threads() contiguous chunks, each a
// multiple of grain (but the last), and runs fn on each, waiting for all.
// fn must write only outputs owned by its chunk; the partition then cannot
// change any result.
func Parallel(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	blocks := (n + grain - 1) / grain
	t := Threads()
	if t > blocks {
		t = blocks
	}
	if t <= 1 {
		fn(0, n)
		return
	}
	per := (blocks + t - 1) / t
	step := per * grain
	// The caller runs the first chunk itself: one goroutine fewer to start
	// and to wait for. Goroutines (not a fixed pool of workers) keep nested
	// calls, say a Parallel over heads whose fn calls Gemm, deadlock-free.
	var wg sync.WaitGroup
	for lo := step; lo < n; lo += step {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(lo, min(lo+step, n))
	}
	fn(0, min(step, n))
	wg.Wait()
}
