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
//
// Chunks are claimed, not assigned: the caller and Threads()-1 helper
// goroutines each take the next unclaimed chunk until none is left, and
// the caller waits only for chunks a helper has started. On a machine
// whose other cores are busy (a shared laptop, other processes) a helper
// may start late or not at all before the caller is done; the caller then
// runs its chunks itself instead of idling until the helper is scheduled,
// so a call never takes much longer than on one thread. Which goroutine
// runs a chunk never changes what it computes.
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
	chunks := int32((n + step - 1) / step)
	// Goroutines (not a fixed pool of workers) keep nested calls, say a
	// Parallel over heads whose fn calls Gemm, deadlock-free.
	var next atomic.Int32
	var wg sync.WaitGroup
	wg.Add(int(chunks))
	work := func() {
		for {
			c := next.Add(1) - 1
			if c >= chunks {
				return
			}
			lo := int(c) * step
			fn(lo, min(lo+step, n))
			wg.Done()
		}
	}
	for h := 1; h < int(chunks); h++ {
		go work()
	}
	work()
	wg.Wait()
}
