// Package remote is a policy served by an OpenAI-compatible chat
// completions endpoint (vLLM, SGLang, llama.cpp's server, ollama, a hosted
// API): rollouts for evaluation and harness search from a serving stack
// rather than the local model. It posts each chat to {URL}/chat/completions
// with logprobs on, and sends requests that share a chat and sampling
// options (a voting harness's samples, the first turn of a task's k
// rollouts) as one call with n choices.
//
// The server renders and tokenizes the chat, so this policy cannot count
// tokens: it sends the whole chat whatever ContextTokens says (as
// policy.Request asks of such a policy) and leaves Completion.Prompt and
// Tokens empty. Nothing it returns can be trained on; a remote model is
// sampled, never trained.
//
// Determinism is the server's business. Each call carries a seed derived
// from the run seed and the key of its first request, which servers that
// honour seed (vLLM, SGLang) use to fix their sampling, but the server's
// batching, hardware and version may still change its tokens; whale's
// same-seed-same-result guarantee ends at this boundary. The package must
// never read the environment or files: the caller hands it the key.
package remote

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"whale/core/policy"
)

// APIKeyEnv names the environment variable whale's commands read the
// server's API key from. A key is never a flag (it would show in the
// process list and shell history) and never stored with a run.
const APIKeyEnv = "WHALE_POLICY_API_KEY"

// Defaults of Options' zero values.
const (
	DefaultConcurrency = 8
	DefaultTimeout     = 5 * time.Minute
	DefaultAttempts    = 6
	DefaultMaxN        = 16
	DefaultBackoff     = 500 * time.Millisecond
)

const (
	// maxBackoff caps the doubling wait between attempts.
	maxBackoff = 30 * time.Second
	// maxRetryAfter is the longest Retry-After honoured; a server that
	// asks for longer ends the request instead of stalling the run.
	maxRetryAfter = 2 * time.Minute
	// maxReply bounds what is read of one reply.
	maxReply = 32 << 20
)

// Options configure a Policy.
type Options struct {
	// URL is the endpoint base, e.g. http://127.0.0.1:8000/v1 (a URL that
	// already ends in /chat/completions is used as is).
	URL string
	// Model is the model name the server serves.
	Model string
	// APIKey, if set, is sent as "Authorization: Bearer KEY".
	APIKey string
	// Concurrency bounds the HTTP calls in flight at once (0:
	// DefaultConcurrency). A call with n choices counts once.
	Concurrency int
	// Timeout bounds one attempt of a call, from sending to the last byte
	// of the reply (0: DefaultTimeout).
	Timeout time.Duration
	// Attempts bounds the tries of one call, the first included (0:
	// DefaultAttempts; 1: no retries). Retried are HTTP 429 and 5xx,
	// connection errors and timeouts; other failures end the call at once.
	Attempts int
	// MaxN bounds the choices asked of one call (0: DefaultMaxN). Servers
	// that refuse n > 1 (llama.cpp's) need 1.
	MaxN int
	// Backoff is the wait before the first retry (0: DefaultBackoff); it
	// doubles with each retry up to 30 s, jittered between half and all of
	// it by a source seeded with Seed. A Retry-After header replaces it.
	Backoff time.Duration
	Seed    uint64
	// TokenIDs asks the server for each completion's token ids (vLLM's
	// return_token_ids and return_tokens_as_token_ids) and names each
	// call by its first request's key (request_id): what a fleet that
	// samples a weight phase needs. Servers that know none of these
	// fields may refuse them, so plain policies leave it off.
	TokenIDs bool
	// Client, if set, sends the calls; nil means a client whose connection
	// pool keeps Concurrency connections to the server.
	Client *http.Client
}

// Policy is the server as a policy.Streamer. It is safe for concurrent
// use: the concurrency bound is shared by every caller and stream.
type Policy struct {
	opts     Options
	endpoint string
	client   *http.Client
	slots    chan struct{}

	mu     sync.Mutex
	jitter *rand.Rand
	// sleep waits d or until ctx ends; tests replace it to see the waits.
	sleep func(ctx context.Context, d time.Duration) error
}

var _ policy.Streamer = (*Policy)(nil)

// New checks o and returns the policy; it does not contact the server.
func New(o Options) (*Policy, error) {
	u, err := url.Parse(o.URL)
	switch {
	case o.URL == "":
		return nil, fmt.Errorf("remote: no server URL (want e.g. http://127.0.0.1:8000/v1)")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, fmt.Errorf("remote: server URL %q: want http(s)://host[:port][/path], e.g. http://127.0.0.1:8000/v1", o.URL)
	case u.User != nil:
		return nil, fmt.Errorf("remote: server URL %q holds credentials: pass the key as the API key (%s), never in the URL, which is stored with the run", u.Redacted(), APIKeyEnv)
	case o.Model == "":
		return nil, fmt.Errorf("remote: no model name for %s", o.URL)
	case o.Concurrency < 0:
		return nil, fmt.Errorf("remote: concurrency %d (want ≥ 1, or 0 for %d)", o.Concurrency, DefaultConcurrency)
	case o.Timeout < 0:
		return nil, fmt.Errorf("remote: timeout %s (want > 0, or 0 for %s)", o.Timeout, DefaultTimeout)
	case o.Attempts < 0:
		return nil, fmt.Errorf("remote: attempts %d (want ≥ 1, or 0 for %d)", o.Attempts, DefaultAttempts)
	case o.MaxN < 0:
		return nil, fmt.Errorf("remote: max n %d (want ≥ 1, or 0 for %d)", o.MaxN, DefaultMaxN)
	case o.Backoff < 0:
		return nil, fmt.Errorf("remote: backoff %s (want ≥ 0)", o.Backoff)
	}
	o.Concurrency = orDefault(o.Concurrency, DefaultConcurrency)
	o.Attempts = orDefault(o.Attempts, DefaultAttempts)
	o.MaxN = orDefault(o.MaxN, DefaultMaxN)
	o.Timeout = orDefault(o.Timeout, DefaultTimeout)
	o.Backoff = orDefault(o.Backoff, DefaultBackoff)
	p := &Policy{opts: o, endpoint: endpointOf(o.URL), client: o.Client, slots: make(chan struct{}, o.Concurrency),
		jitter: rand.New(rand.NewPCG(o.Seed, 0x72656d6f7465)), sleep: sleepCtx}
	if p.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = o.Concurrency
		p.client = &http.Client{Transport: tr}
	}
	return p, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// endpointOf is the chat completions URL under base.
func endpointOf(base string) string {
	base = strings.TrimRight(base, "/")
	if strings.HasSuffix(base, "/chat/completions") {
		return base
	}
	return base + "/chat/completions"
}

// Name says which model at which server, for reports.
func (p *Policy) Name() string { return p.opts.Model + " at " + p.opts.URL }

// Generate sends the batch, identical requests grouped, at most
// Concurrency calls at a time; completions come back in request order.
// The first failure ends the batch (the calls still in flight are
// cancelled) and is returned.
func (p *Policy) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	return policy.GenerateStream(ctx, p.open(ctx), reqs)
}

// OpenStream implements policy.Streamer: requests submitted before a
// call to Next are grouped and sent together, and each completion is
// handed back when its call returns.
func (p *Policy) OpenStream() (policy.Stream, error) { return p.open(context.Background()), nil }

// backoff is the jittered wait before retry number try (1, 2, …).
func (p *Policy) backoff(try int) time.Duration {
	return jitteredBackoff(p.opts.Backoff, try, &p.mu, p.jitter)
}

// jitteredBackoff is base doubled for each retry after the first, at most
// maxBackoff, then drawn uniformly from its upper half with jitter (which
// mu guards).
func jitteredBackoff(base time.Duration, try int, mu *sync.Mutex, jitter *rand.Rand) time.Duration {
	d := base
	for i := 1; i < try && d < maxBackoff; i++ {
		d *= 2
	}
	d = min(d, maxBackoff)
	if d <= 1 {
		return d
	}
	mu.Lock()
	defer mu.Unlock()
	return d/2 + time.Duration(jitter.Int64N(int64(d/2)+1))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
