package harnesses

import (
	"context"
	"fmt"
	"sync"

	"go.starlark.net/starlark"

	"whale/core/policy"
	"whale/data"
)

// RunOptions configure Run.
type RunOptions struct {
	// Seed is passed to every request; with the request keys it fixes
	// every sampled token.
	Seed uint64
	// K is the number of samples (rollouts) per task; 0 means 1.
	K int
	// Sampling options of every request.
	Temperature float32
	TopP        float32
	TopK        int
	// MaxNewTokens bounds each completion; 0 means 256.
	MaxNewTokens int
	// BatchSize bounds the requests of one Generate call, or, with a
	// policy that streams, the requests in flight at once (a voting call's
	// SAMPLES count as that many; one call always fits); 0 means all
	// pending requests in one call, or every rollout's in flight at once
	// (the policy then bounds what it decodes together).
	BatchSize int
	// EpisodeTokens, if positive, bounds the completion tokens of one
	// rollout over all its calls (as the policy reports them: a policy
	// that reports none is not bounded); a rollout that reaches it before
	// it is done ends as truncated.
	EpisodeTokens int
	// KeyPrefix is prepended to request keys (e.g. "val/") so that keys
	// stay unique across splits and phases.
	KeyPrefix string
	// Passes, if set, runs one rollout of every task per entry, keyed as
	// the one sample of a run with K = 1 and that entry as KeyPrefix:
	// several such runs decode together (a task's passes share its
	// prompt), each rollout drawing what it would draw alone. The
	// trajectories come task by task, the passes in order; K and
	// KeyPrefix are then unused.
	Passes []string
	// Lanes, above 1, drives the rollouts over that many streams at once
	// when the policy offers them (policy.Laned: the local model), one
	// goroutine each, sharing BatchSize; the trajectories are the same.
	Lanes int
	// OnRequest, if set, sees every request before it is sent, with the
	// episode behind it (one request at a time, from any goroutine).
	OnRequest func(RequestInfo)
	// Progress, if set, is called with the finished and total rollout
	// counts: before every round (the last sees all finished), or, with a
	// policy that streams, once at the start and whenever a rollout
	// finishes (one call at a time, from any lane's goroutine).
	Progress func(done, total int)
}

// RequestInfo is the episode behind one policy request. Checking policies
// (the oracle) use it to answer; the model never sees it.
type RequestInfo struct {
	Key  string
	Task data.Task
	Obs  data.Observation
	// Require is the action kind next_step demands, if any.
	Require data.ActionKind
	Tools   []string
}

// RequestObserver is implemented by policies that need the episode behind
// each request (the oracle). Run calls ObserveRequest before the request
// goes to the policy. A policy that wraps another (chat.Tokenized, a
// test's recorder) says so with a method Unwrap() policy.Policy, and Run
// looks through such wrappers for the observer, so that no wrapper has to
// forward ObserveRequest.
type RequestObserver interface {
	ObserveRequest(RequestInfo)
}

// observerOf finds the RequestObserver of pol or of a policy it wraps.
func observerOf(pol policy.Policy) RequestObserver {
	for pol != nil {
		if o, ok := pol.(RequestObserver); ok {
			return o
		}
		u, ok := pol.(interface{ Unwrap() policy.Policy })
		if !ok {
			return nil
		}
		pol = u.Unwrap()
	}
	return nil
}

// rollout is the runtime state of one episode.
type rollout struct {
	task   data.Task
	sample int
	// keyPrefix starts the rollout's request keys (RunOptions.KeyPrefix,
	// or its pass's).
	keyPrefix string
	ep        data.Episode
	obs       data.Observation
	obsVal    starlark.Value
	state     *starlark.Dict
	traj      *Trajectory
	// needObs is set when the observation changed and must be shown.
	needObs  bool
	feedback string
	require  data.ActionKind
	// requireMsg is next_step's message for a demanded kind.
	requireMsg string
	toolCalls  int
	// tokens counts completion tokens over all calls.
	tokens int
	done   bool
	// pending is the call waiting for the policy, ask the chat it hands
	// the policy (the transcript, or compact_history's version of it).
	pending *Call
	ask     []Message
	system  string
	// last is the text of the last completion the episode went on from.
	last string
}

// Run drives tasks × K rollouts through harness h and policy pol. Each
// rollout is a step-wise state machine that runs the harness until it
// needs the policy. A policy that streams (policy.Streamer: the local
// model) is kept full: a rollout's completion is processed the moment it
// arrives and its next request joins the batch being decoded, and a
// rollout that ends frees its slots for one not yet started (see
// runStream). Any other policy is driven in rounds: every live rollout
// advances to its next call and all of them go to pol in batched Generate
// calls (split by BatchSize). Both give the same trajectories, since a
// completion depends only on its request. Harness errors end only their
// own rollout (as FailHarness with the harness line); policy errors end
// the run.
//
// The policy is handed chats and fits them to the harness's
// CONTEXT_TOKENS itself: token ids exist only in its completions, which
// the calls record for the weight phase.
func Run(ctx context.Context, h *Harness, dom data.Domain, tasks []data.Task, pol policy.Policy, opts RunOptions) ([]Trajectory, error) {
	if opts.K <= 0 {
		opts.K = 1
	}
	if opts.MaxNewTokens <= 0 {
		opts.MaxNewTokens = 256
	}
	system := h.systemPrompt()
	type key struct {
		prefix string
		sample int
	}
	var draws []key // a task's rollouts
	if len(opts.Passes) > 0 {
		for _, p := range opts.Passes {
			draws = append(draws, key{p, 0})
		}
	} else {
		for s := 0; s < opts.K; s++ {
			draws = append(draws, key{opts.KeyPrefix, s})
		}
	}
	rs := make([]*rollout, 0, len(tasks)*len(draws))
	keys := map[string]bool{}
	for _, t := range tasks {
		for _, d := range draws {
			k := fmt.Sprintf("%s%s#%d", d.prefix, t.ID, d.sample)
			if keys[k] {
				return nil, fmt.Errorf("harnesses: run: request key %q appears twice (a task id given twice, or a pass twice); request keys must be unique", k)
			}
			keys[k] = true
			ep := dom.NewEpisode(t)
			r := &rollout{task: t, sample: d.sample, keyPrefix: d.prefix, ep: ep, state: starlark.NewDict(8), needObs: true, system: system,
				traj: &Trajectory{TaskID: t.ID, Sample: d.sample, Domain: dom.Name(), Harness: h.Hash}}
			r.setObs(ep.Observe())
			r.traj.Messages = append(r.traj.Messages, Message{Role: "system", Content: system})
			rs = append(rs, r)
		}
	}
	rt := &runner{h: h, opts: opts, obs: observerOf(pol)}
	var err error
	if st, ok := pol.(policy.Streamer); ok {
		err = rt.runStream(ctx, st, rs, len(draws))
	} else {
		err = rt.runRounds(ctx, pol, rs)
	}
	if err != nil {
		return nil, err
	}
	out := make([]Trajectory, len(rs))
	for i, r := range rs {
		out[i] = *r.traj
	}
	return out, nil
}

// runRounds is Run for a policy that cannot stream: each round advances
// every live rollout to its next policy call and sends the calls in
// chunks of BatchSize requests, each chunk waiting for its slowest
// completion.
func (rt *runner) runRounds(ctx context.Context, pol policy.Policy, rs []*rollout) error {
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("harnesses: run: %w", err)
		}
		var batch []*rollout
		done := 0
		for _, r := range rs {
			if !r.done && r.pending == nil {
				rt.advance(r)
			}
			if r.done {
				done++
			} else if r.pending != nil {
				batch = append(batch, r)
			}
		}
		if rt.opts.Progress != nil {
			rt.opts.Progress(done, len(rs))
		}
		if len(batch) == 0 {
			return nil
		}
		size := rt.opts.BatchSize
		if size <= 0 {
			size = len(batch)
		}
		// A chunk holds whole rollouts, each asking for SAMPLES completions.
		size = max(1, size/max(1, rt.h.Samples))
		for lo := 0; lo < len(batch); lo += size {
			chunk := batch[lo:min(lo+size, len(batch))]
			if err := rt.generate(ctx, pol, chunk); err != nil {
				return err
			}
		}
	}
}

type runner struct {
	h    *Harness
	opts RunOptions
	// obs is the policy's RequestObserver, or nil; hookMu serializes it
	// and OnRequest across lanes.
	obs    RequestObserver
	hookMu sync.Mutex
}

func (r *rollout) setObs(o data.Observation) {
	r.obs = o
	v, err := fromGo(map[string]any{"text": o.Text, "fields": o.Fields, "turn": o.Turn})
	if err != nil {
		// Observations hold only the plain types data.Observation allows.
		panic(fmt.Sprintf("harnesses: observation of task %s: %v", r.task.ID, err))
	}
	r.obsVal = v
}

func (r *rollout) finish(reward float64, kind data.FailureKind) {
	r.done = true
	r.pending = nil
	r.traj.Reward = reward
	r.traj.Failure = kind
}

func (r *rollout) harnessError(err error) {
	r.traj.Error = err.Error()
	r.finish(0, FailHarness)
}

func (r *rollout) say(role, content string) {
	r.traj.Messages = append(r.traj.Messages, Message{Role: role, Content: content})
}

// generate sends one batch to the policy and processes the completions:
// SAMPLES requests per rollout, consecutive.
func (rt *runner) generate(ctx context.Context, pol policy.Policy, chunk []*rollout) error {
	n := max(1, rt.h.Samples)
	reqs := make([]policy.Request, 0, len(chunk)*n)
	for _, r := range chunk {
		reqs = append(reqs, rt.requests(r)...)
	}
	comps, err := pol.Generate(ctx, reqs)
	if err != nil {
		return fmt.Errorf("harnesses: run: policy: %w", err)
	}
	if len(comps) != len(reqs) {
		return fmt.Errorf("harnesses: run: policy returned %d completions for %d requests", len(comps), len(reqs))
	}
	for i, r := range chunk {
		rt.deliver(r, comps[i*n:(i+1)*n])
	}
	return nil
}
