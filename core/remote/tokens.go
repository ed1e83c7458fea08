package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"whale/core/policy"
)

// TokenRequest asks for a completion of a prompt given as token ids, on
// OpenAI's completions endpoint ({base}/completions), which vLLM and
// SGLang take token ids for: what a trainer sends, since the server then
// continues exactly the prompt the trainer renders and trains on (a chat
// sent as JSON loses what is not UTF-8, and a server's chat template may
// differ from the trainer's).
type TokenRequest struct {
	// Key names the request (its call's request_id) and, with Seed, fixes
	// the call's seed.
	Key          string
	Prompt       []int32
	MaxNewTokens int
	Temperature  float32
	TopK         int
	TopP         float32
	Seed         uint64
	// Stop are the token ids that end the completion (vLLM's
	// stop_token_ids), the end-of-turn token first.
	Stop []int32
}

// completionRequest is the body of one token-id call. Special tokens are
// left out of the reply's text (vLLM's default, skip_special_tokens), as
// whale's own text of a completion leaves out the token that ends it.
type completionRequest struct {
	Model                  string  `json:"model"`
	Prompt                 []int32 `json:"prompt"`
	MaxTokens              int     `json:"max_tokens"`
	Temperature            float32 `json:"temperature"`
	TopP                   float32 `json:"top_p,omitempty"`
	TopK                   int     `json:"top_k,omitempty"`
	Seed                   int64   `json:"seed"`
	Logprobs               int     `json:"logprobs"`
	StopTokenIDs           []int32 `json:"stop_token_ids,omitempty"`
	RequestID              string  `json:"request_id,omitempty"`
	ReturnTokenIDs         bool    `json:"return_token_ids"`
	ReturnTokensAsTokenIDs bool    `json:"return_tokens_as_token_ids"`
}

// completionResponse is what is read of a token-id call's reply.
type completionResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Index        int     `json:"index"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
		Logprobs     *struct {
			Tokens        []string   `json:"tokens"`
			TokenLogprobs []*float64 `json:"token_logprobs"`
		} `json:"logprobs"`
		TokenIDs       []int32 `json:"token_ids"`
		PromptTokenIDs []int32 `json:"prompt_token_ids"`
	} `json:"choices"`
	PromptTokenIDs []int32 `json:"prompt_token_ids"`
}

// checkTokenRequest refuses what no call could carry.
func checkTokenRequest(r TokenRequest) error {
	switch {
	case len(r.Prompt) == 0:
		return fmt.Errorf("request %q: no prompt tokens", r.Key)
	case r.MaxNewTokens < 1:
		return fmt.Errorf("request %q: MaxNewTokens %d must be positive", r.Key, r.MaxNewTokens)
	case !(r.Temperature >= 0) || math.IsInf(float64(r.Temperature), 0):
		return fmt.Errorf("request %q: Temperature %v must be finite and ≥ 0", r.Key, r.Temperature)
	case r.TopK < 0 || !(r.TopP >= 0 && r.TopP <= 1):
		return fmt.Errorf("request %q: TopK %d, TopP %v (want TopK ≥ 0, TopP in [0, 1])", r.Key, r.TopK, r.TopP)
	}
	for _, id := range r.Prompt {
		if id < 0 {
			return fmt.Errorf("request %q: prompt token id %d", r.Key, id)
		}
	}
	return nil
}

// complete sends one token-id call to model at p's server.
func (p *Policy) complete(ctx context.Context, r TokenRequest, model string) ([]Reply, error) {
	if model == "" {
		model = p.opts.Model
	}
	seed := callSeed(policy.Request{Key: r.Key, Seed: r.Seed})
	body := completionRequest{Model: model, Prompt: r.Prompt, MaxTokens: r.MaxNewTokens, Temperature: r.Temperature,
		TopP: topP(r.TopP), TopK: r.TopK, Seed: seed, Logprobs: 1, StopTokenIDs: r.Stop, RequestID: r.Key,
		ReturnTokenIDs: true, ReturnTokensAsTokenIDs: true}
	u := baseOf(p.opts.URL) + "/completions"
	what := fmt.Sprintf("remote: POST %s (request %q, %d prompt tokens)", u, r.Key, len(r.Prompt))
	return p.exchange(ctx, u, mustJSON(body), what, decodeCompletion)
}

// decodeCompletion reads a one-choice reply of the completions endpoint.
func decodeCompletion(b []byte) ([]Reply, error) {
	var r completionResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("malformed JSON reply (%v): %s", err, clip(string(b), 200))
	}
	if len(r.Choices) != 1 || r.Choices[0].Index != 0 {
		return nil, fmt.Errorf("asked for one choice, the reply has %d: %s", len(r.Choices), clip(string(b), 200))
	}
	c := r.Choices[0]
	out := Reply{Model: r.Model, PromptIDs: r.PromptTokenIDs}
	if len(c.PromptTokenIDs) > 0 {
		out.PromptIDs = c.PromptTokenIDs
	}
	if c.Text != nil {
		out.Text = *c.Text
	}
	fin := ""
	if c.FinishReason != nil {
		fin = *c.FinishReason
	}
	switch fin {
	case "stop", "eos_token":
		out.Finish = "stop"
	case "length":
		out.Finish = "length"
	default:
		return nil, fmt.Errorf("finish_reason %q (want stop or length)", fin)
	}
	if lp := c.Logprobs; lp != nil && len(lp.TokenLogprobs) > 0 {
		out.LogProbs = make([]float32, len(lp.TokenLogprobs))
		for i, v := range lp.TokenLogprobs {
			if v != nil {
				out.LogProbs[i] = float32(*v)
			}
		}
	}
	var fromLP []int32
	if lp := c.Logprobs; lp != nil {
		for _, t := range lp.Tokens {
			v, ok := strings.CutPrefix(t, "token_id:")
			var id int32
			if _, err := fmt.Sscan(v, &id); !ok || err != nil || id < 0 {
				fromLP = nil
				break
			}
			fromLP = append(fromLP, id)
		}
	}
	toks, err := agreeingIDs(c.TokenIDs, fromLP)
	if err != nil {
		return nil, err
	}
	out.Tokens = toks
	return []Reply{out}, nil
}

// agreeingIDs are a choice's ids given by token_ids or by its logprobs'
// tokens, which must agree when both are given.
func agreeingIDs(own, fromLP []int32) ([]int32, error) {
	for _, id := range own {
		if id < 0 {
			return nil, fmt.Errorf("token_ids holds %d", id)
		}
	}
	switch {
	case len(own) > 0 && len(fromLP) > 0 && !equalIDs(own, fromLP):
		return nil, fmt.Errorf("token_ids (%d ids) and the logprobs' token ids (%d) differ", len(own), len(fromLP))
	case len(own) > 0:
		return own, nil
	}
	return fromLP, nil
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Complete sends each token-id request as a call of its own to model at
// the endpoint best placed to take it, all at once within the
// endpoints' concurrency bounds, and returns the replies in request
// order. The first failure cancels the rest and is returned.
func (pl *Pool) Complete(ctx context.Context, model string, reqs []TokenRequest) ([]Reply, error) {
	for _, r := range reqs {
		if err := checkTokenRequest(r); err != nil {
			return nil, fmt.Errorf("remote: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]Reply, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reps, err := pl.route(ctx, r.Key, tokenAffinity(r, len(pl.eps)), func(ep *endpoint) ([]Reply, error) {
				return ep.p.complete(ctx, r, model)
			})
			if err != nil {
				errs[i] = err
				cancel()
				return
			}
			out[i] = reps[0]
		}()
	}
	wg.Wait()
	// The first failure, not the cancellations it caused.
	var first error
	for _, err := range errs {
		switch {
		case err == nil:
		case !errors.Is(err, context.Canceled):
			return nil, err
		case first == nil:
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	return out, nil
}

// tokenAffinity is the endpoint a prompt prefers: a hash of its first 256
// tokens (the system prompt and the task, as a chat's head is).
func tokenAffinity(r TokenRequest, n int) int {
	var h uint32 = 2166136261
	for _, id := range r.Prompt[:min(len(r.Prompt), 256)] {
		h = (h ^ uint32(id)) * 16777619
	}
	return int(h % uint32(n))
}
