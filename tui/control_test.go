package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"whale/core/engine"
)

// footer is the view's last line.
func footer(m *Model) string {
	v := strings.Split(m.View(), "\n")
	return v[len(v)-1]
}

// f y is answered in the frame it is pressed in (queued), names the phase
// on screen, and says where it took effect once the engine journals it.
func TestForceIsAcknowledgedAtOnceThenWhereItApplied(t *testing.T) {
	ctl := &fakeControl{}
	m := newTest(t, ctl)
	m.Update(sizeMsg(160, 48))
	press(m, "f", "y")
	want := engine.Command{Kind: "force", ForPhase: engine.PhaseHarness, ForRound: 1}
	if len(ctl.sent) != 1 || ctl.sent[0] != want {
		t.Fatalf("f y sent %v, want %v (the phase on screen)", ctl.sent, want)
	}
	if f := footer(m); !strings.Contains(f, "force (round 1 harness) queued") {
		t.Fatalf("footer after f y: %q; want the force acknowledged as queued", f)
	}
	m.apply(ev(t, 13, engine.EvControl, 1, 3, 2, 112, engine.JournaledCommand{Command: want, Step: 3, Iteration: 2, Phase: engine.PhaseHarness}))
	if f := footer(m); !strings.Contains(f, "applied at iteration 2") {
		t.Fatalf("footer after the control event: %q; want where it applied", f)
	}
	if len(m.pending) != 0 {
		t.Fatalf("pending %v after the engine journaled the force", m.pending)
	}
}

// A force that reached the engine after its phase ended is reported as
// dropped, with the engine's reason.
func TestLateForceIsReportedDropped(t *testing.T) {
	m := newTest(t, &fakeControl{})
	m.Update(sizeMsg(160, 48))
	press(m, "f", "y")
	j := engine.JournaledCommand{Command: engine.Command{Kind: "force", ForPhase: engine.PhaseHarness, ForRound: 1}, Step: 3, Iteration: 2,
		Phase: engine.PhaseWeights, Error: "force of the round 1 harness phase dropped: phase already ended (round 2 weights phase running)"}
	m.apply(ev(t, 13, engine.EvControl, 2, 3, 2, 112, j))
	if f := footer(m); !strings.Contains(f, "phase already ended") {
		t.Fatalf("footer: %q; want the drop and its reason", f)
	}
}

// x marks the row at once; the engine's journal settles it; a refusal
// takes the mark back.
func TestPruneShowsOnTheBoardAtOnce(t *testing.T) {
	m := newTest(t, &fakeControl{})
	m.Update(sizeMsg(160, 48))
	press(m, "2", "down", "x")
	row := func() string {
		for _, l := range strings.Split(m.View(), "\n") {
			if strings.Contains(l, "bbbbbbbb") {
				return l
			}
		}
		return ""
	}
	if r := row(); !strings.Contains(r, "pruned (queued)") {
		t.Fatalf("row right after x: %q; want it marked pruned (queued)", r)
	}
	c := engine.Command{Kind: "prune", Target: "bbbbbbbb2222"}
	m.apply(ev(t, 13, engine.EvControl, 1, 3, 2, 112, engine.JournaledCommand{Command: c, Step: 3, Iteration: 2, Phase: engine.PhaseHarness}))
	if r := row(); !strings.Contains(r, "pruned") || strings.Contains(r, "queued") {
		t.Fatalf("row after the engine applied the prune: %q", r)
	}
	// Unprune, refused by the engine: the row goes back to what the
	// board says.
	press(m, "u")
	if r := row(); !strings.Contains(r, "unpruned (queued)") {
		t.Fatalf("row right after u: %q", r)
	}
	c.Kind = "unprune"
	m.apply(ev(t, 14, engine.EvControl, 1, 3, 2, 112, engine.JournaledCommand{Command: c, Step: 3, Iteration: 2, Phase: engine.PhaseHarness, Error: "not pruned"}))
	if r := row(); strings.Contains(r, "unpruned") {
		t.Fatalf("row after a refused unprune: %q", r)
	}
	if !strings.Contains(m.View(), "not pruned") {
		t.Fatal("the refusal is not on screen")
	}
}

// space shows "pausing" until the engine pauses, and a second space
// before then resumes rather than pausing twice.
func TestPauseIsAcknowledgedAtOnce(t *testing.T) {
	ctl := &fakeControl{}
	m := newTest(t, ctl)
	m.Update(sizeMsg(160, 48))
	press(m, " ")
	if f := footer(m); !strings.Contains(f, "pause queued") || !strings.Contains(f, "pausing") {
		t.Fatalf("footer after space: %q", f)
	}
	press(m, " ")
	if len(ctl.sent) != 2 || ctl.sent[1].Kind != "resume" {
		t.Fatalf("sent %v, want pause then resume", ctl.sent)
	}
}

// A read-only viewer refuses every key that changes the run with a
// sentence and sends nothing.
func TestReadOnlyViewerRefusesSteering(t *testing.T) {
	ctl := &fakeControl{}
	m := newTest(t, ctl)
	m.opt.ReadOnly = "this run belongs to a bench: reopen with --steer to steer it"
	m.Update(sizeMsg(160, 48))
	for _, keys := range [][]string{{"f"}, {"1", " "}, {"2", "down", "x"}, {"2", "u"}} {
		press(m, keys...)
		if f := footer(m); !strings.Contains(f, "refused: this run belongs to a bench") {
			t.Fatalf("footer after %v: %q; want the refusal", keys, f)
		}
		press(m, "y")
	}
	if len(ctl.sent) != 0 {
		t.Fatalf("a read-only viewer sent %v", ctl.sent)
	}
	if f := footer(m); strings.Contains(f, "f force") {
		t.Fatalf("a read-only footer offers f: %q", f)
	}
}

// Once the run has finished nothing offers or sends a force.
func TestFinishedRunCannotBeSteered(t *testing.T) {
	ctl := &fakeControl{}
	m := newTest(t, ctl)
	m.Update(sizeMsg(160, 48))
	m.apply(ev(t, 13, engine.EvRunFinished, 2, 6, 4, 200, engine.Summary{TestK: 8}))
	if f := footer(m); strings.Contains(f, "f force") {
		t.Fatalf("footer of a finished run offers f: %q", f)
	}
	press(m, "f", "y")
	if len(ctl.sent) != 0 || !strings.Contains(footer(m), "finished") {
		t.Fatalf("f y on a finished run sent %v; footer %q", ctl.sent, footer(m))
	}
}

func sizeMsg(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }

// Pruning the incumbent is refused in the frame x is pressed, whole on an
// 80-column footer, without waiting for the engine.
func TestPruningTheIncumbentIsRefusedAtOnce(t *testing.T) {
	ctl := &fakeControl{}
	m := newTest(t, ctl)
	m.Update(sizeMsg(80, 24))
	press(m, "2", "x")
	f := footer(m)
	if len(ctl.sent) != 0 || !strings.Contains(f, "aaaaaaaa is the incumbent") || strings.Contains(f, "…") {
		t.Fatalf("x on the incumbent sent %v; footer %q", ctl.sent, f)
	}
}
