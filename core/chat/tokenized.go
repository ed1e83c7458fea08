package chat

import (
	"context"
	"errors"
	"fmt"

	"whale/core/policy"
)

// Tokenized gives a policy that writes text alone — a scripted one: the
// harness oracle, the pretraining demonstrator — the tokens the model
// behind a Template would have seen and written, so that its completions
// can be trained on (the pretraining corpus, engine tests) like the
// model's own. Each request's chat is fitted to its ContextTokens as Local
// fits it, and the inner policy is asked with the fitted messages
// (ContextTokens 0): it reads what the model would have read. Its text
// becomes the reply's tokens by Template.Reply (cut at MaxNewTokens, else
// ended by the end-of-turn token) with log-probabilities of zero; a text
// the inner policy ended by length itself gets no end-of-turn token, and
// a completion that brings its own tokens keeps them and their
// log-probabilities.
type Tokenized struct {
	p policy.Policy
	t *Template
}

// Tokenize wraps p; see Tokenized.
func Tokenize(p policy.Policy, t *Template) *Tokenized { return &Tokenized{p: p, t: t} }

// Unwrap is the wrapped policy: a caller that looks for an optional
// interface of the inner policy (harnesses.RequestObserver) finds it
// through Unwrap.
func (w *Tokenized) Unwrap() policy.Policy { return w.p }

// Generate implements policy.Policy.
func (w *Tokenized) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	out := make([]policy.Completion, len(reqs))
	prompts := make([]Prompt, len(reqs))
	inner := make([]policy.Request, 0, len(reqs))
	at := make([]int, 0, len(reqs)) // the index in reqs of each inner request
	for i, r := range reqs {
		p, err := w.t.Fit(r.Messages, r.ContextTokens)
		if errors.Is(err, ErrOverBudget) {
			out[i] = overBudget(err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("chat: request %d (key %q): %w", i, r.Key, err)
		}
		prompts[i] = p
		r.Messages, r.ContextTokens = p.Messages, 0
		inner, at = append(inner, r), append(at, i)
	}
	if len(inner) == 0 {
		return out, nil
	}
	cs, err := w.p.Generate(ctx, inner)
	if err != nil {
		return nil, err
	}
	if len(cs) != len(inner) {
		return nil, fmt.Errorf("chat: the wrapped policy returned %d completions for %d requests", len(cs), len(inner))
	}
	for k, c := range cs {
		i := at[k]
		out[i] = w.complete(c, prompts[i], reqs[i].MaxNewTokens)
	}
	return out, nil
}

// complete fills c, a completion of the fitted prompt p, with the tokens
// the model would have written and what it saw.
func (w *Tokenized) complete(c policy.Completion, p Prompt, maxNew int) policy.Completion {
	if len(c.Tokens) == 0 {
		toks, fin := w.t.Reply(c.Text, maxNew)
		if c.Finish == policy.FinishLength && fin == policy.FinishStop {
			toks, fin = toks[:len(toks)-1], policy.FinishLength
		}
		c.Tokens, c.LogProbs, c.Finish = toks, make([]float32, len(toks)), fin
	}
	c.Text = w.t.Text(c.Tokens)
	c.Prompt, c.Dropped, c.Cut = p.IDs, p.Dropped, p.Cut
	return c
}
