package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"whale/core/engine"
)

// An open sample shows what it answered beside the gold answer and the
// verifier's reason; n and p step through the list without closing it.
func TestInspectorShowsGoldAndSteps(t *testing.T) {
	m := newTest(t, &fakeControl{})
	m.Update(sizeMsg(80, 24))
	press(m, "3", "a", "enter")
	v := m.View()
	if !strings.Contains(v, "answered 41 · gold 42 · verifier: wrong_answer") || !strings.Contains(v, "sample 1 of 3") {
		t.Fatalf("open sample:\n%s", v)
	}
	press(m, "n")
	if v := m.View(); !strings.Contains(v, "sample 2 of 3") || !strings.Contains(v, "kept sample 8") {
		t.Fatalf("after n:\n%s", v)
	}
	press(m, "n", "n")
	if v := m.View(); !strings.Contains(v, "sample 3 of 3") || !strings.Contains(v, "last sample") {
		t.Fatalf("n past the end should stay and say so:\n%s", v)
	}
	press(m, "p")
	if v := m.View(); !strings.Contains(v, "sample 2 of 3") {
		t.Fatalf("after p:\n%s", v)
	}
}

// PgDn and PgUp move the samples list by a page.
func TestSampleListPages(t *testing.T) {
	m := newTest(t, &fakeControl{})
	var many []Sample
	for i := 100; i > 0; i-- {
		many = append(many, sample(uint64(i), false, "wrong_answer"))
	}
	m.Update(samplesMsg{samples: many})
	m.Update(sizeMsg(80, 24))
	press(m, "3")
	for range 10 {
		m.Update(tea.KeyMsg{Type: tea.KeyPgUp})
	}
	m.Update(tea.KeyMsg{Type: tea.KeyPgDown})
	if m.panes.samples.sel != 18 {
		t.Fatalf("PgDn selected row %d, want 18 (a page of 24-6)", m.panes.samples.sel)
	}
	if !strings.Contains(m.View(), "> 82 ") {
		t.Fatalf("the selected sample is not in view:\n%s", m.View())
	}
	m.Update(tea.KeyMsg{Type: tea.KeyPgUp})
	if m.panes.samples.sel != 0 {
		t.Fatalf("PgUp selected row %d, want 0", m.panes.samples.sel)
	}
}

// The Samples pane reloads by itself once the run stores new samples, and
// keeps the selected sample selected.
func TestSamplesRefreshLive(t *testing.T) {
	loads := 0
	stored := []Sample{sample(9, false, "wrong_answer"), sample(7, false, "format")}
	m := newTest(t, &fakeControl{})
	m.opt.Samples = func() ([]Sample, error) { loads++; return stored, nil }
	m.Update(sizeMsg(80, 24))
	_, cmd := m.Update(keyMsg("3"))
	runCmds(m, cmd)
	press(m, "down") // sample 7
	loads = 0
	stored = append([]Sample{sample(11, false, "wrong_answer")}, stored...)
	m.Update(eventsMsg{events: []engine.Event{ev(t, 13, engine.EvWeightStep, 2, 4, 2, 130, map[string]any{"reward_mean": 0.5})}})
	t0 := m.opt.Now()
	m.opt.Now = func() time.Time { return t0.Add(2 * time.Second) }
	_, cmd = m.Update(tickMsg(t0))
	runCmds(m, cmd)
	if loads != 1 {
		t.Fatalf("%d loads after new samples were stored, want 1", loads)
	}
	v := m.View()
	if !strings.Contains(v, "3 samples") || !strings.Contains(v, "> 7 ") {
		t.Fatalf("live reload lost the new sample or the selection:\n%s", v)
	}
}

// runCmds runs a command and the ones it batches, feeding their
// messages back (ticks are dropped: they would wait).
func runCmds(m *Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	select {
	case msg := <-done:
		switch msg := msg.(type) {
		case tea.BatchMsg:
			for _, c := range msg {
				runCmds(m, c)
			}
		case tickMsg:
		default:
			m.Update(msg)
		}
	case <-time.After(200 * time.Millisecond):
		// a tick: not run
	}
}

// PgDn scrolls an open sample by a page.
func TestOpenSamplePages(t *testing.T) {
	m := newTest(t, &fakeControl{})
	long := sample(9, false, "wrong_answer")
	long.Trajectory.Messages[0].Content = strings.Repeat("a long problem statement line. ", 200)
	m.Update(samplesMsg{samples: []Sample{long}})
	m.Update(sizeMsg(80, 24))
	press(m, "3", "enter")
	before := m.View()
	m.Update(tea.KeyMsg{Type: tea.KeyPgDown})
	if m.View() == before || m.panes.samples.detailView.vp.YOffset < 10 {
		t.Fatalf("PgDn did not scroll the open sample (offset %d)", m.panes.samples.detailView.vp.YOffset)
	}
}
