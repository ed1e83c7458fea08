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
	pool    *kvPool // where entries' caches come back to
	budget  int64
	used    int64
	clock   uint64
	entries []*prefixEntry
}

type prefixEntry struct {
	tokens  []int32        // the tokens whose K and V the cache holds
	kv      kernels.Tensor // layout of seqState.kv
	cap     int
	logits  []float32 // next-token logits after tokens
	bytes   int64
	lastUse uint64
}

func newPrefixCache(pool *kvPool, budget int64) *prefixCache {
	return &prefixCache{pool: pool, budget: budget}
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

// insert adds the K and V of tokens in a cache of capacity cap, which
// join builds (at least need elements) only once the entry is known to be
// kept, so a finished sequence is copied only when the cache takes it. An
// entry whose tokens are a prefix of the new one is replaced; a new entry
// that is a prefix of an existing one, or larger than the budget, is not
// made.
func (c *prefixCache) insert(tokens []int32, cap int, logits []float32, need int, join func() kernels.Tensor) {
	if len(tokens) == 0 || int64(need)*4 > c.budget {
		return
	}
	c.clock++
	for _, e := range c.entries {
		if len(e.tokens) >= len(tokens) && commonPrefix(e.tokens, tokens) == len(tokens) {
			e.lastUse = c.clock
			return
		}
	}
	kv := join()
	bytes := int64(kv.Len()) * 4
	if bytes > c.budget {
		c.pool.put(kv)
		return
	}
	c.entries = slices.DeleteFunc(c.entries, func(e *prefixEntry) bool {
		if commonPrefix(e.tokens, tokens) == len(e.tokens) {
			c.drop(e)
			return true
		}
		return false
	})
	// Clone the logits: the caller's slice is part of a whole batch's.
	c.entries = append(c.entries, &prefixEntry{tokens: slices.Clone(tokens), kv: kv, cap: cap, logits: slices.Clone(logits), bytes: bytes, lastUse: c.clock})
	c.used += bytes
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

func (c *prefixCache) drop(e *prefixEntry) {
	c.used -= e.bytes
	c.pool.put(e.kv)
}

// clear drops every entry (the weights changed).
func (c *prefixCache) clear() {
	for _, e := range c.entries {
		c.drop(e)
	}
	c.entries = nil
}
