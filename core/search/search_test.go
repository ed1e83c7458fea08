package search

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"testing"

	"whale/data"
	"whale/harnesses"
)

func builtin(t *testing.T) string {
	t.Helper()
	src, err := harnesses.Builtin("math", "h0")
	if err != nil {
		t.Fatal(err)
	}
	return harnesses.Normalize(src)
}

func tasks(n int) []data.Task {
	out := make([]data.Task, n)
	for i := range out {
		out[i] = data.Task{ID: fmt.Sprint("t", i)}
	}
	return out
}

// quality is a synthetic truth: the bare parser and a retry budget of 3
// help; everything else is neutral.
func quality(src string) float64 {
	q := 0.3
	if strings.Contains(src, "parse_action = _parse_bare") {
		q += 0.4
	}
	if strings.Contains(src, "FORMAT_RETRY_BUDGET = 3") {
		q += 0.1
	}
	return q
}

// synthetic draws Bernoulli(quality) rewards from one uniform draw per
// (task, pass) shared by every harness — the paired draws the engine's
// scorer gives — and counts calls.
// synthetic scores a harness by its quality on draws shared by every
// harness; each rollout costs calls model calls (0: one).
// With noise, a tenth of each harness's rollouts draw apart from the
// shared draws, so a neutral change is not an exact tie with its parent.
type synthetic struct {
	rollouts, calls int
	noise           bool
}

func (s *synthetic) Score(ctx context.Context, src string, ts []data.Task, pass int) ([]Outcome, error) {
	out := make([]Outcome, len(ts))
	calls := max(1, s.calls)
	for i, t := range ts {
		h := fnv.New64a()
		fmt.Fprint(h, t.ID, pass)
		out[i] = Outcome{Failure: "wrong", Calls: calls}
		draw := rand.New(rand.NewPCG(h.Sum64(), 1)).Float64()
		if s.noise {
			fmt.Fprint(h, harnesses.Hash(src))
			if r := rand.New(rand.NewPCG(h.Sum64(), 2)); r.Float64() < 0.1 {
				draw = r.Float64()
			}
		}
		if draw < quality(src) {
			out[i] = Outcome{Reward: 1, Calls: calls}
		}
	}
	s.rollouts += len(ts)
	return out, nil
}

func newSearch(t *testing.T) (*Archive, *Searcher, *synthetic) {
	a := NewArchive()
	src := builtin(t)
	a.Add(Entry{Hash: harnesses.Hash(src), Source: src})
	if err := a.Accept(harnesses.Hash(src)); err != nil {
		t.Fatal(err)
	}
	sc := &synthetic{}
	return a, &Searcher{Proposer: Mutation{}, Scorer: sc, M: 3}, sc
}

func TestMutationSearchFindsTheBetterParser(t *testing.T) {
	a, s, sc := newSearch(t)
	val := tasks(256)
	ctx := context.Background()
	if _, err := s.Restart(ctx, a, "w1", val, 1); err != nil {
		t.Fatal(err)
	}
	// The test-time compute knobs would double the one-knob
	// neighbourhood; this test is about finding one good knob in it.
	for _, k := range []string{"SAMPLES", "aggregate", "is_valid_action"} {
		a.Frozen[k] = true
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var stopped int
	for it := 2; it <= 14; it++ {
		r, err := s.Iterate(ctx, a, val, rng, it)
		if err != nil {
			t.Fatal(err)
		}
		stopped += len(r.Stopped)
		// Every candidate differs from its parent in exactly one knob.
		for _, h := range r.Candidates {
			if e := a.Entries[h]; strings.Count(e.Mechanism, "=") != 1 {
				t.Fatalf("candidate mechanism %q changes more than one knob", e.Mechanism)
			}
		}
	}
	best := a.Entries[a.Incumbent]
	if !strings.Contains(best.Source, "parse_action = _parse_bare") {
		t.Fatalf("incumbent after 13 iterations: %s (score %.3f), want the bare parser", best.Mechanism, best.Score)
	}
	if stopped == 0 {
		t.Fatal("successive halving never stopped a clear loser")
	}
	if sc.rollouts >= 256*(1+13*3) {
		t.Fatalf("%d rollouts: early stopping saved nothing", sc.rollouts)
	}
}

func TestFrozenAndPrunedAreNeverProposed(t *testing.T) {
	a, _, _ := newSearch(t)
	space, _ := harnesses.SpaceOf(a.Entries[a.Incumbent].Source)
	for _, d := range space {
		if d.Knob != "parse_action" {
			a.Frozen[d.Knob] = true
		}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	cs, err := Mutation{}.Propose(context.Background(), a, rng, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 5 { // six parsers, one is current
		t.Fatalf("%d candidates with only parse_action free, want 5", len(cs))
	}
	a.Add(Entry{Hash: cs[0].Hash, Source: cs[0].Source})
	if err := a.Prune(cs[0].Hash); err != nil {
		t.Fatal(err)
	}
	cs2, _ := Mutation{}.Propose(context.Background(), a, rng, 100)
	for _, c := range cs2 {
		if c.Hash == cs[0].Hash {
			t.Fatal("a pruned harness was proposed again")
		}
		if !strings.HasPrefix(c.Mechanism, "parse_action=") {
			t.Fatalf("frozen knob varied: %s", c.Mechanism)
		}
	}
	if err := a.Prune(a.Incumbent); err == nil {
		t.Fatal("pruning the incumbent accepted")
	}
	if err := a.Accept(cs[0].Hash); err == nil {
		t.Fatal("a pruned harness was accepted")
	}
}

func TestResetScoresAllowsReproposal(t *testing.T) {
	a, s, _ := newSearch(t)
	val := tasks(64)
	ctx := context.Background()
	s.Restart(ctx, a, "w1", val, 1)
	rng := rand.New(rand.NewPCG(2, 2))
	r, err := s.Iterate(ctx, a, val, rng, 2)
	if err != nil {
		t.Fatal(err)
	}
	a.ResetScores("w2")
	if a.Best() != nil {
		t.Fatal("Best returned an entry scored under old weights")
	}
	if a.known(r.Candidates[0]) {
		t.Fatal("a candidate scored under old weights counts as known")
	}
	if _, err := s.Iterate(ctx, a, val, rng, 3); err == nil {
		t.Fatal("iterating before the incumbent is re-scored accepted")
	}
}

func TestGridWalksTheProduct(t *testing.T) {
	a, _, _ := newSearch(t)
	g := &Grid{Base: a.Entries[a.Incumbent].Source, Knobs: []string{"FORMAT_RETRY_BUDGET", "MAX_TURNS"}}
	cs, err := g.Propose(context.Background(), a, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 4*4 { // the base point itself is a grid point too, not yet scored
		t.Fatalf("%d grid points, want 16", len(cs))
	}
	if _, err := (&Grid{Base: g.Base, Knobs: []string{"NOPE"}}).Propose(context.Background(), a, nil, 1); err == nil {
		t.Fatal("unknown grid knob accepted")
	}
}

func TestCI95(t *testing.T) {
	e := &Entry{}
	e.add([]string{"a", "b", "c", "d"}, []float64{1, 0, 1, 0})
	lo, hi := e.CI95()
	// mean 0.5, sample sd sqrt(1/3), half width 1.96·sqrt(1/3)/2 = 0.5658
	if e.Score != 0.5 || hi-lo < 1.13 || hi-lo > 1.134 {
		t.Fatalf("score %v CI [%v, %v]", e.Score, lo, hi)
	}
}

func TestParetoFront(t *testing.T) {
	a := NewArchive()
	ids := []string{"t1", "t2", "t3"}
	add := func(hash string, it int, rw ...float64) {
		e := a.Add(Entry{Hash: hash, Iteration: it})
		e.add(ids, rw)
		e.Complete = true
	}
	add("inc", 0, 0, 0, 1)                        // incumbent: dominated by "all", kept anyway
	add("all", 1, 1, 0, 1)                        // dominates inc
	add("mid", 1, 0, 1, 0)                        // best on t2 alone: on the front
	add("dup", 2, 0, 1, 0)                        // same vector as mid, seen later: dropped
	add("low", 2, 0, 0, 0)                        // dominated by everyone
	e := a.Add(Entry{Hash: "half", Iteration: 3}) // not complete: never on the front
	e.add(ids[:1], []float64{1})
	if err := a.Accept("inc"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range a.Pareto(0) {
		got = append(got, e.Hash)
	}
	if want := []string{"inc", "all", "mid"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("front %v, want %v", got, want)
	}
	if f := a.Pareto(2); len(f) != 2 || f[0].Hash != "inc" || f[1].Hash != "all" {
		t.Fatalf("capped front %v", f)
	}
	// Two passes over the tasks compare by mean, not by sum.
	a.Entries["mid"].add(ids, []float64{0, 1, 0})
	if c := compareTasks(a.Entries["mid"], a.Entries["dup"]); c != 0 {
		t.Fatalf("mid (2 passes) vs dup (1 pass) = %d, want equal", c)
	}
}

func TestMutationFromParents(t *testing.T) {
	src, err := harnesses.Builtin("math", "h0")
	if err != nil {
		t.Fatal(err)
	}
	a := NewArchive()
	a.Add(Entry{Hash: harnesses.Hash(src), Source: src, Complete: true})
	if err := a.Accept(harnesses.Hash(src)); err != nil {
		t.Fatal(err)
	}
	space, err := harnesses.SpaceOf(src)
	if err != nil {
		t.Fatal(err)
	}
	d := space[0]
	var other string
	for _, c := range d.Choices {
		if c != d.Current {
			other = c
			break
		}
	}
	child, err := harnesses.Mutate(src, d.Knob, other)
	if err != nil {
		t.Fatal(err)
	}
	a.Add(Entry{Hash: harnesses.Hash(child), Source: child, Complete: true})
	cs, err := Mutation{Parents: []string{harnesses.Hash(src), harnesses.Hash(child)}}.Propose(context.Background(), a, rand.New(rand.NewPCG(1, 2)), 1000)
	if err != nil {
		t.Fatal(err)
	}
	fromChild := 0
	for _, c := range cs {
		if c.Parent == harnesses.Hash(child) {
			fromChild++
		}
		if a.known(c.Hash) {
			t.Fatalf("candidate %s is already archived", c.Hash[:12])
		}
	}
	if fromChild == 0 {
		t.Fatal("no candidate descends from the second parent")
	}
	if _, err := (Mutation{Parents: []string{"nope"}}).Propose(context.Background(), a, rand.New(rand.NewPCG(1, 2)), 1); err == nil {
		t.Fatal("unknown parent accepted")
	}
}
