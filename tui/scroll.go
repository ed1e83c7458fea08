package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
)

// scroller is a scrolled view of lines (the harness diff, a sample's
// detail): a bubbles viewport keeps the offset, clamps it and answers ↑↓;
// window cuts the lines in view by hand, because viewport.View pads every
// line to the widest and expands tabs, which the screens do not.
type scroller struct {
	vp    viewport.Model
	lines []string
}

func newScroller(keys keyMap) scroller {
	vp := viewport.New(0, 0)
	vp.KeyMap = viewport.KeyMap{Up: keys.Up, Down: keys.Down, PageUp: keys.PageUp, PageDown: keys.PageDown}
	vp.MouseWheelEnabled = false
	return scroller{vp: vp}
}

// set shows lines in h rows, keeping the offset where it still fits.
func (s *scroller) set(lines []string, h int) {
	// A line of several (an error message, say) is as many rows, so the
	// offset counts what the screen shows.
	s.lines = nil
	for _, l := range lines {
		s.lines = append(s.lines, strings.Split(l, "\n")...)
	}
	s.vp.Height = max(0, h)
	s.vp.SetContent(strings.Join(s.lines, "\n"))
	s.vp.SetYOffset(s.vp.YOffset)
}

func (s *scroller) update(k tea.KeyMsg) { s.vp, _ = s.vp.Update(k) }

// top scrolls back to the first line.
func (s *scroller) top() { s.vp.SetYOffset(0) }

// window is the lines in view; appending to it copies.
func (s *scroller) window() []string {
	top := min(s.vp.YOffset, len(s.lines))
	end := min(len(s.lines), top+s.vp.Height)
	return s.lines[top:end:end]
}
