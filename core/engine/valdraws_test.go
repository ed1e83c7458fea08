package engine

import (
	"context"
	"testing"
)

func TestTheHarnessPhaseReusesTheBoundarysValDraws(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Proposer = "mutation"
	_, pts, e := traceLedgers(t, cfg)
	first := -1
	for i, p := range pts {
		if p.phase == PhaseHarness {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatal("no harness iteration ran")
	}
	// The first harness iteration after a weight phase scores h0 under the
	// new weights (nothing else is archived yet): the boundary measured
	// exactly that, so it costs no search call.
	p := pts[first]
	if got := p.after.SearchCalls - p.before.SearchCalls; got != 0 {
		t.Errorf("the incumbent's re-score after the weight phase spent %d search calls, want 0 (the boundary's val draws)", got)
	}
	if e.st.Iteration < 2 {
		t.Fatalf("%d harness iterations: the test needs one that proposes", e.st.Iteration)
	}
}

func TestReusedValDrawsAreTheScorersOwn(t *testing.T) {
	db := openDB(t)
	cfg := tinyConfig(t)
	cfg.ValK = 2
	e, err := New(cfg, testEnv(t, db), "d")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if !e.pairedVal() {
		t.Fatal("the start's val measurement must draw as the scorer does")
	}
	if _, _, err := e.evalVal(ctx); err != nil {
		t.Fatal(err)
	}
	src := e.st.Archive.Entries[e.st.Archive.Incumbent].Source
	spent := e.st.Ledger.SearchCalls
	var reused [][]float64
	for pass := 0; pass < cfg.ValK; pass++ {
		outs, err := e.scorer().Score(ctx, src, e.val, pass)
		if err != nil {
			t.Fatal(err)
		}
		var rw []float64
		for _, o := range outs {
			if !o.Reused {
				t.Fatalf("pass %d: an outcome was paid for again", pass)
			}
			rw = append(rw, o.Reward)
		}
		reused = append(reused, rw)
	}
	if e.st.Ledger.SearchCalls != spent {
		t.Fatalf("reused scores spent %d search calls", e.st.Ledger.SearchCalls-spent)
	}
	// The same scores paid for afresh draw the same rollouts.
	e.st.ValDraws = nil
	for pass := 0; pass < cfg.ValK; pass++ {
		outs, err := e.scorer().Score(ctx, src, e.val, pass)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range outs {
			if o.Reused || o.Reward != reused[pass][i] {
				t.Fatalf("pass %d task %d: scored afresh %v (reused %v), the boundary drew %v", pass, i, o.Reward, o.Reused, reused[pass][i])
			}
		}
	}
	if e.st.Ledger.SearchCalls == spent {
		t.Fatal("scoring afresh spent nothing: the test proves nothing")
	}
}
