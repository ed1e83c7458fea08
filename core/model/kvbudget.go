package model

// How much KV memory a Sampler keeps beyond its running sequences' caches.
// Both bounds follow what the run decodes rather than a fixed size, so that
// a small model's engine does not hold hundreds of megabytes it never uses:
//
//   - the prefix cache may hold one full batch of the run's sequences: the
//     most KV bytes that have been live at once so far (MaxBatch sequences
//     × their prompt + MaxNewTokens positions × the model's KV bytes per
//     position, as the run shows it), at least minPrefixBytes and at most
//     DefaultPrefixCacheBytes; a SamplerOptions.PrefixCacheBytes > 0
//     fixes it instead;
//   - the pool of freed caches holds two of the largest sequence caches
//     seen (what a finished sequence hands to the one admitted next, own
//     cache and prompt cache), at least minPoolBytes and at most
//     kvPoolBytes.
//
// Neither changes what is sampled: reuse and recycling are exact, so a
// bound changes only how often a prefix is recomputed and a cache zeroed.

// minPrefixBytes is the least a default prefix cache may hold: a few
// dozen of a small model's sequences.
const minPrefixBytes = 8 << 20

// minPoolBytes is the least the pool of freed caches may hold.
const minPoolBytes = 1 << 20

// kvBytesPerPosition is the bytes one position takes in a sequence's
// cache: keys and values of every layer, 4 bytes an element, or 2 in
// bfloat16 caches (SamplerOptions.KVBF16).
func (s *Sampler) kvBytesPerPosition() int64 { return s.pool.elem * int64(s.m.kvLen(1)) }

// noteLive records that live bytes of caches are in use at once, the
// largest sequence's seq of them, and grows the prefix cache's and the
// pool's bounds to follow (see above).
func (s *Sampler) noteLive(live, seq int64) {
	if live <= s.livePeak && seq <= s.seqPeak {
		return
	}
	s.livePeak, s.seqPeak = max(s.livePeak, live), max(s.seqPeak, seq)
	if s.opts.PrefixCacheBytes == 0 {
		s.cache.budget = prefixBudget(s.livePeak)
	}
	s.pool.budget = poolBudget(s.seqPeak)
}

// prefixBudget is the default prefix cache's bound after live bytes of
// caches were in use at once.
func prefixBudget(live int64) int64 {
	return min(DefaultPrefixCacheBytes, max(minPrefixBytes, live))
}

// poolBudget is the pool's bound once a sequence's caches took seq bytes.
func poolBudget(seq int64) int64 { return min(kvPoolBytes, max(minPoolBytes, 2*seq)) }
