package search

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"whale/harnesses"
)

func builtinOf(t *testing.T, domain string) string {
	t.Helper()
	src, err := harnesses.Builtin(domain, "h0")
	if err != nil {
		t.Fatal(err)
	}
	return harnesses.Normalize(src)
}

func archiveOf(t *testing.T, src string) *Archive {
	t.Helper()
	a := NewArchive()
	a.Add(Entry{Hash: harnesses.Hash(src), Source: src, Scored: 1, Complete: true})
	if err := a.Accept(harnesses.Hash(src)); err != nil {
		t.Fatal(err)
	}
	return a
}

// settings reads a candidate's mechanism and checks it against the
// candidate: applying every listed knob to the parent gives the
// candidate, so the mechanism names every changed knob.
func settings(t *testing.T, a *Archive, c Candidate) map[string]string {
	t.Helper()
	set := map[string]string{}
	for _, kc := range ParseMechanism(c.Mechanism) {
		set[kc[0]] = kc[1]
	}
	src, err := harnesses.MutateAll(a.Entries[c.Parent].Source, set)
	if err != nil {
		t.Fatalf("mechanism %q: %v", c.Mechanism, err)
	}
	if harnesses.Hash(src) != c.Hash || c.Proposer != "fragment" {
		t.Fatalf("mechanism %q does not name every change from the parent (proposer %q)", c.Mechanism, c.Proposer)
	}
	return set
}

func targets(frags []harnesses.Fragment, set map[string]string, kind string) bool {
	for k, c := range set {
		if fr, ok := harnesses.FragmentFor(frags, k, c); ok && slices.Contains(fr.Targets, kind) {
			return true
		}
	}
	return false
}

// A failure share on "format" makes format-targeting choices more likely:
// measured over 200 first proposals against the same harness whose
// failures are all wrong answers.
func TestFragmentTargetsSteerTheDraw(t *testing.T) {
	src := builtinOf(t, "math")
	frags, err := harnesses.FragmentsOf(src)
	if err != nil {
		t.Fatal(err)
	}
	share := func(fails map[string]int) float64 {
		hit := 0
		const draws = 200
		for i := 0; i < draws; i++ {
			a := archiveOf(t, src)
			a.Entries[a.Incumbent].Failures = fails
			cs, err := Fragment{}.Propose(context.Background(), a, rand.New(rand.NewPCG(uint64(i), 3)), 1)
			if err != nil || len(cs) != 1 {
				t.Fatalf("propose: %v (%d candidates)", err, len(cs))
			}
			if targets(frags, settings(t, a, cs[0]), "format") {
				hit++
			}
		}
		return float64(hit) / draws
	}
	format := share(map[string]int{"": 20, "format": 70, "wrong": 10})
	wrong := share(map[string]int{"": 20, "wrong": 80})
	t.Logf("format-targeting share: %.2f under format failures, %.2f under wrong answers", format, wrong)
	if format < 0.5 || format < 1.5*wrong {
		t.Fatalf("format-targeting share %.2f under format failures vs %.2f under wrong answers: targets do not steer", format, wrong)
	}
}

// Past paired gains tilt the draw through the Thompson sample.
func TestFragmentFavoursChoicesThatGained(t *testing.T) {
	src := builtinOf(t, "math")
	count := map[string]int{}
	for i := 0; i < 200; i++ {
		a := archiveOf(t, src)
		for j, m := range []struct {
			mech string
			gain float64
		}{{"parse_action=_parse_bare", 0.08}, {"parse_action=_parse_strict", -0.08}} {
			h := strconv.Itoa(j)
			a.Add(Entry{Hash: h, Mechanism: m.mech, HasGain: true, Gain: m.gain, GainLo: m.gain - 0.02, GainHi: m.gain + 0.02, Scored: 1})
		}
		cs, err := Fragment{}.Propose(context.Background(), a, rand.New(rand.NewPCG(uint64(i), 5)), 1)
		if err != nil || len(cs) != 1 {
			t.Fatalf("propose: %v", err)
		}
		count[settings(t, a, cs[0])["parse_action"]]++
	}
	if count["_parse_bare"] < 40 || count["_parse_strict"] > 2 {
		t.Fatalf("parse_action choices drawn %v: the gaining parser should dominate, the losing one vanish", count)
	}
}

// A choice comes with what it REQUIRES: the voting aggregators bring
// SAMPLES into 4..8 in the same candidate; with SAMPLES frozen at 1 they
// are never proposed.
func TestFragmentAppliesRequires(t *testing.T) {
	src := builtinOf(t, "math")
	a := archiveOf(t, src)
	for _, d := range mustSpace(t, src) {
		if d.Knob != "aggregate" && d.Knob != "SAMPLES" {
			a.Frozen[d.Knob] = true
		}
	}
	cs, err := Fragment{}.Propose(context.Background(), a, rand.New(rand.NewPCG(1, 1)), 40)
	if err != nil {
		t.Fatal(err)
	}
	voting := 0
	for _, c := range cs {
		set := settings(t, a, c)
		if agg, ok := set["aggregate"]; ok && agg != "_vote_plurality_valid" {
			voting++
			n, err := strconv.Atoi(set["SAMPLES"])
			if err != nil || n < 4 || n > 8 {
				t.Fatalf("%s without SAMPLES in 4..8 (mechanism %q)", agg, c.Mechanism)
			}
		}
	}
	if voting == 0 {
		t.Fatal("no voting aggregator proposed")
	}
	a.Frozen["SAMPLES"] = true
	cs, err = Fragment{}.Propose(context.Background(), a, rand.New(rand.NewPCG(1, 1)), 40)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 0 {
		t.Fatalf("with SAMPLES frozen at 1 nothing is proposable, got %q", cs[0].Mechanism)
	}
}

func mustSpace(t *testing.T, src string) []harnesses.Dimension {
	t.Helper()
	s, err := harnesses.SpaceOf(src)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A ranged knob steps to nearby values of its range first.
func TestFragmentRangedKnobMovesNearby(t *testing.T) {
	src := builtinOf(t, "chess")
	a := archiveOf(t, src)
	for _, d := range mustSpace(t, src) {
		if d.Knob != "SAMPLES" {
			a.Frozen[d.Knob] = true
		}
	}
	cs, err := Fragment{}.Propose(context.Background(), a, rand.New(rand.NewPCG(2, 2)), 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 7 {
		t.Fatalf("%d candidates, want all 7 other values of SAMPLES", len(cs))
	}
	for _, c := range cs[:2] {
		if s := settings(t, a, c)["SAMPLES"]; s != "2" && s != "3" {
			t.Fatalf("first steps from SAMPLES=1 went to %s, want a neighbour (2 or 3)", s)
		}
	}
}

// Frozen knobs keep the incumbent's value, in steps, jumps, crossovers
// and restarts alike; pruned and scored harnesses are never proposed.
func TestFragmentRespectsFrozenAndKnown(t *testing.T) {
	src := builtinOf(t, "searchqa")
	a := archiveOf(t, src)
	frozen := []string{"MAX_TURNS", "parse_action", "SAMPLES", "next_step"}
	for _, k := range frozen {
		a.Frozen[k] = true
	}
	inc := map[string]string{}
	for _, d := range mustSpace(t, src) {
		inc[d.Knob] = d.Current
	}
	rng := rand.New(rand.NewPCG(9, 9))
	var pruned string
	for round := 0; round < 40; round++ {
		cs, err := Fragment{}.Propose(context.Background(), a, rng, 4)
		if err != nil || len(cs) != 4 {
			t.Fatalf("round %d: %v (%d candidates)", round, err, len(cs))
		}
		for _, c := range cs {
			if c.Hash == pruned || a.known(c.Hash) {
				t.Fatalf("round %d: proposed a known harness %s", round, c.Mechanism)
			}
			for _, d := range mustSpace(t, c.Source) {
				if a.Frozen[d.Knob] && d.Current != inc[d.Knob] {
					t.Fatalf("frozen knob %s varied: %s", d.Knob, c.Mechanism)
				}
			}
		}
		for i, c := range cs {
			e := a.Add(Entry{Hash: c.Hash, Source: c.Source, Parent: c.Parent, Mechanism: c.Mechanism, Scored: 1, Complete: true, Iteration: round + 1})
			e.Tasks = map[string]float64{"x": float64(i), "y": float64(3 - i)}
		}
		pruned = cs[0].Hash
		a.Entries[pruned].Scored = 0
		if err := a.Prune(pruned); err != nil {
			t.Fatal(err)
		}
	}
}

// On a space of thousands of points the proposer keeps producing new
// candidates for hundreds of proposals (it widens once the incumbent's
// neighbourhood is scored); on a small space it stops exactly when every
// point is scored.
func TestFragmentNeverRunsDry(t *testing.T) {
	t.Run("thousands", func(t *testing.T) {
		src := builtinOf(t, "math")
		a := archiveOf(t, src)
		// Leave free: 4 system prompts × 4 observations × 6 parsers ×
		// 4 routes × 2 histories × 4 format budgets = 3,072 points.
		free := map[string]bool{"SYSTEM_PROMPT": true, "format_observation": true, "parse_action": true, "next_step": true, "compact_history": true, "FORMAT_RETRY_BUDGET": true}
		for _, d := range mustSpace(t, src) {
			a.Frozen[d.Knob] = !free[d.Knob]
		}
		rng := rand.New(rand.NewPCG(4, 4))
		seen := map[string]bool{}
		for round := 0; round < 100; round++ {
			cs, err := Fragment{}.Propose(context.Background(), a, rng, 5)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != 5 {
				t.Fatalf("round %d: %d candidates after %d proposals, want 5", round, len(cs), len(seen))
			}
			for _, c := range cs {
				if seen[c.Hash] {
					t.Fatalf("round %d: %s proposed twice", round, c.Mechanism)
				}
				seen[c.Hash] = true
				a.Add(Entry{Hash: c.Hash, Source: c.Source, Mechanism: c.Mechanism, Scored: 1})
			}
		}
	})
	t.Run("small", func(t *testing.T) {
		src := builtinOf(t, "chess")
		a := archiveOf(t, src)
		// 3 system prompts × 2 user prompts × 3 format budgets = 18 points.
		free := map[string]bool{"SYSTEM_PROMPT": true, "USER_PROMPT": true, "FORMAT_RETRY_BUDGET": true}
		for _, d := range mustSpace(t, src) {
			a.Frozen[d.Knob] = !free[d.Knob]
		}
		rng := rand.New(rand.NewPCG(5, 5))
		total := 0
		for round := 0; ; round++ {
			cs, err := Fragment{}.Propose(context.Background(), a, rng, 3)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				a.Add(Entry{Hash: c.Hash, Source: c.Source, Scored: 1})
			}
			total += len(cs)
			if len(cs) < 3 {
				break
			}
		}
		if total != 17 {
			t.Fatalf("%d candidates before running dry, want all 17 points besides h0", total)
		}
	})
}

func TestFragmentIsDeterministic(t *testing.T) {
	src := builtinOf(t, "searchqa")
	run := func() []Candidate {
		a := archiveOf(t, src)
		a.Entries[a.Incumbent].Failures = map[string]int{"wrong": 5, "format": 2, "": 3}
		a.Add(Entry{Hash: "g", Mechanism: "passage_view=_view_narrow", HasGain: true, Gain: 0.02, GainLo: -0.01, GainHi: 0.05})
		cs, err := Fragment{}.Propose(context.Background(), a, rand.New(rand.NewPCG(11, 12)), 12)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	x, y := run(), run()
	if len(x) != 12 || !reflect.DeepEqual(x, y) {
		t.Fatalf("two runs with the same rng differ (%d, %d candidates)", len(x), len(y))
	}
}

func TestParseMechanism(t *testing.T) {
	got := ParseMechanism("A=1,msg=\"a, b\",b=_x")
	want := [][2]string{{"A", "1"}, {"msg", "\"a, b\""}, {"b", "_x"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
