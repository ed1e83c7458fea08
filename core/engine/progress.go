package engine

import (
	"strings"
	"sync"
	"time"

	"whale/data"
)

// Progress is the run's work in flight, for screens that poll it (the
// workbench's tick, a headless bar): what runs now, how many of its
// rollouts are done, since when, and the ledger after the last event. It
// is a snapshot beside the run, never stored or replayed: nothing a run
// computes depends on it.
type Progress struct {
	// What names the work: "val evaluation", "test evaluation",
	// "scoring a harness", "weight-step rollouts", "null-policy audit".
	What  string    `json:"what,omitempty"`
	Done  int       `json:"done"` // rollouts of that work done
	Total int       `json:"total"`
	Since time.Time `json:"since"`
	// Last is how long the last finished work of the same name and size
	// took (0: none yet): the ETA before the first rollout is done (a
	// policy that cannot stream finishes them all at once).
	Last time.Duration `json:"last,omitempty"`
	// Ledger is the run's ledger at its last event (model calls per
	// purpose: training and search count against the budget).
	Ledger Ledger `json:"ledger"`
	// Budget is the run's budget of model calls (0: none); TrainCalls
	// and SearchCalls are its two ledgers instead (0: one budget).
	Budget      int `json:"budget"`
	TrainCalls  int `json:"train_calls,omitempty"`
	SearchCalls int `json:"search_calls,omitempty"`
	// Servers are the run's servers' figures now (nil: a local policy).
	Servers *FleetStatus `json:"servers,omitempty"`
}

// TwoLedgers reports whether the run spends two ledgers (TrainCalls,
// SearchCalls) instead of one budget.
func (p Progress) TwoLedgers() bool { return p.TrainCalls > 0 || p.SearchCalls > 0 }

// LedgerText is Config.LedgerText for the run the snapshot is of.
func (p Progress) LedgerText() string {
	return ledgerText(p.Budget, p.TrainCalls, p.SearchCalls, p.Ledger)
}

// ETA is the time the work in flight still needs at the pace of its
// done rollouts; false before the first is done or once all are.
func (p Progress) ETA(now time.Time) (time.Duration, bool) {
	if p.Total <= p.Done || p.Since.IsZero() {
		return 0, false
	}
	el := now.Sub(p.Since)
	if p.Done <= 0 {
		if p.Last <= 0 {
			return 0, false
		}
		return max(0, p.Last-el), true
	}
	return time.Duration(float64(el) / float64(p.Done) * float64(p.Total-p.Done)), true
}

// progress guards the snapshot: the engine writes it, screens read it.
type progress struct {
	mu sync.Mutex
	p  Progress
	// took is how long the last finished work of each name and size took.
	took map[workKey]time.Duration
}

type workKey struct {
	what  string
	total int
}

// Progress returns the snapshot of the work in flight. Safe to call from
// any goroutine while the run runs.
func (e *Engine) Progress() Progress {
	e.prog.mu.Lock()
	defer e.prog.mu.Unlock()
	p := e.prog.p
	p.Budget, p.TrainCalls, p.SearchCalls = e.Cfg.Budget, e.Cfg.TrainCalls, e.Cfg.SearchCalls
	p.Servers = e.serverStatus()
	return p
}

// progressOf returns the harnesses.RunOptions.Progress callback of work
// whose request keys begin with prefix.
func (e *Engine) progressOf(prefix string) func(done, total int) {
	what := workName(prefix)
	return func(done, total int) {
		e.prog.mu.Lock()
		defer e.prog.mu.Unlock()
		pr := &e.prog
		now := time.Now()
		if pr.p.What != what || done == 0 || pr.p.Total != total || done < pr.p.Done {
			// A new piece of work begins.
			pr.p.What, pr.p.Since = what, now
			pr.p.Last = pr.took[workKey{what, total}]
		}
		pr.p.Done, pr.p.Total = done, total
		if done == total && total > 0 {
			if pr.took == nil {
				pr.took = map[workKey]time.Duration{}
			}
			pr.took[workKey{what, total}] = now.Sub(pr.p.Since)
		}
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

// Gold returns the gold answers of the run's tasks, by id (the
// workbench's sample inspector); false for a task the run does not hold.
// The func holds a table of the answers, not the engine: a bench's
// dashboard keeps it for a finished run's row, and a func bound to the
// engine would keep its model, samplers and caches (hundreds of MB)
// reachable for the rest of the bench. Safe from any goroutine.
func (e *Engine) Gold() func(taskID string) (string, bool) {
	answers := map[string]string{}
	for _, ts := range [][]data.Task{e.train, e.val, e.audit, e.test} {
		for _, t := range ts {
			if _, ok := answers[t.ID]; !ok {
				answers[t.ID] = t.Answer
			}
		}
	}
	return func(taskID string) (string, bool) {
		a, ok := answers[taskID]
		return a, ok
	}
}
