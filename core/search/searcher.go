package search

import (
	"context"
	"fmt"
	"math/rand/v2"

	"whale/data"
)

// Scorer runs a harness source once per task (one rollout each) and
// returns the rewards in task order. pass distinguishes repeated scorings
// of the same tasks so they draw different samples.
type Scorer interface {
	Score(ctx context.Context, src string, tasks []data.Task, pass int) ([]float64, error)
}

// ScorerFunc adapts a function to Scorer.
type ScorerFunc func(ctx context.Context, src string, tasks []data.Task, pass int) ([]float64, error)

func (f ScorerFunc) Score(ctx context.Context, src string, tasks []data.Task, pass int) ([]float64, error) {
	return f(ctx, src, tasks, pass)
}

// Searcher runs Phase B iterations.
type Searcher struct {
	Proposer Proposer
	Scorer   Scorer
	// M candidates per iteration (reference 3).
	M int
	// Rungs are the fractions of the val split after which clear losers
	// stop (successive halving); the last rung is always 1. Nil means
	// {0.25, 0.5, 1}.
	Rungs []float64
	// Rescore re-scores a new best that wins by less than its confidence
	// interval half-width, on the whole val split again (both it and the
	// incumbent), before accepting it.
	Rescore bool
}

// IterationResult reports one iteration.
type IterationResult struct {
	Iteration int `json:"iteration"`
	// Candidates lists the hashes scored this iteration.
	Candidates []string `json:"candidates"`
	// Stopped lists candidates dropped early as clear losers.
	Stopped   []string `json:"stopped,omitempty"`
	Rescored  bool     `json:"rescored,omitempty"`
	Accepted  string   `json:"accepted"`
	Changed   bool     `json:"changed"`
	BestScore float64  `json:"best_score"`
	Rollouts  int      `json:"rollouts"`
}

// ScoreIncumbent scores the incumbent on the whole val split: the first
// iteration of a harness phase (the reference counts it as one), run after
// ResetScores so the incumbent is measured under the current weights.
func (s *Searcher) ScoreIncumbent(ctx context.Context, a *Archive, val []data.Task, iteration int) (IterationResult, error) {
	e, ok := a.Entries[a.Incumbent]
	if !ok {
		return IterationResult{}, fmt.Errorf("search: no incumbent to score")
	}
	r := IterationResult{Iteration: iteration, Candidates: []string{e.Hash}, Accepted: e.Hash}
	if !e.Complete {
		n, err := s.score(ctx, e, val, 0, len(val), 0)
		if err != nil {
			return r, err
		}
		e.Complete = true
		r.Rollouts = n
	}
	r.BestScore = e.Score
	return r, nil
}

// ScoreAll scores the given entries on the whole val split (those not yet
// complete under the current weights) and returns the rollouts spent:
// how a population is re-measured after the weights changed.
func (s *Searcher) ScoreAll(ctx context.Context, a *Archive, hashes []string, val []data.Task) (int, error) {
	n := 0
	for _, h := range hashes {
		e, ok := a.Entries[h]
		if !ok {
			return n, fmt.Errorf("search: score %s: not in the archive", short(h))
		}
		if e.Complete || e.Status == StatusPruned {
			continue
		}
		m, err := s.score(ctx, e, val, 0, len(val), 0)
		if err != nil {
			return n, err
		}
		e.Complete = true
		n += m
	}
	return n, nil
}

// Iterate proposes M candidates, scores them with successive halving,
// and accepts the best complete entry of the archive.
func (s *Searcher) Iterate(ctx context.Context, a *Archive, val []data.Task, rng *rand.Rand, iteration int) (IterationResult, error) {
	r := IterationResult{Iteration: iteration}
	inc, ok := a.Entries[a.Incumbent]
	if !ok || !inc.Complete {
		return r, fmt.Errorf("search: the incumbent must be scored before an iteration (ScoreIncumbent)")
	}
	cands, err := s.Proposer.Propose(ctx, a, rng, max(1, s.M))
	if err != nil {
		return r, err
	}
	var live []*Entry
	for _, c := range cands {
		e := a.Add(Entry{Hash: c.Hash, Source: c.Source, Parent: c.Parent, Mechanism: c.Mechanism, Proposer: c.Proposer, Iteration: iteration})
		e.Iteration = iteration
		live = append(live, e)
		r.Candidates = append(r.Candidates, e.Hash)
	}
	rungs := s.Rungs
	if len(rungs) == 0 {
		rungs = []float64{0.25, 0.5, 1}
	}
	done := 0
	for i, f := range rungs {
		upto := int(f*float64(len(val)) + 0.5)
		if i == len(rungs)-1 || upto > len(val) {
			upto = len(val)
		}
		if upto <= done {
			continue
		}
		for _, e := range live {
			n, err := s.score(ctx, e, val, done, upto, 0)
			if err != nil {
				return r, err
			}
			r.Rollouts += n
		}
		done = upto
		if done == len(val) {
			break
		}
		// Stop the clear losers: their whole interval lies below the
		// incumbent's score.
		var keep []*Entry
		for _, e := range live {
			if _, hi := e.CI95(); hi < inc.Score {
				r.Stopped = append(r.Stopped, e.Hash)
				continue
			}
			keep = append(keep, e)
		}
		live = keep
	}
	for _, e := range live {
		e.Complete = true
	}
	best := a.Best()
	if best != nil && best.Hash != inc.Hash && s.Rescore {
		lo, hi := best.CI95()
		if best.Score-inc.Score < (hi-lo)/2 {
			for _, e := range []*Entry{best, inc} {
				n, err := s.score(ctx, e, val, 0, len(val), e.Scored/max(1, len(val)))
				if err != nil {
					return r, err
				}
				r.Rollouts += n
			}
			r.Rescored = true
			best = a.Best()
		}
	}
	if best == nil {
		best = inc
	}
	if err := a.Accept(best.Hash); err != nil {
		return r, err
	}
	r.Accepted, r.Changed, r.BestScore = best.Hash, best.Hash != inc.Hash, best.Score
	return r, nil
}

// score adds the rewards of val[from:to] to e and returns the rollouts.
func (s *Searcher) score(ctx context.Context, e *Entry, val []data.Task, from, to, pass int) (int, error) {
	rw, err := s.Scorer.Score(ctx, e.Source, val[from:to], pass)
	if err != nil {
		return 0, fmt.Errorf("search: score %s: %w", short(e.Hash), err)
	}
	if len(rw) != to-from {
		return 0, fmt.Errorf("search: score %s: %d rewards for %d tasks", short(e.Hash), len(rw), to-from)
	}
	ids := make([]string, to-from)
	for i, t := range val[from:to] {
		ids[i] = t.ID
	}
	e.add(ids, rw)
	return len(rw), nil
}
