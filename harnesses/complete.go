package harnesses

import (
	"fmt"
	"slices"
	"strings"

	"go.starlark.net/starlark"

	"whale/core/policy"
	"whale/data"
)

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
