package model

import "whale/kernels"

// kvPool recycles the sampler's KV caches. Every sequence takes an own
// cache and a prompt cache, and every finished one a prefix-cache entry:
// thousands a harness iteration, megabytes each. Left to the garbage
// collector (the CPU backend's Free does nothing) they are allocated and
// zeroed afresh each time and the heap grows to twice what is live
// before it is collected. The pool keeps freed caches by length, rounded
// up to a granule of positions so that lengths recur, up to a byte bound.
// A cache taken from it holds stale values: every cache is written before
// it is read (CacheWrite, CacheCopy), so none is ever seen.
type kvPool struct {
	be     kernels.Backend
	free   map[int][]kernels.Tensor // by Len
	bytes  int64                    // held, at elem bytes per element
	budget int64
	// bf16 makes the caches bfloat16 (SamplerOptions.KVBF16); elem is
	// their bytes per element, 2 or 4.
	bf16 bool
	elem int64
}

// kvGranule rounds cache capacities (positions) for the pool.
const kvGranule = 64

func newKVPool(be kernels.Backend, budget int64, bf16 bool) *kvPool {
	p := &kvPool{be: be, free: map[int][]kernels.Tensor{}, budget: budget, bf16: bf16, elem: 4}
	if bf16 {
		p.elem = 2
	}
	return p
}

// get returns a cache of at least n elements: the smallest free one of at
// most twice that, else a new one. (Every user lays a cache out by its
// capacity in positions and reads only what it wrote, so a longer one
// serves.)
func (p *kvPool) get(n int) kernels.Tensor {
	best := 0
	for l, ts := range p.free {
		if len(ts) > 0 && l >= n && l <= 2*n && (best == 0 || l < best) {
			best = l
		}
	}
	if best == 0 {
		if p.bf16 {
			return p.be.AllocBF16(n)
		}
		return p.be.Alloc(n)
	}
	l := p.free[best]
	t := l[len(l)-1]
	l[len(l)-1] = kernels.Tensor{}
	p.free[best] = l[:len(l)-1]
	p.bytes -= int64(best) * p.elem
	return t
}

// put gives t back (or to the backend, past the budget).
func (p *kvPool) put(t kernels.Tensor) {
	if t.IsZero() {
		return
	}
	b := int64(t.Len()) * p.elem
	if p.bytes+b > p.budget {
		p.be.Free(t)
		return
	}
	p.free[t.Len()] = append(p.free[t.Len()], t)
	p.bytes += b
}

// drain gives every held cache back to the backend.
func (p *kvPool) drain() {
	for _, ts := range p.free {
		for _, t := range ts {
			p.be.Free(t)
		}
	}
	p.free, p.bytes = map[int][]kernels.Tensor{}, 0
}

// kvAlloc returns a cache for cap positions from the pool: its length is
// that of a capacity rounded up to kvGranule, its layout cap's.
func (m *Model) kvAlloc(p *kvPool, cap int) kernels.Tensor { return p.get(m.kvPoolLen(cap)) }

// kvPoolLen is the length of a pooled cache for cap positions: that of a
// capacity rounded up to kvGranule.
func (m *Model) kvPoolLen(cap int) int { return m.kvLen((cap + kvGranule - 1) / kvGranule * kvGranule) }
