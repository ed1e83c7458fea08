package tui

import (
	"fmt"

	"whale/core/engine"
)

// Control commands and their acknowledgement. A command is answered on
// screen in the frame its key was pressed in: the footer says it is
// queued (the engine takes commands between steps and iterations), and a
// prune or unprune marks its leaderboard row at once. When the engine
// journals the command (its control event) the footer says where it took
// effect, or why it was refused, and the row's mark becomes what the
// engine did.

// pendingCmd is a command sent and not yet seen in the run's events.
type pendingCmd struct {
	engine.Command
}

// steerRefusal is why this workbench may not change the run now ("" when
// it may): a read-only viewer, or a run that has ended.
func (m *Model) steerRefusal() string {
	switch {
	case m.opt.ReadOnly != "":
		return m.opt.ReadOnly
	case m.opt.Control == nil:
		return "no run to control"
	case m.run.finished:
		return "the run has finished: there is nothing left to steer"
	case m.status != "" && m.opt.Attached != "":
		return "the run is no longer live (" + m.status + "): there is nothing to steer"
	}
	return ""
}

// send hands c to the run and acknowledges it on screen: queued, with a
// prune's or unprune's row marked at once. A refusal (read-only, a full
// queue, an owner that said no) is the footer's error.
func (m *Model) send(c engine.Command) bool {
	if why := m.steerRefusal(); why != "" {
		m.err = c.Kind + " refused: " + why
		return false
	}
	if err := m.opt.Control.Send(c); err != nil {
		m.err = fmt.Sprintf("%s: %v", c.Kind, err)
		return false
	}
	m.pending = append(m.pending, pendingCmd{c})
	m.ack = describe(c) + " queued: applies after the " + m.inFlight() + " in flight"
	switch c.Kind {
	case "prune", "unprune":
		if m.run.marks == nil {
			m.run.marks = map[string]rowMark{}
		}
		m.run.marks[c.Target] = rowMark{status: c.Kind + "d", queued: true}
	}
	return true
}

// inFlight names the unit of work the engine finishes before it takes a
// command.
func (m *Model) inFlight() string {
	if m.run.phase == engine.PhaseHarness {
		return "iteration"
	}
	return "step"
}

// describe is a command as the footer names it.
func describe(c engine.Command) string {
	s := c.Kind
	if c.ForPhase != "" {
		s = fmt.Sprintf("%s (round %d %s)", s, c.ForRound, c.ForPhase)
	}
	if c.Target != "" {
		s += " " + short(c.Target)
	}
	return s
}

// rowMark is a leaderboard row's status as this workbench's commands left
// it: queued until the engine journals the command, then what it did,
// until a board drawn after it says so itself.
type rowMark struct {
	status string // "pruned" or "unpruned"
	queued bool
}

// settle matches a journaled command with the one this workbench sent
// and acknowledges it: applied at its step or iteration, or refused.
// Commands another viewer sent are reported the same way.
func (m *Model) settle(d engine.JournaledCommand) {
	for i, p := range m.pending {
		if p.Kind == d.Kind && p.Target == d.Target && p.ForPhase == d.ForPhase && p.ForRound == d.ForRound {
			m.pending = append(m.pending[:i:i], m.pending[i+1:]...)
			break
		}
	}
	at := fmt.Sprintf("step %d", d.Step)
	if d.Phase == engine.PhaseHarness {
		at = fmt.Sprintf("iteration %d", d.Iteration)
	}
	switch d.Kind {
	case "prune", "unprune":
		if d.Error != "" {
			delete(m.run.marks, d.Target)
		} else {
			if m.run.marks == nil {
				m.run.marks = map[string]rowMark{}
			}
			m.run.marks[d.Target] = rowMark{status: d.Kind + "d"}
		}
	}
	if d.Error != "" {
		m.ack = describe(d.Command) + " refused: " + d.Error
		return
	}
	m.ack = describe(d.Command) + " applied at " + at
}

// pendingKind reports whether a command of kind is queued.
func (m *Model) pendingKind(kind string) bool {
	for _, p := range m.pending {
		if p.Kind == kind {
			return true
		}
	}
	return false
}

// markedBoard is the board with this workbench's marks on its rows.
func (m *Model) markedBoard() []BoardRow {
	if len(m.run.marks) == 0 {
		return m.run.board
	}
	out := make([]BoardRow, len(m.run.board))
	for i, r := range m.run.board {
		if mk, ok := m.run.marks[r.Hash]; ok {
			r.Status = mk.status
			if mk.queued {
				r.Status += " (queued)"
			}
		}
		out[i] = r
	}
	return out
}

// forceTarget is the phase on screen, which a force is meant for; false
// when none is running.
func (m *Model) forceTarget() (engine.Command, bool) {
	n := len(m.run.segments)
	if n == 0 || m.run.segments[n-1].end >= 0 || m.run.finished {
		return engine.Command{}, false
	}
	s := m.run.segments[n-1]
	return engine.Command{Kind: "force", ForPhase: s.kind, ForRound: s.round}, true
}
