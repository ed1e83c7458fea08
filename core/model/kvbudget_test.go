package model

import (
	"math/rand/v2"
	"testing"
)

// TestKVBudgetsFollowTheRun: the prefix cache's and the pool's bounds
// start at their floors, grow with the most cache bytes live at once and
// the largest sequence (never shrink), stop at their ceilings, and a
// fixed PrefixCacheBytes is kept; what the two hold stays within them.
func TestKVBudgetsFollowTheRun(t *testing.T) {
	m := sampleModel(t)
	s := NewSampler(m, SamplerOptions{})
	if st := s.Stats(); st.PrefixBudget != minPrefixBytes || st.PoolBudget != minPoolBytes {
		t.Fatalf("fresh sampler: prefix budget %d, pool budget %d; want the floors %d, %d", st.PrefixBudget, st.PoolBudget, minPrefixBytes, minPoolBytes)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	var reqs []Request
	for i := 0; i < 12; i++ {
		reqs = append(reqs, Request{Key: "b", Prompt: randPrompt(rng, 5+i, m.d.V), MaxNewTokens: 8, Temperature: 1, Seed: uint64(i)})
	}
	generate(t, s, reqs...)
	// Every request ran at once (12 ≤ MaxBatch): the live peak is their
	// caches' sum, below the floor for the tiny model.
	var live, seq int64
	for _, r := range reqs {
		q := seqState{cap: len(r.Prompt) + r.MaxNewTokens - 1}
		b := int64(q.cacheCap()) * s.kvBytesPerPosition()
		live, seq = live+b, max(seq, b)
	}
	if st := s.Stats(); st.LiveKVPeak != live || st.SeqKVPeak != seq {
		t.Fatalf("peaks %d, %d; want %d, %d", st.LiveKVPeak, st.SeqKVPeak, live, seq)
	}
	st := s.Stats()
	if st.PrefixBudget != minPrefixBytes || st.PoolBudget != minPoolBytes || st.PrefixBytes > st.PrefixBudget || st.PoolBytes > st.PoolBudget || st.PrefixBytes == 0 {
		t.Fatalf("after a small batch: %+v", st)
	}
	s.noteLive(40<<20, 3<<20)
	if st := s.Stats(); st.PrefixBudget != 40<<20 || st.PoolBudget != 6<<20 {
		t.Fatalf("after 40 MiB live: prefix budget %d, pool budget %d; want %d, %d", st.PrefixBudget, st.PoolBudget, 40<<20, 6<<20)
	}
	s.noteLive(1<<20, 1<<10) // smaller: the bounds stay
	s.noteLive(1<<40, 1<<30)
	if st := s.Stats(); st.PrefixBudget != DefaultPrefixCacheBytes || st.PoolBudget != kvPoolBytes {
		t.Fatalf("after 1 TiB live: prefix budget %d, pool budget %d; want the ceilings %d, %d", st.PrefixBudget, st.PoolBudget, DefaultPrefixCacheBytes, kvPoolBytes)
	}
	fixed := NewSampler(m, SamplerOptions{PrefixCacheBytes: 3 << 20})
	fixed.noteLive(1<<40, 1<<30)
	if st := fixed.Stats(); st.PrefixBudget != 3<<20 {
		t.Fatalf("a fixed PrefixCacheBytes became %d", st.PrefixBudget)
	}
}
