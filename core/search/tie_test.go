package search

import (
	"context"
	"slices"
	"testing"

	"whale/data"
	"whale/harnesses"
)

// countingScorer counts the tasks each source was scored on.
type countingScorer struct {
	inner  Scorer
	scored map[string]int
}

func (c *countingScorer) Score(ctx context.Context, src string, ts []data.Task, pass int) ([]Outcome, error) {
	c.scored[harnesses.Hash(src)] += len(ts)
	return c.inner.Score(ctx, src, ts, pass)
}

func TestAnExactTieStopsAfterOnePassAndIsNotRescored(t *testing.T) {
	base := make([]float64, 64)
	for i := range base {
		base[i] = float64(i % 2)
	}
	// The candidate matches the incumbent on every task: a no-op change.
	r, a, child := pairedRun(t, base, append([]float64(nil), base...))
	e := a.Entries[child]
	if !e.Tied || !slices.Contains(r.Stopped, child) {
		t.Fatalf("an exact tie was not stopped: tied %v, stopped %v", e.Tied, r.Stopped)
	}
	if len(r.Confirmed) != 0 || r.Changed {
		t.Fatalf("a tie earned passes (%v) or was accepted (%v)", r.Confirmed, r.Changed)
	}
	if e.Scored != len(base) {
		t.Fatalf("the tie was scored on %d rollouts, want one pass of %d", e.Scored, len(base))
	}
	// Under new weights the restart re-scores the incumbent alone.
	src := builtin(t)
	sc := &countingScorer{inner: fixedScorer{harnesses.Hash(src): base, child: base}, scored: map[string]int{}}
	s := &Searcher{Proposer: oneCandidate{}, Scorer: sc, M: 1, Rungs: []float64{1}}
	if _, err := s.Restart(context.Background(), a, "w2", tasks(len(base)), 3); err != nil {
		t.Fatal(err)
	}
	if sc.scored[child] != 0 || sc.scored[a.Incumbent] != len(base) {
		t.Fatalf("restart scored the tie on %d tasks and the incumbent on %d: want 0 and %d", sc.scored[child], sc.scored[a.Incumbent], len(base))
	}
}

func TestADifferenceOnOneTaskIsNoTie(t *testing.T) {
	base := make([]float64, 64)
	for i := range base {
		base[i] = float64(i % 2)
	}
	rw := append([]float64(nil), base...)
	rw[0], rw[1] = 1, 0 // +1 and −1: mean 0, but not the incumbent's rollouts
	_, a, child := pairedRun(t, base, rw)
	if a.Entries[child].Tied {
		t.Fatal("a candidate that differed on two tasks was called a tie")
	}
}
