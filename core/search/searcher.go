package search

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"whale/data"
)

// Outcome is one scored rollout: its reward, its failure kind ("" for
// none) and the model calls it cost.
type Outcome struct {
	Reward  float64
	Failure string
	Calls   int
}

// Scorer runs a harness source once per task (one rollout each) and
// returns the outcomes in task order. pass distinguishes repeated scorings
// of the same tasks so they draw different samples. A scorer must draw the
// same random numbers for the same (task, pass) whatever the harness, so
// that two harnesses scored on the same tasks are compared on the same
// draws (paired scoring).
type Scorer interface {
	Score(ctx context.Context, src string, tasks []data.Task, pass int) ([]Outcome, error)
}

// ScorerFunc adapts a function to Scorer.
type ScorerFunc func(ctx context.Context, src string, tasks []data.Task, pass int) ([]Outcome, error)

func (f ScorerFunc) Score(ctx context.Context, src string, tasks []data.Task, pass int) ([]Outcome, error) {
	return f(ctx, src, tasks, pass)
}

// Searcher runs Phase B iterations.
type Searcher struct {
	Proposer Proposer
	Scorer   Scorer
	// M candidates per iteration (reference 3).
	M int
	// Rungs are the fractions of the val split after which clear losers
	// stop (successive halving): a candidate whose paired gain over the
	// incumbent has its whole interval below 0 on the tasks scored so far.
	// The last rung is always 1. Nil means {0.25, 0.5, 1}.
	Rungs []float64
	// Admit, if set, has the last word on a candidate that won its paired
	// comparison (the engine's null-policy audit): false keeps it out of
	// the incumbency, and the next winner is tried.
	Admit func(ctx context.Context, e *Entry) (bool, error)
	// Left, if set, is the budget (model calls) still to spend: once it is
	// spent, the candidates not yet scored on a rung stop there (and are
	// never accepted), so an iteration overshoots the budget by at most
	// one rung of one candidate, however many calls a voting candidate
	// costs.
	Left func() int
}

// IterationResult reports one iteration.
type IterationResult struct {
	Iteration int `json:"iteration"`
	// Candidates lists the hashes scored this iteration.
	Candidates []string `json:"candidates"`
	// Stopped lists candidates dropped early as clear losers.
	Stopped []string `json:"stopped,omitempty"`
	// Refused lists winners the Admit check kept out.
	Refused []string `json:"refused,omitempty"`
	// Confirmed lists, once per extra pass over val, the candidate whose
	// unresolved lead earned it (confirm).
	Confirmed []string `json:"confirmed,omitempty"`
	Accepted  string   `json:"accepted"`
	Changed   bool     `json:"changed"`
	BestScore float64  `json:"best_score"`
	Rollouts  int      `json:"rollouts"`
	// Calls counts the model calls the iteration's rollouts cost.
	Calls int `json:"calls"`
}

// Restart begins scoring under new weights: every score in the archive is
// stale, so the incumbent and the entries most likely to matter under the
// new weights — the previous top 3 and the previous Pareto front (at most
// maxRestart in all) — are scored on the whole val split before anything
// new is proposed, and the best of them by paired gain over the incumbent
// (lower bound above 0) becomes the incumbent. It is the first iteration
// of a harness phase (the reference counts that as one).
func (s *Searcher) Restart(ctx context.Context, a *Archive, weights string, val []data.Task, iteration int) (IterationResult, error) {
	r := IterationResult{Iteration: iteration}
	inc, ok := a.Entries[a.Incumbent]
	if !ok {
		return r, fmt.Errorf("search: no incumbent to score")
	}
	var again []*Entry
	if a.Weights != weights {
		again = a.restartSet()
		a.ResetScores(weights)
	}
	if !inc.Complete {
		if err := s.scoreAll(ctx, inc, val, &r); err != nil {
			return r, err
		}
		r.Candidates = append(r.Candidates, inc.Hash)
	}
	for _, e := range again {
		if err := s.scoreAll(ctx, e, val, &r); err != nil {
			return r, err
		}
		r.Candidates = append(r.Candidates, e.Hash)
	}
	return r, s.acceptWinner(ctx, a, inc, again, &r)
}

// maxRestart bounds the entries re-scored besides the incumbent when the
// weights change.
const maxRestart = 5

// restartSet lists, before a reset, the complete unpruned entries other
// than the incumbent worth re-scoring: the top 3 by score, then the Pareto
// front, without repeats, at most maxRestart.
func (a *Archive) restartSet() []*Entry {
	var out []*Entry
	seen := map[string]bool{a.Incumbent: true}
	add := func(e *Entry) {
		if len(out) < maxRestart && !seen[e.Hash] && e.Complete && e.Status != StatusPruned {
			seen[e.Hash] = true
			out = append(out, e)
		}
	}
	top := 0
	for _, e := range a.Leaderboard() {
		if top == 3 {
			break
		}
		if e.Complete && e.Status != StatusPruned && e.Hash != a.Incumbent {
			add(e)
			top++
		}
	}
	for _, e := range a.Pareto(0) {
		add(e)
	}
	return out
}

func (s *Searcher) scoreAll(ctx context.Context, e *Entry, val []data.Task, r *IterationResult) error {
	n, calls, err := s.score(ctx, e, val, 0, len(val), 0)
	if err != nil {
		return err
	}
	e.Complete = true
	r.Rollouts += n
	r.Calls += calls
	return nil
}

// ScoreAll scores the given entries on the whole val split (those not yet
// complete under the current weights) and returns the rollouts spent:
// how a population is re-measured after the weights changed.
func (s *Searcher) ScoreAll(ctx context.Context, a *Archive, hashes []string, val []data.Task) (IterationResult, error) {
	var r IterationResult
	for _, h := range hashes {
		e, ok := a.Entries[h]
		if !ok {
			return r, fmt.Errorf("search: score %s: not in the archive", short(h))
		}
		if e.Complete || e.Status == StatusPruned {
			continue
		}
		if err := s.scoreAll(ctx, e, val, &r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// Iterate proposes M candidates, scores them on the incumbent's val tasks
// and draws with successive halving, and accepts the candidate with the
// largest paired gain over the incumbent whose 95 % lower bound is above
// 0 (and that Admit lets in); otherwise the incumbent stays.
func (s *Searcher) Iterate(ctx context.Context, a *Archive, val []data.Task, rng *rand.Rand, iteration int) (IterationResult, error) {
	r := IterationResult{Iteration: iteration}
	inc, ok := a.Entries[a.Incumbent]
	if !ok || !inc.Complete {
		return r, fmt.Errorf("search: the incumbent must be scored before an iteration (Restart)")
	}
	cands, err := s.Proposer.Propose(ctx, a, rng, max(1, s.M))
	if err != nil {
		return r, err
	}
	var live, all []*Entry
	for _, c := range cands {
		e := a.Add(Entry{Hash: c.Hash, Source: c.Source, Parent: c.Parent, Mechanism: c.Mechanism, Proposer: c.Proposer, Iteration: iteration})
		e.Iteration = iteration
		live = append(live, e)
		all = append(all, e)
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
		var scored []*Entry
		for _, e := range live {
			if s.Left != nil && s.Left() <= 0 {
				r.Stopped = append(r.Stopped, e.Hash)
				continue
			}
			n, calls, err := s.score(ctx, e, val, done, upto, 0)
			if err != nil {
				return r, err
			}
			r.Rollouts += n
			r.Calls += calls
			scored = append(scored, e)
		}
		live = scored
		done = upto
		if done == len(val) {
			break
		}
		var keep []*Entry
		for _, e := range live {
			if g := PairedGain(e, inc); g.N > 1 && g.Hi < 0 {
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
	if err := s.confirm(ctx, inc, live, val, &r); err != nil {
		return r, err
	}
	return r, s.acceptWinner(ctx, a, inc, all, &r)
}

// MaxPasses bounds the passes over the val split a candidate gets while
// its comparison is unresolved (see confirm).
const MaxPasses = 4

// confirm spends more draws where they decide something: while the
// leading candidate's paired gain is positive but its lower bound is not
// above 0, it and the incumbent are scored on one more pass over the val
// tasks (new draws, the same for both), up to MaxPasses. One pass of 128
// tasks cannot tell a 4-point gain from noise; four can.
func (s *Searcher) confirm(ctx context.Context, inc *Entry, live []*Entry, val []data.Task, r *IterationResult) error {
	for {
		var lead *Entry
		var best Gain
		for _, e := range live {
			g := PairedGain(e, inc)
			if g.N > 1 && g.Gain > 0 && g.Lo <= 0 && int(passes(e)) < MaxPasses && (lead == nil || g.Gain > best.Gain) {
				lead, best = e, g
			}
		}
		if lead == nil || (s.Left != nil && s.Left() <= 0) {
			return nil
		}
		p := int(passes(lead))
		for _, e := range []*Entry{inc, lead} {
			if int(passes(e)) > p {
				continue // the incumbent already has this pass
			}
			n, calls, err := s.score(ctx, e, val, 0, len(val), p)
			if err != nil {
				return err
			}
			r.Rollouts += n
			r.Calls += calls
		}
		r.Confirmed = append(r.Confirmed, lead.Hash)
	}
}

// acceptWinner records each challenger's paired gain over inc and makes
// the best one whose lower bound is above 0 (and that Admit lets in) the
// incumbent.
func (s *Searcher) acceptWinner(ctx context.Context, a *Archive, inc *Entry, challengers []*Entry, r *IterationResult) error {
	var winners []*Entry
	for _, e := range challengers {
		g := PairedGain(e, inc)
		e.Gain, e.GainLo, e.GainHi, e.Against, e.HasGain = g.Gain, g.Lo, g.Hi, inc.Hash, g.N > 0
		if e.Complete && e.Status != StatusPruned && g.N > 1 && g.Lo > 0 {
			winners = append(winners, e)
		}
	}
	sort.SliceStable(winners, func(i, j int) bool { return winners[i].Gain > winners[j].Gain })
	best := inc
	for _, e := range winners {
		if s.Admit != nil {
			ok, err := s.Admit(ctx, e)
			if err != nil {
				return err
			}
			if !ok {
				r.Refused = append(r.Refused, e.Hash)
				continue
			}
		}
		best = e
		break
	}
	if err := a.Accept(best.Hash); err != nil {
		return err
	}
	r.Accepted, r.Changed, r.BestScore = best.Hash, best.Hash != inc.Hash, best.Score
	return nil
}

// Gain is a paired comparison: the mean over shared tasks of x's per-task
// mean reward minus y's, with a 95 % t-interval over tasks.
type Gain struct {
	Gain, Lo, Hi float64
	N            int
}

// PairedGain compares x with y on the tasks both were scored on. With the
// same draws per task (see Scorer), task difficulty and sampling luck
// cancel, so the interval is far narrower than that of two independent
// scores.
func PairedGain(x, y *Entry) Gain {
	px, py := passes(x), passes(y)
	var ds []float64
	for t, sx := range x.Tasks {
		sy, ok := y.Tasks[t]
		if !ok {
			continue
		}
		ds = append(ds, sx/px-sy/py)
	}
	sort.Float64s(ds) // a fixed summation order: map order must not leak into the result
	n := len(ds)
	if n == 0 {
		return Gain{}
	}
	mean := 0.0
	for _, d := range ds {
		mean += d
	}
	mean /= float64(n)
	if n < 2 {
		return Gain{Gain: mean, Lo: math.Inf(-1), Hi: math.Inf(1), N: n}
	}
	ss := 0.0
	for _, d := range ds {
		ss += (d - mean) * (d - mean)
	}
	half := tQuantile975(n-1) * math.Sqrt(ss/float64(n-1)/float64(n))
	return Gain{Gain: mean, Lo: mean - half, Hi: mean + half, N: n}
}

// tQuantile975 approximates the 0.975 quantile of Student's t with df
// degrees of freedom (Cornish-Fisher expansion around the normal
// quantile, exact values below df = 6; within 0.3 % of the exact value
// from there on, exact enough
// for an acceptance rule whose n is 8 to 256).
func tQuantile975(df int) float64 {
	switch df {
	case 1:
		return 12.706204736174698
	case 2:
		return 4.302652729749464
	case 3:
		return 3.182446305284263
	case 4:
		return 2.776445105197793
	case 5:
		return 2.570581835636314
	}
	const z = 1.959963984540054
	v := float64(df)
	z3, z5, z7 := z*z*z, z*z*z*z*z, z*z*z*z*z*z*z
	return z + (z3+z)/(4*v) + (5*z5+16*z3+3*z)/(96*v*v) + (3*z7+19*z5+17*z3-15*z)/(384*v*v*v)
}

// score adds the outcomes of val[from:to] to e and returns the rollouts
// and model calls spent.
func (s *Searcher) score(ctx context.Context, e *Entry, val []data.Task, from, to, pass int) (int, int, error) {
	outs, err := s.Scorer.Score(ctx, e.Source, val[from:to], pass)
	if err != nil {
		return 0, 0, fmt.Errorf("search: score %s: %w", short(e.Hash), err)
	}
	if len(outs) != to-from {
		return 0, 0, fmt.Errorf("search: score %s: %d outcomes for %d tasks", short(e.Hash), len(outs), to-from)
	}
	ids := make([]string, to-from)
	rw := make([]float64, to-from)
	calls := 0
	if e.Failures == nil {
		e.Failures = map[string]int{}
	}
	for i, t := range val[from:to] {
		ids[i] = t.ID
		rw[i] = outs[i].Reward
		calls += outs[i].Calls
		e.Failures[outs[i].Failure]++
	}
	e.add(ids, rw)
	e.Calls += calls
	return len(outs), calls, nil
}
