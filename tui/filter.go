package tui

import (
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

// The `/` filter: a case-insensitive substring that narrows the focused
// pane's list (leaderboard, samples, checkpoints, log). Each pane keeps its
// own.

func matches(filter string, fields ...string) bool {
	if filter == "" {
		return true
	}
	f := strings.ToLower(filter)
	for _, s := range fields {
		if strings.Contains(strings.ToLower(s), f) {
			return true
		}
	}
	return false
}

// filterKey edits the filter being typed; enter keeps it, esc drops it.
func (m *Model) filterKey(k tea.KeyMsg) {
	f := &m.filter[m.pane]
	switch k.Type {
	case tea.KeyEnter:
		m.filtering = false
	case tea.KeyEsc:
		m.filtering, *f = false, ""
	case tea.KeyBackspace:
		if r := []rune(*f); len(r) > 0 {
			*f = string(r[:len(r)-1])
		}
	case tea.KeyRunes, tea.KeySpace:
		*f += string(k.Runes)
	}
	m.boardSel, m.sampleSel, m.ckptSel, m.logOff = 0, 0, 0, 0
}

func (m *Model) boardRows() []BoardRow {
	var out []BoardRow
	for _, r := range m.run.board {
		if matches(m.filter[paneHarnesses], r.Hash, r.Parent, r.Mechanism, r.Status) {
			out = append(out, r)
		}
	}
	return out
}

func (m *Model) checkpointRows() []checkpoint {
	var out []checkpoint
	for _, c := range m.run.checkpoints {
		if matches(m.filter[paneCheckpoints], c.ID, c.Harness, c.Weights) {
			out = append(out, c)
		}
	}
	return out
}

func (m *Model) logRows() []string {
	if m.filter[paneLog] == "" {
		return m.run.log
	}
	var out []string
	for _, l := range m.run.log {
		if matches(m.filter[paneLog], l) {
			out = append(out, l)
		}
	}
	return out
}
