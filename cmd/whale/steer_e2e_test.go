package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"whale/core/attach"
	"whale/core/bundle"
	"whale/core/chat"
	"whale/core/engine"
	"whale/core/experiments"
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
	"whale/tui"
)

var steerModel = modeltest.Config()

// steerBench is a tiny bench of whale-fixed over seeds in a fresh store:
// a byte-level model and a scripted policy, so it runs in seconds.
func steerBench(t *testing.T, seeds int) (experiments.Env, []experiments.Job, string) {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "bench.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rec, err := experiments.OpenRecord(filepath.Join(dir, experiments.RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	env := experiments.Env{Store: db, Record: rec,
		Domain: func(name string) (data.Domain, error) { return domains.Open(name, 1) },
		Model: func() (*bundle.Bundle, error) {
			m, err := model.New(steerModel, kernels.NewCPU(), 5)
			if err != nil {
				return nil, err
			}
			return bundle.New(m, tokenizer.Bytes{}, nil, bundle.Generation{}, "test model")
		},
		Policy: func(d data.Domain) policy.Policy {
			tmpl, err := chat.NewTemplate(tokenizer.Bytes{})
			if err != nil {
				panic(err)
			}
			return chat.Tokenize(harnesses.NewMixed(d, 3), tmpl)
		}}
	plan := experiments.Plan{Domains: []string{"math"}, Conditions: []string{"whale-fixed"}, Seeds: seeds, Preset: "tiny", Budget: 48,
		E: 0.25, I: 2, FastSlowE: 0.25, DataSeed: 1, Prefix: "t"}
	jobs, err := plan.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	return env, jobs, dir
}

func pressKeys(m *tui.Model, ks ...string) {
	for _, k := range ks {
		msg := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		if k == " " {
			msg = tea.KeyMsg{Type: tea.KeySpace, Runes: []rune(" ")}
		}
		m.Update(msg)
	}
}

// TestBenchViewersAreReadOnlyUnlessTheySteer is issue 37's end-to-end
// check: a tiny bench runs and serves its runs as `whale bench` does. A
// viewer attached to its first run is read-only: f, x and space are
// refused with a sentence, the owner refuses its commands too, and that
// run's report row is the one a bench without viewers makes. A viewer of
// the second run opened with --steer pauses it, forces the phase on its
// screen and resumes: the force is applied to that phase, and the report
// row, RESULTS.md and runs.jsonl say the run was steered.
func TestBenchViewersAreReadOnlyUnlessTheySteer(t *testing.T) {
	env, jobs, dir := steerBench(t, 2)
	srv, err := attach.Serve(env.Store)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.ServeReadOnly("bench")
	cl, err := attach.Dial(env.Store.Path())
	if err != nil {
		t.Fatal(err)
	}
	live := make(chan string)
	watched := make(chan struct{})
	env.Live = func(j experiments.Job, eng *engine.Engine) func(error) {
		remove := srv.Add(eng.RunID, eng)
		live <- j.ID
		if j.Seed == 1 {
			<-watched // the read-only viewer looks before the run starts
		}
		return func(error) { remove() }
	}
	var runs []report.Run
	var runErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runs, runErr = experiments.Run(context.Background(), env, jobs)
	}()

	// The first run: a viewer without --steer.
	id1 := <-live
	info, err := cl.Run(id1)
	if err != nil {
		t.Fatal(err)
	}
	st, err := cl.Follow(id1, 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	ctl, why, mode := viewerControl(cl, info, st.Live, tuiFlags{db: env.Store.Path(), run: id1})
	if why == "" || !strings.Contains(why, "--steer") || mode != "attached, read-only" {
		t.Fatalf("viewer of a bench run: read-only %q, mode %q; want read-only, saying how to steer", why, mode)
	}
	m := tui.New(tui.Options{RunID: id1, Control: ctl, ReadOnly: why, History: st.History, Attached: mode})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	for _, ks := range [][]string{{"f"}, {" "}, {"2", "x"}} {
		pressKeys(m, ks...)
		lines := strings.Split(m.View(), "\n")
		if f := lines[len(lines)-1]; !strings.Contains(f, "refused: run "+id1+" belongs to a bench") {
			t.Fatalf("footer after %q: %q; want a sentence refusing it", ks, f)
		}
	}
	if err := ctl.Send(engine.Command{Kind: "force"}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("the bench took a viewer's force without --steer: %v", err)
	}
	st.Close()
	close(watched)

	// The second run: a viewer with --steer.
	id2 := <-live
	info, err = cl.Run(id2)
	if err != nil {
		t.Fatal(err)
	}
	st, err = cl.Follow(id2, 0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctl, why, mode = viewerControl(cl, info, st.Live, tuiFlags{db: env.Store.Path(), run: id2, steer: true})
	if why != "" || mode != "attached, steering" {
		t.Fatalf("--steer viewer: read-only %q, mode %q", why, mode)
	}
	tm := teatest.NewTestModel(t, tui.New(tui.Options{RunID: id2, Control: ctl, History: st.History, Events: st.Sub, Attached: mode}),
		teatest.WithInitialTermSize(160, 48))
	out := tm.Output()
	waitFor := func(what string) {
		t.Helper()
		teatest.WaitFor(t, out, func(b []byte) bool { return bytes.Contains(b, []byte(what)) },
			teatest.WithDuration(60*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	}
	tm.Send(tea.KeyMsg{Type: tea.KeySpace, Runes: []rune(" ")})
	waitFor("pause applied at")
	tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("f")})
	waitFor("phase now? y/n")
	tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y")})
	// At the step the pause held it: 0 on an idle machine, later when
	// the run's first step finished before the pause reached it.
	forcedAt := -1
	applied := regexp.MustCompile(`force \(round 1 weights\) applied at step (\d+)`)
	teatest.WaitFor(t, out, func(b []byte) bool {
		if m := applied.FindSubmatch(b); m != nil {
			forcedAt, _ = strconv.Atoi(string(m[1]))
			return true
		}
		return false
	}, teatest.WithDuration(60*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	tm.Send(tea.KeyMsg{Type: tea.KeySpace, Runes: []rune(" ")})
	waitFor("resume applied at")
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	<-done
	if runErr != nil {
		t.Fatal(runErr)
	}

	// The read-only viewer changed nothing: the first run's row is the
	// one of a bench nobody watched.
	plainEnv, plainJobs, _ := steerBench(t, 1)
	plain, err := experiments.Run(context.Background(), plainEnv, plainJobs)
	if err != nil {
		t.Fatal(err)
	}
	a, b := runs[0], plain[0]
	a.Compute, b.Compute = 0, 0
	if ja, jb := mustMarshal(t, a), mustMarshal(t, b); !bytes.Equal(ja, jb) || a.Steered != 0 {
		t.Fatalf("the watched run's row differs from an unwatched one:\n%s\n%s", ja, jb)
	}
	// The steered run: its first phase ended by the force, and marked.
	if runs[1].Steered != 1 {
		t.Fatalf("steered run's row counts %d commands, want 1 (the force; pause and resume change nothing)", runs[1].Steered)
	}
	sr, err := env.Store.GetRun(id2)
	if err != nil {
		t.Fatal(err)
	}
	var state engine.State
	if err := json.Unmarshal(sr.Cursor, &state); err != nil {
		t.Fatal(err)
	}
	if p := state.Phases[0]; !p.Forced || p.Kind != engine.PhaseWeights || p.Round != 1 || p.Steps != forcedAt {
		t.Fatalf("first phase of the steered run %+v: want the round 1 weight phase forced at step %d, where the workbench said the force applied", p, forcedAt)
	}
	if len(state.Phases) < 2 || state.Phases[1].Kind != engine.PhaseHarness || state.Phases[1].Steps == 0 {
		t.Fatalf("phases %+v: the harness phase after the forced one should have run", state.Phases)
	}
	md := string(report.Markdown(runs, report.Meta{Command: "whale bench conditions"}))
	if !strings.Contains(md, "- Steered: "+id2+" (1 control command)") || strings.Contains(md, id1+" (") {
		t.Fatalf("RESULTS.md does not mark just the steered run:\n%s", md)
	}
	rec, err := os.ReadFile(filepath.Join(dir, experiments.RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(rec)), "\n") {
		steered := strings.Contains(line, `"steered":1`)
		if strings.Contains(line, id2) != steered {
			t.Fatalf("runs.jsonl line marks steering wrongly (steered %v):\n%s", steered, line)
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
