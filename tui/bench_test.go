package tui

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"whale/core/engine"
)

var benchT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// benchTest is a dashboard of four jobs, 75 s into a bench: one finished
// earlier, one running (it started at 48 model calls and is at 112 of
// 200), two waiting.
func benchTest(t *testing.T, stop func()) *Bench {
	t.Helper()
	evs := script(t)
	done := append(script(t), ev(t, 13, engine.EvRunFinished, 2, 3, 2, 200, engine.Summary{BestValMean: 0.41}))
	jobs := []BenchJob{
		{ID: "bench-math-weight-only-b200-s1", Condition: "weight-only", Domain: "math", Seed: 1, History: done, Done: true},
		{ID: "bench-math-whale-fixed-b200-s1", Condition: "whale-fixed", Domain: "math", Seed: 1, Budget: 200},
		{ID: "bench-math-whale-fixed-b200-s2", Condition: "whale-fixed", Domain: "math", Seed: 2, Budget: 200},
		{ID: "bench-math-staged-b200-s1", Condition: "staged", Domain: "math", Seed: 1, Budget: 200},
	}
	now := benchT0
	b := NewBench(BenchOptions{Title: "bench · math · preset tiny · 200 model calls per run · 2 seed(s)", Jobs: jobs, Stop: stop,
		Now: func() time.Time { return now }})
	b.Update(BenchRunStarted{ID: jobs[1].ID, Opt: Options{RunID: jobs[1].ID, Domain: "math", ModelDesc: "whale-fixed", History: evs[:6]}})
	b.Update(benchEventsMsg{id: 1, ev: eventsMsg{events: evs[6:]}})
	now = benchT0.Add(75 * time.Second)
	b.Update(benchTick(now))
	b.sel = 1
	return b
}

func TestBenchGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		w, h int
	}{{"bench_80x24", 80, 24}, {"bench_160x48", 160, 48}} {
		t.Run(tc.name, func(t *testing.T) {
			tm := teatest.NewTestModel(t, benchTest(t, nil), teatest.WithInitialTermSize(tc.w, tc.h))
			goldenView(t, tm, tc.name, tc.w, tc.h)
		})
	}
}

func TestBenchRowFigures(t *testing.T) {
	b := benchTest(t, nil)
	st := b.stats(b.rows[1])
	// 64 model calls in 75 s; 88 left: 88/64 × 75 s = 103.125 s.
	if st.spent != 112 || st.budget != 200 || st.pct != 56 || st.best != "0.360" || st.elapsed != "1m15s" || st.eta != "~1m43s" {
		t.Fatalf("running row: %+v", st)
	}
	if st := b.stats(b.rows[0]); st.best != "0.410" || st.eta != "done" {
		t.Fatalf("finished row: %+v", st)
	}
	if st := b.stats(b.rows[2]); st.best != "—" || st.eta != "—" || st.spent != 0 || st.budget != 200 {
		t.Fatalf("waiting row: %+v", st)
	}
}

func TestBenchEnterOpensTheRunAndQGoesBack(t *testing.T) {
	stopped := false
	b := benchTest(t, func() { stopped = true })
	b.Update(keyMsg("enter"))
	v := b.View()
	if !strings.Contains(v, "run bench-math-whale-fixed-b200-s1") || !strings.Contains(v, benchBack) {
		t.Fatalf("enter did not open the run's workbench:\n%s", v)
	}
	b.Update(keyMsg("2")) // its panes answer
	if b.open == nil || b.open.m.pane != paneHarnesses {
		t.Fatal("keys do not reach the open workbench")
	}
	b.Update(keyMsg("q"))
	if b.open != nil || stopped {
		t.Fatalf("q in the workbench: open %v, stopped %v; want back at the list, bench running", b.open != nil, stopped)
	}
	b.Update(keyMsg("down"))
	b.Update(keyMsg("enter"))
	if b.open != nil || !strings.Contains(b.View(), "has not started yet") {
		t.Fatalf("enter on a waiting run:\n%s", b.View())
	}
	b.Update(keyMsg("q"))
	if !strings.Contains(b.View(), "stop the bench?") {
		t.Fatalf("q did not ask:\n%s", b.View())
	}
	_, cmd := b.Update(keyMsg("y"))
	if !stopped || cmd == nil || cmd() != tea.Quit() {
		t.Fatalf("q y: stopped %v; want the bench stopped and the dashboard closed", stopped)
	}
}

func TestBenchEventsAdvanceTheRowUntilItEnds(t *testing.T) {
	b := benchTest(t, nil)
	br := engine.NewBroker[engine.Event]()
	sub := br.Subscribe(16)
	cmd := b.Update2(BenchRunStarted{ID: "bench-math-staged-b200-s1", Events: sub, Opt: Options{RunID: "bench-math-staged-b200-s1"}})
	br.Publish(ev(t, 1, engine.EvRunStarted, 0, 0, 0, 0, engine.Config{Domain: "math", Budget: 200}))
	br.Publish(ev(t, 2, engine.EvPhaseStarted, 1, 0, 0, 0, map[string]any{"kind": engine.PhaseWeights, "round": 1}))
	br.Publish(ev(t, 3, engine.EvWeightStep, 1, 1, 0, 50, map[string]any{"reward_mean": 0.5}))
	cmd = b.Update2(cmd())
	r := b.rows[3]
	if r.state != jobRunning || r.m.run.rollouts != 50 || r.m.opt.Budget != 200 || cmd == nil {
		t.Fatalf("row after events: state %s, %d/%d calls, re-armed %v", r.state, r.m.run.rollouts, r.m.opt.Budget, cmd != nil)
	}
	br.Close()
	if cmd = b.Update2(cmd()); cmd != nil {
		t.Fatal("the dashboard waits on a closed subscription")
	}
	b.Update(BenchRunEnded{ID: "bench-math-staged-b200-s1", Err: errors.New("store: disk full")})
	if r.state != jobFailed || !strings.Contains(b.rows[3].err, "disk full") {
		t.Fatalf("failed run: %s %q", r.state, r.err)
	}
}

// Update2 is Update's command alone.
func (b *Bench) Update2(msg tea.Msg) tea.Cmd {
	_, cmd := b.Update(msg)
	return cmd
}

func TestHeadlessBenchPrintsALinePerRunningRun(t *testing.T) {
	b := benchTest(t, nil)
	var out bytes.Buffer
	b.opt.Progress = &out
	b.printProgress()()
	want := "[2/4] bench-math-whale-fixed-b200-s1: round 1 harness, 112/200 model calls (56%), best val 0.360, elapsed 1m15s, ETA ~1m43s\n"
	if out.String() != want {
		t.Fatalf("progress:\n%q\nwant\n%q", out.String(), want)
	}
	if b.View() != "" {
		t.Fatal("a headless dashboard draws")
	}
	if cmd := b.Update2(BenchFinished{}); cmd == nil || cmd() != tea.Quit() {
		t.Fatal("a headless dashboard does not end with the bench")
	}
}

func TestAttachedWorkbenchSaysWhenTheOwnerIsGone(t *testing.T) {
	br := engine.NewBroker[engine.Event]()
	sub := br.Subscribe(16)
	m := New(Options{RunID: "r", Events: sub, Attached: "attached, read-only",
		StreamEnd: func() string { return "owner exited: no more updates" }})
	br.Close()
	if _, cmd := m.Update(waitEvents(sub)()); cmd != nil {
		t.Fatal("still waiting for events after the stream closed")
	}
	lines := strings.Split(m.View(), "\n")
	if f := lines[len(lines)-1]; !strings.Contains(f, "attached, read-only · owner exited: no more updates") {
		t.Fatalf("footer %q", f)
	}
}

// TestBenchDropsAFinishedRunsEngine: while a run runs, its row's workbench
// commands its engine and polls its progress; once it ended the row holds
// the engine no longer (a bench of many runs kept every engine's model,
// samplers and caches alive: 187 MB a run on the small preset), keeps the
// last progress it polled, and refuses its keys with a sentence.
func TestBenchDropsAFinishedRunsEngine(t *testing.T) {
	b := benchTest(t, nil)
	ctl := &fakeEngine{}
	b.Update(BenchRunStarted{ID: "bench-math-staged-b200-s1", Opt: Options{RunID: "bench-math-staged-b200-s1", Control: ctl, Progress: ctl.Progress}})
	r := b.rows[3]
	r.m.send(engine.Command{Kind: "pause"})
	if len(ctl.sent) != 1 {
		t.Fatalf("a running row's command reached the engine %d times", len(ctl.sent))
	}
	b.Update(BenchRunEnded{ID: "bench-math-staged-b200-s1"})
	if r.m.prog == nil || r.m.prog.Ledger.TrainCalls != 100 || ctl.polls != 1 {
		t.Fatalf("a finished row's last progress: %+v after %d polls, want the ledger polled once at the end", r.m.prog, ctl.polls)
	}
	alive := weak.Make(ctl)
	ctl = nil
	for i := 0; i < 5 && alive.Value() != nil; i++ {
		runtime.GC()
	}
	if alive.Value() != nil {
		t.Fatal("a finished row still holds its engine")
	}
	r.m.send(engine.Command{Kind: "pause"})
	if !strings.Contains(r.m.err, "no run to control") {
		t.Fatalf("a finished row's command: error %q", r.m.err)
	}
	runtime.KeepAlive(b)
}

// fakeEngine is a fakeControl that also reports progress, as an engine's
// method value does (bound to the engine).
type fakeEngine struct {
	fakeControl
	polls int
}

func (f *fakeEngine) Progress() engine.Progress {
	f.polls++
	return engine.Progress{Ledger: engine.Ledger{TrainCalls: 100 * len(f.sent)}}
}
