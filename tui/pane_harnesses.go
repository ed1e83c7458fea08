package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"whale/core/engine"
)

// harnessPane is the Harnesses pane: the leaderboard; the incumbent's
// search-space knobs (`k`), which enter freezes or frees; and a
// candidate's diff against the incumbent (enter).
type harnessPane struct {
	sel      int // the selected leaderboard row
	knobMode bool
	knobSel  int
	// diff is open when non-nil; diffView scrolls it.
	diff     *diffMsg
	diffView scroller
}

// diffMsg carries a harness's source diffed against the incumbent's.
type diffMsg struct {
	hash, against string
	lines         []string // harnesses.Diff's, without the final newline
	err           error
}

// update handles the knob list when open, the diff when open, else the
// leaderboard.
func (p *harnessPane) update(m *Model, k tea.KeyMsg) tea.Cmd {
	if p.knobMode {
		p.knobKey(m, k)
		return nil
	}
	if key.Matches(k, m.keys.Knobs) {
		if len(m.run.knobs) == 0 {
			m.err = "no search space seen yet: it appears with the first harness iteration"
			return nil
		}
		p.knobMode, p.knobSel = true, min(p.knobSel, len(m.run.knobs)-1)
		return nil
	}
	if p.diff != nil {
		if key.Matches(k, m.keys.Back) || key.Matches(k, m.keys.Enter) {
			p.diff = nil
			p.diffView.top()
		} else {
			p.diffView.update(k)
		}
		return nil
	}
	return p.boardKey(m, k)
}

// knobKey handles the knob list: move, freeze or unfreeze, close.
func (p *harnessPane) knobKey(m *Model, k tea.KeyMsg) {
	switch {
	case key.Matches(k, m.keys.Back), key.Matches(k, m.keys.Knobs):
		p.knobMode = false
	case key.Matches(k, m.keys.Up):
		p.knobSel = max(0, p.knobSel-1)
	case key.Matches(k, m.keys.Down):
		p.knobSel = min(max(0, len(m.run.knobs)-1), p.knobSel+1)
	case key.Matches(k, m.keys.Enter):
		if p.knobSel < len(m.run.knobs) {
			kn := m.run.knobs[p.knobSel]
			kind := "freeze"
			if m.run.frozen[kn] {
				kind = "unfreeze"
			}
			m.send(engine.Command{Kind: kind, Target: kn})
		}
	}
}

// boardKey handles the leaderboard: move, open a diff against the
// incumbent, prune or unprune.
func (p *harnessPane) boardKey(m *Model, k tea.KeyMsg) tea.Cmd {
	switch {
	case key.Matches(k, m.keys.Enter):
		return p.openDiff(m)
	case key.Matches(k, m.keys.Up):
		p.sel = max(0, p.sel-1)
	case key.Matches(k, m.keys.Down):
		p.sel = min(max(0, len(p.rows(m))-1), p.sel+1)
	case key.Matches(k, m.keys.PageUp):
		p.sel = max(0, p.sel-max(1, m.height-5))
	case key.Matches(k, m.keys.PageDown):
		p.sel = min(max(0, len(p.rows(m))-1), p.sel+max(1, m.height-5))
	case key.Matches(k, m.keys.Prune), key.Matches(k, m.keys.Unprune):
		kind := "prune"
		if key.Matches(k, m.keys.Unprune) {
			kind = "unprune"
		}
		if why := m.steerRefusal(); why != "" {
			m.err = kind + " refused: " + why
			return nil
		}
		rows := p.rows(m)
		if p.sel >= len(rows) {
			m.err = "no harness selected"
			return nil
		}
		// The engine refuses these too, but only after the step in
		// flight: the screen knows now.
		switch r := rows[p.sel]; {
		case kind == "prune" && r.Status == "incumbent":
			m.err = short(r.Hash) + " is the incumbent: it cannot be pruned"
			return nil
		case kind == "prune" && strings.HasPrefix(r.Status, "pruned"):
			m.err = short(r.Hash) + " is already pruned (u unprunes it)"
			return nil
		case kind == "unprune" && !strings.HasPrefix(r.Status, "pruned"):
			m.err = "unprune refused: " + short(r.Hash) + " is not pruned"
			return nil
		}
		m.send(engine.Command{Kind: kind, Target: rows[p.sel].Hash})
	}
	return nil
}

// openDiff opens the selected row's diff against the incumbent and
// returns the command that reads their sources.
func (p *harnessPane) openDiff(m *Model) tea.Cmd {
	rows := p.rows(m)
	if p.sel >= len(rows) {
		m.err = "no harness selected"
		return nil
	}
	if m.opt.HarnessSource == nil {
		m.err = "no harness archive to read sources from"
		return nil
	}
	inc := ""
	for _, r := range m.run.board {
		if r.Status == "incumbent" {
			inc = r.Hash
		}
	}
	if inc == "" {
		m.err = "no incumbent on the board"
		return nil
	}
	p.diff = &diffMsg{hash: rows[p.sel].Hash, against: inc}
	return loadDiff(m.opt.HarnessSource, p.diff.hash, inc)
}

// loadDiff reads both sources through src (store I/O, so in a tea.Cmd) and
// diffs them as `whale harness diff` does (engine.DiffHarnesses).
func loadDiff(src func(hash string) (string, error), hash, against string) tea.Cmd {
	return func() tea.Msg {
		a, err := src(against)
		if err != nil {
			return diffMsg{hash: hash, against: against, err: fmt.Errorf("incumbent %s: %w", short(against), err)}
		}
		b, err := src(hash)
		if err != nil {
			return diffMsg{hash: hash, against: against, err: fmt.Errorf("harness %s: %w", short(hash), err)}
		}
		d := engine.DiffHarnesses("incumbent", a, "harness", b)
		return diffMsg{hash: hash, against: against, lines: strings.Split(strings.TrimSuffix(d, "\n"), "\n")}
	}
}

// loaded shows a diff that arrived, unless another is open by now.
func (p *harnessPane) loaded(d diffMsg) {
	if p.diff != nil && p.diff.hash == d.hash {
		p.diff = &d
	}
}

// rows is the leaderboard narrowed by the pane's filter.
func (p *harnessPane) rows(m *Model) []BoardRow {
	var out []BoardRow
	for _, r := range m.markedBoard() {
		if matches(m.filter[paneHarnesses], r.Hash, r.Parent, r.Mechanism, r.Status) {
			out = append(out, r)
		}
	}
	return out
}

func (p *harnessPane) view(m *Model, w, h int) []string {
	switch {
	case p.diff != nil:
		return p.viewDiff(h)
	case p.knobMode:
		return p.viewKnobs(m, h)
	case len(m.run.board) == 0:
		return []string{stMuted.Render("no leaderboard yet: it appears with the first harness iteration")}
	}
	out := p.boardTable(m, h-2, w)
	return append(out, stMuted.Render(keyOf(m.keys.Enter)+" diff · "+keyOf(m.keys.Prune)+" prune · "+keyOf(m.keys.Unprune)+" unprune · "+keyOf(m.keys.Knobs)+" knobs · "+keyOf(m.keys.Up)+keyOf(m.keys.Down)+" select · * incumbent"))
}

func (p *harnessPane) viewKnobs(m *Model, h int) []string {
	out := []string{stHeader.Render("search-space knobs of the incumbent (frozen knobs are never varied)")}
	for i, kn := range m.run.knobs {
		mark := "[ ]"
		if m.run.frozen[kn] {
			mark = "[frozen]"
		}
		line := fmt.Sprintf("%-8s %s", mark, kn)
		line = listLine(line, i == p.knobSel)
		out = append(out, line)
		if len(out) >= h-1 {
			break
		}
	}
	return append(out, stMuted.Render(keyOf(m.keys.Enter)+" freeze / free · "+keyOf(m.keys.Up)+keyOf(m.keys.Down)+" select · "+keyOf(m.keys.Knobs)+" or "+keyOf(m.keys.Back)+" back"))
}

// viewDiff is harnesses.Diff's lines under a header, scrolled: the two
// file lines first, then hunks of changes with their context.
func (p *harnessPane) viewDiff(h int) []string {
	d := p.diff
	head := fmt.Sprintf("harness %s against incumbent %s", short(d.hash), short(d.against))
	if d.err != nil {
		return []string{head, stError.Render(d.err.Error()), stMuted.Render("esc back")}
	}
	if d.lines == nil {
		return []string{head, stMuted.Render("loading…")}
	}
	const fileLines = 2 // "--- incumbent HASH", "+++ harness HASH"
	styled := make([]string, len(d.lines))
	changed := 0
	for i, l := range d.lines {
		switch {
		case i < fileLines:
			l = stHeader.Render(l)
		case strings.HasPrefix(l, "@@"):
			l = stMuted.Render(l)
		case strings.HasPrefix(l, "+"):
			l, changed = stGood.Render(l), changed+1
		case strings.HasPrefix(l, "-"):
			l, changed = stError.Render(l), changed+1
		}
		styled[i] = l
	}
	p.diffView.set(styled, h-2)
	out := append([]string{head + fmt.Sprintf(" · %d lines changed", changed)}, p.diffView.window()...)
	return append(out, stMuted.Render("esc back · ↑↓ scroll"))
}

// boardColumns are the leaderboard's columns. As the window narrows they
// drop in this order: paired gain, fragments, iteration, calls, rank;
// the incumbent marker (*), id, score and status always stay.
var boardColumns = []column{
	{head: "", width: 1},
	{head: "#", width: 3, drop: 5},
	{head: "id", width: 8},
	{head: "fragments (vs parent)", width: 24, drop: 2},
	{head: "score ± CI", width: 12},
	{head: "paired gain [95% CI]", width: 22, drop: 1},
	{head: "calls", width: 6, drop: 4, right: true},
	{head: "it", width: 4, drop: 3, right: true},
	{head: "status"},
}

// boardTable is the leaderboard's header and up to rows rows in w cells,
// scrolled to keep the selected one in view. It is drawn by hand: bubbles'
// table pads and styles its cells its own way and cannot drop columns by
// priority.
func (p *harnessPane) boardTable(m *Model, rows, w int) []string {
	b := p.rows(m)
	widest := len("status")
	for _, r := range b {
		widest = max(widest, len([]rune(boardStatus(r))))
	}
	kept := fitColumns(boardColumns, w, min(widest, 40))
	out := []string{stHeader.Render("  " + headLine(boardColumns, kept))}
	first := max(0, min(p.sel-rows+1, len(b)-rows))
	for i := first; i < len(b) && i < first+rows; i++ {
		r := b[i]
		mark := " "
		if r.Status == "incumbent" {
			mark = "*"
		}
		cells := []string{mark, fmt.Sprint(i + 1), short(r.Hash), boardMechanism(r.Mechanism, 24),
			fmt.Sprintf("%.3f ±%.3f", r.Score, (r.CIHi-r.CILo)/2), pairedGain(r), fmt.Sprint(r.Calls), fmt.Sprint(r.Iteration), boardStatus(r)}
		out = append(out, listLine(joinCells(boardColumns, kept, cells), i == p.sel))
	}
	return out
}

// boardMechanism shows what a candidate changed as its fragments' names
// ("parse_action=_parse_bare,SAMPLES=4" → "_parse_bare SAMPLES=4"), cut
// to width.
func boardMechanism(mech string, width int) string {
	if mech == "" {
		return "—"
	}
	var parts []string
	for _, p := range strings.Split(mech, ",") {
		k, v, ok := strings.Cut(p, "=")
		if ok && strings.HasPrefix(v, "_") {
			p = v
		} else if ok {
			p = k + "=" + v
		}
		parts = append(parts, p)
	}
	s := strings.Join(parts, " ")
	if r := []rune(s); len(r) > width {
		s = string(r[:width-1]) + "…"
	}
	return s
}

// pairedGain shows a row's paired gain over the incumbent it was compared
// with, in points, with its interval.
func pairedGain(r BoardRow) string {
	if !r.HasGain {
		return "—"
	}
	return fmt.Sprintf("%+.1f [%+.1f, %+.1f]", 100*r.Gain, 100*r.GainLo, 100*r.GainHi)
}

// boardStatus adds the null-policy audit's refusal, or why a proposal
// was refused before scoring (it does not load), to a row's status.
func boardStatus(r BoardRow) string {
	if r.NullRefused {
		return fmt.Sprintf("%s · refused: null lift %+.1f pts", r.Status, 100*r.NullLift)
	}
	if r.Invalid != "" {
		reason, _, _ := strings.Cut(r.Invalid, "\n")
		return r.Status + " · " + reason
	}
	return r.Status
}
