package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"whale/core/policy"
)

// chatRequest is the body of one call. TopK is not in OpenAI's API but
// vLLM, SGLang and llama.cpp's server read it; it is sent only when set.
type chatRequest struct {
	Model       string           `json:"model"`
	Messages    []policy.Message `json:"messages"`
	MaxTokens   int              `json:"max_tokens"`
	Temperature float32          `json:"temperature"`
	TopP        float32          `json:"top_p,omitempty"`
	TopK        int              `json:"top_k,omitempty"`
	N           int              `json:"n,omitempty"`
	Seed        int64            `json:"seed"`
	Logprobs    bool             `json:"logprobs"`
	// With Options.TokenIDs: the key of the call's first request, and
	// vLLM's asks for the completion's token ids (return_token_ids, in
	// the choice; return_tokens_as_token_ids, in the logprobs' tokens).
	RequestID              string `json:"request_id,omitempty"`
	ReturnTokenIDs         bool   `json:"return_token_ids,omitempty"`
	ReturnTokensAsTokenIDs bool   `json:"return_tokens_as_token_ids,omitempty"`
}

// chatResponse is what is read of a reply.
type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message *struct {
			Content *string `json:"content"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
		Logprobs     *struct {
			Content []struct {
				Token   string  `json:"token"`
				Logprob float64 `json:"logprob"`
			} `json:"content"`
		} `json:"logprobs"`
		TokenIDs []int32 `json:"token_ids"`
	} `json:"choices"`
	PromptTokenIDs []int32 `json:"prompt_token_ids"`
}

// Reply is a completion with what the server said of it besides: the
// model the reply names (a fleet's adapter), the endpoint that served it,
// and, when Options.TokenIDs asked for them and the server gave them, the
// completion's token ids in Completion.Tokens and the prompt's as the
// server rendered it in PromptIDs.
type Reply struct {
	policy.Completion
	Model     string
	Endpoint  string
	PromptIDs []int32
}

// topP is the top_p to send: none for "no nucleus filter" (0 or 1).
func topP(p float32) float32 {
	if p >= 1 {
		return 0
	}
	return p
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("remote: encode %T: %v", v, err)) // strings and finite numbers only
	}
	return b
}

// failure is a failed attempt: retry says whether another may succeed;
// after is the server's Retry-After, when it sent one.
type failure struct {
	msg      string
	status   int // the HTTP status, 0 for none
	retry    bool
	after    time.Duration
	hasAfter bool
}

func (f *failure) Error() string { return f.msg }

// call sends reqs (identical but for their keys) as one call with
// len(reqs) choices to model ("": Options.Model), retrying what may pass
// on a later attempt.
func (p *Policy) call(ctx context.Context, reqs []policy.Request, model string) ([]Reply, error) {
	r := reqs[0]
	n := len(reqs)
	if model == "" {
		model = p.opts.Model
	}
	body := chatRequest{Model: model, Messages: r.Messages, MaxTokens: r.MaxNewTokens, Temperature: r.Temperature,
		TopP: topP(r.TopP), TopK: r.TopK, Seed: callSeed(r), Logprobs: true}
	if n > 1 {
		body.N = n
	}
	if p.opts.TokenIDs {
		body.RequestID, body.ReturnTokenIDs, body.ReturnTokensAsTokenIDs = r.Key, true, true
	}
	what := fmt.Sprintf("remote: POST %s (request %q, n=%d)", p.endpoint, r.Key, n)
	return p.exchange(ctx, p.endpoint, mustJSON(body), what, func(b []byte) ([]Reply, error) { return decode(b, n, p.opts.TokenIDs) })
}

// exchange posts raw to url, retrying what may pass on a later attempt,
// and decodes the first 2xx reply with dec.
func (p *Policy) exchange(ctx context.Context, url string, raw []byte, what string, dec func([]byte) ([]Reply, error)) ([]Reply, error) {
	for try := 1; ; try++ {
		reply, err := p.attempt(ctx, url, raw)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: cancelled: %w", what, ctx.Err())
		}
		if err == nil {
			reps, err := dec(reply)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			for i := range reps {
				reps[i].Endpoint = p.opts.URL
			}
			return reps, nil
		}
		var f *failure
		if !errors.As(err, &f) || !f.retry {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if try >= p.opts.Attempts {
			return nil, fmt.Errorf("%s: gave up after %d attempts: %w", what, try, err)
		}
		wait := p.backoff(try)
		if f.hasAfter {
			if f.after > maxRetryAfter {
				return nil, fmt.Errorf("%s: %w; the server asks to retry after %s, longer than the %s whale waits", what, err, f.after, maxRetryAfter)
			}
			wait = f.after
		}
		if err := p.sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("%s: cancelled while waiting to retry: %w", what, err)
		}
	}
}

// attempt posts raw once, holding one of the concurrency slots, and
// returns the body of a 2xx reply.
func (p *Policy) attempt(ctx context.Context, url string, raw []byte) ([]byte, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-p.slots }()
	actx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if p.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.opts.APIKey)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, p.transportFailure(actx, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReply+1))
	if err != nil {
		return nil, p.transportFailure(actx, err)
	}
	if len(b) > maxReply {
		return nil, &failure{msg: fmt.Sprintf("HTTP %s: the reply exceeds %d bytes", resp.Status, maxReply)}
	}
	if resp.StatusCode/100 != 2 {
		f := &failure{msg: fmt.Sprintf("HTTP %s: %s", resp.Status, serverMessage(b)), status: resp.StatusCode,
			retry: resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500}
		f.after, f.hasAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
		return nil, f
	}
	return b, nil
}

// transportFailure names an error that left no complete reply: a timeout
// of the attempt or a connection failure, both worth retrying.
func (p *Policy) transportFailure(actx context.Context, err error) error {
	if errors.Is(actx.Err(), context.DeadlineExceeded) {
		return &failure{msg: fmt.Sprintf("no complete reply within the timeout of %s", p.opts.Timeout), retry: true}
	}
	return &failure{msg: "connection: " + err.Error(), retry: true}
}

// retryAfter reads a Retry-After header: delay seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		return time.Duration(min(s, 1<<31)) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}

// serverMessage is the error message in an error reply: OpenAI's
// {"error": {"message": …}}, {"error": "…"}, {"message": …} (vLLM's
// older form), {"detail": …} (FastAPI), or else the start of the body.
func serverMessage(b []byte) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(b, &e) == nil {
		var obj struct {
			Message string `json:"message"`
		}
		var str string
		switch {
		case json.Unmarshal(e.Error, &obj) == nil && obj.Message != "":
			return obj.Message
		case json.Unmarshal(e.Error, &str) == nil && str != "":
			return str
		case e.Message != "":
			return e.Message
		case json.Unmarshal(e.Detail, &str) == nil && str != "":
			return str
		case len(e.Detail) > 0:
			return string(e.Detail)
		}
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "(empty body)"
	}
	return clip(s, 300)
}

// clip cuts s to at most n bytes, dropping a rune the cut splits.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// decode reads a reply of n choices into completions in choice order;
// with ids, also the token ids the server gave (see Reply).
func decode(b []byte, n int, ids bool) ([]Reply, error) {
	var r chatResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("malformed JSON reply (%v): %s", err, clip(string(b), 200))
	}
	if len(r.Choices) == 0 {
		return nil, fmt.Errorf("the reply has no choices: %s", clip(string(b), 200))
	}
	if len(r.Choices) != n {
		hint := ""
		if n > 1 && len(r.Choices) == 1 {
			hint = " (a server that ignores n: set the maximum n to 1)"
		}
		return nil, fmt.Errorf("asked for n=%d choices, the reply has %d%s", n, len(r.Choices), hint)
	}
	out := make([]Reply, n)
	seen := make([]bool, n)
	for _, c := range r.Choices {
		if c.Index < 0 || c.Index >= n || seen[c.Index] {
			return nil, fmt.Errorf("choice index %d: want each of 0..%d once", c.Index, n-1)
		}
		seen[c.Index] = true
		if c.Message == nil {
			return nil, fmt.Errorf("choice %d has no message", c.Index)
		}
		out[c.Index].Model = r.Model
		comp := &out[c.Index].Completion
		if c.Message.Content != nil {
			comp.Text = *c.Message.Content
		}
		fin := ""
		if c.FinishReason != nil {
			fin = *c.FinishReason
		}
		switch fin {
		case "stop", "eos_token": // eos_token: Hugging Face TGI's name
			comp.Finish = policy.FinishStop
		case "length":
			comp.Finish = policy.FinishLength
		default:
			return nil, fmt.Errorf("choice %d: finish_reason %q (want stop or length)", c.Index, fin)
		}
		if c.Logprobs != nil && len(c.Logprobs.Content) > 0 {
			comp.LogProbs = make([]float32, len(c.Logprobs.Content))
			for i, t := range c.Logprobs.Content {
				comp.LogProbs[i] = float32(t.Logprob)
			}
		}
		if !ids {
			continue
		}
		out[c.Index].PromptIDs = r.PromptTokenIDs
		toks, err := choiceTokens(c.TokenIDs, c.Logprobs)
		if err != nil {
			return nil, fmt.Errorf("choice %d: %w", c.Index, err)
		}
		comp.Tokens = toks
	}
	return out, nil
}

// choiceTokens are a choice's token ids: the choice's own (vLLM's
// return_token_ids), else its logprobs' tokens when every one reads
// "token_id:N" (return_tokens_as_token_ids), else none (the server gave
// text alone). Ids given both ways must agree.
func choiceTokens(own []int32, lp *struct {
	Content []struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
	} `json:"content"`
}) ([]int32, error) {
	var fromLP []int32
	if lp != nil && len(lp.Content) > 0 {
		fromLP = make([]int32, 0, len(lp.Content))
		for _, t := range lp.Content {
			v, ok := strings.CutPrefix(t.Token, "token_id:")
			if !ok {
				fromLP = nil
				break
			}
			id, err := strconv.ParseInt(v, 10, 32)
			if err != nil || id < 0 {
				return nil, fmt.Errorf("logprobs token %q is not a token id", t.Token)
			}
			fromLP = append(fromLP, int32(id))
		}
	}
	for _, id := range own {
		if id < 0 {
			return nil, fmt.Errorf("token_ids holds %d", id)
		}
	}
	switch {
	case len(own) > 0 && len(fromLP) > 0 && !slices.Equal(own, fromLP):
		return nil, fmt.Errorf("token_ids (%d ids) and the logprobs' token ids (%d) differ", len(own), len(fromLP))
	case len(own) > 0:
		return own, nil
	}
	return fromLP, nil
}
