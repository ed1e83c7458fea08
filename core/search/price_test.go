package search

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"whale/data"
	"whale/harnesses"
)

// samplesOfSource reads SAMPLES from a source's knobs (what the engine
// reads by loading the harness).
func samplesOfSource(src string) (int, error) {
	v, err := harnesses.NewVariants(src)
	if err != nil {
		return 0, err
	}
	for _, d := range v.Space() {
		if d.Knob == "SAMPLES" {
			return strconv.Atoi(d.Current)
		}
	}
	return 1, nil
}

// pricedScorer charges two model calls a rollout per sample, rewards
// every other task, and counts what it spent.
type pricedScorer struct{ calls int }

func (p *pricedScorer) Score(ctx context.Context, src string, ts []data.Task, pass int) ([]Outcome, error) {
	k, err := samplesOfSource(src)
	if err != nil {
		return nil, err
	}
	out := make([]Outcome, len(ts))
	for i := range ts {
		out[i] = Outcome{Reward: float64(i % 2), Calls: 2 * k}
		p.calls += 2 * k
	}
	return out, nil
}

// listProposer proposes the sources of its list not yet in the archive,
// in order; filtering makes it a FilteringProposer.
type listProposer struct {
	srcs      []string
	filtering bool
}

func (l listProposer) Name() string { return "list" }
func (l listProposer) Propose(ctx context.Context, a *Archive, rng *rand.Rand, n int) ([]Candidate, error) {
	return l.propose(a, n, nil), nil
}
func (l listProposer) propose(a *Archive, n int, keep func(Candidate) bool) []Candidate {
	var out []Candidate
	for _, src := range l.srcs {
		c := Candidate{Source: src, Hash: harnesses.Hash(src), Parent: a.Incumbent, Proposer: "list"}
		if len(out) == n {
			break
		}
		if a.known(c.Hash) || (keep != nil && !keep(c)) {
			continue
		}
		out = append(out, c)
	}
	return out
}

type filteringList struct{ listProposer }

func (l filteringList) ProposeWhere(ctx context.Context, a *Archive, rng *rand.Rand, n int, keep func(Candidate) bool) ([]Candidate, error) {
	return l.propose(a, n, keep), nil
}

// A voting candidate costs its samples: an allowance that pays for one
// single-sample score (40 calls on 20 tasks) but not a SAMPLES=3 one (120)
// passes it over and scores the next proposal whole, where pricing it at
// the incumbent's rate began it and stopped it part-way, spending calls
// on a score that could never finish.
func TestAVotingCandidateTheAllowanceCannotPayForIsPassedOver(t *testing.T) {
	src := builtin(t)
	vote, err := harnesses.Mutate(src, "SAMPLES", "3")
	if err != nil {
		t.Fatal(err)
	}
	turns, err := harnesses.Mutate(src, "MAX_TURNS", "4")
	if err != nil {
		t.Fatal(err)
	}
	val := tasks(20)
	run := func(p Proposer, priced bool) (IterationResult, *Archive, int) {
		a := NewArchive()
		a.Add(Entry{Hash: harnesses.Hash(src), Source: src})
		if err := a.Accept(harnesses.Hash(src)); err != nil {
			t.Fatal(err)
		}
		sc := &pricedScorer{}
		s := &Searcher{Proposer: p, Scorer: sc, M: 2}
		if priced {
			s.Samples = samplesOfSource
		}
		s.PhaseLeft = func() int { return 100 - sc.calls }
		if _, err := s.Restart(context.Background(), a, "w", val, 1); err != nil {
			t.Fatal(err)
		}
		before := sc.calls
		r, err := s.Iterate(context.Background(), a, val, rand.New(rand.NewPCG(1, 1)), 2)
		if err != nil {
			t.Fatal(err)
		}
		return r, a, sc.calls - before
	}
	both := []string{vote, turns}

	r, a, spent := run(filteringList{listProposer{srcs: both}}, true)
	if r.Unaffordable != 1 || !slices.Equal(r.Candidates, []string{harnesses.Hash(turns)}) || len(r.Stopped) != 0 || r.Starved != "" {
		t.Fatalf("filtering proposer: %+v, want the voting candidate passed over and MAX_TURNS=4 scored", r)
	}
	if e := a.Entries[harnesses.Hash(turns)]; e == nil || !e.Complete || spent != 40 {
		t.Fatalf("MAX_TURNS=4 complete %v after %d calls, want complete after 40", e != nil && e.Complete, spent)
	}
	if a.known(harnesses.Hash(vote)) {
		t.Fatal("the passed-over candidate entered the archive")
	}

	// A proposer that cannot filter has its unaffordable proposal dropped;
	// with nothing left the iteration says the phase starved.
	r, _, spent = run(listProposer{srcs: both}, true)
	if r.Unaffordable != 1 || len(r.Candidates) != 0 || r.Starved != StarvedPhase || spent != 0 {
		t.Fatalf("plain proposer: %+v after %d calls, want the vote dropped, nothing spent and the phase starved", r, spent)
	}

	// Priced at the incumbent's rate (no Samples), the vote is begun and
	// stopped part-way: calls spent, nothing complete.
	r, a, spent = run(filteringList{listProposer{srcs: both}}, false)
	if e := a.Entries[harnesses.Hash(vote)]; e == nil || e.Complete || spent == 0 || !slices.Contains(r.Stopped, e.Hash) {
		t.Fatalf("unpriced: %+v after %d calls, want the vote begun and stopped", r, spent)
	}
}

// ProposeWhere with a keep that takes everything proposes what Propose
// does from the same draws; refusing voting candidates yields as many
// single-sample ones, none voting.
func TestFragmentProposeWherePassesOverRefusedCandidates(t *testing.T) {
	src := builtinOf(t, "math")
	for seed := uint64(1); seed <= 5; seed++ {
		a := archiveOf(t, src)
		a.Entries[a.Incumbent].Failures = map[string]int{"wrong": 90, "": 10}
		f := Fragment{}
		plain, err := f.Propose(context.Background(), a, rand.New(rand.NewPCG(seed, 2)), 6)
		if err != nil {
			t.Fatal(err)
		}
		all, err := f.ProposeWhere(context.Background(), a, rand.New(rand.NewPCG(seed, 2)), 6, func(Candidate) bool { return true })
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(plain, all, func(x, y Candidate) bool { return x.Hash == y.Hash }) {
			t.Fatalf("seed %d: ProposeWhere keeping all differs from Propose", seed)
		}
		refused := 0
		single, err := f.ProposeWhere(context.Background(), a, rand.New(rand.NewPCG(seed, 2)), 6, func(c Candidate) bool {
			k, err := samplesOfSource(c.Source)
			if err != nil {
				t.Fatal(err)
			}
			if k > 1 {
				refused++
			}
			return k == 1
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(single) != 6 {
			t.Fatalf("seed %d: %d candidates, want 6", seed, len(single))
		}
		for _, c := range single {
			if k, _ := samplesOfSource(c.Source); k != 1 {
				t.Fatalf("seed %d: kept %s with SAMPLES=%d", seed, c.Mechanism, k)
			}
		}
		t.Logf("seed %d: %d voting proposals passed over", seed, refused)
	}
}
