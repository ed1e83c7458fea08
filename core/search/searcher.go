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
	// Reused marks an outcome the scorer did not pay for now: the same
	// rollout (same weights, harness and draws) was already run and
	// booked elsewhere (the engine's val evaluation at a phase boundary).
	// Its Calls still price the harness; it is not counted as spent.
	Reused bool
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
	// Left, if set, is the run's budget (model calls) still to spend, and
	// PhaseLeft the harness phase's allowance still to spend. A score is
	// begun only when both pay for its estimated cost (tasks × the
	// harness's calls per rollout so far, else the incumbent's), an
	// iteration proposes no more candidates than they can score on the
	// whole val split, and one that cannot pay for the next score says so
	// (IterationResult.Starved). So a run ends within one score's estimate
	// of its budget, above or below, however many calls a voting harness
	// costs.
	Left      func() int
	PhaseLeft func() int
	// Samples, if set, reads SAMPLES from a harness source: the
	// completions each of its model calls draws. A candidate not yet
	// scored is priced at the incumbent's calls per rollout scaled by
	// its SAMPLES over the incumbent's (a voting candidate pays for every
	// sample), so a score begun is one the budget and the allowance can
	// finish. Nil prices every candidate at the incumbent's rate.
	Samples func(source string) (int, error)
	// Check, if set, loads a proposed candidate's source before it is
	// priced or scored: one that fails is refused (StatusInvalid, with
	// the error as its reason, listed in IterationResult.Invalid) and the
	// proposer draws on, so a candidate that breaks the contract never
	// stops a search.
	Check func(source string) error
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
	// Unaffordable counts the proposals passed over because the budget
	// or the phase's allowance could not pay for their whole score at
	// their price (a voting candidate's, say).
	Unaffordable int `json:"unaffordable,omitempty"`
	// Starved says what could not pay for the iteration's next score:
	// StarvedBudget (the run's budget: the run is over) or StarvedPhase
	// (the phase's allowance: the phase is); "" if nothing.
	Starved string `json:"starved,omitempty"`
	// Invalid lists the proposals refused because they do not load
	// (Searcher.Check).
	Invalid []Refusal `json:"invalid,omitempty"`
}

// What starved an iteration (IterationResult.Starved).
const (
	StarvedBudget = "budget"
	StarvedPhase  = "phase"
)

// StarvedText says, for a progress line, what could not pay for the
// iteration's next score and how many proposals were passed over for
// their price or refused because they do not load (InvalidText) ("" for
// nothing), beginning with "; ".
func (r IterationResult) StarvedText() string {
	passed := r.InvalidText()
	if r.Unaffordable > 0 {
		passed += fmt.Sprintf("; %d proposals passed over (too dear to score whole)", r.Unaffordable)
	}
	switch r.Starved {
	case StarvedBudget:
		return passed + "; the budget left cannot pay for another score"
	case StarvedPhase:
		return passed + "; the phase's allowance is spent"
	}
	return passed
}

// shortOf names what cannot pay for cost more model calls: StarvedBudget,
// StarvedPhase, or "" when both can.
func (s *Searcher) shortOf(cost int) string {
	switch {
	case s.Left != nil && s.Left() < cost:
		return StarvedBudget
	case s.PhaseLeft != nil && s.PhaseLeft() < cost:
		return StarvedPhase
	}
	return ""
}

// affords reports whether the budget and the phase allowance both pay for
// cost more model calls, and records in r what does not.
func (s *Searcher) affords(cost int, r *IterationResult) bool {
	short := s.shortOf(cost)
	if short != "" && r.Starved != StarvedBudget {
		r.Starved = short
	}
	return short == ""
}

// affordable is how many scores of cost calls each, at most n, the budget
// and the phase allowance both pay for (n when neither is set).
func (s *Searcher) affordable(cost, n int) int {
	for _, left := range []func() int{s.Left, s.PhaseLeft} {
		if left != nil {
			n = min(n, max(0, left())/max(1, cost))
		}
	}
	return n
}

// cost is the model calls scoring e on n tasks is expected to cost, at
// its own price under the current weights, else the incumbent's, else
// one call a rollout.
func cost(e, inc *Entry, n int) int {
	for _, x := range []*Entry{e, inc} {
		if x != nil && x.Scored > 0 {
			return (n*x.Calls + x.Scored - 1) / x.Scored
		}
	}
	return n
}

// PassCalls is the model calls scoring e once on n tasks is expected to
// cost at its last measured price (since its scores were last reset), 0
// when it has no measured price.
func (e *Entry) PassCalls(n int) int {
	if e == nil || e.Scored == 0 {
		return 0
	}
	return cost(e, nil, n)
}

// price is cost with an unscored e's SAMPLES taken into account: the
// incumbent's price times e's samples over the incumbent's.
func (s *Searcher) price(e, inc *Entry, n int) int {
	c := cost(e, inc, n)
	if s.Samples == nil || e == nil || e.Scored > 0 || inc == nil || inc.Scored == 0 || e == inc {
		return c
	}
	return scaleBySamples(c, s.samplesOf(e.Source), s.samplesOf(inc.Source))
}

// samplesOf is SAMPLES of src, 1 when it cannot be read (a source that
// does not load fails when it is scored, and says why there).
func (s *Searcher) samplesOf(src string) int {
	if n, err := s.Samples(src); err == nil && n > 0 {
		return n
	}
	return 1
}

// scaleBySamples is c calls at inc samples a call re-priced at k, rounded
// up.
func scaleBySamples(c, k, inc int) int {
	return (c*k + inc - 1) / inc
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
	// Costs are read before the reset forgets them.
	costs := map[string]int{inc.Hash: cost(inc, nil, len(val))}
	var again []*Entry
	if a.Weights != weights {
		again = a.restartSet()
		for _, e := range again {
			costs[e.Hash] = cost(e, inc, len(val))
		}
		a.ResetScores(weights)
	}
	if !inc.Complete {
		// Nothing can be compared with an unscored incumbent, so only the
		// run's budget stops this score, never the phase's allowance.
		if s.Left != nil && s.Left() < costs[inc.Hash] {
			r.Starved, r.Accepted, r.BestScore = StarvedBudget, inc.Hash, inc.Score
			return r, nil
		}
		if err := s.scoreAll(ctx, inc, val, &r); err != nil {
			return r, err
		}
		r.Candidates = append(r.Candidates, inc.Hash)
	}
	// The old entries may spend only what the phase has beyond the
	// scores of M new candidates (at the incumbent's price) and half of
	// what is left after the incumbent: a phase never re-measures the
	// past instead of proposing anything.
	reserve := 0
	if s.PhaseLeft != nil {
		reserve = max(s.PhaseLeft()/2, max(1, s.M)*costs[inc.Hash])
	}
	var scored []*Entry
	for _, e := range again {
		c := costs[e.Hash]
		if s.shortOf(c) != "" || (s.PhaseLeft != nil && s.PhaseLeft()-c < reserve) {
			continue
		}
		if err := s.scoreAll(ctx, e, val, &r); err != nil {
			return r, err
		}
		r.Candidates = append(r.Candidates, e.Hash)
		scored = append(scored, e)
	}
	return r, s.acceptWinner(ctx, a, inc, scored, &r)
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
		if len(out) < maxRestart && !seen[e.Hash] && e.Complete && e.Status != StatusPruned && !e.Tied {
			seen[e.Hash] = true
			out = append(out, e)
		}
	}
	top := 0
	for _, e := range a.Leaderboard() {
		if top == 3 {
			break
		}
		if e.Complete && e.Status != StatusPruned && e.Hash != a.Incumbent && !e.Tied {
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

// ScoreAll scores the given entries on the whole val split under weights
// (those not yet complete under them; a change of weights first resets
// every score) and returns the rollouts spent: how a population is
// re-measured after the weights changed. An entry the budget or the phase
// cannot pay for is left unscored, and the result says so (Starved).
func (s *Searcher) ScoreAll(ctx context.Context, a *Archive, weights string, hashes []string, val []data.Task) (IterationResult, error) {
	var r IterationResult
	costs := map[string]int{}
	for _, h := range hashes {
		e, ok := a.Entries[h]
		if !ok {
			return r, fmt.Errorf("search: score %s: not in the archive", short(h))
		}
		costs[h] = cost(e, a.Entries[a.Incumbent], len(val))
	}
	if a.Weights != weights {
		a.ResetScores(weights)
	}
	for _, h := range hashes {
		e := a.Entries[h]
		if e.Complete || e.Status == StatusPruned || !s.affords(costs[h], &r) {
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
	// Propose only what can be scored on the whole val split: a candidate
	// stopped by the budget on a rung is never accepted, so its rollouts
	// would be spent for nothing.
	whole := cost(inc, nil, len(val))
	m := s.affordable(whole, max(1, s.M))
	if m == 0 {
		s.affords(whole, &r)
		r.Accepted, r.BestScore = inc.Hash, inc.Score
		return r, nil
	}
	cands, err := s.proposeAffordable(ctx, a, inc, rng, m, len(val), &r)
	if err != nil {
		return r, err
	}
	if len(cands) == 0 && r.Unaffordable > 0 {
		r.Accepted, r.BestScore = inc.Hash, inc.Score
		return r, nil
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
			if !s.affords(s.price(e, inc, upto-done), &r) {
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
	var untied []*Entry
	for _, e := range live {
		e.Complete = true
		if exactTie(e, inc, len(val)) {
			// Nothing any val rollout did differed from the incumbent:
			// more passes or a re-score under new weights would spend
			// draws to learn it again.
			e.Tied = true
			r.Stopped = append(r.Stopped, e.Hash)
			continue
		}
		untied = append(untied, e)
	}
	live = untied
	if err := s.confirm(ctx, inc, live, val, &r); err != nil {
		return r, err
	}
	return r, s.acceptWinner(ctx, a, inc, all, &r)
}

// proposeAffordable asks the proposer for up to m candidates whose whole
// scores on n val tasks the budget and the allowance can pay for together,
// at their prices (price). A proposer that can filter (FilteringProposer)
// passes over the others and draws on; any other proposer's unaffordable
// candidates are dropped. r counts those passed over (Unaffordable) and,
// when nothing could be paid for, says what starved the iteration.
func (s *Searcher) proposeAffordable(ctx context.Context, a *Archive, inc *Entry, rng *rand.Rand, m, n int, r *IterationResult) ([]Candidate, error) {
	spent, short := 0, ""
	keep := func(c Candidate) bool {
		if s.Check != nil {
			if err := s.Check(c.Source); err != nil {
				refuse(a, c, err, r)
				return false
			}
		}
		p := s.price(&Entry{Source: c.Source}, inc, n)
		if k := s.shortOf(spent + p); k != "" {
			r.Unaffordable++
			short = k
			return false
		}
		spent += p
		return true
	}
	var cands []Candidate
	var err error
	if fp, ok := s.Proposer.(FilteringProposer); ok {
		cands, err = fp.ProposeWhere(ctx, a, rng, m, keep)
	} else {
		var all []Candidate
		all, err = s.Proposer.Propose(ctx, a, rng, m)
		for _, c := range all {
			if keep(c) {
				cands = append(cands, c)
			}
		}
	}
	if len(cands) == 0 && short != "" {
		r.Starved = short
	}
	return cands, err
}

// MaxPasses bounds the passes over the val split a candidate gets while
// its comparison is unresolved (see confirm).
const MaxPasses = 4

// confirm spends more draws where they decide something: while the
// leading candidate's paired gain is positive but its lower bound is not
// above 0, it and the incumbent are scored on one more pass over the val
// tasks (new draws, the same for both), up to MaxPasses. One pass of 128
// tasks cannot tell a 4-point gain from noise; four can. A lead that could
// not clear 0 even with every pass left (reachable) gets none, and a pass
// the budget or the phase cannot pay for is not begun.
func (s *Searcher) confirm(ctx context.Context, inc *Entry, live []*Entry, val []data.Task, r *IterationResult) error {
	for {
		var lead *Entry
		var best Gain
		for _, e := range live {
			g := PairedGain(e, inc)
			if g.N > 1 && g.Gain > 0 && g.Lo <= 0 && int(passes(e)) < MaxPasses && reachable(g, passes(e)) && (lead == nil || g.Gain > best.Gain) {
				lead, best = e, g
			}
		}
		if lead == nil {
			return nil
		}
		p := int(passes(lead))
		var need []*Entry
		c := 0
		for _, e := range []*Entry{inc, lead} {
			if int(passes(e)) <= p { // else the incumbent already has this pass
				need = append(need, e)
				c += cost(e, inc, len(val))
			}
		}
		if s.shortOf(c) != "" {
			return nil
		}
		for _, e := range need {
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

// exactTie reports whether e, scored once on all n val tasks, matched
// inc's per-task mean reward exactly on every one of them.
func exactTie(e, inc *Entry, n int) bool {
	if passes(e) != 1 || len(e.Tasks) != n {
		return false
	}
	pi := passes(inc)
	for t, x := range e.Tasks {
		y, ok := inc.Tasks[t]
		if !ok || x != y/pi {
			return false
		}
	}
	return true
}

// reachable reports whether a paired gain measured over p passes could
// have its lower bound above 0 after MaxPasses: the interval's half-width
// shrinks at best as 1/√passes (it shrinks less where tasks, not draws,
// make the spread), so a lead whose gain is below the half-width that
// MaxPasses would leave is not worth the passes.
func reachable(g Gain, p float64) bool {
	return g.Gain > (g.Gain-g.Lo)*math.Sqrt(p/MaxPasses)
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
// and model calls spent now (reused outcomes are not: Outcome.Reused).
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
	calls, spent, n := 0, 0, 0
	if e.Failures == nil {
		e.Failures = map[string]int{}
	}
	for i, t := range val[from:to] {
		ids[i] = t.ID
		rw[i] = outs[i].Reward
		calls += outs[i].Calls
		if !outs[i].Reused {
			spent += outs[i].Calls
			n++
		}
		e.Failures[outs[i].Failure]++
	}
	e.add(ids, rw)
	e.Calls += calls
	return n, spent, nil
}
