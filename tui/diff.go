package tui

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

// diffMsg carries a harness's source diffed against the incumbent's.
type diffMsg struct {
	hash, against string
	lines         []string
	err           error
}

// loadDiff reads both sources through Options.HarnessSource (store I/O, so
// in a tea.Cmd) and diffs them by lines.
func (m *Model) loadDiff(hash, against string) tea.Cmd {
	src := m.opt.HarnessSource
	return func() tea.Msg {
		a, err := src(against)
		if err != nil {
			return diffMsg{hash: hash, against: against, err: fmt.Errorf("incumbent %s: %w", short(against), err)}
		}
		b, err := src(hash)
		if err != nil {
			return diffMsg{hash: hash, against: against, err: fmt.Errorf("harness %s: %w", short(hash), err)}
		}
		return diffMsg{hash: hash, against: against, lines: lineDiff(strings.Split(a, "\n"), strings.Split(b, "\n"))}
	}
}

// lineDiff is a unified-style line diff (no context trimming): lines only
// in a are "- ", only in b "+ ", common "  ". It uses the longest common
// subsequence table, which is quadratic but harness sources are short.
func lineDiff(a, b []string) []string {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out = append(out, "  "+a[i])
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, "- "+a[i])
			i++
		default:
			out = append(out, "+ "+b[j])
			j++
		}
	}
	return out
}

func (m *Model) viewDiff(h int) []string {
	d := m.diff
	head := fmt.Sprintf("harness %s against incumbent %s", short(d.hash), short(d.against))
	if d.err != nil {
		return []string{head, stError.Render(d.err.Error()), stMuted.Render("esc back")}
	}
	if d.lines == nil {
		return []string{head, stMuted.Render("loading…")}
	}
	changed := 0
	for _, l := range d.lines {
		if !strings.HasPrefix(l, "  ") {
			changed++
		}
	}
	out := []string{head + fmt.Sprintf(" · %d lines changed", changed)}
	off := min(m.diffOff, max(0, len(d.lines)-(h-2)))
	m.diffOff = off
	for _, l := range d.lines[off:] {
		switch {
		case strings.HasPrefix(l, "+ "):
			l = stGood.Render(l)
		case strings.HasPrefix(l, "- "):
			l = stError.Render(l)
		}
		out = append(out, l)
		if len(out) == h-1 {
			break
		}
	}
	return append(out, stMuted.Render("esc back · ↑↓ scroll"))
}
