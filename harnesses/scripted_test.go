package harnesses

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"whale/core/chat"
	"whale/core/policy"
	"whale/core/tokenizer"
)

// bytesTemplate is the built-in model's chat template: the tests give the
// text-replying policies the tokens that model would have seen and
// written, as the engine and the pretraining corpus do.
var bytesTemplate = func() *chat.Template {
	t, err := chat.NewTemplate(tokenizer.Bytes{})
	if err != nil {
		panic(err)
	}
	return t
}()

var bytesTok tokenizer.Bytes

// tokens gives p the byte model's tokens (chat.Tokenize).
func tokens(p policy.Policy) policy.Policy { return chat.Tokenize(p, bytesTemplate) }

// Reply is one scripted completion.
type Reply struct {
	Text string
	// Length marks a completion cut off by MaxNewTokens (no stop token).
	Length bool
	// LogProb is the log-probability reported for each of its tokens.
	LogProb float32
}

// seenRequest is a request as Scripted saw it: its key and the prompt its
// (fitted) chat renders to.
type seenRequest struct {
	Key    string
	Prompt []int32
}

// Scripted replies from per-episode scripts, in the byte model's tokens;
// run it under tokens(), which fits the chat as the model's would be.
// Replies are keyed by the episode part of the request key
// ("taskID#sample", with any key prefix); the n-th request of an episode
// gets the n-th reply (the SAMPLES requests of a voting call are
// consecutive). It records every request it sees.
type Scripted struct {
	Replies map[string][]Reply
	// Default, if set, answers episodes without a script.
	Default func(key string) Reply

	mu       sync.Mutex
	next     map[string]int
	Requests []seenRequest
}

// Generate returns the next scripted reply of each request's episode.
func (s *Scripted) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == nil {
		s.next = map[string]int{}
	}
	out := make([]policy.Completion, len(reqs))
	for i, r := range reqs {
		prompt, err := bytesTemplate.Render(r.Messages)
		if err != nil {
			return nil, err
		}
		s.Requests = append(s.Requests, seenRequest{Key: r.Key, Prompt: prompt})
		ep := r.Key
		if j := strings.LastIndex(ep, "/v"); j >= 0 && j > strings.LastIndexByte(ep, '#') {
			ep = ep[:j] // a voting sample's suffix
		}
		if j := strings.LastIndexByte(ep, '/'); j >= 0 {
			ep = ep[:j]
		}
		script, ok := s.Replies[ep]
		var rep Reply
		switch n := s.next[ep]; {
		case ok && n < len(script):
			rep = script[n]
		case s.Default != nil:
			rep = s.Default(r.Key)
		default:
			return nil, fmt.Errorf("harnesses: scripted policy: no reply %d for episode %q", n, ep)
		}
		s.next[ep]++
		ids := bytesTok.Encode(rep.Text)
		if rep.Length {
			out[i] = policy.Completion{Tokens: ids, LogProbs: make([]float32, len(ids)), Finish: policy.FinishLength}
			continue
		}
		ids = append(ids, tokenizer.BytesImEnd)
		out[i] = policy.Completion{Tokens: ids, LogProbs: make([]float32, len(ids)), Finish: policy.FinishStop}
		for j := range out[i].LogProbs {
			out[i].LogProbs[j] = rep.LogProb
		}
	}
	return out, nil
}
