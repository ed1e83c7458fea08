package remote

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"sync"

	"whale/core/policy"
)

// stream is an open batch of calls to the server. Submitted requests wait
// in queued until the next call to Next sends them, so that the samples
// of one chat, submitted one after another, go out as one call with n
// choices. Each call runs in its own goroutine under the stream's
// context and reports to done.
type stream struct {
	c      caller
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan callResult

	queued []queuedReq
	// inFlight holds the ids submitted whose completion Next has not yet
	// returned; ready the completions received and not yet returned.
	inFlight map[int]bool
	ready    []readyReply
	// err, once set, is what every later call returns: the stream is spent.
	err error
}

type queuedReq struct {
	id  int
	req policy.Request
}

// callResult is what one call's goroutine hands back: the replies of
// ids, in order, or why there are none.
type callResult struct {
	ids  []int
	reps []Reply
	err  error
}

type readyReply struct {
	id  int
	rep Reply
}

// caller sends one call of identical requests: a Policy to its server,
// a Pool to one of its endpoints.
type caller interface {
	send(ctx context.Context, reqs []policy.Request) ([]Reply, error)
	// maxN bounds the choices of one call; where names the server(s).
	maxN() int
	where() string
}

func (p *Policy) send(ctx context.Context, reqs []policy.Request) ([]Reply, error) {
	return p.call(ctx, reqs, "")
}
func (p *Policy) maxN() int     { return p.opts.MaxN }
func (p *Policy) where() string { return p.endpoint }

func (p *Policy) open(parent context.Context) *stream { return openStream(parent, p) }

func openStream(parent context.Context, c caller) *stream {
	ctx, cancel := context.WithCancel(parent)
	return &stream{c: c, ctx: ctx, cancel: cancel, done: make(chan callResult), inFlight: map[int]bool{}}
}

// Submit queues req; it is sent at the next call to Next.
func (s *stream) Submit(id int, req policy.Request) error {
	if s.err != nil {
		return s.err
	}
	if s.inFlight[id] {
		return fmt.Errorf("remote: request id %d (key %q) is already in flight", id, req.Key)
	}
	if err := checkRequest(req); err != nil {
		return fmt.Errorf("remote: request id %d (key %q): %w", id, req.Key, err)
	}
	s.queued = append(s.queued, queuedReq{id, req})
	s.inFlight[id] = true
	return nil
}

// Next sends what is queued, then waits for a completion.
func (s *stream) Next(ctx context.Context) (policy.Result, error) {
	id, rep, err := s.nextReply(ctx)
	return policy.Result{ID: id, Completion: rep.Completion}, err
}

// nextReply is Next with the whole reply.
func (s *stream) nextReply(ctx context.Context) (int, Reply, error) {
	if s.err != nil {
		return 0, Reply{}, s.err
	}
	s.flush()
	if len(s.inFlight) == 0 {
		return 0, Reply{}, policy.ErrStreamIdle
	}
	for len(s.ready) == 0 {
		select {
		case <-ctx.Done():
			return 0, Reply{}, s.fail(fmt.Errorf("remote: waiting for %s: cancelled: %w", s.c.where(), ctx.Err()))
		case r := <-s.done:
			if r.err != nil {
				return 0, Reply{}, s.fail(r.err)
			}
			for j, id := range r.ids {
				s.ready = append(s.ready, readyReply{id, r.reps[j]})
			}
		}
	}
	res := s.ready[0]
	s.ready = s.ready[1:]
	delete(s.inFlight, res.id)
	return res.id, res.rep, nil
}

// fail spends the stream with err and cancels its calls.
func (s *stream) fail(err error) error {
	s.err = err
	s.cancel()
	return err
}

// Close cancels the calls in flight and waits for their goroutines.
func (s *stream) Close() error {
	s.cancel()
	s.wg.Wait()
	s.queued = nil
	return nil
}

// flush groups the queued requests and starts one call per group.
func (s *stream) flush() {
	for _, g := range group(s.queued, s.c.maxN()) {
		ids := make([]int, len(g))
		reqs := make([]policy.Request, len(g))
		for j, q := range g {
			ids[j], reqs[j] = q.id, q.req
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			reps, err := s.c.send(s.ctx, reqs)
			select {
			case s.done <- callResult{ids, reps, err}:
			case <-s.ctx.Done():
			}
		}()
	}
	s.queued = nil
}

// group splits qs into runs of identical requests (the same chat and
// sampling options; keys may differ), at most maxN each, in order of
// first appearance.
func group(qs []queuedReq, maxN int) [][]queuedReq {
	var out [][]queuedReq
	open := map[string]int{} // request shape → index in out of its group still filling
	for _, q := range qs {
		k := shapeKey(q.req)
		if i, ok := open[k]; ok && len(out[i]) < maxN {
			out[i] = append(out[i], q)
			continue
		}
		open[k] = len(out)
		out = append(out, []queuedReq{q})
	}
	return out
}

// shapeKey identifies what a call sends for r, less its seed and n.
func shapeKey(r policy.Request) string {
	b := mustJSON(chatRequest{Messages: r.Messages, MaxTokens: r.MaxNewTokens, Temperature: r.Temperature,
		TopP: topP(r.TopP), TopK: r.TopK})
	return string(b)
}

// callSeed is the seed a call sends: fixed by the run seed and the key of
// its first request, below 2³¹ so that every server's integer type holds
// it.
func callSeed(r policy.Request) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", r.Seed, r.Key)
	return int64(h.Sum64() >> 33)
}

// checkRequest refuses what no call could carry.
func checkRequest(r policy.Request) error {
	switch {
	case len(r.Messages) == 0:
		return fmt.Errorf("no messages")
	case r.MaxNewTokens < 1:
		return fmt.Errorf("MaxNewTokens %d must be positive", r.MaxNewTokens)
	case !(r.Temperature >= 0) || math.IsInf(float64(r.Temperature), 0):
		return fmt.Errorf("Temperature %v must be finite and ≥ 0", r.Temperature)
	case r.TopK < 0:
		return fmt.Errorf("TopK %d is negative", r.TopK)
	case !(r.TopP >= 0 && r.TopP <= 1):
		return fmt.Errorf("TopP %v outside [0, 1]", r.TopP)
	}
	for i, m := range r.Messages {
		switch m.Role {
		case "system", "user", "assistant", "tool":
		default:
			return fmt.Errorf("message %d: unknown role %q (want system, user, assistant or tool)", i, m.Role)
		}
	}
	return nil
}
