package model

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"

	"whale/core/policy"
	"whale/kernels"
)

// Continuous batching. A stream keeps a dynamic set of sequences: each
// step admits waiting requests into free slots (prefilling them, with
// prefix reuse), samples one token for every running sequence, hands back
// the ones that stopped and runs one batched forward pass for the rest.
// A request submitted between steps joins the next one. Generate is this
// same loop with every request submitted up front, so there is one
// implementation of sampling.
//
// Nothing here changes what a sequence samples: its RNG comes from its
// seed and key, and every product that computes its keys, values and
// logits is row-invariant (see rowChunk), so which sequences share a step
// does not reach its tokens or log-probabilities.

// Stream is an open continuous batch of token requests, with the
// guarantees of policy.Stream (core/chat's Local serves chats over it).
// The Sampler runs it on the caller's goroutine, inside Next.
type Stream struct {
	s        *Sampler
	version  uint64 // Model.Version the stream was opened at
	maxBatch int
	maxKV    int64
	pending  []*seqState // submitted, waiting for a slot, in submission order
	live     []*seqState // in a slot; logits after their last token are set
	ready    []*seqState // finished, not yet handed back
	err      error       // the error that spent the stream
	closed   bool
	// onClose, when set, is called at the first Close (OpenLanes counts
	// its lanes down with it).
	onClose func()
}

// OpenStream starts a stream, as policy.Streamer's does. The stream holds
// the sampler until it is closed: a second OpenStream or a Generate call
// fails.
func (s *Sampler) OpenStream() (*Stream, error) { return s.openStream(s.width()) }

// openStream is OpenStream with at most width sequences decoding at once
// (OpenLanes gives each lane its share of the sampler's width).
func (s *Sampler) openStream(width int) (*Stream, error) {
	if s.open {
		return nil, errors.New("model: sampler already has an open stream (a Sampler serves one caller at a time); close it first")
	}
	s.refresh()
	s.open = true
	st := &Stream{s: s, version: s.version, maxBatch: width, maxKV: s.opts.MaxKVBytes}
	if st.maxKV <= 0 {
		st.maxKV = 4 << 30
	}
	return st, nil
}

// usable is the error every call on a spent or closed stream returns.
func (st *Stream) usable() error {
	if st.closed {
		return errors.New("model: stream is closed")
	}
	return st.err
}

// Submit queues req under the caller's id, as policy.Stream's Submit
// does: a request the sampler cannot serve (an empty prompt, a token
// outside the vocabulary) is refused with an error naming the id and key.
// The stream reads req.Prompt and req.Stop until their completion is
// returned.
func (st *Stream) Submit(id int, req Request) error {
	if err := st.usable(); err != nil {
		return err
	}
	if err := st.s.checkRequest(id, &req); err != nil {
		return err
	}
	st.submit(id, &req)
	return nil
}

// submit queues a checked request. A prompt that already fills the
// context window is finished without a slot.
func (st *Stream) submit(id int, r *Request) {
	h := fnv.New64a()
	h.Write([]byte(r.Key))
	q := &seqState{id: id, req: r, toks: slices.Clip(append([]int32(nil), r.Prompt...)), rng: rand.New(rand.NewPCG(r.Seed, h.Sum64()))}
	if len(r.Prompt) > st.s.m.d.maxPos {
		q.out.Finish, q.done = policy.FinishContext, true
		st.ready = append(st.ready, q)
		return
	}
	q.cap = min(len(r.Prompt)+r.MaxNewTokens-1, st.s.m.d.maxPos)
	// The most a prompt cache may hold; the prefill may share less
	// (sharePrompt).
	q.pn = prefixLen(len(r.Prompt), kernels.PrefixGranule(st.s.m.be))
	st.pending = append(st.pending, q)
}

// Next hands back the next finished request, as policy.Stream's Next
// does (policy.ErrStreamIdle with none in flight): it runs decoding steps
// until a sequence finishes. Sequences that finish in the same step are handed back one
// call at a time, without further steps, so that requests the caller
// submits in between join the next step together.
func (st *Stream) Next(ctx context.Context) (Result, error) {
	if err := st.usable(); err != nil {
		return Result{}, err
	}
	if st.s.warm && len(st.ready) == 0 {
		// The steps below run back to back: keep the helpers spinning
		// through each step's token drawing (kernels.Warm).
		defer kernels.Warm()()
	}
	for len(st.ready) == 0 {
		if len(st.pending) == 0 && len(st.live) == 0 {
			return Result{}, policy.ErrStreamIdle
		}
		if err := ctx.Err(); err != nil {
			st.err = fmt.Errorf("model: generate: %w", err)
			return Result{}, st.err
		}
		if v := st.s.m.Version(); v != st.version {
			st.err = fmt.Errorf("model: the model's weights changed (version %d to %d) while a stream was open", st.version, v)
			return Result{}, st.err
		}
		if err := st.step(ctx); err != nil {
			st.err = err
			return Result{}, err
		}
	}
	q := st.ready[0]
	st.ready[0] = nil
	st.ready = st.ready[1:]
	return Result{ID: q.id, Completion: q.out}, nil
}

// Close drops every request still in flight and frees their caches; it
// may be called more than once.
func (st *Stream) Close() error {
	if st.closed {
		return nil
	}
	for _, q := range st.live {
		st.s.freeCaches(q)
	}
	st.pending, st.live, st.ready = nil, nil, nil
	st.closed = true
	st.s.open = false
	if st.onClose != nil {
		st.onClose()
	}
	return nil
}

// admissible counts the waiting requests, from the front, that fit now.
// Admission stops at MaxBatch sequences or MaxKVBytes of caches (at the
// caches' bytes per element), but always admits one.
func (st *Stream) admissible() int {
	liveBytes := int64(0)
	for _, q := range st.live {
		liveBytes += int64(q.cacheCap()) * st.s.kvBytesPerPosition()
	}
	n := 0
	for n < len(st.pending) && len(st.live)+n < st.maxBatch {
		b := int64(st.pending[n].cacheCap()) * st.s.kvBytesPerPosition()
		if len(st.live)+n > 0 && liveBytes+b > st.maxKV {
			break
		}
		liveBytes += b
		n++
	}
	return n
}

// step admits what fits, samples one token for every running sequence,
// moves the finished ones to ready (their caches to the prefix cache) and
// feeds the rest one position forward.
func (st *Stream) step(ctx context.Context) error {
	s := st.s
	if n := st.admissible(); n > 0 {
		adm := slices.Clone(st.pending[:n])
		st.pending = slices.Delete(st.pending, 0, n)
		if err := s.prefill(ctx, adm); err != nil {
			for _, q := range adm {
				s.freeCaches(q)
			}
			return err
		}
		st.live = append(st.live, adm...)
		var live, seq int64
		for _, q := range st.live {
			b := int64(q.cacheCap()) * s.kvBytesPerPosition()
			live, seq = live+b, max(seq, b)
		}
		s.noteLive(live, seq)
	}
	var items []work
	running := st.live[:0]
	for _, q := range st.live {
		if s.sampleNext(q) {
			items = append(items, work{s: q, from: q.n, to: q.n + 1})
			running = append(running, q)
			continue
		}
		st.ready = append(st.ready, q)
	}
	clear(st.live[len(running):])
	st.live = running
	if len(items) > 0 {
		s.stats.DecodeTokens += int64(len(items))
		s.forward(items, false)
	}
	return nil
}

// sampleNext samples q's next token and reports whether q goes on. A
// sequence that stops gives its cache to the prefix cache.
func (s *Sampler) sampleNext(q *seqState) bool {
	tok, lp, ent := sampleToken(q.logits, q.req, q.rng, &s.ss)
	q.entropy += float64(ent)
	s.stats.SampledTokens++
	q.toks = append(q.toks, tok)
	q.out.Tokens = append(q.out.Tokens, tok)
	q.out.LogProbs = append(q.out.LogProbs, lp)
	switch {
	case slices.Contains(q.req.Stop, tok):
		q.out.Finish = policy.FinishStop
	case len(q.out.Tokens) >= q.req.MaxNewTokens:
		q.out.Finish = policy.FinishLength
	case q.n >= s.m.d.maxPos:
		q.out.Finish = policy.FinishContext
	default:
		return true
	}
	q.done = true
	q.out.Entropy = float32(q.entropy / float64(len(q.out.Tokens)))
	// Only canonical rows go to the prefix cache; the logits after them
	// are known only if every row is.
	var lg []float32
	if q.canon == q.n {
		lg = q.logits
	}
	if q.canon > 0 {
		s.cache.insert(q.toks[:q.canon], lg, s.takenBytes(q), func() entryKV { return s.takeCaches(q) })
	}
	s.freeCaches(q)
	return false
}
