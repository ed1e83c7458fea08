package chat

import (
	"context"
	"errors"
	"fmt"

	"whale/core/model"
	"whale/core/policy"
	"whale/core/tokenizer"
)

// Local is the local model as a chat policy: a model.Sampler behind the
// model's Template. Each request's chat is fitted to its ContextTokens and
// rendered, sampled until the end of the assistant's turn, and handed
// back as text with exactly the token ids the model saw and produced and
// their log-probabilities. It streams (continuous batching) with the
// sampler's guarantees: a completion depends on its request alone.
type Local struct {
	s *model.Sampler
	t *Template
}

var _ policy.Laned = (*Local)(nil)

// NewLocal returns the chat policy of m, whose tokenizer is tok. It is
// the one place a model meets its tokenizer, so a tokenizer with more
// tokens than the model has embeddings is refused here, before it could
// reach the sampler as an out-of-vocabulary id.
func NewLocal(m *model.Model, tok tokenizer.Tokenizer, opts model.SamplerOptions) (*Local, error) {
	t, err := NewTemplate(tok)
	if err != nil {
		return nil, err
	}
	return NewLocalWith(m, t, opts)
}

// NewLocalWith is NewLocal with the template given (one with a model's
// end-of-sequence ids among its stops).
func NewLocalWith(m *model.Model, t *Template, opts model.SamplerOptions) (*Local, error) {
	v := m.Config.VocabSize
	if n := t.tok.VocabSize(); n > v {
		return nil, fmt.Errorf("chat: the tokenizer has %d tokens, more than the model's vocabulary of %d: it is not this model's tokenizer", n, v)
	}
	for _, id := range t.stops {
		if id < 0 || int(id) >= v {
			return nil, fmt.Errorf("chat: stop token id %d is outside the model's vocabulary of %d", id, v)
		}
	}
	return &Local{s: model.NewSampler(m, opts), t: t}, nil
}

// Sampler is the sampler behind the policy (for its Stats).
func (l *Local) Sampler() *model.Sampler { return l.s }

// ReleaseCaches frees the sampler's kept KV caches, its lanes' too
// (Sampler.ReleaseCaches).
func (l *Local) ReleaseCaches() error { return l.s.ReleaseCaches() }

// OpenLanes implements policy.Laned over the sampler's lanes
// (model.Sampler.OpenLanes: n streams at most the sampler's width, each
// decoding its share of it, the kernels' threads shared out among them
// while they are open). A completion depends on its request alone, so the
// lanes yield what one stream would.
func (l *Local) OpenLanes(n int) ([]policy.Stream, error) {
	sts, err := l.s.OpenLanes(n)
	if err != nil {
		return nil, err
	}
	out := make([]policy.Stream, len(sts))
	for i, st := range sts {
		out[i] = &localStream{l: l, st: st, prompts: map[int]Prompt{}}
	}
	return out, nil
}

// Template is the template the policy renders with.
func (l *Local) Template() *Template { return l.t }

// Generate samples a batch as one stream with every request submitted up
// front, as the Sampler does: one implementation of sampling.
func (l *Local) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	st, err := l.openStream()
	if err != nil {
		return nil, err
	}
	return policy.GenerateStream(ctx, st, reqs)
}

// OpenStream implements policy.Streamer over the sampler's stream.
func (l *Local) OpenStream() (policy.Stream, error) { return l.openStream() }

func (l *Local) openStream() (*localStream, error) {
	st, err := l.s.OpenStream()
	if err != nil {
		return nil, err
	}
	return &localStream{l: l, st: st, prompts: map[int]Prompt{}}, nil
}

// fit fits and renders request id's chat. A chat over its budget comes
// back as ErrOverBudget (wrapped), which is no error of the request.
func (l *Local) fit(id int, r *policy.Request) (Prompt, error) {
	if len(r.Messages) == 0 {
		return Prompt{}, fmt.Errorf("chat: request %d (key %q): no messages", id, r.Key)
	}
	p, err := l.t.Fit(r.Messages, r.ContextTokens)
	if err != nil && !errors.Is(err, ErrOverBudget) {
		return Prompt{}, fmt.Errorf("chat: request %d (key %q): %w", id, r.Key, err)
	}
	return p, err
}

// overBudget is the completion of a request whose chat cannot fit.
func overBudget(err error) policy.Completion {
	return policy.Completion{Finish: policy.FinishPrompt, Error: err.Error()}
}

// localStream is Local's policy.Stream: the sampler's stream, with the
// fitted prompt of every request in flight kept to go back with its
// completion.
type localStream struct {
	l       *Local
	st      *model.Stream
	prompts map[int]Prompt // by id, until the completion is handed back
	// ready holds the completions of chats over budget: nothing to
	// sample, handed back before anything the sampler finishes.
	ready []policy.Result
	err   error // what spent the stream
}

// Submit implements policy.Stream.
func (s *localStream) Submit(id int, req policy.Request) error {
	if s.err != nil {
		return s.err
	}
	p, err := s.l.fit(id, &req)
	if errors.Is(err, ErrOverBudget) {
		s.ready = append(s.ready, policy.Result{ID: id, Completion: overBudget(err)})
		return nil
	}
	if err != nil {
		return err
	}
	tr := model.Request{Key: req.Key, Prompt: p.IDs, MaxNewTokens: req.MaxNewTokens, Temperature: req.Temperature,
		TopK: req.TopK, TopP: req.TopP, Stop: s.l.t.Stops(), Seed: req.Seed}
	if err := s.st.Submit(id, tr); err != nil {
		return err
	}
	s.prompts[id] = p
	return nil
}

// Next implements policy.Stream.
func (s *localStream) Next(ctx context.Context) (policy.Result, error) {
	if s.err != nil {
		return policy.Result{}, s.err
	}
	if len(s.ready) > 0 {
		res := s.ready[0]
		s.ready = s.ready[1:]
		return res, nil
	}
	res, err := s.st.Next(ctx)
	if err != nil {
		if !errors.Is(err, policy.ErrStreamIdle) {
			s.err = err
		}
		return policy.Result{}, err
	}
	p := s.prompts[res.ID]
	delete(s.prompts, res.ID)
	c := res.Completion
	return policy.Result{ID: res.ID, Completion: policy.Completion{Text: s.l.t.Text(c.Tokens), Prompt: p.IDs, Tokens: c.Tokens,
		LogProbs: c.LogProbs, Entropy: c.Entropy, Finish: c.Finish, Dropped: p.Dropped, Cut: p.Cut}}, nil
}

// Close implements policy.Stream.
func (s *localStream) Close() error {
	s.ready, s.prompts = nil, nil
	if s.err == nil {
		s.err = errors.New("chat: stream is closed")
	}
	return s.st.Close()
}
