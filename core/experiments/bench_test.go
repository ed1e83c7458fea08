package experiments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"whale/core/bundle"
	"whale/core/chat"
	"whale/core/experiments/report"
	"whale/core/model"
	"whale/core/model/modeltest"
	"whale/core/policy"
	"whale/core/store"
	"whale/core/tokenizer"
	"whale/data"
	"whale/data/domains"
	"whale/harnesses"
	"whale/kernels"
)

var testModel = modeltest.Config()

func testEnv(t *testing.T, path string) Env {
	db, err := store.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return Env{Store: db,
		Domain: func(name string) (data.Domain, error) { return domains.Open(name, 1) },
		Model: func() (*bundle.Bundle, error) {
			m, err := model.New(testModel, kernels.NewCPU(), 5)
			if err != nil {
				return nil, err
			}
			return bundle.New(m, tokenizer.Bytes{}, nil, bundle.Generation{}, "test model")
		},
		Policy: func(d data.Domain) policy.Policy {
			tmpl, err := chat.NewTemplate(tokenizer.Bytes{})
			if err != nil {
				t.Fatal(err)
			}
			return chat.Tokenize(harnesses.NewMixed(d, 3), tmpl)
		}}
}

func TestBenchRunsResumesAndRefusesAnotherPlan(t *testing.T) {
	plan := Plan{Domains: []string{"math"}, Seeds: 1, Preset: "tiny", Budget: 48, E: 0.25, I: 2, FastSlowE: 0.25, DataSeed: 1, Prefix: "t"}
	jobs, err := plan.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != len(report.Conditions) || jobs[0].ID != "t-math-weight-only-b48-s1" {
		t.Fatalf("jobs %d, first %q", len(jobs), jobs[0].ID)
	}
	path := filepath.Join(t.TempDir(), "b.db")
	env := testEnv(t, path)
	var lines []string
	env.Progress = func(l string) { lines = append(lines, l) }
	runs, err := Run(context.Background(), env, jobs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if !r.Done || len(r.Curve) < 2 || !r.Curve[0].HasTest || r.Curve[0].Phase != "start" {
			t.Fatalf("%s: done %v, curve %+v", r.RunID, r.Done, r.Curve)
		}
		if r.Compute <= 0 {
			t.Fatalf("%s: compute time %v, want the stored run's (> 0)", r.RunID, r.Compute)
		}
		// Within one val pass (8 tasks at up to 4 calls) of the budget: a
		// harness search ends when what is left cannot pay for a score.
		// Vote-only spends nothing but its evaluation.
		if r.Condition == report.VoteOnly {
			if r.Rollouts != 0 || r.VoteK < 1 {
				t.Fatalf("%s: vote-only spent %d calls with k = %d", r.RunID, r.Rollouts, r.VoteK)
			}
		} else if r.Rollouts <= plan.Budget-8*4 || r.Rollouts > plan.Budget+8*4 {
			t.Fatalf("%s: %d rollouts for a budget of %d", r.RunID, r.Rollouts, plan.Budget)
		}
		for i, p := range r.Curve[1:] {
			// Sparse curves: test at boundaries 1, 2, 4, 8, … and the last.
			n := i + 1
			if p.HasTest != (n&(n-1) == 0 || n == len(r.Curve)-1) || p.Rollouts < p.PhaseStart || p.Rollouts < r.Curve[i].Rollouts {
				t.Fatalf("%s: curve point %d %+v", r.RunID, i+1, p)
			}
		}
	}
	if err := report.Write(filepath.Join(t.TempDir(), "out"), runs, report.Meta{Command: "test", Preset: "tiny", Budget: 48, Seeds: 1}); err != nil {
		t.Fatal(err)
	}
	// Two workers give the same runs as one.
	env2 := testEnv(t, filepath.Join(t.TempDir(), "b2.db"))
	env2.Workers = 2
	par, err := Run(context.Background(), env2, jobs)
	if err != nil {
		t.Fatal(err)
	}
	// Everything but the compute time (a wall-clock measurement) is the same.
	untimed := func(rs []report.Run) string {
		rs = slices.Clone(rs)
		for i := range rs {
			rs[i].Compute = 0
		}
		return fmt.Sprint(rs)
	}
	if untimed(par) != untimed(runs) {
		t.Fatalf("two workers differ from one:\n%v\n%v", par, runs)
	}
	// The same plan again reads every run instead of running it.
	lines = nil
	again, err := Run(context.Background(), env, jobs)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range lines {
		if !strings.Contains(l, "finished earlier") {
			t.Fatalf("rerun line %d: %q", i, l)
		}
	}
	if len(again) != len(runs) || again[3].BestTestMean8 != runs[3].BestTestMean8 || again[3].Compute != runs[3].Compute {
		t.Fatal("rerun reports differ")
	}
	// Another budget under the same ids would mix two plans: refused.
	other := jobs[0]
	other.Config.Budget = 96
	if _, err := Collect(env.Store, other); err == nil || !strings.Contains(err.Error(), "another configuration") {
		t.Fatalf("mismatched plan: %v", err)
	}
	if _, err := Collect(env.Store, Job{ID: "nope"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing run: %v", err)
	}
	// Each stored run names the version of the code that made it; one made
	// by code that computed its condition otherwise is refused, never
	// reported as this code's.
	for _, r := range runs { // a vote-only job's id is resolved by Run
		sr, err := env.Store.GetRun(r.RunID)
		if err != nil || sr.Labels[labelRunsVersion] != fmt.Sprint(RunsVersion(r.Condition)) {
			t.Fatalf("%s: labels %v, %v", r.RunID, sr.Labels, err)
		}
	}
	if err := env.Store.SetRunLabel(jobs[4].ID, labelRunsVersion, fmt.Sprint(RunsVersion(jobs[4].Condition)-1)); err != nil {
		t.Fatal(err)
	}
	if _, err := Collect(env.Store, jobs[4]); err == nil || !strings.Contains(err.Error(), "computes "+jobs[4].Condition+" as version") {
		t.Fatalf("a run of an older version: %v", err)
	}
	if _, err := Run(context.Background(), env, jobs); err == nil || !strings.Contains(err.Error(), "move "+path+" aside") {
		t.Fatalf("a bench over a run of an older version: %v", err)
	}
}

func TestPlanRefusesBadInput(t *testing.T) {
	for _, p := range []Plan{
		{Domains: []string{"math"}, Seeds: 0, Preset: "tiny", Budget: 10},
		{Domains: []string{"math"}, Seeds: 1, Preset: "tiny", Budget: 0},
		{Domains: []string{"math"}, Seeds: 1, Preset: "nope", Budget: 10},
		{Domains: []string{"math"}, Seeds: 1, Preset: "tiny", Budget: 10, Conditions: []string{"magic"}},
	} {
		if _, err := p.Jobs(); err == nil {
			t.Fatalf("plan %+v accepted", p)
		}
	}
}

func TestSweepGapAndAdvice(t *testing.T) {
	run := func(cond string, seed uint64, score, lo, hi float64) report.Run {
		return report.Run{Condition: cond, Domain: "searchqa", Seed: seed, Done: true, BestTestMean8: score, TestCI95: [2]float64{lo, hi}}
	}
	// One seed each: the runs' own intervals in quadrature.
	g, err := Sweep("searchqa", []report.Run{run("weight-only", 1, 0.20, 0.15, 0.25), run("harness-only", 1, 0.40, 0.28, 0.52)})
	if err != nil {
		t.Fatal(err)
	}
	if d := g.Gap - 0.20; d > 1e-12 || d < -1e-12 {
		t.Fatalf("gap %v", g.Gap)
	}
	if half := (g.CI95[1] - g.CI95[0]) / 2; half < 0.13-1e-12 || half > 0.13+1e-12 { // hypot(0.05, 0.12)
		t.Fatalf("half width %v, want 0.13", half)
	}
	if g.Side != "harness" {
		t.Fatalf("side %q", g.Side)
	}
	// Three seeds each: t(0.975, 2) = 4.303 over the seeds' spread. A
	// 1-point gap whose interval (±3.5 points) is wider than the ±2-point
	// band is unclear, not balanced: the interval admits a 4-point lead.
	var rs []report.Run
	for i, s := range []float64{0.30, 0.31, 0.32} {
		rs = append(rs, run("weight-only", uint64(i+1), s, 0, 1), run("harness-only", uint64(i+1), s+0.01, 0, 1))
	}
	g, err = Sweep("searchqa", rs)
	if err != nil {
		t.Fatal(err)
	}
	if g.Side != "unclear" || !strings.Contains(g.Advice, "too wide") {
		t.Fatalf("1-point gap, ±3.5-point interval: %+v", g)
	}
	wantHalf := 4.303 * 0.01 / 1.7320508 // sd 0.01, √3
	if half := (g.CI95[1] - g.CI95[0]) / 2; half < wantHalf*1.414-1e-3 || half > wantHalf*1.415+1e-3 {
		t.Fatalf("half width %v, want %v", half, wantHalf*1.4142)
	}
	// The same gap with seeds ten times closer (±0.35 points) is balanced.
	var tight []report.Run
	for i, s := range []float64{0.300, 0.301, 0.302} {
		tight = append(tight, run("weight-only", uint64(i+1), s, 0, 1), run("harness-only", uint64(i+1), s+0.01, 0, 1))
	}
	if g, _ = Sweep("searchqa", tight); g.Side != "balanced" || !strings.Contains(g.Advice, "may not pay") {
		t.Fatalf("1-point gap, ±0.35-point interval: %+v", g)
	}
	// A 1.5-point lead whose interval excludes 0 but is under the band's
	// width from it is not a verdict either.
	if g, _ = Sweep("searchqa", []report.Run{run("weight-only", 1, 0.300, 0.295, 0.305), run("harness-only", 1, 0.315, 0.31, 0.32)}); g.Side != "unclear" {
		t.Fatalf("1.5-point lead: side %q", g.Side)
	}
	// A wide interval around a large gap is unclear, not a verdict.
	g, _ = Sweep("searchqa", []report.Run{run("weight-only", 1, 0.2, 0, 0.6), run("harness-only", 1, 0.3, 0, 0.8)})
	if g.Side != "unclear" {
		t.Fatalf("side %q", g.Side)
	}
	if _, err := Sweep("math", rs); err == nil {
		t.Fatal("sweep of a domain without runs accepted")
	}
	if tq := report.TQuantile975(30); tq < 2.041 || tq > 2.043 { // table value 2.042
		t.Fatalf("t(0.975, 30) = %v", tq)
	}
}

func TestABenchRunsBothAccountingsAndTheVoteOnlyControl(t *testing.T) {
	plan := Plan{Domains: []string{"math"}, Seeds: 1, Preset: "tiny", TrainCalls: 24, SearchCalls: 24, E: 0.25, I: 2, FastSlowE: 0.25, DataSeed: 1, Prefix: "t",
		Conditions: []string{report.WeightOnly, report.HarnessOnly, report.VoteOnly, report.WhaleFixed}}
	jobs, err := plan.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, j := range jobs {
		ids[j.ID] = true
	}
	// Both accountings list every condition; whale-fixed and vote-only are
	// one run each in both.
	if len(jobs) != 8 || len(ids) != 6 {
		t.Fatalf("%d jobs over %d runs, want 8 over 6", len(jobs), len(ids))
	}
	env := testEnv(t, filepath.Join(t.TempDir(), "b.db"))
	var lines []string
	env.Progress = func(l string) { lines = append(lines, l) }
	runs, err := Run(context.Background(), env, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 8 {
		t.Fatalf("%d rows, want 8", len(runs))
	}
	// Progress numbers runs as the dashboard numbers its rows: 6 of them.
	for _, l := range lines {
		if !strings.HasPrefix(l, "[") || !strings.Contains(l, "/6] ") {
			t.Fatalf("progress line %q: want runs numbered out of 6", l)
		}
	}
	get := func(cond, acc string) report.Run {
		for _, r := range runs {
			if r.Condition == cond && r.Accounting == acc {
				return r
			}
		}
		t.Fatalf("no %s row under %s", cond, acc)
		return report.Run{}
	}
	wo, ho, wf := get(report.WeightOnly, report.AccountingPaper), get(report.HarnessOnly, report.AccountingPaper), get(report.WhaleFixed, report.AccountingPaper)
	if wo.TrainCalls < plan.TrainCalls || wo.SearchCalls != 0 || ho.TrainCalls != 0 || ho.SearchCalls == 0 {
		t.Errorf("paper: weight-only spent %d + %d, harness-only %d + %d: want each its own ledger", wo.TrainCalls, wo.SearchCalls, ho.TrainCalls, ho.SearchCalls)
	}
	if wf.TrainCalls < plan.TrainCalls || wf.SearchCalls == 0 {
		t.Errorf("paper: whale-fixed spent %d + %d: want weight-only's weight ledger and a search ledger", wf.TrainCalls, wf.SearchCalls)
	}
	eq := get(report.WeightOnly, report.AccountingEqualTotal)
	if eq.RunID == wo.RunID || eq.TrainCalls < plan.TrainCalls+plan.SearchCalls || eq.SearchCalls != 0 {
		t.Errorf("equal-total weight-only %s spent %d training calls, want its own run with the sum of the ledgers", eq.RunID, eq.TrainCalls)
	}
	if w := get(report.WhaleFixed, report.AccountingEqualTotal); w.RunID != wf.RunID {
		t.Errorf("equal-total whale-fixed is %s, want the paper run %s", w.RunID, wf.RunID)
	}
	vo := get(report.VoteOnly, report.AccountingPaper)
	want := max(1, min(8, int(math.Round(ho.TestCallsPerEpisode/ho.StartCallsPerEpisode))))
	if vo.VoteFrom != report.HarnessOnly || vo.VoteK != want || vo.Rollouts != 0 || !strings.Contains(vo.RunID, fmt.Sprintf("-k%d-", want)) {
		t.Errorf("vote-only: k %d from %q (run %s, %d calls); want k %d from the harness-only run", vo.VoteK, vo.VoteFrom, vo.RunID, vo.Rollouts, want)
	}
	for _, r := range runs {
		if !r.Done || r.TestCallsPerEpisode <= 0 || len(r.TestPerTask) == 0 {
			t.Errorf("%s (%s): done %v, test calls per episode %v, %d per-task scores", r.RunID, r.Accounting, r.Done, r.TestCallsPerEpisode, len(r.TestPerTask))
		}
	}
	if err := report.Write(filepath.Join(t.TempDir(), "out"), runs, report.Meta{Command: "test", Preset: "tiny", TrainCalls: 24, SearchCalls: 24, Seeds: 1}); err != nil {
		t.Fatal(err)
	}
	// A plan of vote-only alone over the same runs (--conditions
	// vote-only after the rest) takes k from the stored harness-only run
	// all the same: the run the whole plan names.
	alone := plan
	alone.Conditions, alone.VoteK = []string{report.VoteOnly}, 7
	aj, err := alone.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	ar, err := Run(context.Background(), env, aj)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ar {
		if r.VoteFrom != report.HarnessOnly || r.VoteK != want || r.RunID != vo.RunID {
			t.Errorf("vote-only alone (%s): k %d from %q, run %s; want k %d from the harness-only run, run %s", r.Accounting, r.VoteK, r.VoteFrom, r.RunID, want, vo.RunID)
		}
	}
	// Without a harness-only run the plan's fixed k stands, and says so.
	only := Plan{Domains: []string{"math"}, Seeds: 1, Preset: "tiny", TrainCalls: 24, SearchCalls: 24, DataSeed: 1, Prefix: "u", VoteK: 3,
		Accountings: []string{report.AccountingPaper}, Conditions: []string{report.VoteOnly}}
	vj, err := only.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	vr, err := Run(context.Background(), env, vj)
	if err != nil {
		t.Fatal(err)
	}
	if len(vr) != 1 || vr[0].VoteK != 3 || vr[0].VoteFrom != "fixed" {
		t.Fatalf("vote-only alone: %+v", vr)
	}
}
