package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// A person presses `f y` while the last step of a weight phase runs: by
// the time the engine takes the command, that phase has ended and the
// harness phase begun. The force names the phase it was meant for, so it
// is dropped with a journaled reason and the harness phase runs its
// iterations (issue 37: it used to end the harness phase with none).
func TestForceForAnEndedPhaseDoesNotSkipTheNextPhase(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.MaxRounds = 1
	db := openDB(t)
	e, err := New(cfg, testEnv(t, db), "late-force")
	if err != nil {
		t.Fatal(err)
	}
	sent := false
	e.stopAfter = func(st State) bool {
		if !sent && st.Phase == PhaseHarness && st.PhaseSteps == 0 {
			sent = true
			if err := e.Send(Command{Kind: "force", ForPhase: PhaseWeights, ForRound: 1}); err != nil {
				t.Fatal(err)
			}
		}
		return false
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !sent {
		t.Fatal("the run never began a harness phase")
	}
	if len(sum.Phases) < 2 {
		t.Fatalf("phases %+v, want a weight and a harness phase", sum.Phases)
	}
	h := sum.Phases[1]
	if h.Kind != PhaseHarness || h.Forced || h.Steps == 0 {
		t.Fatalf("harness phase after the late force: %+v; want it run, not forced", h)
	}
	if sum.Phases[0].Forced {
		t.Fatalf("weight phase marked forced: %+v", sum.Phases[0])
	}
	var js []JournaledCommand
	db.Control("late-force", func(_ uint64, b []byte) error {
		var j JournaledCommand
		if err := json.Unmarshal(b, &j); err != nil {
			t.Fatal(err)
		}
		js = append(js, j)
		return nil
	})
	if len(js) != 1 || !strings.Contains(js[0].Error, "already ended") || js[0].Phase != PhaseHarness {
		t.Fatalf("journal %+v: want the force journaled as dropped while the harness phase ran", js)
	}
}

// A force meant for the running phase ends it, as an unqualified one does.
func TestForceForTheRunningPhaseEndsIt(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.MaxRounds = 1
	db := openDB(t)
	e, err := New(cfg, testEnv(t, db), "force")
	if err != nil {
		t.Fatal(err)
	}
	e.Send(Command{Kind: "force", ForPhase: PhaseWeights, ForRound: 1})
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p := sum.Phases[0]; !p.Forced || p.Steps != 0 {
		t.Fatalf("first phase %+v: want forced before its first step", p)
	}
}
