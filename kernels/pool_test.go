package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestParallelCoversOnce: Parallel (per 0) and ParallelBalanced (per 1,
// 4) run every index exactly once, in chunks of whole grains, no more
// than per chunks a thread.
func TestParallelCoversOnce(t *testing.T) {
	for _, per := range []int{0, 1, 4} {
		for _, th := range []int{1, 2, 3, 8} {
			for _, n := range []int{0, 1, 5, 16, 17, 100, 1001} {
				for _, grain := range []int{0, 1, 4, 16, 200} {
					testParallelCoversOnce(t, per, th, n, grain)
				}
			}
		}
	}
}

func testParallelCoversOnce(t *testing.T, per, th, n, grain int) {
	t.Helper()
	run := func(n, grain int, fn func(lo, hi int)) { Parallel(n, grain, fn) }
	if per > 0 {
		run = func(n, grain int, fn func(lo, hi int)) { ParallelBalanced(n, grain, per, fn) }
	}
	withThreads(th, func() {
		seen := make([]int, n)
		var mu sync.Mutex
		chunks := 0
		run(n, grain, func(lo, hi int) {
			mu.Lock()
			defer mu.Unlock()
			chunks++
			if g := max(grain, 1); hi != n && (hi-lo)%g != 0 {
				t.Errorf("per=%d threads=%d n=%d grain=%d: chunk [%d,%d) not a multiple of the grain", per, th, n, grain, lo, hi)
			}
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		if chunks > th*max(per, 1) {
			t.Errorf("per=%d threads=%d n=%d grain=%d: %d chunks", per, th, n, grain, chunks)
		}
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("per=%d threads=%d n=%d grain=%d: index %d run %d times", per, th, n, grain, i, c)
			}
		}
	})
}

// TestWarmSections: inside a warm section a spin ends at warmSpin, not
// at its own limit; the section closes once however often its release is
// called, and sections nest. (The times are far from either limit: a
// 1 ms spin against 25 µs and 5 ms.)
func TestWarmSections(t *testing.T) {
	if warm.Load() != 0 {
		t.Fatalf("%d warm sections open before the test", warm.Load())
	}
	began := time.Now().Add(-time.Millisecond)
	if !spunOut(began, spinFor) {
		t.Fatal("outside a warm section a 1 ms spin has not run out at spinFor")
	}
	outer := Warm()
	inner := Warm()
	if spunOut(began, spinFor) {
		t.Fatal("inside a warm section a 1 ms spin ran out at spinFor")
	}
	if !spunOut(time.Now().Add(-2*warmSpin), spinFor) {
		t.Fatal("inside a warm section a spin ran past warmSpin")
	}
	inner()
	inner()
	if warm.Load() != 1 || spunOut(began, spinFor) {
		t.Fatalf("after the inner section closed (twice): %d open, spin out %v", warm.Load(), spunOut(began, spinFor))
	}
	outer()
	if warm.Load() != 0 || !spunOut(began, spinFor) {
		t.Fatalf("after both closed: %d open", warm.Load())
	}
}

// TestParallelNestedAndConcurrent: callers on several goroutines at once,
// each of whose chunks calls Parallel again, all see every index run
// exactly once, with helpers shared between them.
func TestParallelNestedAndConcurrent(t *testing.T) {
	withThreads(3, func() {
		var wg sync.WaitGroup
		for c := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for rep := range 50 {
					n := 37 + 13*c + rep
					seen := make([]int32, n*n)
					Parallel(n, 3, func(lo, hi int) {
						for i := lo; i < hi; i++ {
							Parallel(n, 5, func(a, b int) {
								for j := a; j < b; j++ {
									atomic.AddInt32(&seen[i*n+j], 1)
								}
							})
						}
					})
					for k, v := range seen {
						if v != 1 {
							t.Errorf("caller %d rep %d: index %d run %d times", c, rep, k, v)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
	})
}

// BenchmarkParallelForkJoin: one Parallel call of two chunks of about a
// microsecond each, the size of a batch-1 decoding product split in two:
// the call's cost over the work is the fork and join.
func BenchmarkParallelForkJoin(b *testing.B) {
	var sink [2][64]float32
	work := func(lo, hi int) {
		for c := lo; c < hi; c++ {
			v := &sink[c]
			for r := 0; r < 40; r++ {
				for i := range v {
					v[i] = v[i]*0.999 + 1
				}
			}
		}
	}
	b.Run("serial", func(b *testing.B) {
		for range b.N {
			work(0, 2)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		withThreads(2, func() {
			for range b.N {
				Parallel(2, 1, work)
			}
		})
	})
}

// BenchmarkCoreRoundTrip times one goroutine setting a flag that another,
// spinning on its own core, answers: the least a fork and join of two
// threads can cost on this machine, against which BenchmarkParallelForkJoin's
// overhead (parallel minus half of serial) is measured.
func BenchmarkCoreRoundTrip(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two threads")
	}
	var flag atomic.Int64
	stop := int64(-1)
	go func() {
		for i := int64(1); ; i++ {
			for {
				v := flag.Load()
				if v == stop {
					return
				}
				if v == 2*i-1 {
					break
				}
			}
			flag.Store(2 * i)
		}
	}()
	var i int64
	for b.Loop() {
		i++
		flag.Store(2*i - 1)
		for flag.Load() != 2*i {
		}
	}
	flag.Store(stop)
}

func TestLanesShareTheThreads(t *testing.T) {
	defer SetThreads(Threads())
	SetThreads(6)
	if got := helperCount(); got != 5 {
		t.Fatalf("6 threads, no lanes: %d helpers, want 5", got)
	}
	two := Lanes(2)
	if got := Threads(); got != 3 {
		t.Fatalf("6 threads, 2 lanes open: Threads() = %d, want 3", got)
	}
	if got := helperCount(); got != 4 {
		t.Fatalf("6 threads, 2 lanes open: %d helpers, want 4 (2 a lane, beside its caller)", got)
	}
	three := Lanes(3)
	if got := Threads(); got != 1 {
		t.Fatalf("6 threads, 2 and 3 lanes open: Threads() = %d, want 1 (6 / 4 callers)", got)
	}
	two() // one lane of the two leaves: 3 callers
	if got := Threads(); got != 2 {
		t.Fatalf("6 threads, 1 + 3 lanes open: Threads() = %d, want 2", got)
	}
	two()
	two() // past the second leave, nothing
	if got := Threads(); got != 2 {
		t.Fatalf("6 threads, 3 lanes open: Threads() = %d, want 2", got)
	}
	three()
	if got := Threads(); got != 3 {
		t.Fatalf("6 threads, 2 lanes of 3 left: Threads() = %d, want 3", got)
	}
	three()
	three()
	if got := Threads(); got != 6 {
		t.Fatalf("every lane closed: Threads() = %d, want 6", got)
	}
	Lanes(1)() // one lane is the caller alone
	if got := Threads(); got != 6 {
		t.Fatalf("after Lanes(1): Threads() = %d, want 6", got)
	}
	SetThreads(2)
	four := Lanes(4)
	defer four()
	if got := Threads(); got != 1 {
		t.Fatalf("2 threads, 4 lanes: Threads() = %d, want 1", got)
	}
}
