package harnesses

import (
	"fmt"
	"strings"

	"go.starlark.net/starlark"

	"whale/core/policy"
)

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
	key := fmt.Sprintf("%s%s#%d/%d", r.keyPrefix, r.task.ID, r.sample, len(r.traj.Calls))
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

// requests builds the SAMPLES requests of r's pending call, showing each
// to the observer and the OnRequest hook first.
func (rt *runner) requests(r *rollout) []policy.Request {
	obs := rt.obs
	n := max(1, rt.h.Samples)
	reqs := make([]policy.Request, n)
	for j := range reqs {
		key := sampleKey(r.pending.Key, j)
		reqs[j] = policy.Request{Key: key, Messages: r.ask, ContextTokens: rt.h.ContextTokens, MaxNewTokens: rt.opts.MaxNewTokens,
			Temperature: rt.opts.Temperature, TopK: rt.opts.TopK, TopP: rt.opts.TopP, Seed: rt.opts.Seed}
		if obs != nil || rt.opts.OnRequest != nil {
			info := RequestInfo{Key: key, Task: r.task, Obs: r.obs, Require: r.require, Tools: rt.h.Tools}
			// Lanes build requests on several goroutines: the hooks
			// see one request at a time.
			rt.hookMu.Lock()
			if obs != nil {
				obs.ObserveRequest(info)
			}
			if rt.opts.OnRequest != nil {
				rt.opts.OnRequest(info)
			}
			rt.hookMu.Unlock()
		}
	}
	return reqs
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
