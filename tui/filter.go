package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
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

// newFilterInput is the filter's line editor: a textinput that types and
// erases at the end. The footer draws its value with a cursor of its own,
// so the input's cursor neither moves nor blinks.
func newFilterInput(keys keyMap) textinput.Model {
	in := textinput.New()
	in.KeyMap = textinput.KeyMap{DeleteCharacterBackward: keys.Erase}
	in.Cursor.SetMode(cursor.CursorHide)
	return in
}

// startFilter opens the focused pane's filter for typing.
func (m *Model) startFilter() {
	m.filtering = true
	m.input.SetValue(m.filter[m.pane])
	m.input.CursorEnd()
	m.input.Focus()
}

// filterKey edits the filter being typed; enter keeps it, esc drops it.
// Every list goes back to its top, as what it holds changed.
func (m *Model) filterKey(k tea.KeyMsg) {
	switch {
	case key.Matches(k, keys.Enter):
		m.filtering = false
		m.input.Blur()
	case key.Matches(k, keys.Clear):
		m.filtering = false
		m.input.Blur()
		m.input.Reset()
	default:
		m.input, _ = m.input.Update(k)
	}
	m.filter[m.pane] = m.input.Value()
	p := &m.panes
	p.harnesses.sel, p.samples.sel, p.checkpoints.sel, p.log.off = 0, 0, 0, 0
}
