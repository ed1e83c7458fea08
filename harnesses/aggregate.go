package harnesses

import (
	"fmt"

	"go.starlark.net/starlark"

	"whale/core/policy"
	"whale/data"
)

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
