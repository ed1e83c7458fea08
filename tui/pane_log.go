package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// logPane is the Log pane: every event's line, the newest at the bottom.
// It scrolls by hand rather than with a viewport: it stays on the newest
// lines as they arrive, and off counts back from them.
type logPane struct {
	off int // lines scrolled back from the newest
}

func (p *logPane) update(m *Model, k tea.KeyMsg) tea.Cmd {
	switch {
	case key.Matches(k, keys.Up):
		p.off = min(max(0, len(p.rows(m))-1), p.off+1)
	case key.Matches(k, keys.Down):
		p.off = max(0, p.off-1)
	}
	return nil
}

// rows is the log narrowed by the pane's filter.
func (p *logPane) rows(m *Model) []string {
	f := m.filter[paneLog]
	if f == "" {
		return m.run.log
	}
	var out []string
	for _, l := range m.run.log {
		if matches(f, l) {
			out = append(out, l)
		}
	}
	return out
}

func (p *logPane) view(m *Model, w, h int) []string {
	l := p.rows(m)
	end := len(l) - p.off
	start := max(0, end-h)
	return append([]string(nil), l[start:end]...)
}
