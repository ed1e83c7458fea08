package engine

import (
	"fmt"
	"strconv"

	"whale/harnesses"
)

// The paper's two ledgers (Config.TrainCalls, Config.SearchCalls) beside
// the single budget (Config.Budget): which ledger pays for a phase, what
// is left of it and when it is spent.

// TwoLedgers reports whether the run keeps the paper's two ledgers (a
// weight ledger and a search ledger) instead of one budget.
func (c Config) TwoLedgers() bool { return c.TrainCalls > 0 || c.SearchCalls > 0 }

// TotalBudget is the model calls the run may spend on training and
// harness scoring together: Budget, or the sum of the two ledgers (0:
// unbounded).
func (c Config) TotalBudget() int {
	if c.TwoLedgers() {
		return c.TrainCalls + c.SearchCalls
	}
	return c.Budget
}

// LedgerText names the training and search calls l spent, their sum, and
// the ledgers (or the one budget) they were spent against.
func (c Config) LedgerText(l Ledger) string {
	return ledgerText(c.Budget, c.TrainCalls, c.SearchCalls, l)
}

func ledgerText(budget, trainCalls, searchCalls int, l Ledger) string {
	train, search := l.TrainCalls, l.SearchCalls
	switch {
	case trainCalls > 0 || searchCalls > 0:
		return fmt.Sprintf("training %d of %d, search %d of %d, sum %d", train, trainCalls, search, searchCalls, train+search)
	case budget > 0:
		return fmt.Sprintf("training %d + search %d = %d of one budget of %d", train, search, train+search, budget)
	}
	return fmt.Sprintf("training %d + search %d = %d (no budget)", train, search, train+search)
}

// runs reports whether the condition ever runs phases of kind p.
func (c Config) runs(p Phase) bool {
	switch c.Condition {
	case "weight-only":
		return p == PhaseWeights
	case "harness-only":
		return p == PhaseHarness
	case EvalOnly:
		return false
	}
	return true
}

// ledgerLeft is what is left of the ledger that pays for phases of kind
// p, and whether that ledger is bounded at all. Under one budget both
// kinds share it; an eval-only run has nothing to spend.
func (e *Engine) ledgerLeft(p Phase) (int, bool) {
	c, l := e.Cfg, e.st.Ledger
	switch {
	case c.Condition == EvalOnly:
		return 0, true
	case c.TwoLedgers() && p == PhaseWeights:
		return c.TrainCalls - l.TrainCalls, true
	case c.TwoLedgers():
		return c.SearchCalls - l.SearchCalls, true
	case c.Budget > 0:
		return c.Budget - l.Budgeted(), true
	}
	return 0, false
}

// phaseSpent reports whether the ledger of phases of kind p is spent, or
// (for the ledger that pays for scoring) so nearly that the harness search
// could not pay for its next score (State.Starved).
func (e *Engine) phaseSpent(p Phase) bool {
	left, bounded := e.ledgerLeft(p)
	if !bounded {
		return false
	}
	return left <= 0 || (e.st.Starved && (p == PhaseHarness || !e.Cfg.TwoLedgers()))
}

// afterSpent is the phase to run after the one that just ended, given the
// schedule's choice next: next itself while its ledger lasts, else the
// other kind if the condition runs it and its ledger lasts; ok is false
// when neither can run (the run is over).
func (e *Engine) afterSpent(next Phase) (p Phase, switched, ok bool) {
	if !e.phaseSpent(next) && e.Cfg.runs(next) {
		return next, false, true
	}
	other := PhaseWeights
	if next == PhaseWeights {
		other = PhaseHarness
	}
	if e.Cfg.runs(other) && !e.phaseSpent(other) {
		return other, true, true
	}
	return next, false, false
}

// VoteHarness is the built-in h0 of domain with SAMPLES = k under its own
// (plurality) vote: the bench's vote-only control, test-time compute
// without search.
func VoteHarness(domain string, k int) (string, error) {
	src, err := harnesses.Builtin(domain, "h0")
	if err != nil {
		return "", fmt.Errorf("engine: vote harness: %w", err)
	}
	out, err := harnesses.Mutate(src, "SAMPLES", strconv.Itoa(k))
	if err != nil {
		return "", fmt.Errorf("engine: vote harness of %s with SAMPLES = %d: %w", domain, k, err)
	}
	return out, nil
}
