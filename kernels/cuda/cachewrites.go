//go:build cuda

package cuda

import (
	"fmt"

	"whale/kernels"
)

var _ kernels.CacheWriter = (*Backend)(nil)

// CacheWrites implements kernels.CacheWriter: every job as CacheWrite
// would do it, in one call, so a decoding step of a batch costs the host
// one entry a layer instead of two a sequence. The jobs go through
// CacheWrite's queue (cachebatch.go) and are launched together before the
// call returns: one whale_cache_write_batch launch for them all, unless
// two of them overlap (then in order, in as many launches as it takes),
// a job is too large for the queue (it launches alone, in its turn) or
// the batched kernel is off (each job launches whale_cache_write).
func (b *Backend) CacheWrites(jobs []kernels.CacheWriteJob, KVH, hd int) {
	const op = "CacheWrites"
	type checked struct {
		cb, sb *buffer
		d, s   uint64
	}
	cs := make([]checked, len(jobs))
	for i, j := range jobs {
		if j.Pos0 < 0 || j.Pos0+j.Rows > j.Cap || j.Rows < 0 {
			panic(fmt.Sprintf("kernels: CacheWrites job %d: positions %d..%d into a cache of %d", i, j.Pos0, j.Pos0+j.Rows, j.Cap))
		}
		c := &cs[i]
		c.d, c.s = f32(op, "cache", j.Cache, KVH*j.Cap*hd), f32(op, "src", j.Src, j.Rows*KVH*hd)
		c.cb, _ = storage(j.Cache)
		c.sb, _ = storage(j.Src)
	}
	defer b.enter(op)()
	for i, j := range jobs {
		if j.Rows*KVH*hd == 0 {
			continue
		}
		c := cs[i]
		if b.queueCacheWrite(c.cb, c.sb, c.d, c.s, j.Pos0, j.Rows, KVH, hd, j.Cap) {
			continue
		}
		// whale_cache_write(float* cache, const float* src, i64 pos0, i64 rows, i64 KVH, i64 hd, i64 cap)
		b.launch(op, "whale_cache_write", elems(j.Rows*KVH*hd), c.d, c.s, i64(j.Pos0), i64(j.Rows), i64(KVH), i64(hd), i64(j.Cap))
	}
	b.flushCacheWrites()
}
