package engine

import (
	"context"

	"whale/core/chat"
	"whale/core/policy"
	"whale/core/search"
	"whale/data"
	"whale/harnesses"
)

// The null-policy audit: content-blind scripted policies (harnesses.Null)
// run through a candidate that won its paired comparison and through the
// domain's h0, on the audit split, nullK rollouts per task. A candidate
// that lifts them by more than NullLiftLimit is never accepted: it narrows
// the choice towards the answer, i.e. it does part of the solving. The
// null policies never call the model, so the audit costs no budget, and
// its verdict depends on the harness alone (not on the weights).
const (
	NullLiftLimit = 0.03
	nullTasks     = 128
	nullK         = 4
)

// admit is the Searcher's Admit hook.
func (e *Engine) admit(ctx context.Context, ent *search.Entry) (bool, error) {
	if !ent.HasNull {
		lift, ok, err := e.nullLift(ctx, ent.Source)
		if err != nil || !ok {
			return true, err
		}
		ent.NullLift, ent.HasNull = lift, true
	}
	ent.NullRefused = ent.NullLift > NullLiftLimit
	return !ent.NullRefused, nil
}

// nullLift is the null policy's mean reward under src minus under h0; ok
// is false where the domain has no null policy.
func (e *Engine) nullLift(ctx context.Context, src string) (float64, bool, error) {
	a, ok, err := e.nullAuditOf(ctx, src)
	return a.Lift, ok, err
}

// nullAuditOf is the audit's verdict on src (its h0 score measured once a
// run).
func (e *Engine) nullAuditOf(ctx context.Context, src string) (NullAudit, bool, error) {
	h, err := e.load(src)
	if err != nil {
		return NullAudit{}, false, err
	}
	return e.nullAuditH(ctx, h)
}

// nullAuditH is the audit's verdict on a loaded harness.
func (e *Engine) nullAuditH(ctx context.Context, h *harnesses.Harness) (NullAudit, bool, error) {
	if e.nullBase == nil {
		if ok, err := e.nullBaseline(ctx); err != nil || !ok {
			return NullAudit{}, ok, err
		}
	}
	got, err := e.nullScore(ctx, e.nullPol, h)
	if err != nil {
		return NullAudit{}, false, err
	}
	return newNullAudit(h.File, e.env.Domain.Name(), got, *e.nullBase, len(e.nullAudit)), true, nil
}

// nullBaseline sets up the audit's policy and tasks and measures h0 under
// them; false where the domain has no null policy.
func (e *Engine) nullBaseline(ctx context.Context) (bool, error) {
	null, err := harnesses.NewNull(e.env.Domain)
	if err != nil {
		return false, nil // a domain without a null policy: no audit
	}
	// The null policy reads the chat as the model would see it,
	// fitted to CONTEXT_TOKENS in the model's tokens.
	pol := chat.Tokenize(null, e.tmpl)
	tasks, err := e.env.Domain.Tasks(data.SplitAudit)
	if err != nil {
		return false, err
	}
	e.nullAudit = tasks[:min(nullTasks, len(tasks))]
	h0, err := harnesses.LoadBuiltin(e.env.Domain, "h0")
	if err != nil {
		return false, err
	}
	base, err := e.nullScore(ctx, pol, h0)
	if err != nil {
		return false, err
	}
	e.nullPol, e.nullBase = pol, &base
	return true, nil
}

func (e *Engine) nullScore(ctx context.Context, pol policy.Policy, h *harnesses.Harness) (float64, error) {
	if len(e.nullAudit) == 0 {
		return 0, nil
	}
	return nullMean(ctx, e.env.Domain, pol, h, e.nullAudit, e.runOpts("null/", nullK))
}
