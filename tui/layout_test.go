package tui

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest"

	"whale/core/engine"
)

// The engine keeps a phase's checkpoint before it reports the phase's
// end: the checkpoint's val is the one measured at that boundary, not the
// one before the phase.
func TestCheckpointValIsTheValAtItsBoundary(t *testing.T) {
	m := newTest(t, &fakeControl{})
	m.apply(ev(t, 13, engine.EvCheckpoint, 1, 3, 2, 120, map[string]any{"id": "math-test/01-harness", "weights": "wwwwwwww9999", "harness": "aaaaaaaa1111"}))
	m.apply(ev(t, 14, engine.EvPhaseEnded, 1, 3, 2, 120, engine.PhaseRecord{Kind: engine.PhaseHarness, Round: 1, ValBefore: 0.36, ValAfter: 0.47}))
	cs := m.run.checkpoints
	if c := cs[len(cs)-1]; !c.HasVal || c.Val != 0.47 {
		t.Fatalf("checkpoint %+v: want val 0.470, measured at its boundary", c)
	}
	m.Update(sizeMsg(80, 24))
	press(m, "4")
	if v := m.View(); !strings.Contains(v, "val mean@8") || !strings.Contains(v, "0.470") {
		t.Fatalf("checkpoints pane:\n%s", v)
	}
}

// Every header field is on screen at 80 and 160 columns.
func TestHeaderFits(t *testing.T) {
	for _, w := range []int{80, 160} {
		m := newTest(t, &fakeControl{})
		m.Update(sizeMsg(w, 24))
		if v := m.View(); !strings.Contains(v, "elapsed 1m15s") || !strings.Contains(v, "preset tiny") {
			t.Fatalf("at %d columns the header lost a field:\n%s", w, v)
		}
	}
}

// At 80 columns the leaderboard keeps every row's status and the
// incumbent's marker.
func TestNarrowBoardKeepsStatusAndMarker(t *testing.T) {
	m := newTest(t, &fakeControl{})
	m.Update(sizeMsg(80, 24))
	press(m, "2")
	v := m.View()
	for _, want := range []string{"* 1", "incumbent", "candidate", "pruned"} {
		if !strings.Contains(v, want) {
			t.Fatalf("80-column board lacks %q:\n%s", want, v)
		}
	}
	for i, l := range strings.Split(v, "\n") {
		if ansi.StringWidth(l) > 80 {
			t.Fatalf("line %d is %d wide", i, ansi.StringWidth(l))
		}
	}
}

// A log line cut at the window's edge opens whole on enter.
func TestCutLogLineOpensWhole(t *testing.T) {
	m := newTest(t, &fakeControl{})
	m.Update(sizeMsg(80, 24))
	press(m, "5", "up", "up", "up", "up", "up")
	if strings.Contains(m.View(), "kept 38%") {
		t.Fatal("the phase-end line fits at 80 columns: the test needs a cut one")
	}
	press(m, "enter")
	if v := m.View(); !strings.Contains(strings.ReplaceAll(v, "\n", " "), "kept 38%") {
		t.Fatalf("the opened line is not whole:\n%s", v)
	}
	press(m, "esc")
	if strings.Contains(m.View(), "esc back") {
		t.Fatal("esc did not close the opened line")
	}
}

// An error longer than the footer opens whole on enter.
func TestCutErrorOpensWhole(t *testing.T) {
	m := newTest(t, &fakeControl{err: errLong})
	m.Update(sizeMsg(80, 24))
	press(m, "f", "y")
	if f := footer(m); !strings.Contains(f, "enter: whole") {
		t.Fatalf("cut error footer: %q", f)
	}
	press(m, "enter")
	if v := strings.ReplaceAll(m.View(), "\n", " "); !strings.Contains(v, "runs.jsonl beside it") {
		t.Fatalf("the error is not whole:\n%s", m.View())
	}
	press(m, "1")
	if strings.Contains(m.View(), "runs.jsonl") {
		t.Fatal("a key did not close the whole error")
	}
}

// Long work shows a bar with its rollouts and an ETA, and the ledger per
// purpose against the budget.
func TestProgressBarAndLedger(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		m := newTest(t, &fakeControl{})
		t0 := m.opt.Now()
		m.opt.Progress = func() engine.Progress {
			return engine.Progress{What: "val evaluation", Done: 12, Total: 48, Since: t0.Add(-30 * time.Second), Budget: 200,
				Ledger: engine.Ledger{TrainCalls: 64, SearchCalls: 48, EvalCalls: 96}}
		}
		tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(size[0], size[1]))
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("ETA")) },
			teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
		v := m.View()
		for _, want := range []string{"val evaluation", "12/48 rollouts", "ETA 1m30s", "training 64 calls", "search 48 calls", "88 left", "evaluation 96 calls"} {
			if !strings.Contains(v, want) {
				t.Fatalf("%dx%d: the Run pane lacks %q:\n%s", size[0], size[1], want, v)
			}
		}
		goldenView(t, tm, fmt.Sprintf("run_progress_%dx%d", size[0], size[1]), size[0], size[1])
	}
}

func TestWholeLinesWrapAtSpacesAndCutLongWords(t *testing.T) {
	got := wholeLines("run 'whale tui --db a-b-c.db --steer' now "+strings.Repeat("x", 25), 12)
	want := []string{"run 'whale", "tui --db", "a-b-c.db", "--steer' now", strings.Repeat("x", 12), strings.Repeat("x", 12), "x"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("wholeLines = %q, want %q", got, want)
	}
}

// A bench run's checkpoint ids are long: at 80 columns each row keeps its
// round and val, the id cut from the left so its round and phase show.
func TestLongCheckpointIDsFit(t *testing.T) {
	m := newTest(t, &fakeControl{})
	id := "bench-math-whale-adaptive-b4608-s3/07-harness"
	m.apply(ev(t, 13, engine.EvCheckpoint, 7, 30, 12, 190, map[string]any{"id": id, "weights": "wwwwwwww9999", "harness": "aaaaaaaa1111"}))
	m.apply(ev(t, 14, engine.EvPhaseEnded, 7, 30, 12, 190, engine.PhaseRecord{Kind: engine.PhaseHarness, Round: 7, ValAfter: 0.512}))
	m.Update(sizeMsg(80, 24))
	press(m, "4")
	var row string
	for _, l := range strings.Split(m.View(), "\n") {
		if strings.Contains(l, "07-harness") {
			row = l
		}
	}
	if row == "" || !strings.Contains(row, "0.512") || !strings.Contains(row, " 7 ") || ansi.StringWidth(row) > 80 {
		t.Fatalf("long checkpoint row %q: want its round, val and phase within 80 columns\n%s", row, m.View())
	}
}

// Under the paper's two ledgers the Run pane names each with its limit.
func TestProgressNamesTheTwoLedgers(t *testing.T) {
	m := newTest(t, &fakeControl{})
	m.prog = &engine.Progress{TrainCalls: 5760, SearchCalls: 6144, Ledger: engine.Ledger{TrainCalls: 64, SearchCalls: 48, EvalCalls: 96}}
	got := strings.Join(m.progressLines(80), "\n")
	for _, want := range []string{"training 64 of 5760, search 48 of 6144, sum 112", "evaluation 96 calls"} {
		if !strings.Contains(got, want) {
			t.Fatalf("the Run pane's ledger lacks %q:\n%s", want, got)
		}
	}
}
