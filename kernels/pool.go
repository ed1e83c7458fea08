package kernels

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
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

// Threads returns the number of goroutines a kernel call uses: the count
// SetThreads set, shared out among the lanes open at once (Lanes).
func Threads() int { return max(1, int(threads.Load())/int(1+extraLanes.Load())) }

// extraLanes counts the lanes open beyond the first: every Lanes(w) adds
// w−1 while it is open.
var extraLanes atomic.Int32

// helperCount is how many helpers the pool keeps for Parallel calls: the
// threads beyond the callers (Threads()−1 with no lanes open; with w lanes
// on 2w threads, w helpers that any lane's chunks may take).
func helperCount() int {
	return max(Threads()-1, int(threads.Load())-int(1+extraLanes.Load()))
}

// Lanes says that w callers will run kernels at once, each on its own
// goroutine (a harness run over several samplers: core/model's
// Sampler.OpenLanes), and returns the function each of them calls as it
// ends. While they are open, each call gets its share of the threads
// (Threads() is the SetThreads count divided by the lanes open), so w
// lanes on w threads each run their products alone instead of handing
// chunks to one pool of helpers that all of them wait on. A lane that
// leaves gives its share back to the lanes still running: the last ones
// of a harness run (its last rollouts, in one lane while the others have
// no task left to claim) run their products on the threads the others
// freed. A kernel's result never depends on its thread count, so this
// changes only who computes what. leave is called once per lane; calls
// past the w-th do nothing.
func Lanes(w int) (leave func()) {
	if w <= 1 {
		return func() {}
	}
	extraLanes.Add(int32(w - 1))
	var left atomic.Int32
	return func() {
		// The first w−1 leaves each give one lane back; the w-th is
		// the lane that was never counted beyond the first.
		if left.Add(1) < int32(w) {
			extraLanes.Add(-1)
		}
	}
}

// Parallel splits [0, n) into at most Threads() contiguous chunks, each a
// multiple of grain (but the last), and runs fn on each, waiting for all.
// fn must write only outputs owned by its chunk; the partition then cannot
// change any result.
//
// Chunks are claimed, not assigned: the caller and the helper goroutines
// each take the next unclaimed chunk until none is left, and the caller
// waits only for chunks a helper has started. On a machine whose other
// cores are busy (a shared laptop, other processes) a helper may start
// late or not at all before the caller is done; the caller then runs its
// chunks itself instead of idling until the helper is scheduled, so a call
// never takes much longer than on one thread. Which goroutine runs a chunk
// never changes what it computes. A helper that runs a chunk may itself
// call Parallel: every claimed chunk is being run, so nesting cannot
// deadlock.
func Parallel(n, grain int, fn func(lo, hi int)) { parallelChunks(n, grain, 1, fn) }

// ParallelBalanced is Parallel with up to per chunks a thread: chunks are
// claimed as threads come free, so a thread that starts late or streams
// slower takes fewer of them and the call ends when the work does, not
// when the slowest thread's share of it does. For long streaming calls
// (a large model's batch-1 products) where each chunk still costs far
// more than a claim.
func ParallelBalanced(n, grain, per int, fn func(lo, hi int)) {
	parallelChunks(n, grain, max(per, 1), fn)
}

func parallelChunks(n, grain, perThread int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	blocks := (n + grain - 1) / grain
	if Threads() <= 1 || blocks <= 1 {
		fn(0, n)
		return
	}
	t := min(Threads()*perThread, blocks)
	per := (blocks + t - 1) / t
	step := per * grain
	j := &job{fn: fn, n: n, step: step, chunks: int32((n + step - 1) / step)}
	j.wg.Add(int(j.chunks))
	helpers.offer(j, helperCount())
	j.run()
	helpers.withdraw(j)
	j.join()
}

// joinSpin is how long a caller whose chunks are done watches for the
// helpers' before it parks: a decoding product's chunk takes microseconds,
// and parking and waking a goroutine costs about as much again
// (BenchmarkParallelForkJoin).
const joinSpin = 50 * time.Microsecond

// join waits until every chunk has run: spinning first (joinSpin, or
// warmSpin inside a warm section), then parked.
func (j *job) join() {
	if j.done.Load() == j.chunks {
		return
	}
	start := time.Now()
	for i := 0; j.done.Load() < j.chunks; i++ {
		if i%64 == 63 && spunOut(start, joinSpin) {
			break
		}
	}
	j.wg.Wait()
}

// warm counts the open warm sections (Warm).
var warm atomic.Int32

// warmSpin bounds an idle stretch's spin inside a warm section: longer
// than the host work between two forward passes of a large model's
// decoding (drawing a token from 152K logits, about 0.3 ms), far shorter
// than a pass.
const warmSpin = 5 * time.Millisecond

// Warm opens a warm section and returns the function that closes it.
// While one is open, idle helpers and joining callers keep spinning up to
// warmSpin instead of parking after spinFor or joinSpin. A decoding loop
// over a large model holds one: between its forward passes the caller
// draws tokens on one thread for longer than spinFor, the helpers parked,
// and waking a parked thread (a futex, on a virtual machine tens of
// microseconds) delayed their share of the next pass's products, whose
// chunks the caller then ran alone. It changes which thread runs a chunk,
// never what a chunk computes. The returned function must be called once.
func Warm() (release func()) {
	warm.Add(1)
	var once sync.Once
	return func() { once.Do(func() { warm.Add(-1) }) }
}

// spunOut reports whether a spin begun at start has run long enough:
// limit outside a warm section, warmSpin inside one.
func spunOut(start time.Time, limit time.Duration) bool {
	if warm.Load() > 0 {
		limit = max(limit, warmSpin)
	}
	return time.Since(start) > limit
}

// job is one Parallel call's chunks.
type job struct {
	fn      func(lo, hi int)
	n, step int
	chunks  int32
	next    atomic.Int32
	done    atomic.Int32 // chunks finished
	wg      sync.WaitGroup
}

// run claims and runs the job's chunks until none is left unclaimed.
func (j *job) run() {
	for {
		c := j.next.Add(1) - 1
		if c >= j.chunks {
			return
		}
		lo := int(c) * j.step
		j.fn(lo, min(lo+j.step, j.n))
		j.done.Add(1)
		j.wg.Done()
	}
}

// spinFor is how long an idle helper keeps looking for work before it
// parks. Batch-1 decoding calls Parallel every few microseconds (one
// product per projection, small vector work between); a parked thread of
// a virtual machine can take longer to wake than a product takes, and the
// caller then runs every chunk alone. Within one forward pass the calls
// come microseconds apart, so a helper that spins this long stays awake
// through a pass; between passes (sampling, the harnesses' code, a
// weight step's host work) the gaps are longer and a spinning helper
// only burns a core: spinning 2 ms and yielding its P every 64 checks
// (each yield waking another thread through the scheduler) took 28 % of
// the bench workload's CPU, and spinning 100 µs without yielding still
// about 7 % (docs/PERFORMANCE.md, "Issue 41: cheaper episodes"). The
// helper checks without yielding: it holds its P at most spinFor.
const spinFor = 25 * time.Microsecond

// spinCheck is how many checks a spinning helper makes between readings
// of the clock (a reading costs about as much as a hundred checks here).
const spinCheck = 256

// helpers are the goroutines that take chunks besides the callers: started
// as Parallel first needs them (Threads()-1 at most, as many as it has
// ever needed), spinning for spinFor after their last chunk, then parked
// until a call offers work.
var helpers = newHelperPool()

type helperPool struct {
	mu      sync.Mutex
	cond    *sync.Cond
	jobs    []*job // offered jobs whose chunks may not all be claimed
	started int
	// posted counts offers, changed only under mu: a spinning helper
	// watches it without the lock, a parking one checks it under the lock.
	posted atomic.Uint64
}

func newHelperPool() *helperPool {
	h := &helperPool{}
	h.cond = sync.NewCond(&h.mu)
	return h
}

func (h *helperPool) offer(j *job, want int) {
	h.mu.Lock()
	h.jobs = append(h.jobs, j)
	for h.started < want {
		h.started++
		go h.loop()
	}
	h.posted.Add(1)
	h.mu.Unlock()
	h.cond.Broadcast()
}

func (h *helperPool) withdraw(j *job) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i := slices.Index(h.jobs, j); i >= 0 {
		h.jobs = slices.Delete(h.jobs, i, i+1)
	}
}

// take returns an offered job with unclaimed chunks, or nil.
func (h *helperPool) take() *job {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, j := range h.jobs {
		if j.next.Load() < j.chunks {
			return j
		}
	}
	return nil
}

func (h *helperPool) loop() {
	for {
		if j := h.take(); j != nil {
			j.run()
			continue
		}
		seen := h.posted.Load()
		start := time.Now()
		for i := 1; h.posted.Load() == seen; i++ {
			if i%spinCheck == 0 && spunOut(start, spinFor) {
				break
			}
		}
		h.mu.Lock()
		for h.posted.Load() == seen {
			h.cond.Wait()
		}
		h.mu.Unlock()
	}
}
