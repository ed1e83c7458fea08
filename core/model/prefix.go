package model

import (
	"slices"

	"whale/kernels"
)

// prefixCache keeps the KV caches of recently finished sequences so a
// prompt that extends one of them (the next turn of an episode, another
// sample of the same prompt, a shared system prompt) copies the shared
// prefix instead of recomputing it. Entries are evicted least recently used
// first under a byte budget. Lookup scans every entry: with entries of
// hundreds of KB each, a budget holds at most a few thousand, and comparing
// token prefixes is far cheaper than one forward pass.
type prefixCache struct {
	// release gives an entry's caches back when it is dropped: its own
	// cache to the pool, its share of a prompt cache to the sampler.
	release func(entryKV)
	elem    int64 // bytes per cache element
	budget  int64
	used    int64
	clock   uint64
	entries []*prefixEntry
}

// entryKV is where an entry's K and V are: the caches of the finished
// sequence it was, taken over rather than copied — its share of a prompt
// cache (positions before pn; nil when pn is 0) and its own cache.
type entryKV struct {
	pre  *promptKV
	own  kernels.Tensor
	pn   int
	ocap int
}

// parts is e's positions as kvParts.
func (e entryKV) parts() kvParts {
	p := kvParts{own: e.own, pn: e.pn, ocap: e.ocap}
	if e.pre != nil {
		p.pre = e.pre.kv
	}
	return p
}

// bytes counts the own cache and the whole prompt cache at elem bytes an
// element: the most that keeping e can hold.
func (e entryKV) bytes(elem int64) int64 {
	n := int64(e.own.Len())
	if e.pre != nil {
		n += int64(e.pre.kv.Len())
	}
	return elem * n
}

type prefixEntry struct {
	tokens  []int32 // the tokens whose K and V the caches hold
	kv      entryKV
	logits  []float32 // next-token logits after tokens
	lastUse uint64
}

func newPrefixCache(release func(entryKV), budget, elem int64) *prefixCache {
	return &prefixCache{release: release, budget: budget, elem: elem}
}

// lookup returns the entry sharing the longest prefix with prompt and the
// length of that prefix, or nil.
func (c *prefixCache) lookup(prompt []int32) (*prefixEntry, int) {
	var best *prefixEntry
	bn := 0
	for _, e := range c.entries {
		if n := commonPrefix(e.tokens, prompt); n > bn {
			best, bn = e, n
		}
	}
	if best != nil {
		c.clock++
		best.lastUse = c.clock
	}
	return best, bn
}

// insert adds the K and V of tokens, held by the caches kv (of need bytes)
// that a finished sequence hands over: take is called, and the caches
// change hands, only once the entry is known to be kept — nothing is
// copied. An entry whose tokens are a prefix of the new one is replaced; a
// new entry that is a prefix of an existing one, or larger than the
// budget, is not made, and the sequence keeps its caches.
func (c *prefixCache) insert(tokens []int32, logits []float32, need int64, take func() entryKV) {
	if len(tokens) == 0 || need > c.budget {
		return
	}
	c.clock++
	for _, e := range c.entries {
		if len(e.tokens) >= len(tokens) && commonPrefix(e.tokens, tokens) == len(tokens) {
			e.lastUse = c.clock
			return
		}
	}
	kv := take()
	c.entries = slices.DeleteFunc(c.entries, func(e *prefixEntry) bool {
		if commonPrefix(e.tokens, tokens) == len(e.tokens) {
			c.drop(e)
			return true
		}
		return false
	})
	// Clone the logits: the caller's slice is part of a whole batch's.
	c.entries = append(c.entries, &prefixEntry{tokens: slices.Clone(tokens), kv: kv, logits: slices.Clone(logits), lastUse: c.clock})
	c.count(kv, 1)
	for c.used > c.budget {
		oldest := 0
		for i, e := range c.entries {
			if e.lastUse < c.entries[oldest].lastUse {
				oldest = i
			}
		}
		c.drop(c.entries[oldest])
		c.entries = slices.Delete(c.entries, oldest, oldest+1)
	}
}

// drop uncounts e's caches and gives them back.
func (c *prefixCache) drop(e *prefixEntry) {
	c.count(e.kv, -1)
	c.release(e.kv)
}

// count adds (d = 1) or takes away (d = -1) an entry's caches in used: its
// own cache, and its prompt cache when it is the first entry to hold that
// one or the last to let it go, so a prompt cache that several entries
// share is counted once.
func (c *prefixCache) count(kv entryKV, d int) {
	n := kv.own.Len()
	if p := kv.pre; p != nil {
		if d > 0 {
			p.cached++
		}
		if p.cached == 1 {
			n += p.kv.Len()
		}
		if d < 0 {
			p.cached--
		}
	}
	c.used += int64(d) * c.elem * int64(n)
}

// clear drops every entry (the weights changed).
func (c *prefixCache) clear() {
	for _, e := range c.entries {
		c.drop(e)
	}
	c.entries = nil
}
