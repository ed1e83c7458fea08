package model

import (
	"context"
	"fmt"
	"slices"

	"whale/kernels"
)

// prefill fills every sequence's cache with its prompt and sets its first
// logits. A prompt identical to an earlier one in the batch copies that
// one's cache and logits; otherwise the longest prefix shared with the
// prefix cache or with an earlier prompt of the batch is copied and only
// the rest is computed. Prompts that depend on an earlier prompt of the
// batch run in a later wave; each wave is one batched forward pass (split
// at maxRows rows).
func (s *Sampler) prefill(ctx context.Context, seqs []*seqState) error {
	plans, nw := s.planPrefill(seqs)
	for w := 0; w < nw; w++ {
		if err := s.prefillWave(ctx, seqs, plans, w); err != nil {
			return err
		}
	}
	for i, q := range seqs {
		if e := plans[i].dup; e != nil {
			// The shared part is e's; the rest of the prompt is copied.
			s.m.copyKVAt(q.kv, q.ownCap(), 0, e.kv, e.ownCap(), 0, e.n-e.pn)
			q.n, q.canon, q.logits = e.n, e.canon, e.logits
		}
		if q.prompt != nil {
			s.publish(q.prompt)
		}
		s.stats.ReusedTokens += int64(plans[i].start)
		if plans[i].dup != nil {
			s.stats.ReusedTokens += int64(q.n)
		}
	}
	return nil
}

// prefillPlan says how one prompt of a prefill is filled.
type prefillPlan struct {
	dup   *seqState // identical earlier prompt
	src   *seqState // earlier prompt sharing a prefix
	start int       // prompt tokens already in the cache
	wave  int       // -1: filled from the prefix cache, nothing to compute
}

// planPrefill copies what the prefix cache holds into each sequence and
// plans the rest; it returns the plans and the number of waves.
func (s *Sampler) planPrefill(seqs []*seqState) ([]prefillPlan, int) {
	const minShare = 4 // shorter shared prefixes are not worth a later wave
	plans := make([]prefillPlan, len(seqs))
	waveOf := map[*seqState]int{}
	creators := map[uint64][]*seqState{} // of new prompt caches, by tokensKey
	nw := 0
	for i, q := range seqs {
		p := &plans[i]
		P := len(q.req.Prompt)
		s.stats.PromptTokens += int64(P)
		for _, e := range seqs[:i] {
			if slices.Equal(e.req.Prompt, q.req.Prompt) {
				p.dup = e
				break
			}
		}
		if p.dup != nil {
			// The same prompt: the same prompt cache, filled once.
			q.pn = p.dup.pn
			s.allocOwn(q)
			if q.prompt = p.dup.prompt; q.prompt != nil {
				q.prompt.refs++
				s.stats.SharedTokens += int64(q.pn)
			}
			continue
		}
		ready := s.sharePrompt(q, p, creators, waveOf)
		if e, n := s.cache.lookup(q.req.Prompt); e != nil && n > p.start {
			entry := e.kv.parts()
			if p.start == 0 {
				s.inheritRoot(q.prompt, e.kv.pre, min(n, P-1, e.kv.pn))
			}
			if n == P && len(e.logits) > 0 && len(e.tokens) == P {
				s.m.copyParts(q.parts(), entry, p.start, P)
				q.n, q.canon, q.logits, p.start = P, P, e.logits, P
				p.wave = -1
				waveOf[q] = ready
				continue
			}
			if n = min(n, P-1); n > p.start {
				s.m.copyParts(q.parts(), entry, p.start, n)
				q.n, q.canon, p.start = n, n, n
			}
		}
		best := p.start
		for j, e := range seqs[:i] {
			if plans[j].dup != nil {
				continue // filled only after every wave
			}
			if n := min(commonPrefix(e.req.Prompt, q.req.Prompt), P-1); n > best && n >= minShare {
				best, p.src = n, e
			}
		}
		if p.src != nil {
			if q.n == 0 {
				s.inheritRoot(q.prompt, p.src.prompt, min(best, p.src.pn))
			}
			p.start = best
			p.wave = waveOf[p.src] + 1
		}
		// The rest of the prompt attends to the shared blocks: once filled.
		p.wave = max(p.wave, ready+1)
		waveOf[q] = p.wave
		nw = max(nw, p.wave+1)
	}
	return plans, nw
}

// sharePrompt gives q (not a duplicate) its prompt cache and its own
// cache. The prompt cache is the longest one whose tokens begin q's prompt,
// at a whole number of granules up to q.pn: a running sequence's (the
// first turn of an episode, which the samples' next turns all extend), one
// that an earlier prompt of this prefill fills, or else a new one of q.pn
// positions that q fills itself (then listed in creators). A shorter
// share moves q.pn down to it. It returns the wave after which a shared
// cache is filled (-1: it is, or q fills its own).
func (s *Sampler) sharePrompt(q *seqState, p *prefillPlan, creators map[uint64][]*seqState, waveOf map[*seqState]int) int {
	defer s.allocOwn(q)
	if q.pn == 0 {
		return -1
	}
	g := kernels.PrefixGranule(s.m.be)
	keys := prefixKeys(q.req.Prompt[:q.pn], g)
	for i := len(keys) - 1; i >= 0; i-- {
		toks := q.req.Prompt[:(i+1)*g]
		blk, ready := s.livePrompt(keys[i], toks), -1
		if blk == nil {
			for _, c := range creators[keys[i]] {
				if slices.Equal(c.prompt.tokens, toks) {
					blk, ready = c.prompt, waveOf[c]
					break
				}
			}
		}
		if blk != nil {
			q.prompt, q.pn = blk, len(toks)
			blk.refs++
			s.stats.SharedTokens += int64(q.pn)
			q.n, q.canon, p.start = q.pn, q.pn, q.pn
			return ready
		}
	}
	toks := q.req.Prompt[:q.pn]
	q.prompt = &promptKV{kv: s.m.kvAlloc(s.pool, q.pn), tokens: slices.Clone(toks), refs: 1}
	creators[keys[len(keys)-1]] = append(creators[keys[len(keys)-1]], q)
	return -1
}

// prefillWave computes the prompts of wave w in batched forward passes of
// at most maxRows rows.
func (s *Sampler) prefillWave(ctx context.Context, seqs []*seqState, plans []prefillPlan, w int) error {
	var items []work
	rows := 0
	flush := func() error {
		if len(items) > 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("model: prefill: %w", err)
			}
			s.forward(items, true)
			items, rows = items[:0], 0
		}
		return nil
	}
	for i, q := range seqs {
		p := plans[i]
		if p.dup != nil || p.wave != w {
			continue
		}
		if p.src != nil {
			s.m.copyParts(q.parts(), p.src.parts(), q.n, p.start)
			q.n, q.canon = p.start, p.start
		}
		for from := p.start; from < len(q.req.Prompt); {
			to := min(len(q.req.Prompt), from+maxRows-rows)
			if from < q.pn && to > q.pn {
				to = q.pn // an item lies in one part of the cache
			}
			items = append(items, work{s: q, from: from, to: to})
			rows += to - from
			s.stats.PrefillTokens += int64(to - from)
			from = to
			if rows >= maxRows {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
