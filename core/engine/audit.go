package engine

import (
	"context"
	"fmt"
	"strings"

	"whale/core/chat"
	"whale/core/policy"
	"whale/core/tokenizer"
	"whale/data"
	"whale/harnesses"
)

// NullAudit is the null-policy audit's verdict on one harness (see
// null.go): the content-blind policies' mean reward under it and under
// the domain's h0, on Tasks audit tasks, K rollouts each.
type NullAudit struct {
	Harness string  `json:"harness"`
	Domain  string  `json:"domain"`
	Score   float64 `json:"score"`
	Base    float64 `json:"h0_score"`
	Lift    float64 `json:"lift"`
	Limit   float64 `json:"limit"`
	Tasks   int     `json:"tasks"`
	K       int     `json:"k"`
	Refused bool    `json:"refused"`
}

// Sentence says the verdict and its figures in one sentence.
func (a NullAudit) Sentence() string {
	verdict := "passes"
	if a.Refused {
		verdict = "refuses"
	}
	return fmt.Sprintf("the null-policy audit %s %s: content-blind policies score %.1f %% under it against %.1f %% under h0 (%d %s audit tasks × %d), a lift of %+.1f points against the limit of %+.1f",
		verdict, a.Harness, 100*a.Score, 100*a.Base, a.Tasks, a.Domain, a.K, 100*a.Lift, 100*a.Limit)
}

func newNullAudit(name, domain string, score, base float64, tasks int) NullAudit {
	lift := score - base
	return NullAudit{Harness: name, Domain: domain, Score: score, Base: base, Lift: lift, Limit: NullLiftLimit,
		Tasks: tasks, K: nullK, Refused: lift > NullLiftLimit}
}

// AuditHarness runs the null-policy audit on h outside a run (`whale
// harness check --audit`, `whale eval`): the null policies read the chat
// fitted in tok's tokens, on the first n tasks of the audit split (0:
// the audit's own 128), drawing with seed. ok is false where the domain
// has no null policy.
func AuditHarness(ctx context.Context, dom data.Domain, tok tokenizer.Tokenizer, h *harnesses.Harness, n int, seed uint64) (NullAudit, bool, error) {
	null, err := harnesses.NewNull(dom)
	if err != nil {
		return NullAudit{}, false, nil
	}
	tmpl, err := chat.NewTemplate(tok)
	if err != nil {
		return NullAudit{}, false, fmt.Errorf("engine: audit: %w", err)
	}
	if n <= 0 {
		n = nullTasks
	}
	tasks, err := dom.Tasks(data.SplitAudit)
	if err != nil {
		return NullAudit{}, false, fmt.Errorf("engine: audit: %w", err)
	}
	tasks = tasks[:min(n, len(tasks))]
	if len(tasks) == 0 {
		return NullAudit{}, false, fmt.Errorf("engine: audit: the audit split of %s is empty", dom.Name())
	}
	h0, err := harnesses.LoadBuiltin(dom, "h0")
	if err != nil {
		return NullAudit{}, false, err
	}
	pol := chat.Tokenize(null, tmpl)
	// A run's settings (the default preset's), so that the verdict here
	// is the one a run would reach.
	opts := harnesses.RunOptions{Seed: seed, K: nullK, KeyPrefix: "null/"}
	if cfg, err := Preset("small", dom.Name()); err == nil {
		opts.Temperature, opts.MaxNewTokens = cfg.Temperature, cfg.MaxNewTokens
	}
	base, err := nullMean(ctx, dom, pol, h0, tasks, opts)
	if err != nil {
		return NullAudit{}, false, err
	}
	got := base
	if h.Hash != h0.Hash {
		if got, err = nullMean(ctx, dom, pol, h, tasks, opts); err != nil {
			return NullAudit{}, false, err
		}
	}
	return newNullAudit(h.File, dom.Name(), got, base, len(tasks)), true, nil
}

// nullMean is the null policy's mean reward under h on tasks.
func nullMean(ctx context.Context, dom data.Domain, pol policy.Policy, h *harnesses.Harness, tasks []data.Task, opts harnesses.RunOptions) (float64, error) {
	if len(tasks) == 0 {
		return 0, nil
	}
	ts, err := harnesses.Run(ctx, h, dom, tasks, pol, opts)
	if err != nil {
		return 0, err
	}
	sum := 0.0
	for _, t := range ts {
		sum += t.Reward
	}
	return sum / float64(len(ts)), nil
}

// auditStart audits a run's starting harness (a new run, a fork, a run
// from a checkpoint) before its first rollout: a harness the audit
// refuses never becomes an incumbent, so the run does not start. h0
// itself is its own baseline (lift 0) and is not run twice.
func (e *Engine) auditStart(ctx context.Context, h *harnesses.Harness) (*NullAudit, error) {
	h0, err := harnesses.Builtin(e.env.Domain.Name(), "h0")
	if err == nil && harnesses.Hash(h0) == h.Hash {
		return nil, nil
	}
	a, ok, err := e.nullAuditH(ctx, h)
	if err != nil || !ok {
		return nil, err
	}
	a.Harness = "starting harness " + startName(e.Cfg.Harness, h)
	if a.Refused {
		return &a, &AuditRefusal{Audit: a}
	}
	return &a, nil
}

// AuditRefusal is the error of a run whose starting harness the audit
// refused; a caller that knows the harness's file may name it instead
// (Audit.Harness).
type AuditRefusal struct{ Audit NullAudit }

func (r *AuditRefusal) Error() string { return "engine: " + r.Audit.Sentence() }

// startName is how errors name a starting harness: its built-in name or
// file, else its hash.
func startName(cfg string, h *harnesses.Harness) string {
	if len(cfg) > 0 && len(cfg) < 200 && !strings.Contains(cfg, "\n") {
		return cfg
	}
	return ShortHash(h.Hash)
}
