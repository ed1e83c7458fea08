package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// logPane is the Log pane: every event's line, the newest at the bottom.
// It scrolls by hand rather than with a viewport: it stays on the newest
// lines as they arrive, and off counts back from them to the selected
// line, which enter opens whole (a line wider than the window is cut).
type logPane struct {
	off int // the selected line, counted back from the newest
	// open is the line shown whole, wrapped; view scrolls it.
	open  *string
	whole scroller
}

func (p *logPane) update(m *Model, k tea.KeyMsg) tea.Cmd {
	if p.open != nil {
		if key.Matches(k, m.keys.Back) || key.Matches(k, m.keys.Enter) {
			p.open = nil
			p.whole.top()
		} else {
			p.whole.update(k)
		}
		return nil
	}
	n := len(p.rows(m))
	switch {
	case key.Matches(k, m.keys.Up):
		p.off = min(max(0, n-1), p.off+1)
	case key.Matches(k, m.keys.Down):
		p.off = max(0, p.off-1)
	case key.Matches(k, m.keys.PageUp):
		p.off = min(max(0, n-1), p.off+max(1, m.height-4))
	case key.Matches(k, m.keys.PageDown):
		p.off = max(0, p.off-max(1, m.height-4))
	case key.Matches(k, m.keys.Enter):
		if n == 0 {
			m.err = "no log line to open"
			return nil
		}
		l := p.rows(m)[n-1-min(p.off, n-1)]
		p.open = &l
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
	if p.open != nil {
		p.whole.set(wholeLines(*p.open, w), h-1)
		return append(p.whole.window(), stMuted.Render("esc back · ↑↓ scroll"))
	}
	l := p.rows(m)
	if len(l) == 0 {
		return nil
	}
	// The newest lines fill the pane; the selection scrolls it back.
	rows := max(1, h-1)
	sel := len(l) - 1 - min(p.off, len(l)-1)
	end := len(l) - max(0, p.off-(rows-1))
	start := max(0, end-rows)
	out := make([]string, 0, h)
	for i := start; i < end; i++ {
		out = append(out, listLine(ansi.Truncate(l[i], max(1, w-3), "…"), i == sel))
	}
	return append(out, stMuted.Render(fmt.Sprintf("↑↓ PgUp PgDn select · enter open whole · line %d of %d", sel+1, len(l))))
}

// wholeLines is text wrapped to w, every line of it: at spaces only (a
// command in the text stays copyable), a word wider than w cut hard.
func wholeLines(text string, w int) []string {
	w = max(10, w)
	var out []string
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			switch {
			case line == "":
				line = word
			case ansi.StringWidth(line)+1+ansi.StringWidth(word) <= w:
				line += " " + word
			default:
				out = append(out, line)
				line = word
			}
			for ansi.StringWidth(line) > w {
				out = append(out, ansi.Truncate(line, w, ""))
				line = ansi.TruncateLeft(line, w, "")
			}
		}
		out = append(out, line)
	}
	return out
}
