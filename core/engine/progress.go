package engine

import (
	"strings"
	"sync"
	"time"
)

// Progress is the run's work in flight, for screens that poll it (the
// workbench's tick, a headless bar): what runs now, how many of its
// rollouts are done, since when, and the ledger after the last event. It
// is a snapshot beside the run, never stored or replayed: nothing a run
// computes depends on it.
type Progress struct {
	// What names the work: "val evaluation", "test evaluation",
	// "scoring a harness", "weight-step rollouts", "null-policy audit".
	What        string    `json:"what,omitempty"`
	Done, Total int       // rollouts of that work
	Since       time.Time `json:"since"`
	// Ledger is the run's ledger at its last event (model calls per
	// purpose: training and search count against the budget).
	Ledger Ledger `json:"ledger"`
	// Budget is the run's budget of model calls (0: none).
	Budget int `json:"budget"`
}

// ETA is the time the work in flight still needs at the pace of its
// done rollouts; false before the first is done or once all are.
func (p Progress) ETA(now time.Time) (time.Duration, bool) {
	if p.Done <= 0 || p.Total <= p.Done || p.Since.IsZero() {
		return 0, false
	}
	el := now.Sub(p.Since)
	return time.Duration(float64(el) / float64(p.Done) * float64(p.Total-p.Done)), true
}

// progress guards the snapshot: the engine writes it, screens read it.
type progress struct {
	mu sync.Mutex
	p  Progress
}

// Progress returns the snapshot of the work in flight. Safe to call from
// any goroutine while the run runs.
func (e *Engine) Progress() Progress {
	e.prog.mu.Lock()
	defer e.prog.mu.Unlock()
	p := e.prog.p
	p.Budget = e.Cfg.Budget
	return p
}

// progressOf returns the harnesses.RunOptions.Progress callback of work
// whose request keys begin with prefix.
func (e *Engine) progressOf(prefix string) func(done, total int) {
	what := workName(prefix)
	return func(done, total int) {
		e.prog.mu.Lock()
		defer e.prog.mu.Unlock()
		if e.prog.p.What != what || done == 0 || e.prog.p.Total != total || done < e.prog.p.Done {
			// A new piece of work begins.
			e.prog.p.What, e.prog.p.Since = what, time.Now()
		}
		e.prog.p.Done, e.prog.p.Total = done, total
	}
}

// noteLedger records the ledger for Progress (at every event).
func (e *Engine) noteLedger() {
	e.prog.mu.Lock()
	defer e.prog.mu.Unlock()
	e.prog.p.Ledger = e.st.Ledger
}

// workName names the work behind a request-key prefix (runOpts).
func workName(prefix string) string {
	switch {
	case strings.HasPrefix(prefix, "val/"):
		return "val evaluation"
	case strings.HasPrefix(prefix, "test/"):
		return "test evaluation"
	case strings.HasPrefix(prefix, "audit/"):
		return "audit evaluation"
	case strings.HasPrefix(prefix, "s/"):
		return "scoring a harness"
	case strings.HasPrefix(prefix, "null/"):
		return "null-policy audit"
	}
	return "weight-step rollouts"
}
