package remote

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"whale/core/policy"
)

// Defaults of PoolOptions' zero values.
const (
	DefaultFailLimit = 3
	DefaultCooldown  = 30 * time.Second
	// maxCooldown caps the doubling wait of an endpoint that keeps
	// failing its health check.
	maxCooldown = 10 * time.Minute
	// healthTimeout bounds one health check.
	healthTimeout = 10 * time.Second
)

// PoolOptions configure a Pool: several servers of one model (replicas of
// a serving fleet) as one policy.
type PoolOptions struct {
	// URLs are the endpoints' bases, each as Options.URL; at least one,
	// each once.
	URLs []string
	// Options are every endpoint's (its URL is unused). Concurrency
	// bounds the calls in flight at each endpoint; Attempts bounds the
	// tries of one call at each endpoint, so a call may be tried
	// Attempts × len(URLs) times over the pool before it fails.
	Options
	// FailLimit is how many failed calls in a row take an endpoint out
	// (0: DefaultFailLimit).
	FailLimit int
	// Cooldown is how long an endpoint stays out before its health is
	// checked again (0: DefaultCooldown); it doubles, up to ten minutes,
	// while the endpoint keeps failing the check.
	Cooldown time.Duration
}

// EndpointStats are one endpoint's figures since the pool was made.
type EndpointStats struct {
	URL string `json:"url"`
	// Calls are the calls it answered; Errors its failed attempts.
	Calls  int `json:"calls"`
	Errors int `json:"errors"`
	// LatencyMS is the mean time of an answered call, in milliseconds.
	LatencyMS float64 `json:"latency_ms"`
	InFlight  int     `json:"in_flight,omitempty"`
	// Out says the endpoint is taken out now; TakenOut counts the times
	// it was.
	Out      bool `json:"out,omitempty"`
	TakenOut int  `json:"taken_out,omitempty"`
}

// endpoint is one server of a pool and what the pool knows of it.
type endpoint struct {
	p   *Policy
	url string

	inFlight, calls, errors int
	latency                 time.Duration
	// fails counts failed calls in a row; out, once fails reaches the
	// limit, until retryAt, when a health check (checking) may bring it
	// back.
	fails, takenOut int
	out, checking   bool
	retryAt         time.Time
	cooldown        time.Duration
}

// Pool is a policy served by several OpenAI-compatible endpoints of the
// same model. Each call goes to the endpoint with the fewest calls in
// flight, to the one its task's chat hashes to when that one is among
// the least loaded (so that a task's calls meet the prefix cache they
// filled). An endpoint whose calls fail FailLimit times in a row is taken
// out, its calls going elsewhere, until a health check (GET …/models,
// else /health) passes after its cooldown. A call is lost only when every
// endpoint keeps failing it. Safe for concurrent use.
type Pool struct {
	opts PoolOptions
	eps  []*endpoint

	mu sync.Mutex
	// model is what calls ask for (Options.Model until SetModel).
	model string
	// wake is closed, and replaced, whenever an endpoint frees a call or
	// changes state: a caller that found none in waits on it.
	wake chan struct{}
	// adapter is the LoRA adapter every endpoint should hold (name,
	// path; "" for none): an endpoint loads it before it rejoins.
	adapter, adapterPath string

	jitter *rand.Rand
	sleep  func(ctx context.Context, d time.Duration) error
	now    func() time.Time
}

var _ policy.Streamer = (*Pool)(nil)

// NewPool checks o and returns the pool; it contacts no server.
func NewPool(o PoolOptions) (*Pool, error) {
	switch {
	case len(o.URLs) == 0:
		return nil, errors.New("remote: a pool needs at least one server URL")
	case o.FailLimit < 0:
		return nil, fmt.Errorf("remote: fail limit %d (want ≥ 1, or 0 for %d)", o.FailLimit, DefaultFailLimit)
	case o.Cooldown < 0:
		return nil, fmt.Errorf("remote: cooldown %s (want > 0, or 0 for %s)", o.Cooldown, DefaultCooldown)
	}
	o.FailLimit = orDefault(o.FailLimit, DefaultFailLimit)
	o.Cooldown = orDefault(o.Cooldown, DefaultCooldown)
	o.Attempts = orDefault(o.Attempts, DefaultAttempts)
	o.Backoff = orDefault(o.Backoff, DefaultBackoff)
	pl := &Pool{opts: o, model: o.Model, wake: make(chan struct{}),
		jitter: rand.New(rand.NewPCG(o.Seed, 0x706f6f6c)), sleep: sleepCtx, now: time.Now}
	seen := map[string]int{}
	for i, u := range o.URLs {
		if j, dup := seen[strings.TrimRight(u, "/")]; dup {
			return nil, fmt.Errorf("remote: server URL %q is given twice (as endpoints %d and %d)", u, j+1, i+1)
		}
		seen[strings.TrimRight(u, "/")] = i
		eo := o.Options
		eo.URL, eo.Attempts = u, 1 // the pool retries, on whichever endpoint is best then
		p, err := New(eo)
		if err != nil {
			return nil, fmt.Errorf("remote: endpoint %d of %d: %w", i+1, len(o.URLs), err)
		}
		pl.eps = append(pl.eps, &endpoint{p: p, url: u, cooldown: o.Cooldown})
	}
	return pl, nil
}

// Name says which model at how many servers, for reports.
func (pl *Pool) Name() string {
	if len(pl.eps) == 1 {
		return pl.Model() + " at " + pl.eps[0].url
	}
	return fmt.Sprintf("%s at %d servers (%s, …)", pl.Model(), len(pl.eps), pl.eps[0].url)
}

// Model is the model calls ask for now.
func (pl *Pool) Model() string {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.model
}

// SetModel makes later calls ask for name (a fleet's current adapter).
func (pl *Pool) SetModel(name string) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.model = name
}

// URLs are the endpoints, in the order given.
func (pl *Pool) URLs() []string {
	out := make([]string, len(pl.eps))
	for i, ep := range pl.eps {
		out[i] = ep.url
	}
	return out
}

// Stats are every endpoint's figures, in the order given.
func (pl *Pool) Stats() []EndpointStats {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	out := make([]EndpointStats, len(pl.eps))
	for i, ep := range pl.eps {
		s := EndpointStats{URL: ep.url, Calls: ep.calls, Errors: ep.errors, InFlight: ep.inFlight, Out: ep.out, TakenOut: ep.takenOut}
		if ep.calls > 0 {
			s.LatencyMS = float64(ep.latency.Microseconds()) / 1000 / float64(ep.calls)
		}
		out[i] = s
	}
	return out
}

// Generate sends the batch as Policy.Generate does, each call to the
// endpoint best placed to take it.
func (pl *Pool) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	return policy.GenerateStream(ctx, openStream(ctx, pl), reqs)
}

// OpenStream implements policy.Streamer.
func (pl *Pool) OpenStream() (policy.Stream, error) { return openStream(context.Background(), pl), nil }

func (pl *Pool) send(ctx context.Context, reqs []policy.Request) ([]Reply, error) {
	return pl.call(ctx, reqs, pl.Model())
}
func (pl *Pool) maxN() int { return pl.eps[0].p.opts.MaxN }
func (pl *Pool) where() string {
	if len(pl.eps) == 1 {
		return pl.eps[0].p.endpoint
	}
	return fmt.Sprintf("%d servers", len(pl.eps))
}

// call sends reqs as one call to the best endpoint, and again to the
// best one then while the endpoint is at fault.
func (pl *Pool) call(ctx context.Context, reqs []policy.Request, model string) ([]Reply, error) {
	return pl.route(ctx, reqs[0].Key, affinity(reqs[0], len(pl.eps)), func(ep *endpoint) ([]Reply, error) {
		return ep.p.call(ctx, reqs, model)
	})
}

// route sends one call (send, to an endpoint) to the best endpoint, pref
// when it is among the least loaded, and again to the best one then
// while the endpoint is at fault.
func (pl *Pool) route(ctx context.Context, key string, pref int, send func(*endpoint) ([]Reply, error)) ([]Reply, error) {
	tries := pl.opts.Attempts * len(pl.eps)
	for try := 1; ; try++ {
		ep, err := pl.pick(ctx, pref)
		if err != nil {
			return nil, fmt.Errorf("remote: request %q: %w", key, err)
		}
		t0 := time.Now()
		reps, err := send(ep)
		fault := err != nil && ctx.Err() == nil && endpointFault(err)
		pl.settle(ep, err, fault, time.Since(t0))
		switch {
		case err == nil:
			return reps, nil
		case !fault:
			return nil, err
		case try >= tries:
			return nil, fmt.Errorf("remote: request %q: gave up after %d attempts over %d servers; the last: %w", key, try, len(pl.eps), err)
		}
		if !pl.anotherIn(ep) {
			if err := pl.sleep(ctx, pl.backoff(try)); err != nil {
				return nil, fmt.Errorf("remote: request %q: cancelled while waiting to retry: %w", key, err)
			}
		}
	}
}

// endpointFault says whether err is the endpoint's, so that another may
// serve the call: what a retry could pass (connection errors, timeouts,
// 429 and 5xx), and 404, a server that lacks the model (an endpoint that
// has not loaded a fleet's adapter).
func endpointFault(err error) bool {
	var f *failure
	return errors.As(err, &f) && (f.retry || f.status == http.StatusNotFound)
}

// affinity is the endpoint a request's chat prefers: a hash of its head
// (the system prompt and the task), so that every call of a task, and the
// k samples of one, meet the same prefix cache.
func affinity(r policy.Request, n int) int {
	h := fnv.New32a()
	for i, m := range r.Messages {
		if i == 2 {
			break
		}
		io.WriteString(h, m.Role)
		h.Write([]byte{0})
		io.WriteString(h, m.Content)
		h.Write([]byte{0})
	}
	return int(h.Sum32() % uint32(n))
}

// pick reserves the endpoint that takes the next call: pref when it has
// no more calls in flight than the least loaded endpoint that is in, else
// the least loaded (the first of equals). Out endpoints past their
// cooldown are checked first; with none in, it waits for one.
func (pl *Pool) pick(ctx context.Context, pref int) (*endpoint, error) {
	for {
		pl.mu.Lock()
		now := pl.now()
		var check *endpoint
		for _, ep := range pl.eps {
			if ep.out && !ep.checking && !now.Before(ep.retryAt) {
				check, ep.checking = ep, true
				break
			}
		}
		if check != nil {
			pl.mu.Unlock()
			pl.recheck(ctx, check)
			continue
		}
		var best *endpoint
		for _, ep := range pl.eps {
			if !ep.out && (best == nil || ep.inFlight < best.inFlight) {
				best = ep
			}
		}
		if best != nil {
			if p := pl.eps[pref]; !p.out && p.inFlight == best.inFlight {
				best = p
			}
			best.inFlight++
			pl.mu.Unlock()
			return best, nil
		}
		// Every endpoint is out: wait for the first cooldown to pass or
		// for a check under way to bring one back.
		next := time.Duration(-1)
		for _, ep := range pl.eps {
			if !ep.checking && (next < 0 || ep.retryAt.Sub(now) < next) {
				next = ep.retryAt.Sub(now)
			}
		}
		wake := pl.wake
		pl.mu.Unlock()
		t := time.NewTimer(max(next, time.Millisecond))
		if next < 0 { // every endpoint is being checked: its end wakes us
			t.Stop()
		}
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("every one of the %d servers is out (failing), and waiting was cancelled: %w", len(pl.eps), ctx.Err())
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// recheck runs ep's health check (and, for a fleet, loads the current
// adapter) and brings it back in or leaves it out for a longer cooldown.
func (pl *Pool) recheck(ctx context.Context, ep *endpoint) {
	err := pl.healthy(ctx, ep)
	pl.mu.Lock()
	name, path := pl.adapter, pl.adapterPath
	pl.mu.Unlock()
	if err == nil && name != "" {
		err = ep.loadAdapter(ctx, name, path)
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	ep.checking = false
	if err == nil && name == pl.adapter {
		ep.out, ep.fails, ep.cooldown = false, 0, pl.opts.Cooldown
	} else {
		ep.cooldown = min(2*ep.cooldown, maxCooldown)
		ep.retryAt = pl.now().Add(ep.cooldown)
	}
	pl.signal()
}

// settle books a call's end at ep: a fault counts toward taking it out.
func (pl *Pool) settle(ep *endpoint, err error, fault bool, took time.Duration) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	ep.inFlight--
	switch {
	case err == nil:
		ep.calls++
		ep.latency += took
		ep.fails = 0
	case fault:
		ep.errors++
		ep.fails++
		if ep.fails >= pl.opts.FailLimit && !ep.out {
			pl.takeOut(ep)
		}
	}
	pl.signal()
}

// takeOut marks ep out for its cooldown (pl.mu held).
func (pl *Pool) takeOut(ep *endpoint) {
	ep.out = true
	ep.takenOut++
	ep.retryAt = pl.now().Add(ep.cooldown)
}

// signal wakes the callers waiting for an endpoint (pl.mu held).
func (pl *Pool) signal() {
	close(pl.wake)
	pl.wake = make(chan struct{})
}

// anotherIn says whether an endpoint other than ep is in.
func (pl *Pool) anotherIn(ep *endpoint) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for _, o := range pl.eps {
		if o != ep && !o.out {
			return true
		}
	}
	return false
}

// backoff is the jittered wait before retry number try when no other
// endpoint is in.
func (pl *Pool) backoff(try int) time.Duration {
	return jitteredBackoff(pl.opts.Backoff, try, &pl.mu, pl.jitter)
}

// healthy checks ep: GET {base}/models (OpenAI's), else /health at the
// server's root (vLLM's, SGLang's, llama.cpp's); a 2xx from either passes.
func (pl *Pool) healthy(ctx context.Context, ep *endpoint) error {
	base := baseOf(ep.url)
	first := pl.get(ctx, ep, base+"/models")
	if first == nil {
		return nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return first
	}
	u.Path, u.RawQuery = "/health", ""
	if err := pl.get(ctx, ep, u.String()); err != nil {
		return fmt.Errorf("remote: health check of %s: %v; %v", ep.url, first, err)
	}
	return nil
}

func (pl *Pool) get(ctx context.Context, ep *endpoint, u string) error {
	ctx, cancel := context.WithTimeout(ctx, min(healthTimeout, ep.p.opts.Timeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if ep.p.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+ep.p.opts.APIKey)
	}
	resp, err := ep.p.client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: HTTP %s", u, resp.Status)
	}
	return nil
}

// baseOf is an endpoint's API base: its URL less a trailing
// /chat/completions.
func baseOf(u string) string {
	return strings.TrimSuffix(strings.TrimRight(u, "/"), "/chat/completions")
}
