package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// View draws the dashboard (or the open run's workbench), cut to the
// window; headless it draws nothing.
func (b *Bench) View() string {
	if b.opt.Progress != nil {
		return ""
	}
	if b.open != nil {
		return b.open.m.View()
	}
	w, h := max(40, b.width), max(10, b.height)
	top := []string{stTitle.Render("whale bench") + "  " + stMuted.Render(b.opt.Title), b.counts(), ""}
	bw, wide := b.barWidth(w)
	top = append(top, stHeader.Render(b.tableHeader(bw, wide)))
	var tl []string
	if len(b.rows) > 0 {
		tl = b.selectedTimeline(w)
	}
	room := max(1, h-len(top)-len(tl)-1)
	first := min(max(0, b.sel-room+1), max(0, len(b.rows)-room))
	lines := top
	for i := first; i < len(b.rows) && i < first+room; i++ {
		lines = append(lines, b.rowLine(i, bw, wide))
	}
	lines = fit(lines, h-1-len(tl))
	lines = append(lines, tl...)
	lines = append(lines, b.footer())
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, w, "…")
	}
	return strings.Join(fit(lines, h), "\n")
}

// fixedCols is the width of a row without its progress bar (and without
// the model-calls column, which only a wide window shows).
const (
	fixedCols = 70
	callsCols = 12
	barMax    = 40
)

func (b *Bench) barWidth(w int) (int, bool) {
	wide := w-fixedCols-callsCols >= 20
	bw := w - fixedCols
	if wide {
		bw -= callsCols
	}
	return max(4, min(barMax, bw)), wide
}

func (b *Bench) counts() string {
	n := map[string]int{}
	for _, r := range b.rows {
		n[r.state]++
	}
	s := fmt.Sprintf("%d runs: %d running · %d done · %d waiting", len(b.rows), n[jobRunning], n[jobDone], n[jobWaiting])
	if k := n[jobStopped] + n[jobFailed]; k > 0 {
		s += fmt.Sprintf(" · %d stopped or failed", k)
	}
	return s
}

func (b *Bench) tableHeader(bw int, wide bool) string {
	calls := ""
	if wide {
		calls = fmt.Sprintf("%*s", callsCols, "model calls")
	}
	return fmt.Sprintf("  %-14s %-8s %-4s %-7s %-*s %4s%s %5s %8s %8s", "condition", "domain", "seed", "phase", bw+2, "budget", "", calls, "best", "elapsed", "ETA")
}

func (b *Bench) rowLine(i, bw int, wide bool) string {
	r := b.rows[i]
	st := b.stats(r)
	phase := r.state
	switch {
	case r.state == jobRunning && r.m.run.paused:
		phase = "paused"
	case r.state == jobRunning:
		phase = orDash(string(r.m.run.phase))
	}
	progress := bar(st.spent, max(1, st.budget), bw)
	calls := ""
	if wide {
		calls = fmt.Sprintf("%*s", callsCols, fmt.Sprintf("%d/%d", st.spent, st.budget))
	}
	line := fmt.Sprintf("%-14s %-8s s%-3d %-7s %s %3d%%%s %5s %8s %8s", ansi.Truncate(r.job.Condition, 14, "…"), ansi.Truncate(r.job.Domain, 8, "…"),
		r.job.Seed, phase, progress, st.pct, calls, st.best, st.elapsed, st.eta)
	switch {
	case i == b.sel:
		return stSelected.Render("> " + line)
	case r.state == jobFailed:
		return "  " + stError.Render(line)
	case r.state == jobDone:
		return "  " + stGood.Render(line)
	}
	return "  " + line
}

// selectedTimeline is the selected run's name and phase timeline.
func (b *Bench) selectedTimeline(w int) []string {
	r := b.rows[b.sel]
	run := &r.m.run
	what := fmt.Sprintf("round %d · step %d · iteration %d", run.round, run.step, run.iter)
	switch {
	case r.err != "":
		what = "failed: " + r.err
	case r.state == jobWaiting && len(run.log) == 0:
		what = "not started yet"
	}
	out := []string{"", stHeader.Render(r.job.ID) + stMuted.Render("  "+what)}
	return append(out, run.timeline(run.axis(w-2, r.m.opt.Budget))...)
}

func (b *Bench) footer() string {
	switch {
	case b.confirm:
		return stConfirm.Render("stop the bench? runs keep their last resume point; the same command continues. y/n")
	case b.err != "":
		return stError.Render("error: " + b.err)
	}
	state := "running"
	if b.status != "" {
		state = b.status
	}
	return stMuted.Render(state + " · ↑↓ select · enter open the run · q stop")
}
