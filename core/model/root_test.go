package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"whale/kernels"
)

// TestRootsSampleTheSame: prompts of many tasks that begin with one
// system prompt record the cache their first positions were copied from
// (promptKV.root), and the sampler draws exactly what it draws without
// roots: first turns (copied from an earlier prompt of the prefill) and
// next turns (from the prefix cache's entries), at a head dimension where
// the CPU backend gathers the roots' rows into tiles (on an AVX-512
// machine); and no root outlives the caches that hold it.
func TestRootsSampleTheSame(t *testing.T) {
	cfg, err := Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.HiddenSize, cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim = 64, 4, 2, 32
	cfg.MaxPositionEmbeddings = 512
	build := func() *Model {
		m, err := New(cfg, kernels.NewCPU(), 3)
		if err != nil {
			t.Fatal(err)
		}
		randomize(m, 13)
		return m
	}
	rng := rand.New(rand.NewPCG(4, 4))
	system := randPrompt(rng, 150, cfg.VocabSize)
	var turn1 []Request
	for i := range 12 {
		prompt := append(slices.Clone(system), randPrompt(rng, 20+7*i, cfg.VocabSize)...)
		for g := range 1 + i%3 {
			turn1 = append(turn1, Request{Key: fmt.Sprintf("t%d#%d", i, g), Prompt: prompt, MaxNewTokens: 12, Temperature: 1, Seed: 9})
		}
	}
	tails := make([][]int32, len(turn1))
	for i := range tails {
		tails[i] = randPrompt(rng, 3, cfg.VocabSize)
	}
	run := func(roots bool) (got []Completion, rooted int) {
		s := NewSampler(build(), SamplerOptions{})
		if !roots {
			s.roots = false
		}
		got = generate(t, s, turn1...)
		var turn2 []Request
		for i, c := range got {
			r := turn1[i]
			r.Prompt = append(append(slices.Clone(r.Prompt), c.Tokens...), tails[i]...)
			r.Key += "/turn2"
			turn2 = append(turn2, r)
		}
		got = append(got, generate(t, s, turn2...)...)
		for _, e := range s.cache.entries {
			if e.kv.pre != nil && e.kv.pre.root != nil {
				rooted++
				if rn := e.kv.pre.rn; rn < rootMin || rn > len(system) || rn%kernels.PrefixGranule(s.m.be) != 0 {
					t.Errorf("a root of %d positions for a system prompt of %d", rn, len(system))
				}
			}
		}
		// Every share of a root is given back with the cache holding it:
		// once the prefix cache lets its entries go, no prompt cache is
		// left (a root a lost share kept alive would stay listed).
		if err := s.ReleaseCaches(); err != nil {
			t.Fatal(err)
		}
		if len(s.prompts) != 0 {
			t.Errorf("%d prompt caches still held after ReleaseCaches", len(s.prompts))
		}
		return got, rooted
	}
	with, rooted := run(true)
	without, none := run(false)
	if kernels.RootSpans(kernels.NewCPU()) && rooted == 0 {
		t.Fatal("no prompt cache recorded a root")
	}
	if none != 0 {
		t.Fatalf("%d roots with roots off", none)
	}
	for i := range with {
		if !slices.Equal(with[i].Tokens, without[i].Tokens) || !slices.Equal(with[i].LogProbs, without[i].LogProbs) {
			t.Fatalf("completion %d: %v with roots, %v without", i, with[i].Tokens, without[i].Tokens)
		}
	}
	t.Logf("%d of the prefix cache's entries have a root", rooted)
}
