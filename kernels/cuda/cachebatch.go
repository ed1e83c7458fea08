//go:build cuda

package cuda

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"slices"
	"unsafe"

	"gorgonia.org/cu"
)

// Batched cache writes. The sampler writes each sequence's new keys and
// values into that sequence's own cache: at batch 64, one decoding step
// of a 4-layer model is 512 CacheWrite calls of one row each, five in six
// of the step's launches, each costing the host a few microseconds while
// the GPU has a few hundred nanoseconds of work. So CacheWrite of a few
// rows does not launch: it queues a job, and the next op of any other
// kind (or a synchronisation) first launches every queued job at once,
// whale_cache_write_batch (cachebatch.ptx), one block per job. Stream
// order is kept: nothing else runs between a queued write and its
// flush, and a write that overlaps a queued one (the same cache
// positions, or a source another job writes) flushes the queue first.
//
// The kernel is hand-written PTX, checked at New in a CUDA context of its
// own (a faulty kernel spoils only that context) against the host's
// arithmetic; if it does not load or gives a wrong answer, or
// WHALE_CUDA_CACHE_BATCH=0 is set, every CacheWrite launches
// whale_cache_write as before.

//go:embed cachebatch.ptx
var cacheBatchPTX string

const (
	cacheBatchKernel  = "whale_cache_write_batch"
	cacheBatchThreads = 128
	cacheBatchMaxElem = 1 << 12 // larger writes launch on their own
	cacheBatchMaxJobs = 1 << 14 // a full queue flushes
	cacheJobWords     = 6       // dst, src, rows, KVH, hd, cap
)

// cacheQueue holds the queued writes and, per allocation, the byte spans
// they read and write (for the overlap check).
type cacheQueue struct {
	jobs  []int64
	spans map[*buffer][]byteSpan
}

type byteSpan struct {
	lo, hi uint64 // [lo, hi)
	write  bool
}

// openCacheBatch loads the batched kernel into b's context if it passes
// its check; otherwise it leaves the batch off and records why.
func (b *Backend) openCacheBatch() {
	if v := os.Getenv("WHALE_CUDA_CACHE_BATCH"); v == "0" {
		b.batchErr = errors.New("cuda: batched cache writes off (WHALE_CUDA_CACHE_BATCH=0)")
		return
	}
	if err := checkCacheBatch(b.dev); err != nil {
		b.batchErr = err
		return
	}
	mod, err := cu.LoadData(cacheBatchPTX)
	if err != nil {
		b.batchErr = fmt.Errorf("cuda: load cachebatch.ptx: %w", err)
		return
	}
	fn, err := mod.Function(cacheBatchKernel)
	if err != nil {
		mod.Unload()
		b.batchErr = fmt.Errorf("cuda: cachebatch.ptx: %w", err)
		return
	}
	b.batchMod, b.fn[cacheBatchKernel] = &mod, fn
	b.queue.spans = map[*buffer][]byteSpan{}
}

// closeCacheBatch unloads the batch's module (at Close, or when New
// fails after loading it).
func (b *Backend) closeCacheBatch() error {
	if b.batchMod == nil {
		return nil
	}
	err := b.batchMod.Unload()
	b.batchMod = nil
	delete(b.fn, cacheBatchKernel)
	if err != nil {
		return fmt.Errorf("cuda: unload cachebatch.ptx: %w", err)
	}
	return nil
}

// BatchedCacheWrites reports whether CacheWrite queues small writes for
// one batched launch, and if not, why.
func (b *Backend) BatchedCacheWrites() (bool, error) {
	defer b.lock()()
	return b.batchMod != nil, b.batchErr
}

// queueCacheWrite queues CacheWrite's job (the caller has checked its
// sizes) and reports true, or reports false when the write is too large
// to queue or the batch is off; the caller then launches it directly.
func (b *Backend) queueCacheWrite(cacheBuf, srcBuf *buffer, d, s uint64, pos0, rows, KVH, hd, cp int) bool {
	if b.batchMod == nil || rows*KVH*hd > cacheBatchMaxElem {
		b.flushCacheWrites()
		return false
	}
	dst := d + uint64(pos0*hd)*4
	// What the job writes: positions pos0..pos0+rows of each KV head.
	var writes []byteSpan
	for kh := range KVH {
		lo := dst + uint64(kh*cp*hd)*4
		writes = append(writes, byteSpan{lo, lo + uint64(rows*hd)*4, true})
	}
	read := byteSpan{s, s + uint64(rows*KVH*hd)*4, false}
	q := &b.queue
	if len(q.jobs)/cacheJobWords >= cacheBatchMaxJobs || q.conflicts(cacheBuf, writes) || q.conflicts(srcBuf, []byteSpan{read}) {
		b.flushCacheWrites()
	}
	q.jobs = append(q.jobs, int64(dst), int64(s), int64(rows), int64(KVH), int64(hd), int64(cp))
	q.spans[cacheBuf] = append(q.spans[cacheBuf], writes...)
	q.spans[srcBuf] = append(q.spans[srcBuf], read)
	return true
}

// conflicts reports whether any of spans, in buf, overlaps a queued span
// of buf where at least one of the two writes.
func (q *cacheQueue) conflicts(buf *buffer, spans []byteSpan) bool {
	for _, old := range q.spans[buf] {
		for _, s := range spans {
			if (old.write || s.write) && s.lo < old.hi && old.lo < s.hi {
				return true
			}
		}
	}
	return false
}

// flushCacheWrites launches every queued write (the backend is entered).
func (b *Backend) flushCacheWrites() {
	q := &b.queue
	if len(q.jobs) == 0 {
		return
	}
	jobs := q.jobs
	n := len(jobs) / cacheJobWords
	q.jobs = q.jobs[:0] // before upload, which may synchronise and come back here
	clear(q.spans)
	end := func() {}
	if b.prof != nil {
		end = b.prof.begin(b, "CacheWrite (batched)", func() {})
	}
	defer end()
	db := b.upload("CacheWrite", int64s(jobs))
	defer b.release(db)
	// whale_cache_write_batch(const i64* jobs, i64 n)
	b.launch("CacheWrite", cacheBatchKernel, dim{n, 1, 1, cacheBatchThreads}, uint64(db.ptr), i64(n))
}

// checkCacheBatch runs whale_cache_write_batch in a context of its own on
// dev, over jobs that cover several rows, KV heads, an odd head size, a
// position offset and two caches, and compares every word of both caches
// (untouched words included) with the host's arithmetic.
func checkCacheBatch(dev cu.Device) (err error) {
	ctx, err := dev.MakeContext(cu.SchedAuto)
	if err != nil {
		return fmt.Errorf("cuda: batched cache writes: a context for their check: %w", err)
	}
	defer func() {
		if derr := ctx.Destroy(); derr != nil && err == nil {
			err = fmt.Errorf("cuda: batched cache writes: destroy the check's context: %w", derr)
		}
	}()
	fail := func(what string, e error) error {
		return fmt.Errorf("cuda: batched cache writes: check: %s: %w", what, e)
	}
	mod, err := cu.LoadData(cacheBatchPTX)
	if err != nil {
		return fail("load cachebatch.ptx", err)
	}
	fn, err := mod.Function(cacheBatchKernel)
	if err != nil {
		return fail("kernel", err)
	}
	type job struct{ cache, pos0, rows, kvh, hd, cp int }
	jobs := []job{{0, 3, 1, 2, 5, 9}, {1, 0, 4, 3, 7, 6}, {0, 7, 2, 2, 5, 9}, {1, 5, 1, 3, 7, 6}}
	const words = 400 // each cache, and the source
	src := make([]uint32, words)
	for i := range src {
		src[i] = 0x40000000 + uint32(i+1) // distinct words, none zero
	}
	src[3], src[40] = 0x7fa00001, 0x80000000 // a NaN's payload and −0 must survive
	want := [2][]uint32{make([]uint32, words), make([]uint32, words)}
	mem := make([]cu.DevicePtr, 3)
	for i := range mem {
		if mem[i], err = cu.MemAlloc(4 * words); err != nil {
			return fail("allocate", err)
		}
		defer cu.MemFree(mem[i])
	}
	zero := make([]uint32, words)
	for i := range 2 {
		if err := cu.MemcpyHtoD(mem[i], unsafe.Pointer(&zero[0]), 4*words); err != nil {
			return fail("clear", err)
		}
	}
	if err := cu.MemcpyHtoD(mem[2], unsafe.Pointer(&src[0]), 4*words); err != nil {
		return fail("upload", err)
	}
	var desc []int64
	off := 0 // each job reads its own part of the source
	for _, j := range jobs {
		w := j.kvh * j.hd
		for i := 0; i < j.rows*w; i++ {
			r, e := i/w, i%w
			kh, d := e/j.hd, e%j.hd
			want[j.cache][(kh*j.cp+j.pos0+r)*j.hd+d] = src[off+i]
		}
		desc = append(desc, int64(mem[j.cache])+int64(j.pos0*j.hd)*4, int64(mem[2])+int64(off)*4,
			int64(j.rows), int64(j.kvh), int64(j.hd), int64(j.cp))
		off += j.rows * w
	}
	dd, err := cu.MemAlloc(int64(8 * len(desc)))
	if err != nil {
		return fail("allocate", err)
	}
	defer cu.MemFree(dd)
	if err := cu.MemcpyHtoD(dd, unsafe.Pointer(&desc[0]), int64(8*len(desc))); err != nil {
		return fail("upload", err)
	}
	args := []uint64{uint64(dd), uint64(len(jobs))}
	params := []unsafe.Pointer{unsafe.Pointer(&args[0]), unsafe.Pointer(&args[1])}
	// One block more than there are jobs: it must do nothing.
	if err := fn.Launch(len(jobs)+1, 1, 1, cacheBatchThreads, 1, 1, 0, cu.Stream{}, params); err != nil {
		return fail("launch", err)
	}
	if err := cu.Synchronize(); err != nil {
		return fail("run", err)
	}
	for i := range 2 {
		got := make([]uint32, words)
		if err := cu.MemcpyDtoH(unsafe.Pointer(&got[0]), mem[i], 4*words); err != nil {
			return fail("read back", err)
		}
		if !slices.Equal(got, want[i]) {
			return fmt.Errorf("cuda: batched cache writes: check: cache %d differs from the host's copy", i)
		}
	}
	return nil
}
