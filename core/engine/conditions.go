package engine

import (
	"context"
	"fmt"
	"math/rand/v2"

	"whale/core/search"
	"whale/data"
	"whale/harnesses"
)

// populationCap bounds the fast-slow population: each cycle re-measures
// the whole population under the new weights, so its size is rollouts.
const populationCap = 4

// firstPhase is the phase a run begins with.
func (c Config) firstPhase() Phase {
	switch c.Condition {
	case "harness-only", "fast-slow", EvalOnly:
		return PhaseHarness
	}
	return PhaseWeights
}

// nextPhase is the phase after the one that just ended, and whether it
// begins a new round. WHALE alternates weights → harness, a round being
// one of each; fast-slow alternates harness → weights; the one-sided
// conditions count every phase as a round.
func (e *Engine) nextPhase() (Phase, bool) {
	switch e.Cfg.Condition {
	case "weight-only":
		return PhaseWeights, true
	case "harness-only", EvalOnly:
		return PhaseHarness, true
	case "staged":
		if e.Cfg.TwoLedgers() {
			// The weight ledger first, then the search ledger.
			if !e.phaseSpent(PhaseWeights) {
				return PhaseWeights, true
			}
			return PhaseHarness, true
		}
		if e.st.Ledger.Budgeted() < e.Cfg.Budget/2 {
			return PhaseWeights, true
		}
		return PhaseHarness, true
	case "fast-slow":
		if e.st.Phase == PhaseHarness {
			return PhaseWeights, false
		}
		return PhaseHarness, true
	}
	if e.st.Phase == PhaseWeights {
		return PhaseHarness, false
	}
	return PhaseWeights, true
}

// stageSpent reports whether the staged condition's weight stage has used
// its half of the budget, which ends the running weight phase.
func (e *Engine) stageSpent() bool {
	return e.Cfg.Condition == "staged" && !e.Cfg.TwoLedgers() && e.st.Phase == PhaseWeights && e.st.Ledger.Budgeted() >= e.Cfg.Budget/2
}

// rolloutHarnesses assigns each task of a weight step's batch the harness
// its rollouts go through: the incumbent, or under fast-slow the
// population, dealt round-robin from an offset that moves with the step.
func (e *Engine) rolloutHarnesses(tasks []data.Task) []string {
	out := make([]string, len(tasks))
	pop := e.st.Population
	if e.Cfg.Condition != "fast-slow" || len(pop) == 0 {
		pop = []string{e.st.Archive.Incumbent}
	}
	for i := range tasks {
		out[i] = pop[(e.st.Step+i)%len(pop)]
	}
	return out
}

// runAssigned runs each task through its assigned harness, k rollouts
// each, and returns the trajectories in task order with the harness of
// each trajectory.
func (e *Engine) runAssigned(ctx context.Context, tasks []data.Task, assigned []string, prefix string, k int) ([]harnesses.Trajectory, []string, error) {
	var order []string
	byHarness := map[string][]int{}
	for i, h := range assigned {
		if _, ok := byHarness[h]; !ok {
			order = append(order, h)
		}
		byHarness[h] = append(byHarness[h], i)
	}
	perTask := make([][]harnesses.Trajectory, len(tasks))
	for _, hash := range order {
		h, err := e.harness(hash)
		if err != nil {
			return nil, nil, err
		}
		idx := byHarness[hash]
		sub := make([]data.Task, len(idx))
		for j, i := range idx {
			sub[j] = tasks[i]
		}
		p := prefix
		if len(order) > 1 {
			p = fmt.Sprintf("%s%s/", prefix, hash[:12])
		}
		ts, err := harnesses.Run(ctx, h, e.env.Domain, sub, e.pol, e.runOpts(p, k))
		if err != nil {
			return nil, nil, err
		}
		if err := e.finiteRollouts(ts, "the step's rollouts"); err != nil {
			return nil, nil, err
		}
		at := map[string]int{}
		for j, i := range idx {
			at[sub[j].ID] = i
		}
		for _, t := range ts {
			i, ok := at[t.TaskID]
			if !ok {
				return nil, nil, fmt.Errorf("engine: harness %s returned a trajectory for unknown task %s", hash[:12], t.TaskID)
			}
			perTask[i] = append(perTask[i], t)
		}
	}
	var ts []harnesses.Trajectory
	var hs []string
	for i, group := range perTask {
		for _, t := range group {
			ts = append(ts, t)
			hs = append(hs, assigned[i])
		}
	}
	return ts, hs, nil
}

// paretoRound is a fast-slow cycle's harness round: the population is
// re-measured if the weights changed, M candidates mutate members of the
// population, the best complete harness becomes the incumbent, and the
// Pareto front over val tasks becomes the next population.
func (e *Engine) paretoRound(ctx context.Context, s *search.Searcher) (search.IterationResult, error) {
	a := e.st.Archive
	if len(e.st.Population) == 0 {
		e.st.Population = []string{a.Incumbent}
	}
	spent, spentCalls, starved := 0, 0, ""
	if a.Weights != e.st.Weights || !a.Entries[a.Incumbent].Complete {
		sr, err := s.ScoreAll(ctx, a, e.st.Weights, e.st.Population, e.val)
		if err != nil {
			return search.IterationResult{}, err
		}
		spent, spentCalls, starved = sr.Rollouts, sr.Calls, sr.Starved
		if best := a.Best(); best != nil && best.Hash != a.Incumbent {
			if err := a.Accept(best.Hash); err != nil {
				return search.IterationResult{}, err
			}
		}
	}
	var r search.IterationResult
	if starved != "" {
		// What is left cannot re-measure the population: no candidates.
		inc := a.Entries[a.Incumbent]
		r = search.IterationResult{Iteration: e.st.Iteration, Accepted: inc.Hash, BestScore: inc.Score, Starved: starved}
	} else {
		s.Proposer = search.Mutation{Parents: e.st.Population}
		rng := rand.New(rand.NewPCG(e.Cfg.Seed, 0x5ea_0000+uint64(e.st.Iteration)))
		var err error
		if r, err = s.Iterate(ctx, a, e.val, rng, e.st.Iteration); err != nil {
			return r, err
		}
	}
	r.Rollouts += spent
	r.Calls += spentCalls
	e.st.Population = e.st.Population[:0]
	for _, ent := range a.Pareto(populationCap) {
		e.st.Population = append(e.st.Population, ent.Hash)
	}
	if len(e.st.Population) == 0 {
		// A round starved before it re-measured anyone leaves no front:
		// the incumbent alone carries on.
		e.st.Population = append(e.st.Population, a.Incumbent)
	}
	return r, nil
}
