package search

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"whale/data"
	"whale/harnesses"
)

func TestPairedGainOnKnownVectors(t *testing.T) {
	ids := []string{"a", "b", "c", "d"}
	x, y := &Entry{}, &Entry{}
	x.add(ids, []float64{1, 1, 0, 0})
	y.add(ids, []float64{0, 1, 0, 0})
	g := PairedGain(x, y)
	// differences 1, 0, 0, 0: mean 0.25, sd 0.5, se 0.25, t(3) 3.182446
	if g.N != 4 || math.Abs(g.Gain-0.25) > 1e-12 || math.Abs(g.Hi-g.Gain-0.25*3.182446305284263) > 1e-9 {
		t.Fatalf("gain %+v", g)
	}
	// Tasks scored by one side only are left out.
	z := &Entry{}
	z.add([]string{"a", "e"}, []float64{1, 1})
	if g := PairedGain(z, y); g.N != 1 || g.Gain != 1 || !math.IsInf(g.Lo, -1) {
		t.Fatalf("one shared task: %+v", g)
	}
	// Identical vectors: a zero gain with a zero-width interval, never "above 0".
	if g := PairedGain(y, y); g.Gain != 0 || g.Lo != 0 || g.Hi != 0 {
		t.Fatalf("self comparison %+v", g)
	}
}

func TestTQuantileMatchesTables(t *testing.T) {
	// Student's t 0.975 quantiles (standard tables).
	for df, want := range map[int]float64{1: 12.7062, 2: 4.3027, 3: 3.1824, 5: 2.5706, 6: 2.4469, 7: 2.3646, 10: 2.2281, 30: 2.0423, 127: 1.9789, 1000: 1.9623} {
		if got := tQuantile975(df); math.Abs(got-want)/want > 3e-3 {
			t.Fatalf("t(%d) = %.4f, want %.4f", df, got, want)
		}
	}
}

// fixedScorer rewards per (source, task) from a table, for exact tests of
// acceptance.
type fixedScorer map[string][]float64

func (f fixedScorer) Score(ctx context.Context, src string, ts []data.Task, pass int) ([]Outcome, error) {
	rw := f[harnesses.Hash(src)]
	out := make([]Outcome, len(ts))
	for i, t := range ts {
		var k int
		for j := range t.ID[1:] {
			k = k*10 + int(t.ID[1+j]-'0')
		}
		out[i] = Outcome{Reward: rw[k], Calls: 2}
		if rw[k] == 0 {
			out[i].Failure = "wrong"
		}
	}
	return out, nil
}

// oneCandidate proposes a fixed source.
type oneCandidate struct{ src, mech string }

func (o oneCandidate) Name() string { return "one" }
func (o oneCandidate) Propose(ctx context.Context, a *Archive, rng *rand.Rand, n int) ([]Candidate, error) {
	h := harnesses.Hash(o.src)
	if a.known(h) {
		return nil, nil
	}
	return []Candidate{{Source: o.src, Hash: h, Parent: a.Incumbent, Mechanism: o.mech, Proposer: "one"}}, nil
}

// pairedRun scores h0 (rewards base per val task) and one child (rewards
// rw) on len(base) val tasks, one rung, and returns the iteration that
// proposed the child, the archive and the child's hash.
func pairedRun(t *testing.T, base, rw []float64) (IterationResult, *Archive, string) {
	t.Helper()
	src := builtin(t)
	child, err := harnesses.Mutate(src, "MAX_TURNS", "4")
	if err != nil {
		t.Fatal(err)
	}
	val := tasks(len(base))
	a := NewArchive()
	a.Add(Entry{Hash: harnesses.Hash(src), Source: src})
	a.Accept(harnesses.Hash(src))
	s := &Searcher{Proposer: oneCandidate{child, "MAX_TURNS=4"}, Scorer: fixedScorer{harnesses.Hash(src): base, harnesses.Hash(child): rw}, M: 1, Rungs: []float64{1}}
	if _, err := s.Restart(context.Background(), a, "w", val, 1); err != nil {
		t.Fatal(err)
	}
	r, err := s.Iterate(context.Background(), a, val, rand.New(rand.NewPCG(1, 1)), 2)
	if err != nil {
		t.Fatal(err)
	}
	return r, a, harnesses.Hash(child)
}

func TestAcceptanceNeedsAPairedLowerBoundAboveZero(t *testing.T) {
	src := builtin(t)
	base := make([]float64, 100)
	for i := range base {
		base[i] = float64(i % 3 % 2) // a third of the tasks solved
	}
	run := func(better int) (IterationResult, *Archive) {
		rw := append([]float64(nil), base...)
		for i, n := 0, 0; i < 100 && n < better; i++ {
			if rw[i] == 0 {
				rw[i], n = 1, n+1
			}
		}
		r, a, _ := pairedRun(t, base, rw)
		return r, a
	}
	child, _ := harnesses.Mutate(src, "MAX_TURNS", "4")
	// Two more tasks solved out of 100 and nothing lost: gain 0.02, sd 0.141,
	// lower bound 0.02 − 1.98·0.0141 < 0: not enough.
	r, a := run(2)
	if r.Changed {
		t.Fatal("a +2-task gain within the paired noise was accepted")
	}
	e := a.Entries[harnesses.Hash(child)]
	if !e.HasGain || math.Abs(e.Gain-0.02) > 1e-12 || e.GainLo >= 0 || e.Against != harnesses.Hash(src) {
		t.Fatalf("recorded gain %+v", e)
	}
	// An unresolved lead earns more passes while the interval MaxPasses
	// would leave could clear 0 (reachable). This scorer repeats itself,
	// so the half-width stays 1.984·0.1407/√100 = 0.0279: after pass 1,
	// 0.02 > 0.0279·√(1/4) = 0.0140 and after pass 2, 0.02 > 0.0197, but
	// after pass 3, 0.02 < 0.0242: two extra passes, then it gives up.
	const passesRun = 3
	if e.Calls != 2*100*passesRun || e.Failures["wrong"] != 65*passesRun || e.Failures[""] != 35*passesRun || len(r.Confirmed) != passesRun-1 {
		t.Fatalf("calls %d failures %v confirmed %d", e.Calls, e.Failures, len(r.Confirmed))
	}
	// Eight more: lower bound above 0, accepted.
	if r, _ := run(8); !r.Changed || r.Calls != 200 || len(r.Confirmed) != 0 {
		t.Fatalf("a +8-task paired gain was not accepted: %+v", r)
	}
}

func TestAdmitCanRefuseAWinner(t *testing.T) {
	a, s, _ := newSearch(t)
	val := tasks(256)
	ctx := context.Background()
	s.Restart(ctx, a, "w1", val, 1)
	refused := 0
	s.Admit = func(ctx context.Context, e *Entry) (bool, error) {
		if strings.Contains(e.Source, "parse_action = _parse_bare") {
			refused++
			return false, nil
		}
		return true, nil
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for it := 2; it <= 14; it++ {
		if _, err := s.Iterate(ctx, a, val, rng, it); err != nil {
			t.Fatal(err)
		}
	}
	if refused == 0 || strings.Contains(a.Entries[a.Incumbent].Source, "parse_action = _parse_bare") {
		t.Fatalf("refused %d times; incumbent %s", refused, a.Entries[a.Incumbent].Mechanism)
	}
}

// grownSearch is newSearch after a restart under weights "w1" and five
// iterations on n val tasks: an archive with entries to re-score.
func grownSearch(t *testing.T, n int) (*Archive, *Searcher, *synthetic, []data.Task, *rand.Rand) {
	t.Helper()
	a, s, sc := newSearch(t)
	sc.noise = true // else the neutral changes are exact ties, never re-scored
	val := tasks(n)
	ctx := context.Background()
	s.Restart(ctx, a, "w1", val, 1)
	rng := rand.New(rand.NewPCG(3, 3))
	for it := 2; it <= 6; it++ {
		if _, err := s.Iterate(ctx, a, val, rng, it); err != nil {
			t.Fatal(err)
		}
	}
	return a, s, sc, val, rng
}

func TestRestartRescoresTheTopAndThePareto(t *testing.T) {
	a, s, sc, val, _ := grownSearch(t, 128)
	ctx := context.Background()
	inc := a.Incumbent
	want := map[string]bool{}
	for _, e := range a.restartSet() {
		want[e.Hash] = true
	}
	if len(want) == 0 {
		t.Fatal("nothing to re-score")
	}
	before := sc.rollouts
	r, err := s.Restart(ctx, a, "w2", val, 7)
	if err != nil {
		t.Fatal(err)
	}
	if a.Weights != "w2" || !a.Entries[inc].Complete {
		t.Fatal("the incumbent was not re-scored under the new weights")
	}
	for h := range want {
		if !a.Entries[h].Complete || !a.Entries[h].HasGain {
			t.Fatalf("%s of the top/Pareto set was not re-scored and compared", h[:12])
		}
	}
	if got := sc.rollouts - before; got != (1+len(want))*len(val) || r.Rollouts != got {
		t.Fatalf("restart spent %d rollouts (reported %d), want %d", got, r.Rollouts, (1+len(want))*len(val))
	}
	// Under unchanged weights a restart scores nothing.
	if r, _ := s.Restart(ctx, a, "w2", val, 8); r.Rollouts != 0 {
		t.Fatalf("restart under the same weights spent %d", r.Rollouts)
	}
}

func TestABudgetProposesOnlyWhatItCanScore(t *testing.T) {
	val := tasks(64)
	ctx := context.Background()
	for _, c := range []struct {
		name        string
		budget      bool // Left, else PhaseLeft
		left, spent int  // calls left before the iteration; spent in it
		starved     string
	}{
		// Less than one whole val pass of one candidate (one call a
		// rollout): nothing is proposed and nothing spent.
		{"budget below one candidate", true, 63, 0, StarvedBudget},
		{"phase below one candidate", false, 63, 0, StarvedPhase},
		// One candidate's whole pass and a rung more: of the three
		// candidates M asks for, one is proposed and scored to the end.
		{"budget for one candidate", true, 80, 64, ""},
	} {
		a, s, sc := newSearch(t)
		s.Restart(ctx, a, "w1", val, 1)
		before := sc.rollouts
		left := func() int { return c.left - (sc.rollouts - before) }
		if c.budget {
			s.Left = left
		} else {
			s.PhaseLeft = left
		}
		r, err := s.Iterate(ctx, a, val, rand.New(rand.NewPCG(5, 5)), 2)
		if err != nil {
			t.Fatal(err)
		}
		got := sc.rollouts - before
		stopped := 0 // by the budget: an exact tie stops after its pass
		for _, h := range r.Stopped {
			if !a.Entries[h].Tied {
				stopped++
			}
		}
		if got != c.spent || r.Calls != got || r.Starved != c.starved || stopped != 0 {
			t.Fatalf("%s: spent %d (reported %d, want %d), starved %q (want %q), stopped %d", c.name, got, r.Calls, c.spent, r.Starved, c.starved, stopped)
		}
		if want := c.spent / len(val); len(r.Candidates) != want {
			t.Fatalf("%s: %d candidates proposed, want %d", c.name, len(r.Candidates), want)
		}
		for _, h := range r.Candidates {
			if !a.Entries[h].Complete {
				t.Fatalf("%s: %s was proposed but not scored to the end", c.name, h[:12])
			}
		}
	}
}

func TestARungTheBudgetCannotPayForStopsItsCandidates(t *testing.T) {
	a, s, sc := newSearch(t)
	val := tasks(64)
	ctx := context.Background()
	s.Restart(ctx, a, "w1", val, 1)
	// The incumbent's price says one call a rollout, so 64 calls pay for
	// a whole candidate; but it turns out to cost two. Its first two rungs
	// (16 tasks each, 32 calls each at its own price once it has one)
	// spend the 64, and it stops before the last.
	sc.calls = 2
	before := sc.rollouts
	s.Left = func() int { return 64 - 2*(sc.rollouts-before) }
	s.M = 1
	r, err := s.Iterate(ctx, a, val, rand.New(rand.NewPCG(5, 5)), 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.rollouts - before; got != 32 || len(r.Stopped) != 1 || r.Changed || r.Starved != StarvedBudget {
		t.Fatalf("spent %d rollouts (want 32), stopped %d of %d, changed %v, starved %q", got, len(r.Stopped), len(r.Candidates), r.Changed, r.Starved)
	}
	if a.Entries[r.Candidates[0]].Complete {
		t.Fatal("a candidate stopped by the budget was marked complete")
	}
}

// bandScorer gives harness src reward 1 when the draw of (task, pass),
// shared by every harness, falls in its band [lo, hi).
type bandScorer map[string][2]float64

func (c bandScorer) Score(ctx context.Context, src string, ts []data.Task, pass int) ([]Outcome, error) {
	band := c[harnesses.Hash(src)]
	out := make([]Outcome, len(ts))
	for i, t := range ts {
		h := fnv.New64a()
		fmt.Fprint(h, t.ID, "/", pass)
		u := rand.New(rand.NewPCG(h.Sum64(), 3)).Float64()
		if u >= band[0] && u < band[1] {
			out[i] = Outcome{Reward: 1, Calls: 1}
		} else {
			out[i] = Outcome{Failure: "wrong", Calls: 1}
		}
	}
	return out, nil
}

func TestExtraPassesResolveAGainOnePassCannot(t *testing.T) {
	src := builtin(t)
	child, err := harnesses.Mutate(src, "MAX_TURNS", "4")
	if err != nil {
		t.Fatal(err)
	}
	// The incumbent solves draws in [0, 0.10), the candidate those in
	// [0.08, 0.25): it loses 8 % of the tasks and wins 15 %, a 7-point
	// gain whose paired sd is about 0.48 — on one pass of 128 tasks the
	// interval is ±8 points, on four about ±4.
	val := tasks(128)
	sc := bandScorer{harnesses.Hash(src): {0, 0.10}, harnesses.Hash(child): {0.08, 0.25}}
	a := NewArchive()
	a.Add(Entry{Hash: harnesses.Hash(src), Source: src})
	a.Accept(harnesses.Hash(src))
	s := &Searcher{Proposer: oneCandidate{child, "MAX_TURNS=4"}, Scorer: sc, M: 1, Rungs: []float64{1}}
	if _, err := s.Restart(context.Background(), a, "w", val, 1); err != nil {
		t.Fatal(err)
	}
	r, err := s.Iterate(context.Background(), a, val, rand.New(rand.NewPCG(1, 1)), 2)
	if err != nil {
		t.Fatal(err)
	}
	e := a.Entries[harnesses.Hash(child)]
	t.Logf("gain %.3f [%.3f, %.3f] after %d extra passes", e.Gain, e.GainLo, e.GainHi, len(r.Confirmed))
	if len(r.Confirmed) == 0 {
		t.Fatal("one pass resolved a gain it should not have: the test's premise is wrong")
	}
	if !r.Changed || e.GainLo <= 0 {
		t.Fatalf("a 7-point paired gain was not accepted after %d extra passes: %.3f [%.3f, %.3f]", len(r.Confirmed), e.Gain, e.GainLo, e.GainHi)
	}
}

func TestALeadThatCannotClearZeroGetsNoExtraPasses(t *testing.T) {
	// The child solves 3 tasks the incumbent fails and fails 2 it solves:
	// gain 0.01, paired sd 0.2247, half-width 1.984·0.02247 = 0.0446. Even
	// four passes could shrink that only to 0.0223, still above the gain.
	base, rw := make([]float64, 100), make([]float64, 100)
	for i := range base {
		base[i] = float64(i % 2)
		rw[i] = base[i]
	}
	rw[0], rw[2], rw[4], rw[1], rw[3] = 1, 1, 1, 0, 0
	r, a, child := pairedRun(t, base, rw)
	e := a.Entries[child]
	if math.Abs(e.Gain-0.01) > 1e-12 || len(r.Confirmed) != 0 || r.Calls != 2*100 || r.Changed {
		t.Fatalf("gain %.4f [%.4f, %.4f]: %d extra passes, %d calls, changed %v", e.Gain, e.GainLo, e.GainHi, len(r.Confirmed), r.Calls, r.Changed)
	}
}

func TestARestartLeavesRoomForNewCandidates(t *testing.T) {
	a, s, sc, val, rng := grownSearch(t, 64)
	ctx := context.Background()
	if n := len(a.restartSet()); n < 3 {
		t.Fatalf("the premise needs 3 entries to re-score, have %d", n)
	}
	// 320 calls: the incumbent's 64, then old entries only while what is
	// left still pays for M = 3 new candidates (192) and half of the 256
	// left after the incumbent: one of them.
	before := sc.rollouts
	s.PhaseLeft = func() int { return 320 - (sc.rollouts - before) }
	r, err := s.Restart(ctx, a, "w2", val, 7)
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.rollouts - before; got != 2*64 || len(r.Candidates) != 2 || r.Starved != "" {
		t.Fatalf("restart spent %d (want %d) on %d entries, starved %q", got, 2*64, len(r.Candidates), r.Starved)
	}
	// The next iteration has room for all M candidates.
	r, err = s.Iterate(ctx, a, val, rng, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Candidates) != s.M {
		t.Fatalf("after the restart %d candidates were proposed, want M = %d", len(r.Candidates), s.M)
	}
	// The phase's allowance never stops the incumbent's own score.
	before = sc.rollouts
	s.PhaseLeft = func() int { return 10 - (sc.rollouts - before) }
	if r, err := s.Restart(ctx, a, "w3", val, 9); err != nil || !a.Entries[a.Incumbent].Complete || r.Rollouts != 64 {
		t.Fatalf("under a spent allowance the incumbent was not scored: %+v, %v", r, err)
	}
}
