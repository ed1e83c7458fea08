package tui

import (
	"fmt"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// checkpointPane is the Checkpoints pane: the kept checkpoints, the
// selected one to export (`e`) or to start a new run from (`r`, asks y/n).
type checkpointPane struct {
	sel int
}

// exportedMsg reports a finished checkpoint export.
type exportedMsg struct {
	id, dir string
	err     error
}

// selected is the selected checkpoint's id; without one it says so in
// the footer.
func (p *checkpointPane) selected(m *Model) (string, bool) {
	rows := p.rows(m)
	if p.sel >= len(rows) {
		m.err = "no checkpoint selected"
		return "", false
	}
	return rows[p.sel].ID, true
}

// update handles the list: move, export, fork.
func (p *checkpointPane) update(m *Model, k tea.KeyMsg) tea.Cmd {
	switch {
	case key.Matches(k, m.keys.Export):
		id, ok := p.selected(m)
		if !ok {
			return nil
		}
		if m.opt.Export == nil {
			m.err = "export is not available here"
			return nil
		}
		export := m.opt.Export
		return func() tea.Msg {
			dir, err := export(id)
			return exportedMsg{id: id, dir: dir, err: err}
		}
	case key.Matches(k, m.keys.Fork):
		id, ok := p.selected(m)
		if !ok {
			return nil
		}
		if m.opt.Fork == nil {
			m.err = "starting a run from a checkpoint is not available here"
			return nil
		}
		m.forkAsk = id
	case key.Matches(k, m.keys.Up):
		p.sel = max(0, p.sel-1)
	case key.Matches(k, m.keys.Down):
		p.sel = min(max(0, len(p.rows(m))-1), p.sel+1)
	case key.Matches(k, m.keys.PageUp):
		p.sel = max(0, p.sel-max(1, m.height-5))
	case key.Matches(k, m.keys.PageDown):
		p.sel = min(max(0, len(p.rows(m))-1), p.sel+max(1, m.height-5))
	}
	return nil
}

// rows is the checkpoints narrowed by the pane's filter.
func (p *checkpointPane) rows(m *Model) []checkpoint {
	var out []checkpoint
	for _, c := range m.run.checkpoints {
		if matches(m.filter[paneCheckpoints], c.ID, c.Harness, c.Weights) {
			out = append(out, c)
		}
	}
	return out
}

func (p *checkpointPane) view(m *Model, w, h int) []string {
	cs := p.rows(m)
	if len(m.run.checkpoints) == 0 {
		return []string{stMuted.Render("no checkpoint yet: one is kept at each phase boundary")}
	}
	// Ids grow with the run's id: the column is as wide as the widest, and
	// the hashes drop before it is cut (from the left, keeping the
	// round and phase that tell checkpoints apart).
	idw := len("id")
	for _, c := range cs {
		idw = max(idw, len(c.ID))
	}
	cols := []column{{head: "id", width: idw}, {head: "round", width: 5}, {head: "step", width: 5, drop: 3},
		{head: "harness", width: 8, drop: 2}, {head: "weights", width: 8, drop: 1}, {head: valLabel(m.run.valK)}}
	kept := fitColumns(cols, w, 5)
	if need := 2 + idw + 1 + 5 + 1 + 5; need > w {
		cols[0].width = max(8, idw-(need-w))
	}
	out := []string{stHeader.Render("  " + headLine(cols, kept))}
	rows := h - 2
	first := max(0, min(p.sel-rows+1, len(cs)-rows))
	for i := first; i < len(cs) && i < first+rows; i++ {
		c := cs[i]
		id := c.ID
		if r := []rune(id); len(r) > cols[0].width {
			id = "…" + string(r[len(r)-cols[0].width+1:])
		}
		cells := []string{id, fmt.Sprint(c.Round), fmt.Sprint(c.Step), short(c.Harness), short(c.Weights), "—"}
		if c.HasVal {
			cells[5] = fmt.Sprintf("%.3f", c.Val)
		}
		out = append(out, listLine(joinCells(cols, kept, cells), i == p.sel))
	}
	return append(out, stMuted.Render(keyOf(m.keys.Export)+" export · "+keyOf(m.keys.Fork)+" new run from it (asks "+keyOf(m.keys.Yes)+"/n) · "+keyOf(m.keys.Up)+keyOf(m.keys.Down)+" select"))
}
