package tui

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"whale/core/engine"
)

// View draws the tab bar, the focused pane and the footer, cut to the
// window.
func (m *Model) View() string {
	w, h := max(20, m.width), max(6, m.height)
	var body []string
	switch {
	case m.help:
		body = m.viewHelp()
	case m.pane == paneRun && w >= wideFrom:
		lw := w - max(sideWidth, w*2/5) - 3
		body = sideBySide(fit(m.viewRun(lw, h-2), h-2), m.viewSide(h-2), lw)
	case m.pane == paneRun:
		body = m.viewRun(w, h-2)
	case m.pane == paneHarnesses && m.diff != nil:
		body = m.viewDiff(h - 2)
	case m.pane == paneHarnesses:
		body = m.viewHarnesses(w, h-2)
	case m.pane == paneSamples:
		body = m.viewSamples(w, h-2)
	case m.pane == paneCheckpoints:
		body = m.viewCheckpoints(w, h-2)
	default:
		body = m.viewLog(h - 2)
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
	case m.confirm:
		return stConfirm.Render("force a phase switch now? y/n")
	case m.forkAsk != "":
		return stConfirm.Render("new run from " + m.forkAsk + "? this one stays resumable. y/n")
	case m.filtering:
		return stConfirm.Render("/"+m.filter[m.pane]+"▏") + stMuted.Render("  enter keep · esc clear")
	case m.err != "":
		return stError.Render("error: " + m.err)
	}
	state := "running"
	switch {
	case m.status != "":
		state = m.status
	case m.run.finished:
		state = "finished"
	case m.run.paused:
		state = "paused"
	}
	if m.opt.Attached != "" {
		state = m.opt.Attached + " · " + state
	}
	return stMuted.Render(state + " · f force · space pause · ? keys · q quit")
}

func (m *Model) viewHelp() []string {
	// The five pane keys share one line so the map fits 80×24.
	out := []string{stHeader.Render("Keys"), "", fmt.Sprintf("  %-8s %s", "1-5", "panes: run, harnesses, samples, checkpoints, log")}
	for _, b := range keys.all()[5:] {
		out = append(out, fmt.Sprintf("  %-8s %s", b.Help().Key, b.Help().Desc))
	}
	return append(out, "", stMuted.Render("any key closes this"))
}

// viewRun draws the header, the phase timeline, the charts, patience and
// the step stats in w×h; the charts take the height the rest leaves.
func (m *Model) viewRun(w, h int) []string {
	r, o := &m.run, &m.opt
	of := "∞"
	if o.Budget > 0 {
		of = fmt.Sprint(o.Budget)
	}
	rounds := fmt.Sprint(r.round)
	if o.Rounds > 0 {
		rounds += fmt.Sprintf("/%d", o.Rounds)
	}
	elapsed := m.now.Sub(m.started).Truncate(time.Second)
	top := []string{
		stHeader.Render("run "+o.RunID) + stMuted.Render(fmt.Sprintf("  %s · %s · %s · preset %s", o.Domain, o.ModelDesc, o.Schedule, o.Preset)),
		fmt.Sprintf("model calls %d/%s · rollouts %d · round %s · step %d · iteration %d · elapsed %s", r.rollouts, of, r.episodes, rounds, r.step, r.iter, elapsed),
	}
	if g := r.origin; g != nil {
		top = append(top, stMuted.Render(fmt.Sprintf("from checkpoint %s (run %s, round %d %s phase)", g.Checkpoint, g.Run, g.Round, g.Phase)))
	}
	ax := m.axis(w - 2)
	top = append(top, "")
	top = append(top, m.timeline(ax)...)
	top = append(top, "")

	bottom := append([]string{""}, m.patienceLines(w)...)
	if s := r.stats; s != nil {
		rej := make([]string, 0, len(s.Rejected))
		for _, k := range sortedKeys(s.Rejected) {
			rej = append(rej, fmt.Sprintf("%s %d", k, s.Rejected[k]))
		}
		bottom = append(bottom, "",
			fmt.Sprintf("step: kept %d/%d · trained %d · loss %.4f · grad %.3f · lr %.2g", s.Kept, s.Rollouts, s.Trained, s.Loss, s.GradNorm, s.LR),
			"rejected: "+strings.Join(rej, ", "))
	}
	if l := m.healthLine(); l != "" {
		bottom = append(bottom, l)
	}
	if r.dropped > 0 {
		bottom = append(bottom, stMuted.Render(fmt.Sprintf("(%d events skipped while the screen caught up; all are stored)", r.dropped)))
	}
	// Two charts, each a label line and rows; at least one row, at most
	// chartMaxRows, whatever the window leaves.
	rows := min(chartMaxRows, max(1, (h-len(top)-len(bottom))/2-1))
	out := append(top, m.valChart(ax, rows)...)
	out = append(out, m.rewardChart(ax, rows)...)
	return append(out, bottom...)
}

const chartMaxRows = 10

// healthLine is the weight phases' health: the last step's token entropy
// against the first's, and val pass@k − mean@k now against the start (both
// fall when training collapses the policy onto one answer).
func (m *Model) healthLine() string {
	r := &m.run
	var parts []string
	if e := r.entropies; len(e) > 0 {
		parts = append(parts, fmt.Sprintf("entropy %.2f nats (first step %.2f)", e[len(e)-1], e[0]))
	}
	if sp := r.spreads; len(sp) > 0 {
		parts = append(parts, fmt.Sprintf("val pass−mean %+.2f (start %+.2f)", sp[len(sp)-1], sp[0]))
	}
	if len(parts) == 0 {
		return ""
	}
	return "health: " + strings.Join(parts, " · ")
}

// axis maps budgeted rollouts to the columns of the timeline and of the
// charts under it, so a column means the same stretch of the run in all
// three; kinds is the phase each column belongs to ("" past the cursor).
type axis struct {
	w, total int
	kinds    []engine.Phase
}

func (a axis) col(x int) int { return min(a.w-1, x*a.w/a.total) }

// span is the columns [c0, c1) that rollouts [from, to) cover, at least
// one.
func (a axis) span(from, to int) (int, int) {
	c0, c1 := a.col(from), a.col(max(from, to-1))+1
	return c0, max(c1, c0+1)
}

func (m *Model) axis(w int) axis {
	r := &m.run
	a := axis{w: max(10, w), total: max(1, r.rollouts)}
	if m.opt.Budget > 0 {
		a.total = max(a.total, m.opt.Budget)
	}
	a.kinds = make([]engine.Phase, a.w)
	for _, s := range r.segments {
		c0, c1 := a.span(s.start, m.segEnd(s))
		for x := c0; x < c1; x++ {
			a.kinds[x] = s.kind
		}
	}
	return a
}

func (m *Model) segEnd(s segment) int {
	if s.end < 0 {
		return m.run.rollouts
	}
	return s.end
}

// timeline draws phases as a band over the rollouts, weight phases as █ and
// harness phases as ▒ in two colours, with cycle numbers under the band and
// a cursor where the run is.
func (m *Model) timeline(a axis) []string {
	r := &m.run
	nums := []rune(strings.Repeat(" ", a.w))
	for _, s := range r.segments {
		if s.kind != engine.PhaseWeights {
			continue
		}
		c0, _ := a.span(s.start, m.segEnd(s))
		for i, c := range fmt.Sprint(s.round) {
			if c0+i < a.w {
				nums[c0+i] = c
			}
		}
	}
	band := make([]rune, a.w)
	for x, k := range a.kinds {
		switch k {
		case engine.PhaseWeights:
			band[x] = '█'
		case engine.PhaseHarness:
			band[x] = '▒'
		default:
			band[x] = '·'
		}
	}
	cursor := []rune(strings.Repeat(" ", a.w))
	cursor[a.col(r.rollouts)] = '▲'
	return []string{
		"timeline " + stWeights.Render("█ weights") + "  " + stHarness.Render("▒ harness") + stMuted.Render("  (cycle numbers below)"),
		" " + paint(band, a.kinds, stWeights, stHarness),
		" " + string(nums),
		" " + string(cursor),
	}
}

// paint renders cells in runs of the same phase, each run in its phase's
// style (one Render per run, not per cell: View runs at 10 Hz).
func paint(cells []rune, kinds []engine.Phase, weights, harness lipgloss.Style) string {
	var sb strings.Builder
	for x := 0; x < len(cells); {
		y := x + 1
		for y < len(cells) && kinds[y] == kinds[x] {
			y++
		}
		run := string(cells[x:y])
		switch kinds[x] {
		case engine.PhaseWeights:
			run = weights.Render(run)
		case engine.PhaseHarness:
			run = harness.Render(run)
		}
		sb.WriteString(run)
		x = y
	}
	return sb.String()
}

// valChart draws val mean@k over the timeline's columns: each ended phase
// at the level it reached, so a step between two phases is what the
// second one changed.
func (m *Model) valChart(a axis, rows int) []string {
	cols := make([]float64, a.w)
	for i := range cols {
		cols[i] = math.NaN()
	}
	var vs []float64
	if len(m.run.vals) > 0 {
		vs = append(vs, m.run.vals[0].mean) // before the first phase
	}
	for _, s := range m.run.segments {
		if !s.hasVal {
			continue
		}
		vs = append(vs, s.val)
		c0, c1 := a.span(s.start, s.end)
		for x := c0; x < c1; x++ {
			cols[x] = s.val
		}
	}
	label := "val mean@k"
	if m.run.valK > 0 {
		label = fmt.Sprintf("val mean@%d", m.run.valK)
	}
	if len(vs) > 0 {
		label = fmt.Sprintf("%-12s %.3f (start %.3f)", label, vs[len(vs)-1], vs[0])
	}
	return phaseChart(label, cols, vs, a.kinds, rows)
}

// rewardChart draws each weight step's mean training reward over the
// columns of the rollouts it spent (several steps in one column: their
// mean); harness phases are gaps on their own colour.
func (m *Model) rewardChart(a axis, rows int) []string {
	sum, n := make([]float64, a.w), make([]int, a.w)
	var vs []float64
	for _, p := range m.run.rewards {
		vs = append(vs, p.mean)
		c0, c1 := a.span(p.from, p.to)
		for x := c0; x < c1; x++ {
			sum[x] += p.mean
			n[x]++
		}
	}
	cols := make([]float64, a.w)
	for x := range cols {
		cols[x] = math.NaN()
		if n[x] > 0 {
			cols[x] = sum[x] / float64(n[x])
		}
	}
	label := "reward/step"
	if len(vs) > 0 {
		label = fmt.Sprintf("%-12s %.3f (step %d)", label, vs[len(vs)-1], len(vs))
	}
	return phaseChart(label, cols, vs, a.kinds, rows)
}

var sparks = []rune("▁▂▃▄▅▆▇█")

// phaseChart is a label line with the range of vs, then rows of bars, one
// column per timeline column (NaN: no bar), each column on the background
// colour of its phase.
func phaseChart(label string, cols, vs []float64, kinds []engine.Phase, rows int) []string {
	if len(vs) == 0 {
		return append([]string{fmt.Sprintf("%-12s ", label) + stMuted.Render("—")}, make([]string, rows)...)
	}
	lo, hi := slices.Min(vs), slices.Max(vs)
	out := []string{fmt.Sprintf("%s [%.2f..%.2f]", label, lo, hi)}
	levels := rows * 8
	fill := make([]int, len(cols)) // in eighths of a row
	for x, v := range cols {
		switch {
		case math.IsNaN(v):
		case hi > lo:
			fill[x] = 1 + int(math.Round((v-lo)/(hi-lo)*float64(levels-1)))
		default:
			// One value has no range to scale by: draw it on [0, 1],
			// where val mean@k and rewards live, so a flat 0 is a floor
			// line, not a half-full block.
			fill[x] = 1 + int(math.Round(min(1, max(0, v))*float64(levels-1)))
		}
	}
	for row := rows - 1; row >= 0; row-- {
		cells := make([]rune, len(cols))
		for x, f := range fill {
			f = min(8, f-row*8)
			if f <= 0 {
				cells[x] = ' '
			} else {
				cells[x] = sparks[f-1]
			}
		}
		out = append(out, " "+paint(cells, kinds, stChartWeights, stChartHarness))
	}
	return out
}

func bar(n, of, w int) string {
	if of <= 0 {
		return ""
	}
	f := min(w, n*w/of)
	return "[" + strings.Repeat("█", f) + strings.Repeat("░", w-f) + "]"
}

func (m *Model) patienceLines(w int) []string {
	p := m.run.patience
	if p == nil {
		return []string{"patience: " + stMuted.Render("waiting for the first step")}
	}
	unit := "steps"
	if p.Phase == engine.PhaseHarness {
		unit = "iterations"
	}
	bw := max(5, min(20, w/4))
	maxs := "∞"
	if p.Max > 0 {
		maxs = fmt.Sprint(p.Max)
	}
	out := []string{fmt.Sprintf("patience (%s): %d %s done %s min %d max %s", p.Phase, p.Done, unit, bar(p.Done, max(p.Max, p.Min, p.Done, 1), bw), p.Min, maxs)}
	if p.Limit > 0 {
		out = append(out, fmt.Sprintf("  since best %d/%d %s", p.Since, p.Limit, bar(p.Since, p.Limit, bw)))
	} else {
		out = append(out, fmt.Sprintf("  since best %d (fixed schedule: no patience limit)", p.Since))
	}
	what := "window mean reward"
	if p.Phase == engine.PhaseHarness {
		what = "val score"
	}
	return append(out, fmt.Sprintf("  %s: best %.3f, now %.3f", what, p.Best, p.Current))
}

func (m *Model) viewHarnesses(w, h int) []string {
	if m.knobMode {
		out := []string{stHeader.Render("search-space knobs of the incumbent (frozen knobs are never varied)")}
		for i, kn := range m.run.knobs {
			mark := "[ ]"
			if m.run.frozen[kn] {
				mark = "[frozen]"
			}
			line := fmt.Sprintf("%-8s %s", mark, kn)
			if i == m.knobSel {
				line = stSelected.Render("> " + line)
			} else {
				line = "  " + line
			}
			out = append(out, line)
			if len(out) >= h-1 {
				break
			}
		}
		return append(out, stMuted.Render("enter freeze / free · ↑↓ select · k or esc back"))
	}
	if len(m.run.board) == 0 {
		return []string{stMuted.Render("no leaderboard yet: it appears with the first harness iteration")}
	}
	out := m.boardTable(h - 2)
	return append(out, stMuted.Render("enter diff vs incumbent · x prune · u unprune · k knobs · ↑↓ select"))
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

// boardStatus adds the null-policy audit's refusal to a row's status.
func boardStatus(r BoardRow) string {
	if r.NullRefused {
		return fmt.Sprintf("%s · refused: null lift %+.1f pts", r.Status, 100*r.NullLift)
	}
	return r.Status
}

// boardTable is the leaderboard's header and up to rows rows, scrolled to
// keep the selected one in view.
func (m *Model) boardTable(rows int) []string {
	b := m.boardRows()
	out := []string{stHeader.Render(fmt.Sprintf("  %-3s %-8s %-24s %-15s %-22s %6s %4s %s", "#", "id", "fragments (vs parent)", "score ± CI", "paired gain [95% CI]", "calls", "it", "status"))}
	first := max(0, min(m.boardSel-rows+1, len(b)-rows))
	for i := first; i < len(b) && i < first+rows; i++ {
		r := b[i]
		line := fmt.Sprintf("%-3d %-8s %-24s %.3f ±%.3f %-22s %6d %4d %s", i+1, short(r.Hash), boardMechanism(r.Mechanism, 24),
			r.Score, (r.CIHi-r.CILo)/2, pairedGain(r), r.Calls, r.Iteration, boardStatus(r))
		if i == m.boardSel {
			line = stSelected.Render("> " + line)
		} else {
			line = "  " + line
		}
		out = append(out, line)
	}
	return out
}

// wideFrom is the width from which the Run pane shares the screen with the
// leaderboard and the latest events; sideWidth fits a leaderboard row.
const (
	wideFrom  = 140
	sideWidth = 74
)

// viewSide is the right column of a wide Run pane: the leaderboard (up to
// half the height), then as many of the latest events as fit.
func (m *Model) viewSide(h int) []string {
	out := []string{stHeader.Render("harnesses") + stMuted.Render("  (2 to prune, diff or freeze)")}
	if len(m.run.board) == 0 {
		out = append(out, stMuted.Render("no leaderboard yet: it appears with the first harness iteration"))
	} else {
		out = append(out, m.boardTable(max(1, min(len(m.run.board), h/2-2)))...)
	}
	out = append(out, "", stHeader.Render("events"))
	l := m.run.log
	return append(out, l[max(0, len(l)-(h-len(out))):]...)
}

// sideBySide joins two columns line by line, the left one padded or cut to
// lw cells.
func sideBySide(left, right []string, lw int) []string {
	out := make([]string, max(len(left), len(right)))
	sep := stMuted.Render(" │ ")
	for i := range out {
		l, r := "", ""
		if i < len(left) {
			l = ansi.Truncate(left[i], lw, "…")
		}
		if i < len(right) {
			r = right[i]
		}
		out[i] = l + strings.Repeat(" ", max(0, lw-ansi.StringWidth(l))) + sep + r
	}
	return out
}

func (m *Model) viewSamples(w, h int) []string {
	if m.samplesErr != "" {
		return []string{stError.Render(m.samplesErr)}
	}
	vis := m.visibleSamples()
	if m.detail && m.sampleSel < len(vis) {
		return m.viewSample(vis[m.sampleSel], w, h)
	}
	filter := "all kinds"
	if m.kindFilter != "" {
		filter = m.kindFilter
	}
	kept := "rejected only"
	if m.showKept {
		kept = "kept too"
	}
	out := []string{fmt.Sprintf("%d samples · %s · %s", len(vis), filter, kept)}
	if m.loadingSamp && len(m.samples) == 0 {
		return append(out, stMuted.Render("loading…"))
	}
	out = append(out, stHeader.Render(fmt.Sprintf("  %-6s %-4s %-5s %-8s %-6s %-20s %s", "seq", "rnd", "step", "harness", "reward", "why", "task")))
	rows := h - 3
	first := max(0, min(m.sampleSel-rows+1, len(vis)-rows))
	for i := first; i < len(vis) && i < first+rows; i++ {
		s := vis[i]
		at := s.Step
		if s.Kind == "s" {
			at = s.Iteration
		}
		line := fmt.Sprintf("%-6d %-4d %s%-4d %-8s %-6.2f %-20s %s", s.Seq, s.Round, s.Kind, at, short(s.Harness), s.Trajectory.Reward, s.Why, s.Trajectory.TaskID)
		if i == m.sampleSel {
			line = stSelected.Render("> " + line)
		} else {
			line = "  " + line
		}
		out = append(out, line)
	}
	return append(out, stMuted.Render("enter open · c kind · a kept · r reload"))
}

// viewSample is the whole trajectory: messages, completions, tool calls,
// reward and why.
func (m *Model) viewSample(s Sample, w, h int) []string {
	t := s.Trajectory
	state := stError.Render("rejected")
	if s.Kept {
		state = stGood.Render("kept")
	}
	all := []string{
		fmt.Sprintf("%s sample %d · task %s · round %d · harness %s · reward %.3f", state, s.Seq, t.TaskID, s.Round, short(s.Harness), t.Reward),
		"why: " + s.Why,
	}
	if t.Error != "" {
		all = append(all, "error: "+t.Error)
	}
	all = append(all, fmt.Sprintf("turns %d · format retries %d · invalid retries %d", t.Turns, t.FormatRetries, t.InvalidRetries), "")
	wrap := func(prefix, text string) {
		for _, l := range strings.Split(ansi.Wrap(text, max(10, w-len(prefix)-1), ""), "\n") {
			all = append(all, prefix+l)
		}
	}
	for _, msg := range t.Messages {
		all = append(all, stHeader.Render("["+msg.Role+"]"))
		wrap("  ", msg.Content)
	}
	for i, c := range t.Calls {
		vote := ""
		if c.NotChosen {
			vote = fmt.Sprintf(", sample %d, not chosen", c.Sample)
		}
		all = append(all, stHeader.Render(fmt.Sprintf("[completion %d, %s%s]", i+1, c.Finish, vote)))
		wrap("  ", c.Text)
	}
	for _, tc := range t.Tools {
		fail := ""
		if tc.Failed {
			fail = " (failed)"
		}
		all = append(all, stHeader.Render(fmt.Sprintf("[tool %s, turn %d%s]", tc.Tool, tc.Turn, fail)))
		wrap("  args: ", tc.Args)
		wrap("  shown: ", tc.Shown)
	}
	off := min(m.detailOff, max(0, len(all)-(h-1)))
	m.detailOff = off
	all = all[off:]
	if len(all) > h-1 {
		all = all[:h-1]
	}
	return append(all, stMuted.Render("esc back · ↑↓ scroll"))
}

func (m *Model) viewCheckpoints(w, h int) []string {
	cs := m.checkpointRows()
	if len(m.run.checkpoints) == 0 {
		return []string{stMuted.Render("no checkpoint yet: one is kept at each phase boundary")}
	}
	out := []string{stHeader.Render(fmt.Sprintf("  %-24s %-5s %-5s %-8s %-8s %s", "id", "round", "step", "harness", "weights", "val"))}
	rows := h - 2
	first := max(0, min(m.ckptSel-rows+1, len(cs)-rows))
	for i := first; i < len(cs) && i < first+rows; i++ {
		c := cs[i]
		line := fmt.Sprintf("%-24s %-5d %-5d %-8s %-8s %.3f", c.ID, c.Round, c.Step, short(c.Harness), short(c.Weights), c.Val)
		if i == m.ckptSel {
			line = stSelected.Render("> " + line)
		} else {
			line = "  " + line
		}
		out = append(out, line)
	}
	return append(out, stMuted.Render("e export · r new run from it (asks y/n) · ↑↓ select"))
}

func (m *Model) viewLog(h int) []string {
	l := m.logRows()
	end := len(l) - m.logOff
	start := max(0, end-h)
	return append([]string(nil), l[start:end]...)
}

func sortedKeys(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }
