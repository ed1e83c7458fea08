package model

import (
	"encoding/binary"
	"hash/fnv"
	"slices"

	"whale/kernels"
)

// A sequence's KV cache: where its positions are (a prompt cache shared
// by the sequences of one prompt, then its own), how positions are copied
// between caches, and who frees them (kvpool.go recycles them, prefix.go
// keeps finished ones for reuse).

// kvLayer returns the cache of layer l, keys or values, inside a sequence
// cache of capacity cap (layout: see kernels.KVSpan).
func (m *Model) kvLayer(kv kernels.Tensor, cap, l int, kind kernels.KVKind) kernels.Tensor {
	return kv.View((2*l+int(kind))*cap*m.d.Hk, cap*m.d.Hk)
}

func (m *Model) kvLen(cap int) int { return 2 * m.d.L * cap * m.d.Hk }

// copyKVAt copies positions srcPos..srcPos+n-1 of every layer from src
// (capacity srcCap) to positions dstPos.. of dst (capacity dstCap).
func (m *Model) copyKVAt(dst kernels.Tensor, dstCap, dstPos int, src kernels.Tensor, srcCap, srcPos, n int) {
	if n <= 0 {
		return
	}
	for l := 0; l < m.d.L; l++ {
		for _, kind := range []kernels.KVKind{kernels.Keys, kernels.Values} {
			m.be.CacheCopy(m.kvLayer(dst, dstCap, l, kind), m.kvLayer(src, srcCap, l, kind), kind, dstPos, srcPos, n, m.d.KVH, m.d.hd, dstCap, srcCap)
		}
	}
}

// promptKV is the cache of a prompt's first positions (seqState.pn),
// shared by every running sequence whose prompt begins with the same
// tokens; the last to finish frees it.
type promptKV struct {
	kv     kernels.Tensor // layout of seqState.kv, capacity len(tokens)
	tokens []int32
	refs   int
	live   bool // filled, and in Sampler.prompts for others to share
	// cached counts the prefix cache's entries among the refs: the cache
	// counts the bytes once while it is above 0 (prefix.go).
	cached int
	// root, when set, is a cache whose first rn positions this one holds
	// bit for bit, copied from it or from a cache that was: a system
	// prompt that many tasks' prompts begin with, which the backend reads
	// once for all their rows (kernels.KVSpan.RK). This cache holds one of
	// root's refs.
	root *promptKV
	rn   int
}

// rootMin is the fewest positions a root is recorded for: two granules
// of the CPU backend, so that a prompt's first few tokens shared by
// chance (a chat template's opening) make no root. A choice, not a
// measured bound.
const rootMin = 64

// inheritRoot records that dst's first n positions were copied, bit for
// bit, from src: dst's root becomes src's root (the cache every copy of
// those positions came from, so that all of them gather under one) or,
// where src has none or one much shorter than n, src itself.
func (s *Sampler) inheritRoot(dst, src *promptKV, n int) {
	if !s.roots || dst == nil || src == nil || dst == src || dst.root != nil {
		return
	}
	root, rn := src, min(n, len(src.tokens))
	if src.root != nil && 2*src.rn >= rn {
		root, rn = src.root, min(rn, src.rn)
	}
	g := kernels.PrefixGranule(s.m.be)
	if rn = min(rn, len(dst.tokens)) / g * g; rn < rootMin {
		return
	}
	dst.root, dst.rn = root, rn
	root.refs++
}

// prefixLen is where the cache of a sequence with a prompt of P tokens
// splits on a backend whose prefix granule is g (kernels.PrefixGranule):
// after the whole granules before its last token (whose logits the
// prefill computes in the sequence's own cache).
func prefixLen(P, g int) int { return max(0, P-1) / g * g }

// tokensKey is the key of a prompt cache of tokens in Sampler.prompts.
func tokensKey(t []int32) uint64 {
	k := prefixKeys(t, max(1, len(t)))
	if len(k) == 0 {
		return fnv.New64a().Sum64()
	}
	return k[0]
}

// prefixKeys returns the tokensKey of t[:g], t[:2g], … up to the whole
// granules of t, in one pass.
func prefixKeys(t []int32, g int) []uint64 {
	h := fnv.New64a()
	keys := make([]uint64, 0, len(t)/g)
	var b [4]byte
	for i, x := range t {
		binary.LittleEndian.PutUint32(b[:], uint32(x))
		h.Write(b[:])
		if (i+1)%g == 0 {
			keys = append(keys, h.Sum64())
		}
	}
	return keys
}

// livePrompt returns the filled prompt cache, under key, of a running
// sequence whose first tokens are tokens, or nil.
func (s *Sampler) livePrompt(key uint64, tokens []int32) *promptKV {
	for _, p := range s.prompts[key] {
		if slices.Equal(p.tokens, tokens) {
			return p
		}
	}
	return nil
}

// publish offers p, now filled, to the sequences admitted later.
func (s *Sampler) publish(p *promptKV) {
	if p.live {
		return
	}
	if s.prompts == nil {
		s.prompts = map[uint64][]*promptKV{}
	}
	k := tokensKey(p.tokens)
	s.prompts[k] = append(s.prompts[k], p)
	p.live = true
}

// kvParts is where a cache's positions are: those before pn in pre
// (capacity pn), position p ≥ pn at p-pn in own (capacity ocap).
type kvParts struct {
	pre, own kernels.Tensor
	pn, ocap int
}

func (q *seqState) parts() kvParts {
	p := kvParts{own: q.kv, pn: q.pn, ocap: q.ownCap()}
	if q.prompt != nil {
		p.pre = q.prompt.kv
	}
	return p
}

// at returns the tensor holding position p, its capacity and p's index in it.
func (k kvParts) at(p int) (kernels.Tensor, int, int) {
	if p < k.pn {
		return k.pre, k.pn, p
	}
	return k.own, k.ocap, p - k.pn
}

// copyParts copies positions from..n-1 from src to dst, in pieces that
// each lie in one tensor of both.
func (m *Model) copyParts(dst, src kvParts, from, n int) {
	for a := from; a < n; {
		b := n
		for _, cut := range []int{dst.pn, src.pn} {
			if cut > a && cut < b {
				b = cut
			}
		}
		dt, dc, di := dst.at(a)
		st, sc, si := src.at(a)
		m.copyKVAt(dt, dc, di, st, sc, si, b-a)
		a = b
	}
}

// ownCap is the capacity of q's own cache (the positions from pn on).
func (q *seqState) ownCap() int { return q.cacheCap() - q.pn }

// cacheCap is the capacity of the sequence's caches: q.cap rounded up to a
// multiple of kernels.KVCapGranule, which a backend reads fastest (the CPU
// backend's last block of a cache is otherwise narrower than the rest).
func (q *seqState) cacheCap() int {
	return (q.cap + kernels.KVCapGranule - 1) / kernels.KVCapGranule * kernels.KVCapGranule
}

// allocOwn gives q its own cache (planPrefill gives it its prompt's).
func (s *Sampler) allocOwn(q *seqState) {
	if c := q.ownCap(); c > 0 {
		q.kv = s.m.kvAlloc(s.pool, c)
	}
}

// freeCaches frees q's own cache and drops its share of the prompt cache.
func (s *Sampler) freeCaches(q *seqState) {
	s.pool.put(q.kv)
	q.kv = kernels.Tensor{}
	s.releasePrompt(q.prompt)
	q.prompt = nil
}

// takeCaches hands q's caches over to the prefix cache (which gives them
// back through releasePrompt and the pool when it drops the entry).
func (s *Sampler) takeCaches(q *seqState) entryKV {
	e := entryKV{pre: q.prompt, own: q.kv, pn: q.pn, ocap: q.ownCap()}
	q.kv, q.prompt = kernels.Tensor{}, nil
	return e
}

// takenBytes is what takeCaches would hand over, as entryKV.bytes counts.
func (s *Sampler) takenBytes(q *seqState) int64 {
	return entryKV{pre: q.prompt, own: q.kv}.bytes(s.pool.elem)
}

// releasePrompt drops one share of the prompt cache p (nil: none); the
// last share frees it.
func (s *Sampler) releasePrompt(p *promptKV) {
	if p == nil {
		return
	}
	if p.refs--; p.refs > 0 {
		return
	}
	if p.live {
		k := tokensKey(p.tokens)
		s.prompts[k] = slices.DeleteFunc(s.prompts[k], func(x *promptKV) bool { return x == p })
		if len(s.prompts[k]) == 0 {
			delete(s.prompts, k)
		}
	}
	s.pool.put(p.kv)
	s.releasePrompt(p.root)
}
