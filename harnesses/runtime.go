package harnesses

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.starlark.net/starlark"

	"whale/core/policy"
	"whale/data"
)

// FailHarness marks a rollout ended by the harness itself failing: a
// Starlark error, a contract violation at run time, or an answer the
// harness invented (anti-cheat). Only the runtime reports it.
const FailHarness data.FailureKind = "harness_error"

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
	// OnRequest, if set, sees every request before it is sent, with the
	// episode behind it.
	OnRequest func(RequestInfo)
	// Progress, if set, is called with the finished and total rollout
	// counts: before every round (the last sees all finished), or, with a
	// policy that streams, once at the start and whenever a rollout
	// finishes.
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

// Message is one chat message of a rollout's transcript: what the policy
// is handed.
type Message = policy.Message

// Call is one policy call of a rollout: exactly the tokens the model saw
// and produced, for the weight phase, and the text, for people. The
// tokens come from the completion; a policy that sees only text (a
// server, a scripted policy not given a tokenizer) leaves them empty.
type Call struct {
	Key        string    `json:"key"`
	Prompt     []int32   `json:"prompt"`
	Completion []int32   `json:"completion"`
	LogProbs   []float32 `json:"logprobs"`
	// Entropy is the policy's mean token entropy over Completion (nats;
	// 0 where the policy does not report it).
	Entropy float32             `json:"entropy,omitempty"`
	Finish  policy.FinishReason `json:"finish"`
	Text    string              `json:"text"`
	// Action is what parse_action made of Text, if anything.
	Action *data.Action `json:"action,omitempty"`
	// Outcome says what the runtime did with the completion: "tool",
	// "move", "answer", "format_retry", "invalid_retry", or a failure kind.
	Outcome string `json:"outcome"`
	// Dropped counts history messages the policy left out to fit
	// CONTEXT_TOKENS; Cut is set when a message had to be shortened as
	// well.
	Dropped int  `json:"dropped,omitempty"`
	Cut     bool `json:"cut,omitempty"`
	// Sample is the completion's index among a voting call's SAMPLES.
	// NotChosen marks a completion aggregate passed over: it was paid
	// for and is kept for people, but the episode did not go on from it
	// and the weight phase never trains on it. Its Prompt is left out
	// (it is the chosen call's, which follows it).
	Sample    int  `json:"sample,omitempty"`
	NotChosen bool `json:"not_chosen,omitempty"`
}

// ToolCall is one tool call of a rollout.
type ToolCall struct {
	Turn   int    `json:"turn"`
	Tool   string `json:"tool"`
	Args   string `json:"args"`
	Result string `json:"result"`
	// Shown is what the model was shown (format_tool_result's output).
	Shown  string `json:"shown"`
	Failed bool   `json:"failed,omitempty"`
	// ByHarness is set when next_step issued the call, not the model.
	ByHarness bool `json:"by_harness,omitempty"`
}

// Trained reports whether the weight phase may train on the call: every
// call the episode went on from (all but the completions a vote passed
// over).
func (c *Call) Trained() bool { return !c.NotChosen }

// Trajectory is one rollout: one task run through a harness by a policy.
type Trajectory struct {
	TaskID  string `json:"task_id"`
	Sample  int    `json:"sample"`
	Domain  string `json:"domain"`
	Harness string `json:"harness"`
	Calls   []Call `json:"calls"`
	// Tools lists tool calls in order.
	Tools []ToolCall `json:"tools,omitempty"`
	// Messages is the full transcript (before context truncation).
	Messages       []Message        `json:"messages"`
	Turns          int              `json:"turns"`
	FormatRetries  int              `json:"format_retries"`
	InvalidRetries int              `json:"invalid_retries"`
	Reward         float64          `json:"reward"`
	Failure        data.FailureKind `json:"failure,omitempty"`
	// Error explains a FailHarness with the harness's file:line:col.
	Error string `json:"error,omitempty"`
}

// FinalAnswer identifies what the rollout submitted: the normalised
// answers and moves it stepped with, in order ("" when none), so that two
// rollouts that said the same thing compare equal (maj@k).
func (t *Trajectory) FinalAnswer() string {
	var parts []string
	for _, c := range t.Calls {
		if c.Action != nil && !c.NotChosen && (c.Outcome == string(data.ActAnswer) || c.Outcome == string(data.ActMove)) {
			parts = append(parts, ActionKey(string(c.Action.Kind), c.Action.Text, "", ""))
		}
	}
	return strings.Join(parts, " ")
}

// ModelCalls counts the completions the rollout paid for: every call,
// voting samples included.
func (t *Trajectory) ModelCalls() int { return len(t.Calls) }

// rollout is the runtime state of one episode.
type rollout struct {
	task   data.Task
	sample int
	ep     data.Episode
	obs    data.Observation
	obsVal starlark.Value
	state  *starlark.Dict
	traj   *Trajectory
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
	rs := make([]*rollout, 0, len(tasks)*opts.K)
	keys := map[string]bool{}
	for _, t := range tasks {
		for s := 0; s < opts.K; s++ {
			k := fmt.Sprintf("%s#%d", t.ID, s)
			if keys[k] {
				return nil, fmt.Errorf("harnesses: run: task id %q appears twice; request keys must be unique", t.ID)
			}
			keys[k] = true
			ep := dom.NewEpisode(t)
			r := &rollout{task: t, sample: s, ep: ep, state: starlark.NewDict(8), needObs: true, system: system,
				traj: &Trajectory{TaskID: t.ID, Sample: s, Domain: dom.Name(), Harness: h.Hash}}
			r.setObs(ep.Observe())
			r.traj.Messages = append(r.traj.Messages, Message{Role: "system", Content: system})
			rs = append(rs, r)
		}
	}
	rt := &runner{h: h, opts: opts}
	var err error
	if st, ok := pol.(policy.Streamer); ok {
		err = rt.runStream(ctx, st, rs)
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
}

func (h *Harness) systemPrompt() string {
	var b strings.Builder
	for _, name := range h.Tools {
		desc := h.Env.ToolDescs[name]
		if !strings.HasPrefix(desc, name+":") {
			desc = name + ": " + desc
		}
		fmt.Fprintf(&b, "- %s\n", desc)
	}
	return strings.ReplaceAll(h.SystemPrompt, "{tools}", strings.TrimRight(b.String(), "\n"))
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

// hook calls a harness function after refreshing the runtime-owned keys of
// state, and checks the state's size after.
func (rt *runner) hook(r *rollout, name string, args ...starlark.Value) (starlark.Value, error) {
	// A fixed order keeps the dict's iteration order deterministic.
	for _, kv := range []struct {
		k string
		v int
	}{{"turn", r.traj.Turns}, {"tool_calls", r.toolCalls}, {"format_retries", r.traj.FormatRetries}, {"invalid_retries", r.traj.InvalidRetries}} {
		if err := r.state.SetKey(starlark.String(kv.k), starlark.MakeInt(kv.v)); err != nil {
			return nil, fmt.Errorf("%s: state: %w", rt.h.File, err)
		}
	}
	if err := r.state.SetKey(starlark.String("last_completion"), starlark.String(r.last)); err != nil {
		return nil, fmt.Errorf("%s: state: %w", rt.h.File, err)
	}
	v, err := rt.h.call(name, args...)
	if err != nil {
		return nil, err
	}
	if n := sizeOf(r.state, MaxValueBytes); n > MaxValueBytes {
		return nil, fmt.Errorf("%s: runtime: after %s the episode state holds about %d bytes, over the limit of %d", rt.h.where(name), name, n, MaxValueBytes)
	}
	return v, nil
}

// advance runs the harness until r needs the policy or is done.
func (rt *runner) advance(r *rollout) {
	h := rt.h
	for !r.done {
		if r.traj.Turns >= h.MaxTurns {
			r.finish(0, data.FailTurnLimit)
			return
		}
		if r.needObs {
			v, err := rt.hook(r, "format_observation", r.obsVal, r.state)
			if err != nil {
				r.harnessError(err)
				return
			}
			s, ok := v.(starlark.String)
			if !ok {
				r.harnessError(fmt.Errorf("%s: runtime: format_observation must return a string, not %s", h.where("format_observation"), v.Type()))
				return
			}
			msg := strings.ReplaceAll(h.UserPrompt, "{observation}", string(s))
			if r.feedback != "" {
				msg = r.feedback + "\n\n" + msg
				r.feedback = ""
			}
			r.say("user", msg)
			r.needObs = false
		}
		r.require, r.requireMsg = "", ""
		if h.has("next_step") {
			route, err := rt.hook(r, "next_step", r.state)
			if err != nil {
				r.harnessError(err)
				return
			}
			act, err := rt.readRoute(r, route)
			if err != nil {
				r.harnessError(err)
				return
			}
			if act != nil {
				rt.toolStep(r, *act, true)
				continue
			}
			if r.done {
				return
			}
		}
		rt.prepare(r)
		return
	}
}

// readRoute interprets next_step's answer: None (ask the model), a tool
// call the harness makes itself, {"require": kind, "message": text}, or
// {"stop": reason}.
func (rt *runner) readRoute(r *rollout, v starlark.Value) (*data.Action, error) {
	h := rt.h
	if v == starlark.None {
		return nil, nil
	}
	d, ok := v.(*starlark.Dict)
	if !ok {
		return nil, fmt.Errorf("%s: runtime: next_step must return None or a dict, not %s", h.where("next_step"), v.Type())
	}
	get := func(k string) (string, bool) {
		x, found, _ := d.Get(starlark.String(k))
		if !found {
			return "", false
		}
		s, _ := starlark.AsString(x)
		return s, true
	}
	if reason, ok := get("stop"); ok {
		r.say("user", "[harness stopped: "+reason+"]")
		r.finish(0, data.FailTurnLimit)
		return nil, nil
	}
	if req, ok := get("require"); ok {
		switch data.ActionKind(req) {
		case data.ActAnswer, data.ActMove, data.ActTool:
		default:
			return nil, fmt.Errorf("%s: runtime: next_step require=%q; want answer, move or tool", h.where("next_step"), req)
		}
		r.require = data.ActionKind(req)
		r.requireMsg, _ = get("message")
		return nil, nil
	}
	act, err := toAction(h.where("next_step"), "next_step", v)
	if err != nil {
		return nil, err
	}
	if act == nil || act.Kind != data.ActTool {
		return nil, fmt.Errorf("%s: runtime: next_step may issue only tool calls, not answers or moves (a harness presents, it does not solve)", h.where("next_step"))
	}
	if !slices.Contains(h.Tools, act.Tool) {
		return nil, fmt.Errorf("%s: runtime: next_step called tool %q, which is not in TOOLS %v", h.where("next_step"), act.Tool, h.Tools)
	}
	return act, nil
}

// toAction converts parse_action's result: None, or a dict with "kind"
// and the fields of data.Action.
func toAction(file, fn string, v starlark.Value) (*data.Action, error) {
	if v == starlark.None {
		return nil, nil
	}
	d, ok := v.(*starlark.Dict)
	if !ok {
		return nil, fmt.Errorf("%s: runtime: %s must return None or a dict like {\"kind\": \"answer\", \"text\": ...}, not %s", file, fn, v.Type())
	}
	field := func(k string) (string, error) {
		x, found, _ := d.Get(starlark.String(k))
		if !found || x == starlark.None {
			return "", nil
		}
		s, ok := x.(starlark.String)
		if !ok {
			return "", fmt.Errorf("%s: runtime: %s returned %q as %s; want a string", file, fn, k, x.Type())
		}
		return string(s), nil
	}
	var a data.Action
	kind, err := field("kind")
	if err != nil {
		return nil, err
	}
	a.Kind = data.ActionKind(kind)
	switch a.Kind {
	case data.ActAnswer, data.ActMove, data.ActTool:
	default:
		return nil, fmt.Errorf("%s: runtime: %s returned kind %q; want answer, move or tool", file, fn, kind)
	}
	if a.Text, err = field("text"); err != nil {
		return nil, err
	}
	if a.Tool, err = field("tool"); err != nil {
		return nil, err
	}
	if a.Args, err = field("args"); err != nil {
		return nil, err
	}
	return &a, nil
}

// prepare builds the prompt for r's next policy call.
func (rt *runner) prepare(r *rollout) {
	msgs := r.traj.Messages
	if rt.h.has("compact_history") {
		list := make([]starlark.Value, len(msgs))
		for i, m := range msgs {
			d := starlark.NewDict(2)
			_ = d.SetKey(starlark.String("role"), starlark.String(m.Role))
			_ = d.SetKey(starlark.String("content"), starlark.String(m.Content))
			list[i] = d
		}
		v, err := rt.hook(r, "compact_history", starlark.NewList(list), r.state)
		if err != nil {
			r.harnessError(err)
			return
		}
		msgs, err = toMessages(rt.h.where("compact_history"), v)
		if err != nil {
			r.harnessError(err)
			return
		}
	}
	key := fmt.Sprintf("%s%s#%d/%d", rt.opts.KeyPrefix, r.task.ID, r.sample, len(r.traj.Calls))
	r.pending, r.ask = &Call{Key: key}, msgs
}

func toMessages(file string, v starlark.Value) ([]Message, error) {
	l, ok := v.(*starlark.List)
	if !ok {
		return nil, fmt.Errorf("%s: runtime: compact_history must return a list of {\"role\", \"content\"} dicts, not %s", file, v.Type())
	}
	out := make([]Message, 0, l.Len())
	for i := 0; i < l.Len(); i++ {
		d, ok := l.Index(i).(*starlark.Dict)
		if !ok {
			return nil, fmt.Errorf("%s: runtime: compact_history item %d is %s, not a dict", file, i, l.Index(i).Type())
		}
		role, _, _ := d.Get(starlark.String("role"))
		content, _, _ := d.Get(starlark.String("content"))
		rs, ok1 := role.(starlark.String)
		cs, ok2 := content.(starlark.String)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%s: runtime: compact_history item %d needs string role and content", file, i)
		}
		switch rs {
		case "system", "user", "assistant", "tool":
		default:
			return nil, fmt.Errorf("%s: runtime: compact_history item %d has role %q; want system, user, assistant or tool", file, i, rs)
		}
		out = append(out, Message{Role: string(rs), Content: string(cs)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: runtime: compact_history returned no messages", file)
	}
	return out, nil
}

// sampleKey is the request key of sample j of a call: the call's own key
// for the first, so that a harness that votes and one that does not draw
// the same first completion (paired comparisons stay paired).
func sampleKey(key string, j int) string {
	if j == 0 {
		return key
	}
	return fmt.Sprintf("%s/v%d", key, j)
}

// generate sends one batch to the policy and processes the completions:
// SAMPLES requests per rollout, consecutive.
func (rt *runner) generate(ctx context.Context, pol policy.Policy, chunk []*rollout) error {
	n := max(1, rt.h.Samples)
	reqs := make([]policy.Request, 0, len(chunk)*n)
	obs := observerOf(pol)
	for _, r := range chunk {
		reqs = append(reqs, rt.requests(r, obs)...)
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

// requests builds the SAMPLES requests of r's pending call, showing each
// to the observer and the OnRequest hook first.
func (rt *runner) requests(r *rollout, obs RequestObserver) []policy.Request {
	n := max(1, rt.h.Samples)
	reqs := make([]policy.Request, n)
	for j := range reqs {
		key := sampleKey(r.pending.Key, j)
		reqs[j] = policy.Request{Key: key, Messages: r.ask, ContextTokens: rt.h.ContextTokens, MaxNewTokens: rt.opts.MaxNewTokens,
			Temperature: rt.opts.Temperature, TopK: rt.opts.TopK, TopP: rt.opts.TopP, Seed: rt.opts.Seed}
		if obs != nil || rt.opts.OnRequest != nil {
			info := RequestInfo{Key: key, Task: r.task, Obs: r.obs, Require: r.require, Tools: rt.h.Tools}
			if obs != nil {
				obs.ObserveRequest(info)
			}
			if rt.opts.OnRequest != nil {
				rt.opts.OnRequest(info)
			}
		}
	}
	return reqs
}

// deliver hands r the completions of its pending call: the only one, or
// the SAMPLES to vote on. A chat the policy could not fit to
// CONTEXT_TOKENS at all ends the rollout as the harness's error, with no
// call recorded: nothing was generated.
func (rt *runner) deliver(r *rollout, comps []policy.Completion) {
	r.ask = nil
	for _, c := range comps {
		if c.Finish == policy.FinishPrompt {
			r.harnessError(fmt.Errorf("harnesses: CONTEXT_TOKENS=%d is too small for this chat: %s", rt.h.ContextTokens, c.Error))
			return
		}
	}
	if len(comps) == 1 {
		rt.complete(r, comps[0])
		return
	}
	rt.vote(r, comps)
}

// vote turns the SAMPLES completions of one call into candidates, lets
// aggregate (or, without one, vote.plurality_valid) pick one, records the
// others as not chosen and goes on from the chosen one as if it were the
// only completion.
func (rt *runner) vote(r *rollout, comps []policy.Completion) {
	h := rt.h
	call := r.pending
	cands := make([]starlark.Value, len(comps))
	texts := make([]string, len(comps))
	acts := make([]*data.Action, len(comps))
	for j, c := range comps {
		texts[j] = c.Text
		d, act, err := rt.candidate(r, j, c, texts[j])
		acts[j] = act
		if err != nil {
			r.traj.Calls = append(r.traj.Calls, sampleCall(call, j, c, texts[j], string(FailHarness)))
			r.harnessError(err)
			return
		}
		cands[j] = d
	}
	list := starlark.NewList(cands)
	list.Freeze()
	var got starlark.Value
	var err error
	where := "vote.plurality_valid (the default aggregate)"
	if h.has("aggregate") {
		where = h.where("aggregate")
		got, err = rt.hook(r, "aggregate", list, r.state)
	} else {
		th, stop := newThread(h.File+":aggregate", CallSteps)
		got, err = starlark.Call(th, voteModule.Members["plurality_valid"], starlark.Tuple{list}, nil)
		stop()
	}
	chosen := -1
	if err == nil {
		chosen = chosenIndex(cands, got)
		if chosen < 0 {
			err = fmt.Errorf("%s: runtime: aggregate must return one of its candidates unchanged (a harness may choose among the model's completions, never write its own), not %s", where, clip(got.String()))
		}
	}
	if err != nil {
		for j, c := range comps {
			r.traj.Calls = append(r.traj.Calls, sampleCall(call, j, c, texts[j], string(FailHarness)))
		}
		r.harnessError(err)
		return
	}
	for j, c := range comps {
		if j == chosen {
			continue
		}
		rec := sampleCall(call, j, c, texts[j], "not_chosen")
		rec.Prompt, rec.NotChosen = nil, true // the chosen call, recorded next, holds the prompt
		// A valid sample's action, so the weight phase can verify it and
		// train on it when it is correct (core/engine's voteExtras).
		rec.Action = acts[j]
		r.traj.Calls = append(r.traj.Calls, rec)
	}
	call.Key, call.Sample = sampleKey(call.Key, chosen), chosen
	rt.complete(r, comps[chosen])
}

// sampleCall records completion j of a voting call.
func sampleCall(call *Call, j int, c policy.Completion, text, outcome string) Call {
	return Call{Key: sampleKey(call.Key, j), Prompt: c.Prompt, Completion: c.Tokens, LogProbs: c.LogProbs,
		Entropy: c.Entropy, Finish: c.Finish, Text: text, Outcome: outcome, Sample: j}
}

// chosenIndex finds got among the candidates: the same value, or one
// equal to it.
func chosenIndex(cands []starlark.Value, got starlark.Value) int {
	for j, c := range cands {
		if c == got {
			return j
		}
	}
	for j, c := range cands {
		if eq, err := starlark.Equal(c, got); err == nil && eq {
			return j
		}
	}
	return -1
}

// candidate builds the frozen dict aggregate sees for completion j:
// index, action (parse_action's result), valid, logprob (summed), tokens,
// text and finish.
func (rt *runner) candidate(r *rollout, j int, c policy.Completion, text string) (*starlark.Dict, *data.Action, error) {
	h := rt.h
	v, err := rt.hook(r, "parse_action", starlark.String(text))
	if err != nil {
		return nil, nil, err
	}
	act, err := toAction(h.where("parse_action"), "parse_action", v)
	if err != nil {
		return nil, nil, err
	}
	valid := false
	if act != nil && (act.Kind == data.ActTool || NormalizeAnswer(act.Text) != "") {
		ok, _, err := rt.validate(r, v, act)
		if err != nil {
			return nil, nil, err
		}
		valid = ok && (act.Kind == data.ActTool || Extracted(act.Text, text))
	}
	lp := 0.0
	for _, x := range c.LogProbs {
		lp += float64(x)
	}
	d := starlark.NewDict(7)
	for _, kv := range []struct {
		k string
		v starlark.Value
	}{{"index", starlark.MakeInt(j)}, {"action", v}, {"valid", starlark.Bool(valid)}, {"logprob", starlark.Float(lp)},
		{"tokens", starlark.MakeInt(len(c.Tokens))}, {"text", starlark.String(text)}, {"finish", starlark.String(string(c.Finish))}} {
		if err := d.SetKey(starlark.String(kv.k), kv.v); err != nil {
			return nil, nil, err
		}
	}
	d.Freeze()
	if !valid {
		act = nil
	}
	return d, act, nil
}

// complete handles one completion: parse, validate, retry, or step.
func (rt *runner) complete(r *rollout, c policy.Completion) {
	h := rt.h
	call := r.pending
	r.pending = nil
	call.Prompt, call.Dropped, call.Cut = c.Prompt, c.Dropped, c.Cut
	call.Completion = c.Tokens
	call.LogProbs = c.LogProbs
	call.Entropy = c.Entropy
	call.Finish = c.Finish
	call.Text = c.Text
	r.last = call.Text
	r.traj.Calls = append(r.traj.Calls, *call)
	rec := &r.traj.Calls[len(r.traj.Calls)-1]
	r.say("assistant", call.Text)
	r.tokens += len(c.Tokens)
	defer func() {
		if !r.done && rt.opts.EpisodeTokens > 0 && r.tokens >= rt.opts.EpisodeTokens {
			r.finish(0, data.FailTruncated)
		}
	}()

	v, err := rt.hook(r, "parse_action", starlark.String(call.Text))
	if err != nil {
		rec.Outcome = string(FailHarness)
		r.harnessError(err)
		return
	}
	act, err := toAction(h.where("parse_action"), "parse_action", v)
	if err != nil {
		rec.Outcome = string(FailHarness)
		r.harnessError(err)
		return
	}
	if act == nil || (act.Kind != data.ActTool && NormalizeAnswer(act.Text) == "") {
		kind := data.FailFormat
		if c.Finish != policy.FinishStop {
			kind = data.FailTruncated
		}
		if r.traj.FormatRetries < h.FormatRetryBudget {
			r.traj.FormatRetries++
			rec.Outcome = "format_retry"
			r.say("user", h.FormatRetryMessage)
			return
		}
		rec.Outcome = string(kind)
		r.finish(0, kind)
		return
	}
	rec.Action = act
	valid, reason, err := rt.validate(r, v, act)
	if err != nil {
		rec.Outcome = string(FailHarness)
		r.harnessError(err)
		return
	}
	if !valid {
		rt.invalid(r, rec, reason)
		return
	}
	if act.Kind != data.ActTool && !Extracted(act.Text, call.Text) {
		rec.Outcome = string(FailHarness)
		r.harnessError(fmt.Errorf("%s: anti-cheat: parse_action submitted %s %q, which does not occur in the completion (after lower-casing and dropping punctuation and spaces): a harness may extract an answer, never invent one", h.where("parse_action"), act.Kind, act.Text))
		return
	}
	rec.Outcome = string(act.Kind)
	if act.Kind == data.ActTool {
		rt.toolStep(r, *act, false)
		return
	}
	res := r.ep.Step(*act)
	r.traj.Turns++
	if res.Done {
		if res.Feedback != "" {
			r.say("user", res.Feedback)
		}
		r.finish(res.Reward, res.Failure)
		return
	}
	if res.Failure == data.FailInvalid {
		// The environment refused the action without ending the episode
		// (an illegal move): an invalid retry, with its feedback.
		r.setObs(res.Obs)
		rt.invalid(r, rec, res.Feedback)
		return
	}
	r.setObs(res.Obs)
	r.feedback = res.Feedback
	r.needObs = true
}

// invalid handles an invalid action recorded in rec: a retry with
// feedback while the budget lasts, the end of the rollout after.
func (rt *runner) invalid(r *rollout, rec *Call, feedback string) {
	if r.traj.InvalidRetries < rt.h.InvalidRetryBudget {
		r.traj.InvalidRetries++
		rec.Outcome = "invalid_retry"
		r.say("user", feedback)
		return
	}
	rec.Outcome = string(data.FailInvalid)
	r.finish(0, data.FailInvalid)
}

// validate applies the runtime's own checks (required kind, offered tool)
// and then is_valid_action; reason is the feedback for an invalid action.
func (rt *runner) validate(r *rollout, v starlark.Value, act *data.Action) (bool, string, error) {
	h := rt.h
	what := act.Text
	if act.Kind == data.ActTool {
		what = act.Tool + ": " + act.Args
	}
	reason := strings.ReplaceAll(h.InvalidRetryMessage, "{action}", what)
	if r.require != "" && act.Kind != r.require {
		msg := r.requireMsg
		if msg == "" {
			msg = fmt.Sprintf("A %s is required now, not a %s.", r.require, act.Kind)
		}
		return false, msg, nil
	}
	if act.Kind == data.ActTool && !slices.Contains(h.Tools, act.Tool) {
		return false, fmt.Sprintf("Unknown tool %q. Tools: %s.", act.Tool, strings.Join(h.Tools, ", ")), nil
	}
	ok, err := rt.hook(r, "is_valid_action", r.obsVal, v)
	if err != nil {
		return false, "", err
	}
	b, isBool := ok.(starlark.Bool)
	if !isBool {
		return false, "", fmt.Errorf("%s: runtime: is_valid_action must return True or False, not %s", h.where("is_valid_action"), ok.Type())
	}
	return bool(b), reason, nil
}

// toolStep runs a tool call through the episode and shows its result.
func (rt *runner) toolStep(r *rollout, act data.Action, byHarness bool) {
	res := r.ep.Step(act)
	r.traj.Turns++
	r.toolCalls++
	result := res.ToolResult
	failed := res.Failure != data.FailNone
	if failed && result == "" {
		result = "error: " + res.Feedback
	}
	shown := result
	if rt.h.has("format_tool_result") {
		v, err := rt.hook(r, "format_tool_result", starlark.String(act.Tool), starlark.String(result), r.state)
		if err != nil {
			r.harnessError(err)
			return
		}
		s, ok := v.(starlark.String)
		if !ok {
			r.harnessError(fmt.Errorf("%s: runtime: format_tool_result must return a string, not %s", rt.h.where("format_tool_result"), v.Type()))
			return
		}
		shown = string(s)
	}
	r.traj.Tools = append(r.traj.Tools, ToolCall{Turn: r.traj.Turns, Tool: act.Tool, Args: act.Args, Result: result, Shown: shown, Failed: failed, ByHarness: byHarness})
	r.say("tool", shown)
	r.setObs(res.Obs)
	if res.Done {
		r.finish(res.Reward, res.Failure)
	}
}
