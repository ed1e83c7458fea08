package engine

import (
	"context"
	"strings"
	"testing"

	"whale/harnesses"
)

// ledgerTrace runs cfg and returns the ledger at every stop point (after
// each weight step, harness iteration and phase boundary) with the phase
// that was running before it.
type ledgerPoint struct {
	before, after Ledger
	phase         Phase
}

func traceLedgers(t *testing.T, cfg Config) (Summary, []ledgerPoint, *Engine) {
	t.Helper()
	db := openDB(t)
	e, err := New(cfg, testEnv(t, db), "l")
	if err != nil {
		t.Fatal(err)
	}
	var pts []ledgerPoint
	last, phase := Ledger{}, e.st.Phase
	e.stopAfter = func(s State) bool {
		pts = append(pts, ledgerPoint{before: last, after: s.Ledger, phase: phase})
		last, phase = s.Ledger, s.Phase
		return false
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sum, pts, e
}

func TestTwoLedgersStopEachPhaseAtItsOwn(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Proposer, cfg.MaxRounds, cfg.Budget = "mutation", 0, 0
	cfg.TrainCalls, cfg.SearchCalls = 20, 40
	sum, pts, e := traceLedgers(t, cfg)
	l := e.st.Ledger
	for i, p := range pts {
		if p.after.TrainCalls > p.before.TrainCalls && p.before.TrainCalls >= cfg.TrainCalls {
			t.Errorf("point %d: a weight step began with the weight ledger spent (%d of %d)", i, p.before.TrainCalls, cfg.TrainCalls)
		}
		if p.after.SearchCalls > p.before.SearchCalls && p.before.SearchCalls >= cfg.SearchCalls {
			t.Errorf("point %d: a harness score began with the search ledger spent (%d of %d)", i, p.before.SearchCalls, cfg.SearchCalls)
		}
		if p.phase == PhaseWeights && p.after.SearchCalls != p.before.SearchCalls {
			t.Errorf("point %d: a weight phase spent the search ledger", i)
		}
	}
	if l.TrainCalls < cfg.TrainCalls {
		t.Errorf("train calls %d: the weight ledger of %d was not spent", l.TrainCalls, cfg.TrainCalls)
	}
	if !e.st.Starved && l.SearchCalls < cfg.SearchCalls {
		t.Errorf("search calls %d: the search ledger of %d was neither spent nor starved", l.SearchCalls, cfg.SearchCalls)
	}
	if sum.TrainCalls != l.TrainCalls || sum.SearchCalls != l.SearchCalls || sum.ModelCalls != l.TrainCalls+l.SearchCalls {
		t.Errorf("summary names train %d, search %d, total %d; the ledger holds %d, %d", sum.TrainCalls, sum.SearchCalls, sum.ModelCalls, l.TrainCalls, l.SearchCalls)
	}
	if sum.EvalCalls == 0 || sum.TestCallsPerEpisode < 1 {
		t.Errorf("evaluation calls %d, test calls per episode %v: want both measured", sum.EvalCalls, sum.TestCallsPerEpisode)
	}
	if !strings.Contains(kinds(sum.Phases), "wh") {
		t.Errorf("phases %s: want WHALE's alternation", kinds(sum.Phases))
	}
}

func TestOneSidedConditionsSpendOnlyTheirLedger(t *testing.T) {
	for _, tc := range []struct {
		cond          string
		train, search int
	}{{"weight-only", 20, 0}, {"harness-only", 0, 40}, {"staged", 20, 40}} {
		cfg := tinyConfig(t)
		cfg.Proposer, cfg.MaxRounds, cfg.Budget, cfg.Condition = "mutation", 0, 0, tc.cond
		cfg.TrainCalls, cfg.SearchCalls = tc.train, tc.search
		sum, _, e := traceLedgers(t, cfg)
		l := e.st.Ledger
		if (tc.train == 0) != (l.TrainCalls == 0) || (tc.search == 0) != (l.SearchCalls == 0) {
			t.Errorf("%s: ledgers train %d, search %d for limits %d, %d", tc.cond, l.TrainCalls, l.SearchCalls, tc.train, tc.search)
		}
		if l.TrainCalls < tc.train {
			t.Errorf("%s: train calls %d, want the weight ledger of %d spent", tc.cond, l.TrainCalls, tc.train)
		}
		if tc.cond == "staged" && !strings.HasPrefix(kinds(sum.Phases), "w") || tc.cond == "staged" && strings.Contains(strings.TrimLeft(kinds(sum.Phases), "w"), "w") {
			t.Errorf("staged: phases %s, want weight phases then harness phases", kinds(sum.Phases))
		}
	}
}

func TestLedgerConfigurationsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*Config)
		field  string
	}{
		{func(c *Config) { c.Budget, c.TrainCalls, c.SearchCalls = 100, 10, 10 }, "budget"},
		{func(c *Config) { c.Budget, c.TrainCalls, c.SearchCalls = 0, 10, 0 }, "search_calls"},
		{func(c *Config) { c.Budget, c.TrainCalls, c.SearchCalls, c.Condition = 0, 0, 10, "weight-only" }, "train_calls"},
		{func(c *Config) { c.Budget, c.TrainCalls = 0, -1 }, "train_calls"},
	} {
		cfg := tinyConfig(t)
		tc.mutate(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "field "+tc.field) {
			t.Errorf("%+v: error %v, want one naming field %s", cfg, err, tc.field)
		}
	}
}

func TestEvalOnlySpendsNothingAndCountsTestTimeCalls(t *testing.T) {
	cfg := tinyConfig(t)
	h0, err := harnesses.Builtin("math", "h0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Harness, err = harnesses.Mutate(h0, "SAMPLES", "3"); err != nil {
		t.Fatal(err)
	}
	cfg.Condition, cfg.Budget, cfg.MaxRounds = EvalOnly, 0, 0
	sum, _, e := traceLedgers(t, cfg)
	if sum.ModelCalls != 0 || e.st.Ledger.Episodes() != 0 {
		t.Errorf("eval-only spent %d model calls (%d episodes), want none", sum.ModelCalls, e.st.Ledger.Episodes())
	}
	if len(sum.Phases) != 1 {
		t.Errorf("%d phases, want the one empty phase that keeps the checkpoint", len(sum.Phases))
	}
	if sum.TestCallsPerEpisode < 3 {
		t.Errorf("test calls per episode %v under a 3-sample vote, want ≥ 3", sum.TestCallsPerEpisode)
	}
}
