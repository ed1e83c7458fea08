package harnesses

import (
	"fmt"
	"slices"
	"strings"

	"go.starlark.net/starlark"

	"whale/data"
)

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
