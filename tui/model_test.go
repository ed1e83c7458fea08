package tui

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"

	"whale/core/engine"
	"whale/core/eval"
	"whale/core/weights"
	"whale/data"
	"whale/harnesses"
)

// updating reports -update (go test ./tui -update): the flag is defined by
// x/exp/golden, which teatest brings in, so it is looked up, not declared.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

func TestMain(m *testing.M) {
	lipgloss.SetColorProfile(termenv.Ascii)
	os.Exit(m.Run())
}

// fakeControl records commands instead of running an engine.
type fakeControl struct {
	sent []engine.Command
	err  error
}

func (f *fakeControl) Send(c engine.Command) error {
	if f.err != nil {
		return f.err
	}
	f.sent = append(f.sent, c)
	return nil
}

func ev(t *testing.T, seq uint64, kind string, round, step, iter, rollouts int, data any) engine.Event {
	t.Helper()
	var raw json.RawMessage
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		raw = b
	}
	return engine.Event{Seq: seq, Kind: kind, Round: round, Step: step, Iteration: iter, Rollouts: rollouts, Calls: rollouts, Data: raw}
}

// script is a short synthetic run: a weight phase of three steps, a
// harness phase of two iterations, a checkpoint, and the next weight phase.
func script(t *testing.T) []engine.Event {
	board := []BoardRow{
		{Hash: "aaaaaaaa1111", Mechanism: "", Score: 0.42, CILo: 0.38, CIHi: 0.46, Rollouts: 64, Calls: 90, Iteration: 0, Status: "incumbent"},
		{Hash: "bbbbbbbb2222", Parent: "aaaaaaaa1111", Mechanism: "SAMPLES=4,aggregate=_agg_plurality", Score: 0.40, CILo: 0.33, CIHi: 0.47, Rollouts: 32, Calls: 170, Iteration: 1, Status: "candidate",
			HasGain: true, Gain: -0.02, GainLo: -0.081, GainHi: 0.041, NullRefused: true, NullLift: 0.052, HasNull: true},
		{Hash: "cccccccc3333", Parent: "aaaaaaaa1111", Mechanism: "MAX_TURNS=4", Score: 0.31, CILo: 0.25, CIHi: 0.37, Rollouts: 32, Calls: 48, Iteration: 2, Status: "pruned",
			HasGain: true, Gain: -0.11, GainLo: -0.2, GainHi: -0.02},
	}
	stats := func(kept int) weights.Stats {
		return weights.Stats{Rollouts: 16, Kept: kept, Rejected: map[string]int{"wrong_answer": 16 - kept - 1, "format": 1}, Trained: kept, Loss: 1.25, GradNorm: 0.5, LR: 1e-4}
	}
	pw := func(done, since int, best, cur float64) engine.Patience {
		return engine.Patience{Phase: engine.PhaseWeights, Done: done, Min: 2, Max: 6, Since: since, Limit: 3, Best: best, Current: cur}
	}
	ph := func(done, since int) engine.Patience {
		return engine.Patience{Phase: engine.PhaseHarness, Done: done, Min: 1, Max: 4, Since: since, Limit: 2, Best: 0.42, Current: 0.40}
	}
	phaseEntropy, phaseKept := (1.42+1.18+0.97)/3, 18.0/48
	return []engine.Event{
		ev(t, 1, engine.EvRunStarted, 0, 0, 0, 0, engine.Config{Domain: "math", Schedule: "adaptive", Preset: "tiny", Budget: 200, MaxRounds: 2, ValK: 8}),
		ev(t, 2, engine.EvEval, 0, 0, 0, 0, map[string]any{"split": "val", "report": eval.Report{K: 8, MeanAtK: 0.30}}),
		ev(t, 3, engine.EvPhaseStarted, 1, 0, 0, 0, map[string]any{"kind": engine.PhaseWeights, "round": 1}),
		ev(t, 4, engine.EvWeightStep, 1, 1, 0, 16, map[string]any{"stats": stats(5), "reward_mean": 0.31, "entropy": 1.42, "kept_fraction": 5.0 / 16, "patience": pw(1, 0, 0.31, 0.31)}),
		ev(t, 5, engine.EvWeightStep, 1, 2, 0, 32, map[string]any{"stats": stats(7), "reward_mean": 0.44, "entropy": 1.18, "kept_fraction": 7.0 / 16, "patience": pw(2, 0, 0.38, 0.38)}),
		ev(t, 6, engine.EvWeightStep, 1, 3, 0, 48, map[string]any{"stats": stats(6), "reward_mean": 0.39, "entropy": 0.97, "kept_fraction": 6.0 / 16, "patience": pw(3, 1, 0.38, 0.36)}),
		ev(t, 7, engine.EvPhaseEnded, 1, 3, 0, 48, engine.PhaseRecord{Kind: engine.PhaseWeights, Round: 1, Rollouts: 48, Steps: 3, ValBefore: 0.30, ValAfter: 0.36,
			ValPassBefore: 0.55, ValPassAfter: 0.47, Entropy: &phaseEntropy, KeptFraction: &phaseKept}),
		ev(t, 8, engine.EvCheckpoint, 1, 3, 0, 48, map[string]any{"id": "r1-weights-s3", "weights": "wwwwwwww9999", "harness": "aaaaaaaa1111"}),
		ev(t, 9, engine.EvPhaseStarted, 1, 3, 0, 48, map[string]any{"kind": engine.PhaseHarness, "round": 1}),
		ev(t, 10, engine.EvHarnessIteration, 1, 3, 1, 80, map[string]any{"patience": ph(1, 0), "board": board[:2]}),
		ev(t, 11, engine.EvControl, 1, 3, 1, 80, map[string]any{"kind": "prune", "target": "cccccccc3333"}),
		ev(t, 12, engine.EvHarnessIteration, 1, 3, 2, 112, map[string]any{"patience": ph(2, 1), "board": board}),
	}
}

func sample(seq uint64, kept bool, why string) Sample {
	return Sample{Seq: seq, SampleRecord: engine.SampleRecord{Kind: "w", Step: 2, Round: 1, Kept: kept, Why: why, Harness: "aaaaaaaa1111",
		Trajectory: harnesses.Trajectory{TaskID: "math-17", Reward: 0.2, Turns: 2,
			Messages: []harnesses.Message{{Role: "user", Content: "What is 6 * 7?"}, {Role: "assistant", Content: "Answer: 41"}},
			Calls:    []harnesses.Call{{Text: "Answer: 41", Finish: "stop", Action: &data.Action{Kind: data.ActAnswer, Text: "41"}, Outcome: string(data.ActAnswer)}},
			Failure:  data.FailureKind(why),
			Tools:    []harnesses.ToolCall{{Turn: 1, Tool: "calc", Args: "6*7", Shown: "42"}}}}}
}

func newTest(t *testing.T, ctl Controller) *Model {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	src := map[string]string{
		"aaaaaaaa1111": "MAX_TURNS = 4\nFORMAT_RETRIES = 1\ndef parse(x):\n    return x",
		"bbbbbbbb2222": "MAX_TURNS = 4\nFORMAT_RETRIES = 2\ndef parse(x):\n    return x",
	}
	m := New(Options{RunID: "math-test", ModelDesc: "embedded base model", History: script(t), Control: ctl,
		HarnessSource: func(h string) (string, error) {
			if s, ok := src[h]; ok {
				return s, nil
			}
			return "", errors.New("not archived")
		},
		Fork: func(string) {},
		Gold: func(id string) (string, bool) { return "42", id == "math-17" },
		Now:  func() time.Time { return t0.Add(75 * time.Second) }})
	m.started = t0
	m.Update(tickMsg(t0))
	m.Update(samplesMsg{samples: []Sample{sample(9, false, "wrong_answer"), sample(8, true, "reward ≥ threshold"), sample(7, false, "format")}})
	return m
}

func keyMsg(k string) tea.KeyMsg {
	switch k {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case " ":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune(" ")}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

func press(m *Model, keys ...string) {
	for _, k := range keys {
		m.Update(keyMsg(k))
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if updating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (run go test ./tui -update)", path, err)
	}
	if string(want) != got {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestPaneGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []string
		w, h int
		wait string // text the program must show before it is stopped
		err  error  // what the controller answers
	}{
		{"run_80x24", nil, 80, 24, "", nil},
		{"run_120x30", nil, 120, 30, "", nil},
		{"run_160x48", nil, 160, 48, "", nil},
		{"run_140x24", nil, 140, 24, "", nil},
		{"harnesses_160x48", []string{"2", "down"}, 160, 48, "", nil},
		{"checkpoints_160x48", []string{"4"}, 160, 48, "", nil},
		{"harnesses_80x24", []string{"2", "down"}, 80, 24, "", nil},
		{"samples_80x24", []string{"3"}, 80, 24, "", nil},
		{"samples_kept_80x24", []string{"3", "a"}, 80, 24, "", nil},
		{"sample_detail_80x24", []string{"3", "enter"}, 80, 24, "", nil},
		{"checkpoints_80x24", []string{"4"}, 80, 24, "", nil},
		{"log_80x24", []string{"5"}, 80, 24, "", nil},
		{"help_80x24", []string{"?"}, 80, 24, "", nil},
		{"confirm_80x24", []string{"f"}, 80, 24, "", nil},
		{"harness_diff_80x24", []string{"2", "down", "enter"}, 80, 24, "FORMAT_RETRIES = 2", nil},
		{"log_filtered_80x24", []string{"5", "/", "s", "t", "e", "p", "enter"}, 80, 24, "", nil},
		{"fork_confirm_80x24", []string{"4", "r"}, 80, 24, "", nil},
		{"samples_160x48", []string{"3"}, 160, 48, "", nil},
		{"sample_detail_160x48", []string{"3", "enter"}, 160, 48, "", nil},
		{"log_160x48", []string{"5"}, 160, 48, "", nil},
		{"log_open_80x24", []string{"5", "up", "up", "up", "up", "up", "enter"}, 80, 24, "", nil},
		{"help_160x48", []string{"?"}, 160, 48, "", nil},
		{"confirm_160x48", []string{"f"}, 160, 48, "", nil},
		{"queued_80x24", []string{"2", "down", "x"}, 80, 24, "", nil},
		{"error_long_80x24", []string{"f", "y"}, 80, 24, "", errLong},
		{"error_long_160x48", []string{"f", "y"}, 160, 48, "", errLong},
		{"error_whole_80x24", []string{"f", "y", "enter"}, 80, 24, "", errLong},
		{"knobs_80x24", []string{"2", "k"}, 80, 24, "", nil},
		{"knobs_160x48", []string{"2", "k"}, 160, 48, "", nil},
		{"harness_diff_160x48", []string{"2", "down", "enter"}, 160, 48, "FORMAT_RETRIES = 2", nil},
		{"log_open_160x48", []string{"5", "up", "up", "up", "up", "up", "enter"}, 160, 48, "", nil},
		{"queued_160x48", []string{"2", "down", "x"}, 160, 48, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The real program loop drives the model: the size arrives
			// as a WindowSizeMsg, keys one message each, and commands
			// (the diff's source load) run as they would on a terminal.
			tm := teatest.NewTestModel(t, newTest(t, &fakeControl{err: tc.err}), teatest.WithInitialTermSize(tc.w, tc.h))
			for _, k := range tc.keys {
				tm.Send(keyMsg(k))
			}
			if tc.wait != "" {
				teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(tc.wait)) },
					teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
			}
			goldenView(t, tm, tc.name, tc.w, tc.h)
		})
	}
}

// goldenView stops tm's program and compares its final view, which must
// fill w×h exactly, with testdata/name.golden.
func goldenView(t *testing.T, tm *teatest.TestModel, name string, w, h int) {
	t.Helper()
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	v := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).View()
	if n := strings.Count(v, "\n") + 1; n != h {
		t.Errorf("view has %d lines, want %d", n, h)
	}
	for i, l := range strings.Split(v, "\n") {
		if lw := lipgloss.Width(l); lw > w {
			t.Errorf("line %d is %d wide, want ≤ %d: %q", i, lw, w, l)
		}
	}
	golden(t, name, v)
}

func TestForceAsksFirst(t *testing.T) {
	ctl := &fakeControl{}
	m := newTest(t, ctl)
	press(m, "f", "n")
	if len(ctl.sent) != 0 {
		t.Fatalf("f n sent %v", ctl.sent)
	}
	press(m, "f", "y")
	if len(ctl.sent) != 1 || ctl.sent[0].Kind != "force" {
		t.Fatalf("f y sent %v, want one force", ctl.sent)
	}
}

func TestRunesTypedTogetherAreSeparateKeys(t *testing.T) {
	ctl := &fakeControl{}
	m := newTest(t, ctl)
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("fy5")})
	if len(ctl.sent) != 1 || ctl.sent[0].Kind != "force" || m.pane != paneLog {
		t.Fatalf("fy5 sent %v and focused pane %d; want force and the log", ctl.sent, m.pane)
	}
}

func TestPruneSendsSelectedHash(t *testing.T) {
	ctl := &fakeControl{}
	m := newTest(t, ctl)
	press(m, "x") // not on the Harnesses pane: nothing
	press(m, "2", "down", "x", "down", "u")
	want := []engine.Command{{Kind: "prune", Target: "bbbbbbbb2222"}, {Kind: "unprune", Target: "cccccccc3333"}}
	if len(ctl.sent) != len(want) {
		t.Fatalf("sent %v, want %v", ctl.sent, want)
	}
	for i := range want {
		if ctl.sent[i] != want[i] {
			t.Errorf("command %d = %v, want %v", i, ctl.sent[i], want[i])
		}
	}
}

func TestFilterNarrowsTheBoard(t *testing.T) {
	ctl := &fakeControl{}
	m := newTest(t, ctl)
	press(m, "2", "/", "m", "a", "x", "_", "enter")
	if rows := m.panes.harnesses.rows(m); len(rows) != 1 || rows[0].Hash != "cccccccc3333" {
		t.Fatalf("filtered board = %v", rows)
	}
	press(m, "u")
	if len(ctl.sent) != 1 || ctl.sent[0] != (engine.Command{Kind: "unprune", Target: "cccccccc3333"}) {
		t.Fatalf("sent %v, want unprune of the one row left", ctl.sent)
	}
	press(m, "/", "esc")
	if len(m.panes.harnesses.rows(m)) != 3 {
		t.Fatal("esc did not clear the filter")
	}
}

// TestWorkbenchDiffIsHarnessDiff opens a candidate's diff and checks the
// pane shows harnesses.Diff's lines, the ones `whale harness diff` prints,
// so the two cannot disagree.
func TestWorkbenchDiffIsHarnessDiff(t *testing.T) {
	m := newTest(t, &fakeControl{})
	press(m, "2", "down")
	_, cmd := m.Update(keyMsg("enter"))
	if cmd == nil {
		t.Fatal("enter on a candidate read no sources")
	}
	m.Update(cmd())
	a, _ := m.opt.HarnessSource("aaaaaaaa1111")
	b, _ := m.opt.HarnessSource("bbbbbbbb2222")
	want := strings.Split(strings.TrimSuffix(harnesses.Diff("incumbent", a, "harness", b), "\n"), "\n")
	got := strings.Split(m.View(), "\n")[2 : 2+len(want)] // under the tabs and the diff's header
	if !slices.Equal(got, want) {
		t.Fatalf("workbench diff:\n%s\nwant harnesses.Diff:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestPauseToggles(t *testing.T) {
	ctl := &fakeControl{}
	m := newTest(t, ctl)
	press(m, " ")
	m.apply(ev(t, 13, engine.EvControl, 1, 3, 2, 112, map[string]any{"kind": "pause"}))
	press(m, " ")
	if len(ctl.sent) != 2 || ctl.sent[0].Kind != "pause" || ctl.sent[1].Kind != "resume" {
		t.Fatalf("sent %v, want pause then resume", ctl.sent)
	}
}

func TestErrorShownThenClearedOnKey(t *testing.T) {
	ctl := &fakeControl{err: errors.New("engine: control queue full")}
	m := newTest(t, ctl)
	press(m, "f", "y")
	if !strings.Contains(m.View(), "control queue full") {
		t.Fatalf("footer lacks the error:\n%s", m.View())
	}
	press(m, "1")
	if strings.Contains(m.View(), "control queue full") {
		t.Fatal("error not cleared by the next key")
	}
}

func TestQuitStopsTheRun(t *testing.T) {
	m := newTest(t, &fakeControl{})
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	if cmd == nil {
		t.Fatal("q returned no command")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("q did not quit")
	}
	if m.ctx.Err() == nil {
		t.Fatal("q did not cancel the run's context")
	}
}

func TestSampleFilterCyclesKinds(t *testing.T) {
	m := newTest(t, &fakeControl{})
	press(m, "3")
	if n := len(m.panes.samples.visible(m)); n != 2 {
		t.Fatalf("rejected samples = %d, want 2", n)
	}
	press(m, "c")
	if m.panes.samples.kind != "format" || len(m.panes.samples.visible(m)) != 1 {
		t.Fatalf("after c: filter %q, %d samples", m.panes.samples.kind, len(m.panes.samples.visible(m)))
	}
	press(m, "c", "c")
	if m.panes.samples.kind != "" {
		t.Fatalf("filter did not cycle back to all: %q", m.panes.samples.kind)
	}
	press(m, "/", "r", "o", "u", "n", "d", " ", "2", "enter")
	if n := len(m.panes.samples.visible(m)); n != 0 {
		t.Fatalf("round 2 filter kept %d samples of round 1", n)
	}
}

// TestEventsThroughBroker feeds events through a real broker the way the
// engine publishes them and checks the model re-arms until it closes.
func TestEventsThroughBroker(t *testing.T) {
	b := engine.NewBroker[engine.Event]()
	sub := b.Subscribe(2)
	m := New(Options{RunID: "r", Events: sub})
	for _, e := range script(t)[:4] {
		b.Publish(e)
	}
	msg := waitEvents(sub)().(eventsMsg)
	if len(msg.events) != 2 || msg.dropped != 2 {
		t.Fatalf("drained %d events, %d dropped; want 2 and 2", len(msg.events), msg.dropped)
	}
	if _, cmd := m.Update(msg); cmd == nil {
		t.Fatal("model did not re-arm the event reader")
	}
	b.Close()
	msg = waitEvents(sub)().(eventsMsg)
	if !msg.closed {
		t.Fatal("closed broker not reported")
	}
	if _, cmd := m.Update(msg); cmd != nil {
		t.Fatal("model re-armed after the broker closed")
	}
	if m.run.dropped != 2 {
		t.Fatalf("dropped = %d, want 2", m.run.dropped)
	}
}

func TestKnobsFreezeAndFree(t *testing.T) {
	sink := &fakeControl{}
	m := newTest(t, sink)
	press(m, "2", "k")
	if m.panes.harnesses.knobMode {
		t.Fatal("knob list opened before any search space was seen")
	}
	m.apply(engine.Event{Kind: engine.EvHarnessIteration, Round: 1, Iteration: 1,
		Data: []byte(`{"patience":{},"board":[],"knobs":["MAX_TURNS","parse_action"],"frozen":["parse_action"]}`)})
	press(m, "k", "enter", "down", "enter", "esc")
	want := []engine.Command{{Kind: "freeze", Target: "MAX_TURNS"}, {Kind: "unfreeze", Target: "parse_action"}}
	if len(sink.sent) != 2 || sink.sent[0] != want[0] || sink.sent[1] != want[1] {
		t.Fatalf("sent %v, want %v", sink.sent, want)
	}
	if m.panes.harnesses.knobMode {
		t.Fatal("esc did not close the knob list")
	}
}

func TestExportSelectedCheckpoint(t *testing.T) {
	m := newTest(t, &fakeControl{})
	var asked string
	m.opt.Export = func(id string) (string, error) { asked = id; return "export/" + id, nil }
	m.apply(engine.Event{Kind: engine.EvCheckpoint, Round: 1, Data: []byte(`{"id":"math-test/01-weights","weights":"w","harness":"h"}`)})
	m.pane = paneCheckpoints
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("e")})
	if cmd == nil {
		t.Fatal("e on a checkpoint started no export")
	}
	m.Update(cmd())
	if asked == "" || !strings.Contains(m.status, "exported") {
		t.Fatalf("export asked for %q, status %q", asked, m.status)
	}
}

func TestForkAsksThenQuits(t *testing.T) {
	m := newTest(t, &fakeControl{})
	var asked []string
	m.opt.Fork = func(id string) { asked = append(asked, id) }
	press(m, "4", "down", "r", "n")
	if len(asked) != 0 || m.forkAsk != "" {
		t.Fatalf("r n forked %v", asked)
	}
	press(m, "r")
	if !strings.Contains(m.View(), "new run from r1-weights-s3? this one stays resumable") {
		t.Fatalf("r did not ask:\n%s", m.View())
	}
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y")})
	if len(asked) != 1 || asked[0] != "r1-weights-s3" {
		t.Fatalf("r y forked %v, want the selected checkpoint", asked)
	}
	if cmd == nil {
		t.Fatal("r y did not quit")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok || m.ctx.Err() == nil {
		t.Fatal("r y did not quit and stop the run")
	}
	m = newTest(t, &fakeControl{})
	m.opt.Fork = nil
	press(m, "4", "r")
	if m.forkAsk != "" || !strings.Contains(m.View(), "not available") {
		t.Fatal("r without a Fork option asked anyway")
	}
}

func TestForkedRunSaysWhereItCameFrom(t *testing.T) {
	m := New(Options{RunID: "math-b", History: []engine.Event{ev(t, 1, engine.EvForked, 0, 0, 0, 0,
		engine.ForkOrigin{Checkpoint: "math-a/01-harness", Run: "math-a", Round: 1, Phase: engine.PhaseHarness, Weights: "wwwwwwwwwwww", Harness: "hhhhhhhhhhhh"})}})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	if v := m.View(); !strings.Contains(v, "from checkpoint math-a/01-harness (run math-a, round 1 harness phase)") {
		t.Fatalf("run pane does not say the origin:\n%s", v)
	}
	if l := strings.Join(m.panes.log.rows(m), "\n"); !strings.Contains(l, "started from checkpoint math-a/01-harness") {
		t.Fatalf("log does not say the origin:\n%s", l)
	}
}

// cellBackgrounds parses one rendered line into the background colour of
// each printed cell ("" for none), reading the SGR sequences lipgloss
// writes: 48;2;R;G;B sets it, 0 (or nothing) resets.
func cellBackgrounds(t *testing.T, line string) []string {
	t.Helper()
	var out []string
	bg := ""
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		if rs[i] != '\x1b' {
			out = append(out, bg)
			continue
		}
		j := i + 2
		for j < len(rs) && rs[j] != 'm' {
			j++
		}
		if i+1 >= len(rs) || rs[i+1] != '[' || j >= len(rs) {
			t.Fatalf("unexpected escape in %q", line)
		}
		ps := strings.Split(string(rs[i+2:j]), ";")
		for k := 0; k < len(ps); k++ {
			switch {
			case ps[k] == "0" || ps[k] == "":
				bg = ""
			case (ps[k] == "38" || ps[k] == "48") && k+4 < len(ps) && ps[k+1] == "2":
				if ps[k] == "48" {
					bg = strings.Join(ps[k+2:k+5], ";")
				}
				k += 4
			}
		}
		i = j
	}
	return out
}

// TestChartsShadePhases renders with colour and checks that every column
// of both charts has the background of the timeline's phase at that column.
func TestChartsShadePhases(t *testing.T) {
	lipgloss.SetColorProfile(termenv.TrueColor)
	lipgloss.SetHasDarkBackground(true)
	defer lipgloss.SetColorProfile(termenv.Ascii)
	m := newTest(t, &fakeControl{})
	// End the harness phase and start the next weight phase, so the val
	// chart has a level over a harness phase too.
	m.apply(ev(t, 13, engine.EvPhaseEnded, 1, 3, 2, 112, engine.PhaseRecord{Kind: engine.PhaseHarness, Round: 1, Rollouts: 64, ValBefore: 0.36, ValAfter: 0.41, ValPassBefore: 0.47, ValPassAfter: 0.52}))
	m.apply(ev(t, 14, engine.EvPhaseStarted, 2, 3, 2, 112, map[string]any{"kind": engine.PhaseWeights, "round": 2}))
	m.apply(ev(t, 15, engine.EvWeightStep, 2, 4, 2, 128, map[string]any{"reward_mean": 0.5, "patience": engine.Patience{Phase: engine.PhaseWeights}}))
	a := m.run.axis(78, m.opt.Budget)
	colour := map[engine.Phase]string{engine.PhaseWeights: "88;166;255", engine.PhaseHarness: "227;179;65", "": ""}
	seen := map[engine.Phase]bool{}
	for _, chart := range [][]string{m.run.valChart(a, 3), m.run.rewardChart(a, 3)} {
		if len(chart) != 4 {
			t.Fatalf("chart of 3 rows has %d lines", len(chart))
		}
		for _, line := range chart[1:] {
			bgs := cellBackgrounds(t, line)[1:] // the indent
			if len(bgs) != a.w {
				t.Fatalf("chart row has %d cells, want %d", len(bgs), a.w)
			}
			for x, k := range a.kinds {
				if bgs[x] != colour[k] {
					t.Fatalf("column %d (%q phase) has background %q, want %q", x, k, bgs[x], colour[k])
				}
				seen[k] = true
			}
		}
	}
	if !seen[engine.PhaseWeights] || !seen[engine.PhaseHarness] || !seen[""] {
		t.Fatalf("the script does not cover both phases and the future: %v", seen)
	}
	// The val chart draws the harness phase's level over its columns.
	vals := m.run.valChart(a, 1)[1]
	hx := slices.Index(a.kinds, engine.PhaseHarness)
	if []rune(ansi.Strip(vals))[1+hx] != '█' {
		t.Fatalf("no val level over the harness phase: %q", ansi.Strip(vals))
	}
}

func TestFlatChartIsAFloorLine(t *testing.T) {
	kinds := []engine.Phase{engine.PhaseWeights, engine.PhaseWeights, engine.PhaseHarness}
	got := phaseChart("reward/step", []float64{0, 0, math.NaN()}, []float64{0, 0}, kinds, 2)
	if want := []string{"reward/step [0.00..0.00]", "    ", " ▁▁ "}; !slices.Equal(got, want) {
		t.Fatalf("flat zero chart = %q, want %q", got, want)
	}
	got = phaseChart("val", []float64{1, math.NaN(), math.NaN()}, []float64{1}, kinds, 1)
	if got[1] != " █  " {
		t.Fatalf("flat one chart row = %q, want a full bar", got[1])
	}
}

// TestScrolledViewsStopAtTheirEnds scrolls a sample's detail (a viewport)
// past both ends in a window that shows five of its thirteen lines.
func TestScrolledViewsStopAtTheirEnds(t *testing.T) {
	m := newTest(t, &fakeControl{})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 8})
	press(m, "3", "enter")
	body := func() []string { v := strings.Split(m.View(), "\n"); return v[1 : len(v)-2] }
	for range 20 {
		press(m, "down")
		m.View()
	}
	if got := body(); got[0] != "[completion 1, stop]" || got[4] != "  shown: 42" {
		t.Fatalf("down past the end shows:\n%s", strings.Join(got, "\n"))
	}
	for range 20 {
		press(m, "up")
		m.View()
	}
	if got := body(); !strings.HasPrefix(got[0], "rejected sample 9") {
		t.Fatalf("up past the top shows:\n%s", strings.Join(got, "\n"))
	}
	press(m, "esc", "enter")
	if got := body(); !strings.HasPrefix(got[0], "rejected sample 9") {
		t.Fatalf("a reopened sample does not start at its top:\n%s", strings.Join(got, "\n"))
	}
}

// errLong is an owner's refusal longer than any screen is wide.
var errLong = errors.New("run math-test belongs to a bench (pid 4242) and is read-only to viewers: 'whale tui --db /home/someone/experiments/bench.db --run math-test --steer' steers it, and the bench records that it was steered, in RESULTS.md and in runs.jsonl beside it")
