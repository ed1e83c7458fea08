package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"whale/core/policy"
	"whale/core/store"
)

// sparseEnv writes resume points only where a run must (phase boundaries,
// commands, the end, an interruption), as a run does between its 30-second
// points.
func sparseEnv(t *testing.T, db *store.DB) Env {
	env := testEnv(t, db)
	env.ResumeEvery = time.Hour
	return env
}

func storedState(t *testing.T, db *store.DB, id string) State {
	t.Helper()
	r, err := db.GetRun(id)
	if err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.Unmarshal(r.Cursor, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// A run killed many steps after its last resume point resumes from that
// point and ends exactly as the uninterrupted run: every step is a
// function of the seed and the state.
func TestSparseResumePointsResumeExactly(t *testing.T) {
	cfg := tinyConfig(t)
	dbA := openDB(t)
	a, err := New(cfg, sparseEnv(t, dbA), "run")
	if err != nil {
		t.Fatal(err)
	}
	sumA, err := a.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, stopAt := range []int{3, 9} {
		db := openDB(t)
		b, err := New(cfg, sparseEnv(t, db), "run")
		if err != nil {
			t.Fatal(err)
		}
		n, killedAt := 0, State{}
		b.stopAfter = func(st State) bool { n++; killedAt = st; return n == stopAt }
		if _, err := b.Run(context.Background()); !errors.Is(err, errStopped) {
			t.Fatalf("stop at %d: %v", stopAt, err)
		}
		saved := storedState(t, db, "run")
		if saved.Step+saved.Iteration >= killedAt.Step+killedAt.Iteration {
			t.Fatalf("stop at %d: resume point at step %d, iteration %d, the kill at step %d, iteration %d: want an older point",
				stopAt, saved.Step, saved.Iteration, killedAt.Step, killedAt.Iteration)
		}
		env := sparseEnv(t, db)
		env.Bundle = nil
		resumeMatches(t, env, "run", sumA, fmt.Sprintf("stop at %d", stopAt))
		evA, evB := events(t, dbA, "run"), withoutResumed(events(t, db, "run"))
		if len(evA) != len(evB) {
			t.Fatalf("stop at %d: %d events uninterrupted, %d resumed", stopAt, len(evA), len(evB))
		}
		for i := range evA {
			if evA[i].Kind != evB[i].Kind || !bytes.Equal(evA[i].Data, evB[i].Data) {
				t.Fatalf("stop at %d: event %d: %s vs %s", stopAt, i, evA[i].Kind, evB[i].Kind)
			}
		}
	}
}

// cancelOnCall cancels the run's context from inside its n-th policy
// call, as Ctrl-C arriving in the middle of a step does.
type cancelOnCall struct {
	policy.Policy
	n      int
	cancel context.CancelFunc
}

// Unwrap lets the runtime find the oracle behind the wrapper.
func (c *cancelOnCall) Unwrap() policy.Policy { return c.Policy }

func (c *cancelOnCall) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	if c.n--; c.n == 0 {
		c.cancel()
		return nil, ctx.Err()
	}
	return c.Policy.Generate(ctx, reqs)
}

// An interrupt in the middle of a step writes a resume point at the last
// completed step (not the older periodic one), and the run resumed from it
// ends as the uninterrupted run does.
func TestInterruptSavesTheLastCompletedStep(t *testing.T) {
	cfg := tinyConfig(t)
	sumA, _, _ := runFresh(t, cfg, "run")
	for _, call := range []int{9, 23} {
		db := openDB(t)
		env := sparseEnv(t, db)
		ctx, cancel := context.WithCancel(context.Background())
		env.Policy = &cancelOnCall{Policy: env.Policy, n: call, cancel: cancel}
		b, err := New(cfg, env, "run")
		if err != nil {
			t.Fatal(err)
		}
		var last State
		steps := 0
		b.stopAfter = func(st State) bool { last, steps = st, steps+1; return false }
		if _, err := b.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancel in call %d: %v", call, err)
		}
		if steps < 2 {
			t.Fatalf("cancel in call %d: only %d steps completed; the test wants a cancel some steps into the run", call, steps)
		}
		saved := storedState(t, db, "run")
		if saved.Step != last.Step || saved.Iteration != last.Iteration || saved.Phase != last.Phase || saved.Ledger != last.Ledger {
			t.Fatalf("cancel in call %d: resume point at %s step %d iteration %d %+v, last completed %s step %d iteration %d %+v",
				call, saved.Phase, saved.Step, saved.Iteration, saved.Ledger, last.Phase, last.Step, last.Iteration, last.Ledger)
		}
		renv := sparseEnv(t, db)
		renv.Bundle = nil
		resumeMatches(t, renv, "run", sumA, fmt.Sprintf("cancel in call %d", call))
	}
}

// Timings split a run's wall time by kind of work: each kind a tiny run
// does is counted, and together they never exceed the run's wall time
// (store time inside sampling or evaluation is counted once).
func TestTimingsSplitTheRunsWallTime(t *testing.T) {
	start := time.Now()
	_, e, _ := runFresh(t, tinyConfig(t), "run")
	wall := time.Since(start)
	tm := e.Timings()
	if tm.Sampling <= 0 || tm.Training <= 0 || tm.Evaluation <= 0 || tm.Store <= 0 {
		t.Fatalf("timings %+v: every kind of work of a run should be counted", tm)
	}
	if sum := tm.Sampling + tm.Training + tm.Evaluation + tm.Store; sum > wall {
		t.Fatalf("timings %+v sum to %v, more than the run's wall time %v", tm, sum, wall)
	}
}
