package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// The frame around the panes — tab bar, footer, key help — and the
// drawing helpers the panes share.

// View draws the tab bar, the focused pane (or the key help) and the
// footer, cut to the window.
func (m *Model) View() string {
	w, h := max(20, m.width), max(6, m.height)
	var body []string
	switch {
	case m.whole != nil:
		m.wholeView.set(wholeLines(*m.whole, w), h-3)
		body = append(m.wholeView.window(), stMuted.Render("↑↓ scroll · any other key closes"))
	case m.help:
		body = m.viewHelp()
	default:
		body = m.focused().view(m, w, h-2)
	}
	if f := m.filter[m.pane]; f != "" && !m.filtering && m.pane != paneRun {
		body = append([]string{stMuted.Render("filter /" + f + " (esc in / clears)")}, body...)
	}
	lines := append([]string{m.viewTabs()}, fit(body, h-2)...)
	lines = append(lines, m.viewFooter())
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, w, "…")
	}
	return strings.Join(lines, "\n")
}

func fit(lines []string, h int) []string {
	if len(lines) > h {
		return lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return lines
}

func (m *Model) viewTabs() string {
	parts := []string{stTitle.Render("whale")}
	for i, n := range paneNames {
		label := fmt.Sprintf("%d %s", i+1, n)
		if pane(i) == m.pane {
			parts = append(parts, stTabActive.Render("["+label+"]"))
		} else {
			parts = append(parts, stTab.Render(" "+label+" "))
		}
	}
	return strings.Join(parts, "  ")
}

func (m *Model) viewFooter() string {
	switch {
	case m.confirm != nil:
		return stConfirm.Render(fmt.Sprintf("end the round %d %s phase now? %s/n", m.confirm.ForRound, m.confirm.ForPhase, keyOf(m.keys.Yes)))
	case m.forkAsk != "":
		return stConfirm.Render("new run from " + m.forkAsk + "? this one stays resumable. " + keyOf(m.keys.Yes) + "/n")
	case m.filtering:
		return stConfirm.Render("/"+m.filter[m.pane]+"▏") + stMuted.Render("  enter keep · esc clear")
	case m.err != "":
		msg := "error: " + m.err
		if w := max(20, m.width); ansi.StringWidth(msg) > w {
			return stError.Render(ansi.Truncate(msg, w-14, "…")) + stMuted.Render(" enter: whole")
		}
		return stError.Render(msg)
	}
	state := "running"
	switch {
	case m.status != "":
		state = m.status
	case m.run.finished:
		state = "finished"
	case m.run.paused:
		state = "paused"
	case m.pendingKind("pause"):
		state = "pausing"
	}
	if m.opt.Attached != "" {
		state = m.opt.Attached + " · " + state
	}
	k := m.keys
	help := " · " + k.Force.Help().Key + " force · " + k.Pause.Help().Key + " pause · " + k.Help.Help().Key + " keys · " + k.Quit.Help().Key + " quit"
	if m.steerRefusal() != "" {
		help = " · " + k.Help.Help().Key + " keys · " + k.Quit.Help().Key + " quit"
		if m.opt.ReadOnly != "" && !strings.Contains(state, "read-only") {
			state += " · read-only"
		}
	}
	out := stMuted.Render(state + help)
	if m.ack != "" {
		out = stConfirm.Render(m.ack) + stMuted.Render(" · ") + out
	}
	return out
}

func (m *Model) viewHelp() []string {
	// Keys that go together share a line, so the map fits 80×24.
	out := []string{stHeader.Render("Keys"), ""}
	line := func(k, desc string) { out = append(out, fmt.Sprintf("  %-12s %s", k, desc)) }
	k := m.keys
	panes := k.Run.Help().Key + k.Harnesses.Help().Key + k.Samples.Help().Key + k.Checkpoints.Help().Key + k.Log.Help().Key
	if panes == "12345" {
		panes = "1-5"
	} else {
		panes = strings.Join([]string{k.Run.Help().Key, k.Harnesses.Help().Key, k.Samples.Help().Key, k.Checkpoints.Help().Key, k.Log.Help().Key}, " ")
	}
	line(panes, "panes: run, harnesses, samples, checkpoints, log")
	line(k.Tab.Help().Key, k.Tab.Help().Desc)
	moves := k.Up.Help().Key + k.Down.Help().Key + " " + k.PageUp.Help().Key + " " + k.PageDown.Help().Key
	line(moves, "move in a list, scroll an open view")
	for _, b := range m.keys.all()[10:] {
		if b.Help().Key == "" {
			continue
		}
		line(b.Help().Key, b.Help().Desc)
	}
	return append(out, "", stMuted.Render("any key closes this"))
}

func bar(n, of, w int) string {
	if of <= 0 {
		return ""
	}
	f := min(w, n*w/of)
	return "[" + strings.Repeat("█", f) + strings.Repeat("░", w-f) + "]"
}

func short(h string) string {
	if len(h) > 8 {
		return h[:8]
	}
	return h
}

// listLine is a list's row: marked and styled when selected, indented
// like the marker otherwise.
func listLine(line string, selected bool) string {
	if selected {
		return stSelected.Render("> " + line)
	}
	return "  " + line
}

// footerMessage is the error the footer shows, in full ("" for none).
// (An acknowledgement is also a log line, which opens whole there.)
func (m *Model) footerMessage() string {
	if m.err != "" {
		return "error: " + m.err
	}
	return ""
}
