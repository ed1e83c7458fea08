package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"whale/kernels"
)

// longModel is the tiny model with room for prompts of several KVBlocks.
func longModel(t *testing.T) *Model {
	t.Helper()
	cfg, err := Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxPositionEmbeddings = 4 * kernels.KVBlock
	m, err := New(cfg, kernels.NewCPU(), 3)
	if err != nil {
		t.Fatal(err)
	}
	randomize(m, 11)
	return m
}

// TestSharedPromptIsExact: sequences whose prompts are identical share the
// cache of the prompt's whole granules (kernels.PrefixGranule), and still sample exactly what each
// samples alone (no sharing, no prefix cache) — for prompts of one, two
// and three blocks and a bit, and for their next turns, whose prompts
// extend a finished sequence through the prefix cache and differ after
// the common blocks. The shared part is really shared: the sampler counts
// it.
func TestSharedPromptIsExact(t *testing.T) {
	m := longModel(t)
	rng := rand.New(rand.NewPCG(8, 8))
	var turn1 []Request
	for i, P := range []int{kernels.KVBlock + 20, 2*kernels.KVBlock + 3, 3*kernels.KVBlock - 1} {
		prompt := randPrompt(rng, P, m.d.V)
		for g := 0; g < 5; g++ {
			turn1 = append(turn1, Request{Key: fmt.Sprintf("p%d#%d", i, g), Prompt: prompt, MaxNewTokens: 10, Temperature: 1, Seed: 5})
		}
	}
	s := NewSampler(m, SamplerOptions{})
	got1 := generate(t, s, turn1...)
	// Each prompt's first sample fills the shared blocks; the other four
	// read them.
	g := kernels.PrefixGranule(m.be)
	wantShared := int64(0)
	for _, P := range []int{kernels.KVBlock + 20, 2*kernels.KVBlock + 3, 3*kernels.KVBlock - 1} {
		wantShared += int64(4 * prefixLen(P, g))
	}
	if st := s.Stats(); st.SharedTokens != wantShared {
		t.Errorf("shared %d prompt positions, want %d", st.SharedTokens, wantShared)
	}
	var turn2 []Request
	for i, c := range got1 {
		r := turn1[i]
		r.Prompt = append(append(slices.Clone(r.Prompt), c.Tokens...), randPrompt(rng, 3, m.d.V)...)
		r.Key += "/turn2"
		turn2 = append(turn2, r)
	}
	got2 := generate(t, s, turn2...)
	// Next turns (one prefill) share the longest prompt cache their prompt
	// begins with: their first turn's, which the prefix cache's entries keep
	// (the finished sequences' caches are taken over, not copied), so all
	// five samples of a prompt read its first turn's positions from one
	// cache.
	for i, r := range turn2 {
		if pn := prefixLen(len(turn1[i].Prompt), g); prefixLen(len(r.Prompt), g) < pn {
			t.Fatalf("turn 2 of %s: prefix %d shorter than its first turn's", r.Key, prefixLen(len(r.Prompt), g))
		} else {
			wantShared += int64(pn)
		}
	}
	if st := s.Stats(); st.SharedTokens != wantShared {
		t.Errorf("after the next turns: shared %d prompt positions, want %d", st.SharedTokens, wantShared)
	}
	for i, r := range append(turn1, turn2...) {
		want := generate(t, NewSampler(m, SamplerOptions{PrefixCacheBytes: -1}), r)[0]
		if got := append(got1, got2...)[i]; !sameCompletion(got, want) {
			t.Fatalf("request %s: shared %v %v, alone %v %v", r.Key, got.Tokens, got.LogProbs, want.Tokens, want.LogProbs)
		}
	}
}

// TestPromptSharesTheLongestCacheItBeginsWith: a prompt that begins with
// the prompt cache of another prompt in the same prefill shares that cache
// (computed once, in the earlier wave), even where its own whole granules
// reach further, and both still sample exactly what each samples alone.
func TestPromptSharesTheLongestCacheItBeginsWith(t *testing.T) {
	m := longModel(t)
	g := kernels.PrefixGranule(m.be)
	rng := rand.New(rand.NewPCG(3, 9))
	a := randPrompt(rng, 2*g+5, m.d.V)
	b := append(slices.Clone(a[:2*g]), randPrompt(rng, 2*g+7, m.d.V)...)
	c := randPrompt(rng, 3*g+1, m.d.V) // shares nothing: a cache of its own
	reqs := []Request{
		{Key: "a", Prompt: a, MaxNewTokens: 8, Temperature: 1, Seed: 4},
		{Key: "b", Prompt: b, MaxNewTokens: 8, Temperature: 1, Seed: 4},
		{Key: "c", Prompt: c, MaxNewTokens: 8, Temperature: 1, Seed: 4},
	}
	s := NewSampler(m, SamplerOptions{PrefixCacheBytes: -1})
	got := generate(t, s, reqs...)
	if st := s.Stats(); st.SharedTokens != int64(2*g) {
		t.Errorf("shared %d prompt positions, want b's share of a's cache, %d", st.SharedTokens, 2*g)
	}
	if n := len(s.prompts); n != 0 {
		t.Errorf("%d prompt caches still offered after every sequence finished without a prefix cache", n)
	}
	for i, r := range reqs {
		want := generate(t, NewSampler(m, SamplerOptions{PrefixCacheBytes: -1}), r)[0]
		if !sameCompletion(got[i], want) {
			t.Fatalf("request %s: shared %v %v, alone %v %v", r.Key, got[i].Tokens, got[i].LogProbs, want.Tokens, want.LogProbs)
		}
	}
}

// TestLongPromptDecodeMatchesFullForward: greedy decoding after a prompt
// of two blocks and a bit (so every decoded row reads both parts of its
// cache) gives the argmax of the full forward pass's logits at every step,
// with log-probabilities within 1e-4 (float32, values of order 1; see
// TestGreedyIsArgmax).
func TestLongPromptDecodeMatchesFullForward(t *testing.T) {
	m := longModel(t)
	prompt := randPrompt(rand.New(rand.NewPCG(9, 9)), 2*kernels.KVBlock+7, m.d.V)
	c := generate(t, NewSampler(m, SamplerOptions{}), Request{Key: "g", Prompt: prompt, MaxNewTokens: 20})[0]
	checkGreedy(t, m, prompt, c)
}

// TestPrefixEntriesHoldPromptCaches: a finished sequence's caches pass to
// the prefix cache whole, its share of a prompt cache included, so the
// prompt cache stays offered to later prompts while an entry holds it; the
// last entry dropped frees it, whether evicted or cleared. The budget
// counts a prompt cache that several entries hold once.
func TestPrefixEntriesHoldPromptCaches(t *testing.T) {
	m := longModel(t)
	rng := rand.New(rand.NewPCG(2, 7))
	prompt := randPrompt(rng, 2*kernels.KVBlock+5, m.d.V)
	s := NewSampler(m, SamplerOptions{})
	var reqs []Request
	for g := 0; g < 3; g++ {
		reqs = append(reqs, Request{Key: fmt.Sprintf("g%d", g), Prompt: prompt, MaxNewTokens: 6, Temperature: 1, Seed: 1})
	}
	generate(t, s, reqs...)
	if n := len(s.cache.entries); n != 3 {
		t.Fatalf("%d prefix entries, want one per finished sample (3)", n)
	}
	p := s.livePrompt(tokensKey(prompt[:2*kernels.KVBlock]), prompt[:2*kernels.KVBlock])
	if p == nil || p.refs != 3 {
		t.Fatalf("prompt cache after the samples finished: %+v, want it live with the 3 entries' shares", p)
	}
	// The entries' bytes count the prompt cache they share once.
	want := s.cache.elem * int64(p.kv.Len())
	for _, e := range s.cache.entries {
		if e.kv.pre != p {
			t.Fatalf("an entry holds prompt cache %p, want the samples' %p", e.kv.pre, p)
		}
		want += s.cache.elem * int64(e.kv.own.Len())
	}
	if s.cache.used != want {
		t.Fatalf("prefix cache counts %d bytes, want %d (the shared prompt cache once)", s.cache.used, want)
	}
	// A later request with the same first blocks shares them again.
	before := s.Stats().SharedTokens
	generate(t, s, Request{Key: "later", Prompt: append(slices.Clone(prompt), 9), MaxNewTokens: 2, Temperature: 1, Seed: 1})
	if got := s.Stats().SharedTokens - before; got != 2*kernels.KVBlock {
		t.Fatalf("later request shared %d positions, want %d", got, 2*kernels.KVBlock)
	}
	s.cache.clear()
	if len(s.prompts) != 0 || p.refs != 0 || s.cache.used != 0 {
		t.Fatalf("after clear: %d live prompt caches, refs %d, %d bytes counted; want none", len(s.prompts), p.refs, s.cache.used)
	}
}
