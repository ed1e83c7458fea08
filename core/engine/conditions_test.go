package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"whale/core/weights"

	"whale/internal/longtests"
	"whale/kernels"
)

func runCondition(t *testing.T, cond string, mutate func(*Config)) (Summary, *Engine) {
	t.Helper()
	cfg := tinyConfig(t)
	cfg.Condition = cond
	cfg.MaxRounds = 0
	cfg.Budget = 48
	// The conditions' tests count phases and candidates of one-knob
	// changes; the fragment proposer's voting candidates cost several
	// model calls per rollout (its own test is TestFragmentSearchSpendsItsBudget).
	cfg.Proposer = "mutation"
	if mutate != nil {
		mutate(&cfg)
	}
	db := openDB(t)
	e, err := New(cfg, testEnv(t, db), "c")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sum, e
}

func kinds(ps []PhaseRecord) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteByte(string(p.Kind)[0])
	}
	return b.String()
}

func TestOneSidedConditions(t *testing.T) {
	for _, tc := range []struct {
		cond   string
		only   Phase
		ledger func(Ledger) bool
	}{
		{"weight-only", PhaseWeights, func(l Ledger) bool { return l.Train > 0 && l.Search == 0 }},
		{"harness-only", PhaseHarness, func(l Ledger) bool { return l.Train == 0 && l.Search > 0 }},
	} {
		sum, e := runCondition(t, tc.cond, nil)
		if len(sum.Phases) < 2 {
			t.Fatalf("%s: %d phases, want several", tc.cond, len(sum.Phases))
		}
		for i, p := range sum.Phases {
			if p.Kind != tc.only || p.Round != i+1 {
				t.Fatalf("%s: phase %d is %s of round %d", tc.cond, i, p.Kind, p.Round)
			}
		}
		if l := e.State().Ledger; !tc.ledger(l) || !spentItsBudget(e, l.Budgeted()) {
			t.Fatalf("%s: ledger %+v", tc.cond, l)
		}
		if sum.Condition != tc.cond {
			t.Fatalf("summary condition %q", sum.Condition)
		}
	}
	// Harness-only never rescores the incumbent under unchanged weights:
	// every iteration after the first proposes candidates.
	_, e := runCondition(t, "harness-only", func(c *Config) { c.Budget = 160 })
	measured := 0
	for _, ev := range events(t, e.env.Store, "c") {
		if ev.Kind != EvHarnessIteration {
			continue
		}
		var d HarnessIterationData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Result.Candidates) == 1 && d.Result.Candidates[0] == d.Result.Accepted && !d.Result.Changed {
			measured++
		}
	}
	if measured != 1 {
		t.Fatalf("harness-only measured the incumbent alone in %d iterations, want only the first", measured)
	}
	if n := len(e.State().Archive.Entries); n < 1+e.Cfg.Candidates*len(e.State().Phases) {
		t.Fatalf("harness-only archived %d harnesses over %d phases of M=%d", n, len(e.State().Phases), e.Cfg.Candidates)
	}
}

func TestStagedSplitsTheBudget(t *testing.T) {
	sum, _ := runCondition(t, "staged", func(c *Config) { c.Budget = 64 })
	k := kinds(sum.Phases)
	if !strings.HasPrefix(k, "w") || !strings.HasSuffix(k, "h") || strings.Contains(k, "hw") {
		t.Fatalf("staged phases %q: want weights, then harness, never back", k)
	}
	for _, p := range sum.Phases {
		if p.Kind == PhaseHarness && p.Start < 32 {
			t.Fatalf("harness phase began at %d rollouts, before half of 64", p.Start)
		}
		if p.Kind == PhaseWeights && p.Start >= 32 {
			t.Fatalf("weight phase began at %d rollouts, after half of 64", p.Start)
		}
	}
	cfg := tinyConfig(t)
	cfg.Condition, cfg.Budget = "staged", 0
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("staged without a budget: %v", err)
	}
}

func TestFastSlowSamplesAcrossItsPopulation(t *testing.T) {
	sum, e := runCondition(t, "fast-slow", func(c *Config) { c.I, c.Budget, c.ValTasks, c.Seed = 1, 448, 16, 4 })
	k := kinds(sum.Phases)
	if !strings.HasPrefix(k, "hwhw") {
		t.Fatalf("fast-slow phases %q: want harness, weights alternating", k)
	}
	for _, p := range sum.Phases {
		if p.Kind == PhaseHarness && p.Steps != 1 {
			t.Fatalf("fast-slow harness phase of %d iterations", p.Steps)
		}
	}
	st := e.State()
	if len(st.Population) == 0 || len(st.Population) > populationCap || st.Population[0] != st.Archive.Incumbent {
		t.Fatalf("population %v (incumbent %s)", st.Population, st.Archive.Incumbent)
	}
	// Every stored weight-step sample names a harness of the archive.
	samplesOf := func(step int) map[string]bool {
		seen := map[string]bool{}
		err := e.env.Store.Samples("c", 0, func(seq uint64, b []byte) error {
			var r SampleRecord
			if err := json.Unmarshal(b, &r); err != nil {
				return err
			}
			if _, ok := st.Archive.Entries[r.Harness]; !ok {
				t.Fatalf("sample of unknown harness %s", r.Harness)
			}
			if r.Kind == "w" && (step < 0 || r.Step == step) {
				seen[r.Harness] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return seen
	}
	if len(samplesOf(-1)) == 0 {
		t.Fatal("no weight-step samples stored")
	}
	// Whether the per-task front ever holds two harnesses depends on the
	// tiny model's luck; a weight step under a population of two (the
	// incumbent and an archived candidate) must sample through both and
	// store what each produced.
	var other string
	for _, h := range st.Archive.Leaderboard() {
		if h.Hash != st.Archive.Incumbent {
			other = h.Hash
			break
		}
	}
	if other == "" {
		t.Fatal("fast-slow archived no candidate")
	}
	e.st.Population = []string{st.Archive.Incumbent, other}
	step := e.st.Step
	if _, err := e.weightStep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if seen := samplesOf(step); !seen[st.Archive.Incumbent] || !seen[other] {
		t.Fatalf("a weight step under a population of two stored samples of %v", seen)
	}
	cfg := tinyConfig(t)
	cfg.Condition, cfg.I = "fast-slow", 2
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "field i") {
		t.Fatalf("fast-slow with I = 2: %v", err)
	}
	cfg.Condition = "nope"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "condition") {
		t.Fatalf("unknown condition: %v", err)
	}
}

func TestCurveTestAndConditionsResumeExactly(t *testing.T) {
	for _, cond := range []string{"fast-slow", "staged"} {
		cfg := tinyConfig(t)
		cfg.Condition, cfg.MaxRounds, cfg.Budget, cfg.CurveTest, cfg.I = cond, 0, 128, true, 1
		ctx := context.Background()
		sumA, _, _ := runFresh(t, cfg, "r")
		if sumA.TestStart == nil {
			t.Fatalf("%s: no test point at the start", cond)
		}
		for i, p := range sumA.Phases {
			if p.TestAfter == nil {
				t.Fatalf("%s: phase %d has no test point", cond, i)
			}
		}
		dbB := openDB(t)
		b, err := New(cfg, testEnv(t, dbB), "r")
		if err != nil {
			t.Fatal(err)
		}
		saves := 0
		b.stopAfter = func(State) bool { saves++; return saves == 5 }
		if _, err := b.Run(ctx); !errors.Is(err, errStopped) {
			t.Fatalf("%s: %v", cond, err)
		}
		envC := testEnv(t, dbB)
		envC.Bundle = nil
		resumeMatches(t, envC, "r", sumA, cond)
	}
}

func TestRolloutsAreDealtAcrossThePopulation(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Condition, cfg.I, cfg.Budget, cfg.MaxRounds = "fast-slow", 1, 64, 0
	e, err := New(cfg, testEnv(t, openDB(t)), "d")
	if err != nil {
		t.Fatal(err)
	}
	tasks := e.trainBatch(0)[:2]
	tasks = append(tasks, e.trainBatch(1)...)
	e.st.Population = []string{"a", "b", "c"}
	e.st.Step = 4
	got := strings.Join(e.rolloutHarnesses(tasks), "")
	if want := "bcabca"[:len(tasks)]; got != want {
		t.Fatalf("dealt %q, want %q", got, want)
	}
	e.Cfg.Condition = ""
	for _, h := range e.rolloutHarnesses(tasks) {
		if h != e.st.Archive.Incumbent {
			t.Fatal("WHALE rollouts must all go through the incumbent")
		}
	}
}

// A run killed before its first step, or right after its start, resumes
// to exactly the uninterrupted run, events included (no start repeated).
func TestResumeBeforeAndRightAfterStart(t *testing.T) {
	ctx := context.Background()
	cfg := tinyConfig(t)
	sumA, _, dbA := runFresh(t, cfg, "s")
	for _, stopAt := range []int{0, 1} {
		db := openDB(t)
		b, err := New(cfg, testEnv(t, db), "s")
		if err != nil {
			t.Fatal(err)
		}
		if stopAt > 0 {
			saves := 0
			b.stopAfter = func(State) bool { saves++; return saves == stopAt }
			if _, err := b.Run(ctx); !errors.Is(err, errStopped) {
				t.Fatal(err)
			}
		}
		env := testEnv(t, db)
		env.Bundle = nil
		c, err := Resume(env, kernels.NewCPU(), "s")
		if err != nil {
			t.Fatalf("stop at %d: %v", stopAt, err)
		}
		sumC, err := c.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ja, jc := mustJSON(sumA), mustJSON(sumC); !bytes.Equal(ja, jc) {
			t.Fatalf("stop at %d: summary differs\n%s\n%s", stopAt, ja, jc)
		}
		evA, evC := events(t, dbA, "s"), withoutResumed(events(t, db, "s"))
		if len(evA) != len(evC) {
			t.Fatalf("stop at %d: %d events uninterrupted, %d resumed", stopAt, len(evA), len(evC))
		}
	}
}

// A run recorded but stopped before its first resume point (a store write
// failed, or it was killed in between) begins when resumed with its
// starting model — to exactly the uninterrupted run — and without one the
// error says what is missing.
func TestResumeOfRunWithoutResumePoint(t *testing.T) {
	cfg := tinyConfig(t)
	sumA, _, _ := runFresh(t, cfg, "s")
	db := openDB(t)
	env := testEnv(t, db)
	rec := cfg
	mc := env.Bundle.Model.Config
	rec.Model = &mc
	if err := db.CreateRun("s", mustJSON(rec), time.Now()); err != nil {
		t.Fatal(err)
	}
	bare := env
	bare.Bundle = nil
	if _, err := Resume(bare, kernels.NewCPU(), "s"); err == nil || !strings.Contains(err.Error(), "starting model") {
		t.Fatalf("resume without a resume point or a model: %v", err)
	}
	resumeMatches(t, env, "s", sumA, "run recorded without a resume point")
}

// With learning curves on, a pair of weights and harness is measured on
// test once: harness phases that keep their incumbent under unchanged
// weights, and the final evaluation of the best checkpoint, reuse it.
func TestCurveTestMeasuresEachPairOnce(t *testing.T) {
	for _, cond := range []string{"harness-only", "weight-only", ""} {
		sum, e := runCondition(t, cond, func(c *Config) { c.CurveTest = true })
		seen := map[string]int{}
		for _, d := range evals(t, e) {
			if d.Split == "test" {
				seen[d.Weights+"|"+d.Harness]++
			}
		}
		for pair, n := range seen {
			if n != 1 {
				t.Fatalf("%q: test measured %d times for %s", cond, n, pair)
			}
		}
		st := e.State()
		if len(seen) != len(st.TestSeen) {
			t.Fatalf("%q: %d pairs measured, %d remembered", cond, len(seen), len(st.TestSeen))
		}
		// Every curve point and the summary are the remembered measurement
		// of their pair.
		for i, p := range st.Phases {
			if rep, ok := st.TestSeen[p.Weights+"|"+p.Harness]; !ok || p.TestAfter == nil || *p.TestAfter != rep.MeanAtK {
				t.Fatalf("%q: phase %d test %v, remembered %v (%v)", cond, i, p.TestAfter, rep.MeanAtK, ok)
			}
		}
		found := false
		for _, rep := range st.TestSeen {
			found = found || (rep.MeanAtK == sum.TestMean8 && rep.CI95 == sum.TestCI95)
		}
		if !found {
			t.Fatalf("%q: summary test %v is not a remembered measurement", cond, sum.TestMean8)
		}
		if cond == "harness-only" && len(st.Phases) > 1 && len(seen) >= len(st.Phases)+1 {
			t.Fatalf("harness-only measured %d pairs over %d phases: nothing was reused", len(seen), len(st.Phases))
		}
	}
}

// Harness-only and staged runs whose search has scored every candidate the
// proposer can make under their weights finish — short of a budget they
// cannot spend — instead of looping through harness phases that cost
// nothing (the bench's math harness-only run reached round 276 that way).
func TestExhaustedHarnessSearchFinishes(t *testing.T) {
	longtests.SkipShort(t, "about 40 s of runs")
	for _, cond := range []string{"harness-only", "staged"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cfg := tinyConfig(t)
		cfg.Condition, cfg.MaxRounds, cfg.Budget = cond, 0, 1_000_000
		cfg.Proposer = "mutation" // a finite neighbourhood: the fragment proposer never runs dry
		if cond == "staged" {
			cfg.Budget = 1600 // weights until 800 model calls, then the search runs out
		}
		e, err := New(cfg, testEnv(t, openDB(t)), "x")
		if err != nil {
			t.Fatal(err)
		}
		sum, err := e.Run(ctx)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", cond, err)
		}
		st := e.State()
		if !st.Done || st.Exhausted == "" || st.Exhausted != st.Weights || sum.ModelCalls >= cfg.Budget {
			t.Fatalf("%s: done %v, exhausted %q (weights %q), %d of %d model calls", cond, st.Done, st.Exhausted, st.Weights, sum.ModelCalls, cfg.Budget)
		}
		if n := len(st.Phases); n > 120 { // finite, not the 276 rounds of a loop
			t.Fatalf("%s: %d phases before finishing", cond, n)
		}
	}
}

// With CurveK below TestK the boundaries are measured at CurveK and the
// best checkpoint once more at TestK, and the final val mean@8 is skipped.
func TestCurveKMeasuresBoundariesAtItsK(t *testing.T) {
	sum, e := runCondition(t, "weight-only", func(c *Config) { c.CurveTest, c.CurveK, c.TestK = true, 1, 2 })
	byK := map[int]int{}
	valK := map[int]int{}
	for _, d := range evals(t, e) {
		switch d.Split {
		case "test":
			byK[d.Report.K]++
		case "val":
			valK[d.Report.K]++
		}
	}
	st := e.State()
	if want := len(st.Phases) + 1; byK[1] != want || byK[2] != 1 || len(byK) != 2 {
		t.Fatalf("test measurements by k %v, want %d at k 1 (start and %d boundaries) and 1 at k 2", byK, want, len(st.Phases))
	}
	if valK[8] != 0 || sum.BestValMean8 != nil {
		t.Fatalf("final val mean@8 measured (%v, %v) in a run with learning curves", valK, sum.BestValMean8)
	}
	if sum.TestK != 2 {
		t.Fatalf("summary test k %d, want TestK 2", sum.TestK)
	}
	bad := tinyConfig(t)
	bad.CurveK = 1
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "curve_k") {
		t.Fatalf("curve_k without curve_test: %v", err)
	}
}

// RSFT with a KL penalty trains against the phase's starting weights: a
// run takes its steps with the reference loaded, and differs from the
// unpenalised run's weights; dpo refuses the field (its β is its own).
func TestRSFTKLRunsAgainstThePhaseStart(t *testing.T) {
	plain, _ := runCondition(t, "weight-only", nil)
	sum, e := runCondition(t, "weight-only", func(c *Config) { c.KL = 2 })
	op, ok := e.op.(*weights.RSFT)
	if !ok || op.Ref == nil || op.KLBeta != 2 {
		t.Fatalf("operator %T with reference %v", e.op, ok && op.Ref != nil)
	}
	if sum.FinalWeights == plain.FinalWeights {
		t.Fatal("the KL penalty left the weights as the plain run's")
	}
	bad := tinyConfig(t)
	bad.Operator, bad.KL = "dpo", 0.1
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "kl") {
		t.Fatalf("kl with dpo: %v", err)
	}
}

// spentItsBudget reports whether a run's budgeted calls are within one
// val pass of its budget, at the costliest price of a harness it scored
// (or, where its archive kept no price, the dearest calls per rollout a
// harness phase paid): a harness search begins no score the budget cannot
// pay for at its estimate, and a score costs more than that estimate by
// at most that.
func spentItsBudget(e *Engine, calls int) bool {
	pass := max(len(e.val), costliestPass(e))
	for _, p := range e.State().Phases {
		if p.Kind == PhaseHarness && p.Rollouts > 0 {
			pass = max(pass, (len(e.val)*p.Calls+p.Rollouts-1)/p.Rollouts)
		}
	}
	return calls > e.Cfg.Budget-pass && calls <= e.Cfg.Budget+pass
}

// costliestPass is the model calls of one val pass at the highest price
// (calls per scored rollout) of a harness in e's archive, 0 if none was
// scored.
func costliestPass(e *Engine) int {
	pass := 0
	for _, ent := range e.State().Archive.Entries {
		if ent.Scored > 0 {
			pass = max(pass, (len(e.val)*ent.Calls+ent.Scored-1)/ent.Scored)
		}
	}
	return pass
}

// HarnessCalls bounds each harness phase of WHALE's alternation in model
// calls, so a run of a given budget alternates more often than I alone
// lets it; the incoming incumbent is always scored.
func TestHarnessCallsBoundHarnessPhases(t *testing.T) {
	longtests.SkipShort(t, "two 320-call runs")
	run := func(allowance int) (Summary, *Engine) {
		return runCondition(t, "", func(c *Config) { c.I, c.Budget, c.HarnessCalls, c.Proposer = 4, 320, allowance, "" })
	}
	free, _ := run(0)
	bound, e := run(40)
	pass := costliestPass(e)
	longest := func(s Summary) int {
		n := 0
		for _, p := range s.Phases {
			if p.Kind == PhaseHarness {
				n = max(n, p.Calls)
			}
		}
		return n
	}
	if got := longest(bound); got > 40+pass || got == 0 {
		t.Fatalf("the longest harness phase under a 40-call allowance spent %d calls (one pass: %d)", got, pass)
	}
	if len(bound.Phases) <= len(free.Phases) || longest(free) <= 40+pass {
		t.Fatalf("%d phases with the allowance against %d without (longest harness phase without: %d calls): the test's premise is wrong",
			len(bound.Phases), len(free.Phases), longest(free))
	}
	if !spentItsBudget(e, bound.ModelCalls) {
		t.Fatalf("spent %d of %d", bound.ModelCalls, e.Cfg.Budget)
	}
	// The baselines keep their own phase lengths.
	cfg := tinyConfig(t)
	cfg.Condition, cfg.HarnessCalls = "harness-only", 24
	if got := cfg.phaseAllowance(); got != 0 {
		t.Fatalf("harness-only's allowance %d, want none", got)
	}
	cfg.HarnessCalls = -1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "harness_calls") {
		t.Fatalf("a negative allowance: %v", err)
	}
}

// HarnessPasses bounds each harness phase in passes of its incumbent at
// the price the incumbent had when the phase began: the phase's allowance
// is that price times the passes (the first phase, before any score, at
// one call a sample), recorded with the phase, and no phase spends past
// it by more than one pass.
func TestHarnessPassesBoundHarnessPhasesByTheIncumbentsPrice(t *testing.T) {
	longtests.SkipShort(t, "a 320-call run")
	sum, e := runCondition(t, "", func(c *Config) { c.I, c.Budget, c.HarnessPasses, c.HarnessCalls, c.Proposer = 4, 320, 2.5, 1000, "" })
	pass := costliestPass(e)
	harness := 0
	for i, p := range sum.Phases {
		if p.Kind != PhaseHarness {
			if p.Allowance != 0 {
				t.Fatalf("weight phase %d has an allowance of %d", i, p.Allowance)
			}
			continue
		}
		harness++
		// h0 calls the model once a turn; its price is at least one call a
		// val task and, with 2.5 passes, the allowance at least 2.5 of them.
		if p.Allowance < int(2.5*float64(len(e.val))) || p.Allowance >= 1000 {
			t.Fatalf("harness phase %d: allowance %d for 2.5 passes over %d val tasks", i, p.Allowance, len(e.val))
		}
		if p.Calls > p.Allowance+pass {
			t.Fatalf("harness phase %d spent %d calls against an allowance of %d (one pass: %d)", i, p.Calls, p.Allowance, pass)
		}
	}
	if harness < 2 {
		t.Fatalf("phases %q: the test needs two harness phases", kinds(sum.Phases))
	}
	if first := sum.Phases[1]; first.Kind != PhaseHarness || first.Allowance != int(math.Ceil(2.5*float64(len(e.val)))) {
		t.Fatalf("the first harness phase (h0 never scored, SAMPLES 1): %+v, want an allowance of 2.5 × %d", first, len(e.val))
	}
	cfg := tinyConfig(t)
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		cfg.HarnessPasses = bad
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "harness_passes") {
			t.Fatalf("harness passes %v: %v", bad, err)
		}
	}
}

// A boundary where neither the weights nor the incumbent changed reuses
// the val measurement: harness-only on fixed weights measures val once
// per incumbent it ever had, however many phases it runs.
func TestValIsMeasuredOncePerWeightsAndIncumbent(t *testing.T) {
	sum, e := runCondition(t, "harness-only", func(c *Config) { c.Budget = 160 })
	pairs := map[string]bool{}
	measured := 0
	for _, d := range evals(t, e) {
		if d.Split == "val" && d.Report.K == e.Cfg.ValK { // not the best checkpoint's final mean@TestK
			measured++
			if pairs[d.Weights+"|"+d.Harness] {
				t.Fatalf("val measured twice for weights %s under harness %s", ShortHash(d.Weights), ShortHash(d.Harness))
			}
			pairs[d.Weights+"|"+d.Harness] = true
		}
	}
	if measured == 0 || measured >= len(sum.Phases)+1 {
		t.Fatalf("%d val measurements over %d phase boundaries and the start: the test needs boundaries that kept their incumbent", measured, len(sum.Phases))
	}
	for i, p := range sum.Phases {
		if i > 0 && p.Harness == sum.Phases[i-1].Harness && p.ValAfter != sum.Phases[i-1].ValAfter {
			t.Fatalf("phase %d kept its incumbent but its val moved %.3f → %.3f", i+1, sum.Phases[i-1].ValAfter, p.ValAfter)
		}
	}
}

// evals lists the evaluations of run "c" of e's store, in order.
func evals(t *testing.T, e *Engine) []EvalData {
	t.Helper()
	var out []EvalData
	for _, ev := range events(t, e.env.Store, "c") {
		if ev.Kind != EvEval {
			continue
		}
		var d EvalData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}
