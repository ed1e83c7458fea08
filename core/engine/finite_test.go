package engine

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"whale/core/model"
	"whale/core/policy"
	"whale/kernels"
)

// TestNonFiniteStepStopsTheRunAndALowerLRFinishesIt: at a learning rate
// of 1e8 the first update overflows the model; the run stops with a
// sentence naming what went non-finite, stores nothing of that step, and
// stays resumable: resumed with a sane learning rate it finishes.
func TestNonFiniteStepStopsTheRunAndALowerLRFinishesIt(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.LR = 1e8
	db := openDB(t)
	e, err := New(cfg, testEnv(t, db), "run")
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Run(context.Background())
	var se *StoppedError
	if !errors.As(err, &se) || !errors.Is(err, model.ErrNonFinite) {
		t.Fatalf("run at lr 1e8 ended with %v, want a StoppedError for a non-finite step", err)
	}
	for _, want := range []string{"stopped in round 1 at weight step", "non-finite", "whale resume run --headless --lr"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("the stop sentence lacks %q:\n%v", want, err)
		}
	}
	r, err := db.GetRun("run")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status == "finished" {
		t.Fatal("a stopped run is stored as finished")
	}
	var st State
	if err := json.Unmarshal(r.Cursor, &st); err != nil {
		t.Fatal(err)
	}
	if st.Step != se.ResumeStep || st.Step > se.Step {
		t.Fatalf("stored resume point at step %d; the error says %d and the failing step was %d", st.Step, se.ResumeStep, se.Step+1)
	}
	// No event past the resume point names the failing step.
	for _, ev := range events(t, db, "run") {
		if ev.Kind == EvWeightStep && ev.Step > st.Step {
			t.Fatalf("event %d stores weight step %d, past the resume point at step %d", ev.Seq, ev.Step, st.Step)
		}
	}

	if _, err := Amend(db, "run", Amendment{LR: 3e-4}); err != nil {
		t.Fatal(err)
	}
	env := testEnv(t, db)
	env.Bundle = nil
	c, err := Resume(env, kernels.NewCPU(), "run")
	if err != nil {
		t.Fatal(err)
	}
	if c.Cfg.LR != 3e-4 {
		t.Fatalf("resumed with lr %v, want the amended 3e-4", c.Cfg.LR)
	}
	sum, err := c.Run(context.Background())
	if err != nil {
		t.Fatalf("resumed at lr 3e-4: %v", err)
	}
	if sum.Rounds != 2 {
		t.Fatalf("resumed run ended after %d rounds, want 2", sum.Rounds)
	}
	if r, _ := db.GetRun("run"); r.Status != "finished" {
		t.Fatalf("resumed run stored as %q, want finished", r.Status)
	}
}

// nanPolicy reports a NaN log-probability for its nth completion on.
type nanPolicy struct {
	policy.Policy
	n, seen int
}

// Unwrap lets the harness runtime find the scripted policy's observer.
func (p *nanPolicy) Unwrap() policy.Policy { return p.Policy }

func (p *nanPolicy) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	cs, err := p.Policy.Generate(ctx, reqs)
	for i := range cs {
		p.seen++
		if p.seen >= p.n && len(cs[i].LogProbs) > 0 {
			cs[i].LogProbs[0] = float32(math.NaN())
		}
	}
	return cs, err
}

// TestNaNLogProbStopsTheRunAndNeverReachesTheStore: a policy whose logits
// went NaN (seen through its log-probabilities) stops the run with the
// task it was sampling, rather than panicking on the sample's JSON.
func TestNaNLogProbStopsTheRunAndNeverReachesTheStore(t *testing.T) {
	cfg := tinyConfig(t)
	db := openDB(t)
	env := testEnv(t, db)
	env.Policy = &nanPolicy{Policy: env.Policy, n: 20}
	e, err := New(cfg, env, "run")
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Run(context.Background())
	if !errors.Is(err, model.ErrNonFinite) || !strings.Contains(err.Error(), "log-probability NaN") || !strings.Contains(err.Error(), "task ") {
		t.Fatalf("a NaN log-probability ended the run with %v, want a stop naming the task and the log-probability", err)
	}
	if err := db.Samples("run", 0, func(_ uint64, b []byte) error {
		if strings.Contains(string(b), "NaN") {
			t.Fatalf("a stored sample holds NaN: %s", b)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestAmendRefusesWhatDoesNotApply(t *testing.T) {
	cfg := tinyConfig(t)
	db := openDB(t)
	if _, err := New(cfg, testEnv(t, db), "run"); err != nil {
		t.Fatal(err)
	}
	for _, a := range []Amendment{{LR: -1}, {LR: math.Inf(1)}, {PolicyURL: "http://127.0.0.1:1/v1"}} {
		if _, err := Amend(db, "run", a); err == nil {
			t.Fatalf("Amend(%+v) accepted", a)
		}
	}
	if _, err := Amend(db, "nope", Amendment{LR: 1e-4}); err == nil {
		t.Fatal("Amend of a missing run accepted")
	}
}

// TestAmendMovesAServerPolicy: --policy-url rewrites a server-policy
// run's endpoint and keeps the rest of its server settings.
func TestAmendMovesAServerPolicy(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Condition = "harness-only"
	cfg.PolicyServer = &PolicyServer{URL: "http://127.0.0.1:1/v1", Model: "m", Concurrency: 3}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	db := openDB(t)
	if err := db.CreateRun("srv", mustJSON(cfg), time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	got, err := Amend(db, "srv", Amendment{PolicyURL: "http://127.0.0.1:2/v1"})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := db.GetRun("srv")
	var stored Config
	if err := json.Unmarshal(r.Config, &stored); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{got, stored} {
		if c.PolicyServer == nil || c.PolicyServer.URL != "http://127.0.0.1:2/v1" || c.PolicyServer.Model != "m" || c.PolicyServer.Concurrency != 3 {
			t.Fatalf("amended server %+v, want the new URL and the old model and concurrency", c.PolicyServer)
		}
	}
	if err := db.SetRunState("srv", "finished", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Amend(db, "srv", Amendment{LR: 1e-4}); err == nil {
		t.Fatal("Amend of a finished run accepted")
	}
}
